"""Frontmatter read from libyaml's node tree gives exactly what the strict loader gives.

``core.yaml_strict._quick_load`` builds strings, lists and mappings itself and leaves anything
else to the strict loader; these tests compare ``load`` (which uses it) with the
strict loader's own answer, value or refusal, on generated YAML and on hand-picked
edge cases: duplicate keys (dates and booleans that collide too), merge keys, complex
keys, every implicit scalar type, impossible dates, deep nesting.
"""

from __future__ import annotations

import datetime as dt

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wikiengine.core.errors import PageError
from wikiengine.core.yaml_strict import _UNSURE, _quick_load, _StrictLoader, load, normalise


def _reference(text: str):
    """What the strict loader alone answers: the value, or the PageError load makes of its error."""
    import wikiengine.core.yaml_strict as yaml_strict

    quick = yaml_strict._quick_load
    yaml_strict._quick_load = lambda _text: _UNSURE
    try:
        return load(text, "p.md", 2)
    except PageError as err:
        return ("error", str(err))
    finally:
        yaml_strict._quick_load = quick


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
