"""The engine code of regular expressions is kept per user (core/regex_code.py, on
core/usercache.py's KeptMap): the next process parses none of the patterns it kept, and
each pattern it builds from the kept code is the one ``re`` compiles; damaged or foreign
entries are compiled again, and a pattern holding a secret is never kept."""

from __future__ import annotations

import json
import marshal
import os
import re
from unittest import mock

from hypothesis import given, settings
from hypothesis import strategies as st

from tests import kept_support
from tests.kept_support import run_in_a_process
from wikiengine.core import regex_code
from wikiengine.core.usercache import _checksum

PATTERNS = [
    ["abc", 0], ["(?P<year>\\d{4})-(?P<month>\\d\\d)", 0], ["^[ \\t]*[-*+][ \\t]+\\[(?P<done>[ xX])\\]", re.M],
    ["(?i)never (?:ran|executed)", 0], ["\\bfoo(?=bar)|(?<!x)baz", re.I | re.S], ["[^\\x00-\\x7f]+", re.A],
    ["\n  (?P<ws>[ \\t]+)  # spaces\n  | (?P<word>\\w+)\n", re.X], ["(a)(b)?(?(2)c|d)", 0],
]

# Compiles argv[1]'s [pattern, flags] pairs (bytes where the pattern starts with "b:") from a
# module named as argv[2] says, prints how many patterns re parsed and whether each equals re's
# own compile, and keeps what it compiled as the CLI does when it ends.
SCRIPT = r'''
import json, re, sys
from re import _parser
from wikiengine.core import regex_code, usercache
parsed = []
real_parse = _parser.parse
_parser.parse = lambda p, flags=0, *rest: parsed.append(p) or real_parse(p, flags, *rest)
same = []
LOOP = """
for text, flags in json.loads(sys.argv[1]):
    pattern = text[2:].encode() if text.startswith("b:") else text
    kept = re.compile(pattern, flags)
    re.purge()
    fresh = regex_code._original(pattern, flags)
    same.append(kept == fresh and kept.groupindex == fresh.groupindex and kept.groups == fresh.groups
                and kept.flags == fresh.flags)
"""
exec(LOOP, {"__name__": sys.argv[2], "json": json, "re": re, "sys": sys, "regex_code": regex_code, "same": same})
print(json.dumps({"parsed": len(parsed), "same": same}))
usercache.save_all()
'''


def compile_in_a_process(patterns: list, cache, env: dict | None = None, module: str = "wikiengine.probe") -> dict:
    saved = {name: os.environ.get(name) for name in env or {}}
    os.environ.update(env or {})
    try:
        return run_in_a_process(SCRIPT, json.dumps(patterns), module, cache=cache)
    finally:
        for name, value in saved.items():
            os.environ.pop(name) if value is None else os.environ.__setitem__(name, value)


def kept(cache) -> tuple[str, dict, dict]:
    path = kept_support.kept_file(cache, "regex", regex_code._KEPT.name)
    assert path.stat().st_mode & 0o777 == 0o600
    return kept_support.read_map(path)


def met_twice(patterns: list, cache, **options) -> dict:
    """Compile ``patterns`` in two processes (a pattern is kept when a second process meets it)."""
    compile_in_a_process(patterns, cache, **options)
    return compile_in_a_process(patterns, cache, **options)


def test_the_next_process_parses_none_of_the_patterns_it_kept(tmp_path):
    patterns = [*PATTERNS, ["b:[\\x80-\\xff]+(?P<tail>\\d)", 0]]
    first = compile_in_a_process(patterns, tmp_path)
    second = compile_in_a_process(patterns, tmp_path)
    again = compile_in_a_process(patterns, tmp_path)
    # a process that compiles parses each pattern twice (its own compile and re's, for the comparison);
    # the first only remembers having met them, the second keeps them, the third parses none
    assert first["parsed"] == second["parsed"] == 2 * len(patterns) and again["parsed"] == len(patterns)
    assert all(first["same"]) and all(again["same"]) and len(again["same"]) == len(patterns)
    _stamp, entries, seen = kept(tmp_path)
    assert f"{int(re.M)}\0{PATTERNS[2][0]}" in entries and b"0\0[\\x80-\\xff]+(?P<tail>\\d)" in entries
    assert not seen  # the checksums of kept patterns are dropped


def test_a_pattern_made_anew_by_every_process_is_never_kept(tmp_path):
    """The standard tokenizer builds its pattern from a set, in the process's hash order: a
    new text in each process. Such patterns leave a checksum each, never their code."""
    anew = ["(?:" + "|".join(f"p{(number + k) % 4}" for k in range(4)) + ")x" for number in range(4)]
    for pattern in anew:
        compile_in_a_process([[pattern, 0], ["steady", 0]], tmp_path)
    _stamp, entries, seen = kept(tmp_path)
    assert "0\0steady" in entries and _checksum("0\0steady") not in seen
    assert not any(f"0\0{pattern}" in entries for pattern in anew)
    assert all(_checksum(f"0\0{pattern}") in seen for pattern in anew)


def test_damaged_or_foreign_entries_are_compiled_again(tmp_path):
    met_twice(PATTERNS, tmp_path)
    path = kept_support.kept_file(tmp_path, "regex", regex_code._KEPT.name)
    stamp, entries, seen = kept(tmp_path)
    key = f"0\0{PATTERNS[0][0]}"
    entries[key] = marshal.dumps((0, [17, 4, 2], 0, {}, (None,)))  # code _sre refuses
    entries[f"0\0{PATTERNS[1][0]}"] = b"not marshal"
    kept_support.write_map(path, stamp, entries, seen)
    damaged = compile_in_a_process(PATTERNS, tmp_path)
    assert all(damaged["same"]) and damaged["parsed"] == len(PATTERNS) + 2
    kept_support.write_map(path, "another interpreter", kept(tmp_path)[1])
    foreign = compile_in_a_process(PATTERNS, tmp_path)
    assert all(foreign["same"]) and foreign["parsed"] == 2 * len(PATTERNS)


def test_a_pattern_holding_a_secret_is_never_kept(tmp_path):
    token = "hf_" + "Q7xT2mVb9LcR4kWz8NpD3sYh6JfG1aE5"
    own = "s3cr3t-Value-of-this-process-42"
    patterns = [["token=" + token, 0], ["(?:alpha|" + own + ")", 0], ["plain", 0], ["x" * (regex_code.MAX_PATTERN + 1), 0]]
    compile_in_a_process(patterns, tmp_path, env={"HF_TOKEN": own})
    _stamp, entries, seen = kept(tmp_path)
    assert "0\0plain" not in entries and _checksum("0\0plain") in seen  # met once: its checksum alone
    assert not {_checksum(f"0\0{pattern}") for pattern, _flags in patterns[:2]} & set(seen)
    compile_in_a_process(patterns, tmp_path, env={"HF_TOKEN": own})
    _stamp, entries, seen = kept(tmp_path)
    assert "0\0plain" in entries
    assert not any(len(key) > regex_code.MAX_PATTERN for key in entries)
    held = kept_support.kept_file(tmp_path, "regex", regex_code._KEPT.name).read_bytes()
    assert token.encode() not in held and own.encode() not in held


def test_another_programs_patterns_are_not_kept(tmp_path):
    """A pattern of a module outside this package, the standard library and the page parsers
    (torch's, in a demo) is compiled as before and never kept; the package's own is."""
    met_twice([["torch-only-(?P<x>y)", 0]], tmp_path, module="torch.fx.graph")
    path = kept_support.kept_file(tmp_path, "regex", regex_code._KEPT.name)
    assert not path.exists() or "0\0torch-only-(?P<x>y)" not in kept(tmp_path)[1]
    met_twice([["torch-only-(?P<x>y)", 0]], tmp_path, module="yaml.reader")
    assert "0\0torch-only-(?P<x>y)" in kept(tmp_path)[1]


ATOMS = st.sampled_from(["a", "\\d", "\\w+", "[a-c]", "[^x\\n]", ".", "\\b", "\\s*", "é", "\\.", "(?:ab|c)",
                         "(?P<n>x)", "(y)", "\\u00e9", "[\\u0100-\\u017f]"])


@st.composite
def patterns(draw):
    parts = draw(st.lists(ATOMS, min_size=1, max_size=6))
    parts = [p + draw(st.sampled_from(["", "*", "+?", "{2,3}", "?"])) if not p.startswith(("\\b", "(?P")) else p
             for p in parts]
    body = "".join(dict.fromkeys(parts))  # a named group once
    wrap = draw(st.sampled_from(["{}", "^{}$", "(?={}){}", "(?<!q){}", "{}|z", "(?i:{})"]))
    return wrap.replace("{}", body, 1).replace("{}", "")


class InMemory(dict):
    """A KeptMap that keeps in this process only."""

    put = dict.__setitem__


@settings(max_examples=150, deadline=None)
@given(pattern=patterns(), flags=st.sampled_from([0, re.I, re.M | re.S, re.A, re.X, re.I | re.U]))
def test_a_kept_pattern_is_the_one_re_compiles(pattern, flags):
    try:
        fresh = regex_code._original(pattern, flags)
    except re.error:
        return  # not a pattern (an ASCII-only class with a non-ASCII range, say)
    with mock.patch.object(regex_code, "_KEPT", InMemory()) as kept, \
            mock.patch.object(regex_code, "_kept_caller", lambda: True):
        made = regex_code._compile(pattern, flags)  # compiled, and put
        assert len(kept) == 1
        again = regex_code._compile(pattern, flags)  # from the kept code
    for one in (made, again):
        assert one == fresh and one.groupindex == fresh.groupindex and one.groups == fresh.groups
        assert one.flags == fresh.flags and one.pattern == fresh.pattern
    sample = "ab é x\ny 12 ABC" + pattern[:8]
    assert [m.span() for m in again.finditer(sample)] == [m.span() for m in fresh.finditer(sample)]
