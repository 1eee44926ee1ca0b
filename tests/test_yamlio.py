"""Strict safe YAML: hostile frontmatter (row 42), fuzzing (row 49), key lines and round-trip edits."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.lint_support import hang_guard
from wikiengine.core import schemas
from wikiengine.core.errors import PageError, SchemaError
from wikiengine.core.yamlio import key_lines, line_of, roundtrip_update, safe_load

BILLION_LAUGHS = """a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
"""




@pytest.mark.parametrize(
    "text, line, words",
    [
        ("title: x\nrun: !!python/object/apply:os.system ['touch /tmp/pwned']\n", 3, "tags are not allowed"),
        ("run: !!python/name:os.system\n", 2, "tags are not allowed"),
        ("run: !!python/object:collections.OrderedDict {}\n", 2, "tags are not allowed"),
        ("run: !<tag:yaml.org,2002:python/object/new:os.system> [ls]\n", 2, "tags are not allowed"),
        ("x: 1\ny: !custom thing\n", 3, "tags are not allowed"),
        ("y: !!binary aGk=\n", 2, "tags are not allowed"),
        ("y: !!set {a, b}\n", 2, "tags are not allowed"),
        (BILLION_LAUGHS, 2, "anchors and aliases are not allowed"),
        ("base: &b {k: 1}\nother:\n  <<: *b\n", 2, "anchors and aliases are not allowed"),
        ("verdict: supported\nstatus: x\nverdict: refuted\n", 4, "duplicate key 'verdict' (first on line 1)"),
        ("a:\n  b: 1\n  b: 2\n", 4, "duplicate key 'b'"),
        ("true: 1\nTrue: 2\n", 3, "duplicate key"),
        ("2026-01-01: a\n'2026-01-01': b\n", 3, "duplicate key '2026-01-01'"),
        ("? [a, b]\n: 1\n", 2, "plain scalar"),
        ("a: 1\n---\nb: 2\n", 3, "another document"),
        ("a: " + "[" * 2000 + "]" * 2000 + "\n", 2, "nesting"),
        ("a: " + "[" * 600 + "]" * 600 + "\n", 2, "nesting too deep"),
        ("a: 2026-13-45\n", 2, "not a valid date"),
        ('a: "\\ud800"\n', 2, "invalid YAML"),
    ],
)
def test_row42_hostile_yaml_is_a_page_error_with_file_and_line(text, line, words):
    with hang_guard(20), pytest.raises(PageError) as caught:
        safe_load(text, "wiki/x.md", first_line=2)
    message = str(caught.value)
    assert message.startswith(f"wiki/x.md:{line}: "), message
    assert words in message
    assert "\n" not in message


def test_row42_no_yaml_tag_runs_code(tmp_path):
    marker = tmp_path / "pwned"
    with pytest.raises(PageError):
        safe_load(f"a: !!python/object/apply:os.system ['touch {marker}']\n")
    assert not marker.exists()


TYPED_SCHEMA = {
    "type": "object",
    "properties": {"commit": {"type": "string"}, "enabled": {"type": "boolean"}, "code": {"type": "string"}},
}


@pytest.mark.parametrize(
    "text, key, loaded",
    [
        ("commit: 0123456\n", "commit", 42798),  # YAML 1.1 octal: a short sha of octal digits is an int
        ("commit: 1234567\n", "commit", 1234567),
        ("code: no\n", "code", False),  # the Norway problem
        ("code: 052\n", "code", 42),
        ("enabled: no\n", "enabled", False),
    ],
)
def test_row42_yaml_typing_is_what_the_schema_judges(monkeypatch, tmp_path, text, key, loaded):
    data = safe_load(text)
    assert data[key] == loaded and type(data[key]) is type(loaded)
    from wikiengine.core import validators

    # the schema's one source is its text: the loaded form and the compiled validator come from it
    monkeypatch.setattr(schemas, "schema_text", lambda name: json.dumps(TYPED_SCHEMA))
    monkeypatch.setattr(validators, "_COMPILED", {})
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))  # the generated validator is kept per user
    schemas._validator.cache_clear()
    schemas.load_schema.cache_clear()
    try:
        if key == "enabled":
            schemas.check(data, "typed", "p.md", key_lines(text, 2))
        else:
            with pytest.raises(SchemaError) as caught:
                schemas.check(data, "typed", "p.md", key_lines(text, 2))
            assert str(caught.value).startswith(f"p.md:2: {key}: ")
            assert "is not of type 'string'" in str(caught.value)
    finally:
        schemas._validator.cache_clear()
        schemas.load_schema.cache_clear()


def test_quoted_values_stay_strings_and_dates_become_iso_text():
    data = safe_load("commit: '0123456'\ncode: 'no'\ncreated: 2026-03-18\nat: 2026-03-18 10:00:00\n")
    assert data == {"commit": "0123456", "code": "no", "created": "2026-03-18", "at": "2026-03-18T10:00:00"}


def test_key_lines_point_at_nested_keys_and_list_items():
    text = "a: 1\nb:\n  c: 2\n  d:\n    - x\n    - y: 3\n"
    lines = key_lines(text, first_line=10)
    assert lines[("a",)] == 10
    assert lines[("b", "c")] == 12
    assert lines[("b", "d", 1)] == 15
    assert lines[("b", "d", 1, "y")] == 15
    assert line_of(lines, ("b", "d", 0, "missing")) == 14
    assert line_of(lines, ("zzz",)) == 10


def test_roundtrip_update_keeps_comments_order_and_quotes():
    text = "# head comment\nb: 'quoted'  # why\na: 1\nc: [1, 2]\n"
    out = roundtrip_update(text, {"a": 2, "new": "x", "c": None})
    assert out == "# head comment\nb: 'quoted'  # why\na: 2\nnew: x\n"


def test_roundtrip_update_on_bad_yaml_is_a_page_error():
    with pytest.raises(PageError):
        roundtrip_update("a: [\n", {"a": 1}, "p.md")
    with pytest.raises(PageError):
        roundtrip_update("- 1\n", {"a": 1}, "p.md")


yaml_pieces = st.sampled_from(
    list("ab:- \n[]{}&*!|>'\"#%@`?,.0123456789\t\\")
    + ["\x85", "\u2028", "\ufeff", "\x00", "\x07", "2024-01-01", "2024-13-45", "no", "~", "null", "<<", "---", "...",
       ": ", "- ", "!!", "&a ", "*a", "!!python/name:os.system", "\n  ", "? "]
)
yaml_texts = st.one_of(st.text(max_size=80), st.lists(yaml_pieces, max_size=50).map("".join))


@settings(max_examples=1500, deadline=None, suppress_health_check=list(HealthCheck))
@given(yaml_texts)
def test_row49_fuzz_safe_load_raises_only_page_errors(text):
    with hang_guard(20):
        try:
            safe_load(text, "f.md", 2)
        except PageError as err:
            assert str(err).startswith("f.md:") and "\n" not in str(err)
        key_lines(text)  # never raises


@settings(max_examples=500, deadline=None, suppress_health_check=list(HealthCheck))
@given(yaml_texts)
def test_row49_fuzz_roundtrip_update_raises_only_page_errors(text):
    try:
        out = roundtrip_update(text, {"status": "supported"}, "f.md")
    except PageError as err:
        assert str(err).startswith("f.md: ") and "\n" not in str(err)
        return
    try:
        assert safe_load(out)["status"] == "supported"
    except PageError:
        pass  # what ruamel accepts and writes back, the strict reader may still refuse (aliases, tags)


def test_roundtrip_update_on_an_impossible_date_is_a_page_error():
    with pytest.raises(PageError, match="out of range"):
        roundtrip_update("created: 0000-00-00\n", {"a": 1}, "p.md")


def test_a_writers_edit_of_a_block_entry_rewrites_only_that_entry():
    text = "id: v042\nmetrics:\n  mfu: 41.3\n  tps: 900\ntags:\n- a\nstatus: in_progress\n"
    out = roundtrip_update(text, {"metrics": {"mfu": 42.0}, "tags": None, "status": "filed"})
    assert out == "id: v042\nmetrics:\n  mfu: 42.0\nstatus: filed\n"


def test_a_writers_scalar_edit_rewrites_only_its_lines():
    text = "id: v042\nstatus: in_progress\ncreated: 2026-06-01\nmetrics:\n  mfu: 41.3\nnote: 'kept: quoted'\n"
    out = roundtrip_update(text, {"status": "filed", "verdict": "supported", "verified_at": dt.date(2026, 6, 2)})
    assert out == ("id: v042\nstatus: filed\ncreated: 2026-06-01\nmetrics:\n  mfu: 41.3\nnote: 'kept: quoted'\n"
                   "verdict: supported\nverified_at: 2026-06-02\n")


@pytest.mark.parametrize("text, updates", [
    ("status: in_progress  # set by the stub\n", {"status": "filed"}),  # a comment: ruamel keeps it
    ("status: >\n  in progress\n", {"status": "filed"}),  # a block scalar spans lines
    ("tags:\n- a  # the first\n", {"tags": ["a", "b"]}),  # a comment inside the entry
    ('"status": x\n', {"status": "filed"}),  # a quoted key: the line edit would duplicate it
])
def test_edits_the_line_path_cannot_prove_go_through_ruamel(text, updates):
    out = roundtrip_update(text, updates)
    assert safe_load(out) == {**safe_load(text), **updates}
    if "# set by the stub" in text:  # a comment beside a replaced scalar survives
        assert "# set by the stub" in out


# Values as writers write them: no control characters (ruamel.yaml itself turns a NEL into a space).
_values = st.text(st.characters(blacklist_categories=("Cc", "Cs", "Zl", "Zp")), max_size=12)


@given(st.dictionaries(st.sampled_from(["id", "status", "created", "note", "mfu"]),
                       st.one_of(_values, st.integers(), st.floats(allow_nan=False), st.booleans()), max_size=4),
       st.dictionaries(st.sampled_from(["status", "verdict", "note", "mfu", "metrics"]),
                       st.one_of(st.none(), _values, st.integers(), st.booleans(),
                                 st.dictionaries(st.sampled_from(["mfu", "tps"]), st.integers(), min_size=1),
                                 st.lists(_values, min_size=1, max_size=3)), max_size=3))
@settings(max_examples=200, deadline=None)
def test_property_an_update_yields_exactly_the_updated_mapping(start, updates):
    import yaml

    text = yaml.safe_dump(start, allow_unicode=True) if start else ""
    expected = {k: v for k, v in {**start, **updates}.items() if v is not None}
    assert (safe_load(roundtrip_update(text, updates)) or {}) == expected
