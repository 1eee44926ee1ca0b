"""The fast H2 line scan agrees with markdown-it-py (CommonMark) on every input.

``find_h2`` may use its own line scan only where that scan is certain; these tests
compare it with ``markdown_it_h2`` on documents generated from a grammar of the lines
that make a scan go wrong (fences with longer closers, indented code, HTML blocks,
setext underlines, lists, block quotes, tabs), on the example wiki and on a sample of
the generated benchmark corpus.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.lint_support import gen_wiki
from wikiengine.core.page import _scan_h2, find_h2, load_page, markdown_it_h2, split_lines

REPO = Path(__file__).resolve().parent.parent

INDENTS = ["", "", "", " ", "  ", "   ", "    ", "     ", "\t", " \t", "  \t"]
MARKERS = [
    # ATX headings, real and not
    "## Title", "##", "## ", "## a ##", "## b #", "## c \\#", "##\tTab", "## \u00a0nbsp\u00a0", "##x", "#x", "#",
    "# H1", "### H3", "###### H6", "####### seven", "#5 issue", "## \x00nul",
    # fences: backticks, tildes, longer closers, info strings, fake closers
    "```", "````", "`````", "```python", "``` ```", "```` ```", "``` a`b", "```\t", "~~~", "~~~~", "~~~~~",
    "~~~ yaml", "~~~ x`y", "~~~ ~~~", "`` not a fence", "~~ not a fence",
    # indented code is produced by INDENTS; HTML blocks of each kind
    "<div>", "</div>", "<!-- comment", "-->", "<!-- one line -->", "<pre>", "</pre>", "<script>", "</script>",
    "<!--", "<!-->", "<!---->", "-->", "a -->", "<!-- x --> tail", "<!-- wiki-lint: disable EXP001 -->", "--!>",
    "<?php", "?>", "<!DOCTYPE html>", "<![CDATA[", "]]>", "<custom-tag>", "<a href='x'>", "<br/>",
    # setext underlines and thematic breaks
    "---", "===", "=", "-", "--", "***", "___", "- - -", "= =", "---  ",
    # lists and block quotes, with headings and fences inside
    "- item", "* item", "+ item", "1. item", "2) item", "- ## in list", "- ```", "-", "1.", "10. ten",
    "> quote", "> ## in quote", ">", "> ```", ">> deeper", "> - item",
    # paragraphs, tables, references
    "text", "text ## not", "| a | b |", "|---|---|", "[ref]: /url", "[ref]:", "'title", "\\## escaped",
    "", "", "",
]


def line_strategy():
    marker_line = st.builds(lambda indent, marker: indent + marker, st.sampled_from(INDENTS), st.sampled_from(MARKERS))
    noise_line = st.text(alphabet="#`~<>-=*_ |[]:!\t abc>", max_size=8)
    return st.one_of(marker_line, marker_line, marker_line, noise_line)


documents = st.builds(
    lambda lines, newline, final: newline.join(lines) + (newline if final else ""),
    st.lists(line_strategy(), max_size=14),
    st.sampled_from(["\n", "\r\n", "\r"]),
    st.booleans(),
)


@settings(max_examples=3000, deadline=None, suppress_health_check=list(HealthCheck))
@given(documents)
def test_find_h2_agrees_with_markdown_it_on_generated_documents(text):
    lines = split_lines(text)
    assert find_h2(lines) == markdown_it_h2(lines)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("##x\n---\n", [(0, 2, "##x")]),  # not an ATX heading, so a setext paragraph
        ("#hashtag\n---\n## y\n", [(0, 2, "#hashtag"), (2, 1, "y")]),
        ("```\n``` ```\n## inside\n", []),  # '``` ```' does not close the fence
        ("````\n```\n## inside\n````\n## out\n", [(4, 1, "out")]),  # a shorter run does not close
        ("~~~\n## inside\n~~~~~\n## out\n", [(3, 1, "out")]),  # a longer closer does
        ("    ## code\n## real ##\n", [(1, 1, "real")]),
        ("- item\n  ## in list\n## out\n", [(2, 1, "out")]),
        ("> ## quoted\n## out\n", [(1, 1, "out")]),
        ("Title\n---\nbody\n", [(0, 2, "Title")]),
        ("<div>\n## in html\n</div>\n\n## out\n", [(4, 1, "out")]),
        ("<!-- one -->\n## A\n<!--\n## hidden\n\n-->\n## B\n", [(1, 1, "A"), (6, 1, "B")]),
        ("text\n<!-- c -->\n---\n## A\n", [(3, 1, "A")]),  # a comment ends the paragraph: --- is a rule
        ("<!-->\n## A\n", [(1, 1, "A")]),
    ],
)
def test_find_h2_known_cases(text, expected):
    lines = split_lines(text)
    assert find_h2(lines) == expected
    assert markdown_it_h2(lines) == expected


def _example_pages():
    return sorted((REPO / "wiki").rglob("*.md"))


def test_scan_agrees_on_every_example_wiki_page():
    pages = _example_pages()
    assert pages, "the example wiki has pages"
    for path in pages:
        body = load_page(path).body
        lines = split_lines(body)
        assert find_h2(lines) == markdown_it_h2(lines), path


def test_scan_agrees_on_a_sample_of_the_benchmark_corpus(tmp_path):
    gen = gen_wiki()
    gen.generate(tmp_path, 240, seed=7)
    pages = sorted(tmp_path.rglob("*.md"))
    assert len(pages) >= 240
    scanned = 0
    for path in pages:
        lines = split_lines(load_page(path, parse_yaml=False).body)
        expected = markdown_it_h2(lines)
        assert find_h2(lines) == expected, path
        # The corpus is what the fast path is for: it must not fall back on it.
        if _scan_h2(lines) is not None:
            scanned += 1
    assert scanned == len(pages)


EXAMPLE_BODIES = [split_lines(load_page(p).body) for p in _example_pages()]


@settings(max_examples=1500, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    st.sampled_from(range(len(EXAMPLE_BODIES))),
    st.lists(st.tuples(st.floats(0, 1), line_strategy()), min_size=1, max_size=4),
)
def test_find_h2_agrees_on_example_pages_with_hostile_lines_spliced_in(page_index, insertions):
    lines = list(EXAMPLE_BODIES[page_index])
    for where, line in insertions:
        lines.insert(int(where * len(lines)), line + "\n")
    assert find_h2(lines) == markdown_it_h2(lines)
