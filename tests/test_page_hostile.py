"""Hostile markdown: pathological nesting under a deadline (row 40) and fuzzing (row 49).

The pathological inputs follow commonmark-spec's ``test/pathological_tests.py`` (10^4 to
10^5 repetitions), plus block-level ones aimed at the H2 finder. They run in a child
process with a timeout: the guard catches a hang, it does not assert a speed.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wikiengine.core.errors import PageError
from wikiengine.core.page import find_h2, markdown_it_h2, parse_page, split_lines

PATHOLOGICAL = {
    "nested strong emph": "*a **a " * 20000 + "b" + " a** a*" * 20000,
    "many emph closers with no openers": "a_ " * 50000,
    "many emph openers with no closers": "_a " * 50000,
    "many link closers with no openers": "a]" * 50000,
    "many link openers with no closers": "[a" * 50000,
    "mismatched openers and closers": "*a_ " * 50000,
    "openers and closers multiple of 3": "a**b" + "c* " * 50000,
    "link openers and emph closers": "[ a_" * 50000,
    "pattern [ (]( repeated": "[ (](" * 50000,
    "nested brackets": "[" * 50000 + "a" + "]" * 50000,
    "nested block quotes": "> " * 50000 + "a\n",
    "deeply nested lists": "".join("  " * i + "* a\n" for i in range(1000)),
    "nested lists on one line": "- " * 50000 + "a\n",
    "U+0000 in input": "abc\u0000de\u0000\n## \u0000x\n" * 1000,
    "backticks": "".join("e" + "`" * i for i in range(1, 2000)),
    "unclosed links A": "[a](<b" * 30000,
    "unclosed links B": "[a](b" * 30000,
    "unclosed <!--": "</" + "<!--" * 30000,
    "many fences": "```\n## in code\n" * 20000,
    "many headings": "## h\n" * 50000,
    "many setext underlines": "t\n---\n" * 20000,
    "html block then headings": "<div>\n\n" + "## h\n- x\n> y\n" * 10000,
    "alternating quote and list": "> - " * 20000 + "## x\n",
    "long line": "a" * 1000000 + "\n## end\n",
    "tabs and spaces": " \t" * 50000 + "## x\n",
}

CHILD = textwrap.dedent(
    """
    import json, sys
    from wikiengine.core.errors import PageError
    from wikiengine.core.page import parse_page, find_h2, split_lines
    cases = json.load(sys.stdin)
    for name, text in cases.items():
        print("start", name, flush=True)
        for body in (text, "<div>\\n\\n" + text, "---\\ntitle: x\\n---\\n" + text):
            try:
                page = parse_page(body, "hostile.md")
            except PageError as err:
                print("page-error", name, err, flush=True)
                continue
            assert page.to_text() == body, name
        print("done", name, flush=True)
    """
)


def test_row40_pathological_markdown_parses_under_a_deadline():
    # 240 s is a hang guard on a busy 2-core machine, not a speed target (it takes a few seconds).
    try:
        result = subprocess.run(
            [sys.executable, "-c", CHILD],
            input=json.dumps(PATHOLOGICAL),
            capture_output=True,
            text=True,
            timeout=240,
        )
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout or b""
        out = out.decode() if isinstance(out, bytes) else out
        last = out.strip().splitlines()[-1] if out.strip() else "(nothing)"
        raise AssertionError(f"pathological input hung; last progress line: {last}") from None
    assert result.returncode == 0, result.stderr[-2000:]
    done = [line for line in result.stdout.splitlines() if line.startswith("done ")]
    assert len(done) == len(PATHOLOGICAL)
    assert "page-error" not in result.stdout  # none of these is bad input: all must parse


def test_row40_pathological_block_structure_still_finds_the_right_sections():
    text = "> " * 1000 + "## quoted\n## real\n" + "- " * 1000 + "## listed\n"
    lines = split_lines(text)
    assert find_h2(lines) == markdown_it_h2(lines) == [(1, 1, "real")]


page_pieces = st.sampled_from(
    ["---\n", "...\n", "title: x\n", "a: [\n", "a: !!python/name:os.system\n", "## H\n", "```\n", "~~~\n", "<div>\n",
     "> ", "- ", "\t", "    ", "\r\n", "\r", "\n", "\ufeff", "\x00", "é", "#", "=", "*", "[", "]", "`"]
)
page_texts = st.one_of(st.text(max_size=120), st.lists(page_pieces, max_size=40).map("".join))


@settings(max_examples=1500, deadline=None, suppress_health_check=list(HealthCheck))
@given(page_texts)
def test_row49_fuzz_parse_page_raises_only_page_errors(text):
    try:
        page = parse_page(text, "fuzz.md")
    except PageError as err:
        assert str(err).startswith("fuzz.md:") and "\n" not in str(err)
        return
    assert page.to_text() == text
    lines = split_lines(page.body)
    assert find_h2(lines) == markdown_it_h2(lines)


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.binary(max_size=200))
def test_row49_fuzz_load_page_bytes(tmp_path_factory, data):
    path = tmp_path_factory.mktemp("fuzz") / "page.md"
    path.write_bytes(data)
    from wikiengine.core.page import load_page

    try:
        page = load_page(path)
    except PageError as err:
        assert str(err).startswith(f"{path}") and "\n" not in str(err)
        return
    assert page.to_bytes() == data
