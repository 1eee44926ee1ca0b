"""Frontmatter read line by line, or from libyaml's node tree, gives exactly what the strict loader gives.

``core.yaml_strict._line_load`` reads a text of flat ``key: value`` lines itself, and
``_quick_load`` builds strings, lists and mappings from libyaml's nodes; each leaves anything
else to the next. These tests compare ``load`` (which uses both) with the strict loader's
own answer, value or refusal, on generated YAML and on hand-picked edge cases: duplicate
keys (dates and booleans that collide too), merge keys, complex keys, every implicit scalar
type, impossible dates, deep nesting, and the characters libyaml refuses or breaks lines on.
"""

from __future__ import annotations

import datetime as dt

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wikiengine.core.errors import PageError
from wikiengine.core.yaml_strict import _UNSURE, _line_load, _quick_load, _StrictLoader, load, normalise


def _reference(text: str):
    """What the strict loader alone answers: the value, or the PageError load makes of its error."""
    import wikiengine.core.yaml_strict as yaml_strict

    line, quick = yaml_strict._line_load, yaml_strict._quick_load
    yaml_strict._line_load = yaml_strict._quick_load = lambda _text: _UNSURE
    try:
        return load(text, "p.md", 2)
    except PageError as err:
        return ("error", str(err))
    finally:
        yaml_strict._line_load, yaml_strict._quick_load = line, quick


def _ours(text: str):
    try:
        return load(text, "p.md", 2)
    except PageError as err:
        return ("error", str(err))


def _same(text: str) -> None:
    ours, reference = _ours(text), _reference(text)
    assert ours == reference and repr(ours) == repr(reference)  # 1 == True == 1.0: the types must agree too


SCALARS = ["a", "plain text", "'quoted'", '"dq: x"', "1", "-7", "0o17", "017", "0x1F", "1_000", "1:20", "3.5", "1e3",
           "1.5e3", ".inf", "-.Inf", ".nan", "true", "False", "yes", "NO", "on", "off", "y", "~", "null", "", "2026-04-02",
           "2026-13-45", "2026-04-02 10:00:00", "2026-04-02T10:00:00Z", "2026-04-02t10:00:00.5+02:00", "=", "<<",
           "'2026-04-02'", "[a, 1, true]", "[]", "{a: 1}", "{}", "[a, [b, [c]]]", "|\n  block\n", ">-\n  folded\n",
           "x # comment", "'it''s'", '"\\u00e9\\t"', "- a\n- b", "\n  - 1\n  - 2"]
KEYS = ["title", "type", "tags", "created", "x", "True", "true", "1", "2026-04-02", "'2026-04-02'", "null", "~", "<<",
        "=", "? [a]", "'k'", "a b", "-", "3.5", "yes"]


def _entry(key: str, value: str) -> str:
    if key.startswith("?"):
        return f"{key}\n: {value}\n"
    return f"{key}: {value}\n" if not value.startswith(("\n", "-")) else f"{key}:\n{value if value.startswith(chr(10)) else '  ' + value.replace(chr(10), chr(10) + '  ')}\n"


documents = st.lists(st.tuples(st.sampled_from(KEYS), st.sampled_from(SCALARS)), max_size=8).map(
    lambda entries: "".join(_entry(k, v) for k, v in entries))


@settings(max_examples=1500, deadline=None, suppress_health_check=list(HealthCheck))
@given(documents)
def test_quick_frontmatter_equals_the_strict_loader_on_generated_documents(text):
    _same(text)


@settings(max_examples=500, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.text(alphabet="ab:- \n[]{},'\"#?<=!&*|>1.~", max_size=40))
def test_quick_frontmatter_equals_the_strict_loader_on_yaml_noise(text):
    _same(text)


@pytest.mark.parametrize("text", [
    "a: 1\na: 2\n",  # a duplicate key
    "2026-04-02: a\n'2026-04-02': b\n",  # a date key and its ISO text collide
    "true: a\nTrue: b\n",  # two spellings of one boolean
    "base: &b {x: 1}\n",  # an anchor (refused before any loading)
    "<<: {x: 1}\ny: 2\n",  # a merge key
    "? [a, b]\n: c\n",  # a complex key
    "d: 2026-02-30\n",  # an impossible date
    "when: 2026-04-02 10:00:00+02:00\n",
    "n: 123456789012345678901234567890\n",
    "deep: " + "[" * 40 + "]" * 40 + "\n",  # deeper than the quick path goes
    "deep: " + "[" * 2000 + "]" * 2000 + "\n",  # too deep for the loader
    "", "# only a comment\n", "just a string\n", "- a list\n", "a: b: c\n",
])
def test_quick_frontmatter_edge_cases(text):
    _same(text)


LINE_KEYS = ["title", "type", "x-y", "_k", "a1", "tags", "yes", "true", "Null", "on", "1", "k k", "-", "é"]
LINE_VALUES = [
    "v001 splash", "codebase", "a6d33f3ef5ea4d8c2a7e7bfd0e0ce7d78ff47e9b", "+1-3% MFU", "8B/v6e-8", "a, b", "a]", "a [b]",
    "x  y", "trailing  ", "-1", "- x", "-", "?x", ":x", "1:20", "a #b", "a#b", "a: b", "a:b", "é ü — ±", "x\x85y",
    "x\u2028y", "\ufeffx", "x\ty", "x\x7fy", "\xa0x", "x\ud800", '"a: b"', '"a\\"b"', '"a\\nb"', "'a''b'", "'a: #'", '"é"',
    '"x" y', "'x", "[a, b]", "[]", "[ ]", "[a, ]", "[a,b]", "[ a , b ]", '["a, b", c]', '["x]", y]', "[1, 2.5, true, ~, 2026-04-02]",
    "[a b, c]", "[[a]]", "[a]b", "[a: b]", "{a: 1}", "2026-04-02", "2026-02-30", "2026-04-02 10:00:00", "0o17", "017", "0x1F",
    "1_000", ".inf", "1e3", "=", "~", "null", "yes", "Off", "", "  ", "&a x", "*a", "!!str x", "|", ">-", "%x", "@x", "`x`",
    "123456789012345678901234567890" * 200,
]
LINE_OTHERS = ["# a comment", "", "  indented: x", "- item", "---", "...", "key:value", "key :x", "\tk: v", "k:\tv"]
line_documents = st.tuples(
    st.lists(st.one_of(st.builds(lambda k, v: f"{k}: {v}", st.sampled_from(LINE_KEYS), st.sampled_from(LINE_VALUES)),
                       st.sampled_from(LINE_OTHERS)), max_size=8),
    st.sampled_from(["\n", "\r\n"]), st.booleans(),
).map(lambda parts: parts[1].join(parts[0]) + (parts[1] if parts[2] else ""))


@settings(max_examples=2000, deadline=None, suppress_health_check=list(HealthCheck))
@given(line_documents)
def test_line_frontmatter_equals_the_strict_loader_on_generated_lines(text):
    """The line path either answers as the strict loader does, or leaves the text to it; asked
    twice (the second time from its lines kept), it answers the same with new lists."""
    first = _line_load(text)
    if first is not _UNSURE:
        reference = _reference(text)
        assert first == reference and repr(first) == repr(reference)
        again = _line_load(text)
        assert again == first and all(again[k] is not v for k, v in first.items() if isinstance(v, list))
    _same(text)


def test_line_frontmatter_takes_the_frontmatter_pages_hold():
    """What filed and generated pages hold is read by the line path, not left to libyaml."""
    for text in ('title: "v001: int8 weight matmuls in the MLP"\ntype: experiment\nhypothesis: splash-attention-046\n'
                 'variant: "8B/v6e-8"\ncommit: "a3c7988"\nverdict: supported\ntags: [experiment, int8-matmul]\n'
                 'created: 2026-04-01\nupdated: 2026-04-01\n',
                 'title: bf16-grads-000\nvariants: ["27B/v5p-8", "4B/v5p-8"]\nexpected_gain: "+1-3% MFU"\neffort: S\n'
                 'generated: true\nrank: 3\n# a comment\n\nnote:\n'):
        data = _line_load(text)
        assert data is not _UNSURE and data == _reference(text)


def test_quick_frontmatter_builds_new_containers_and_iso_dates():
    text = "tags: [a, b]\ncreated: 2026-04-02\nnested: {when: 2026-04-03, list: [2026-04-04]}\n"
    data = _quick_load(text)
    assert data == normalise(yaml.load(text, Loader=_StrictLoader))
    assert data["created"] == "2026-04-02" and data["nested"] == {"when": "2026-04-03", "list": ["2026-04-04"]}
    assert not any(isinstance(v, dt.date) for v in data.values())
    assert _quick_load(text)["tags"] is not data["tags"]
    assert _quick_load("a: 1\na: 2\n") is _UNSURE


@settings(max_examples=1500, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.one_of(st.sampled_from(SCALARS + KEYS), st.text(alphabet="0123456789.:-+_eEoxTtZz nul~yesNOfa", max_size=24)),
       st.booleans())
def test_a_remembered_tag_is_the_tag_pyyaml_resolves(value, twice):
    """The strict loader remembers each plain scalar's tag: the same as PyYAML's own
    resolver gives, the first time and every time after."""
    loader = _StrictLoader("")
    try:
        for _ in range(2 if twice else 1):
            for implicit in ((True, False), (False, True)):
                assert loader.resolve(yaml.ScalarNode, value, implicit) == yaml.SafeLoader.resolve(loader, yaml.ScalarNode,
                                                                                                  value, implicit)
    finally:
        loader.dispose()
