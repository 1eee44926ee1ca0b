"""Row 41: the per-block fallback of the link scan finds exactly the links markdown-it finds.

A text the line scan is not certain of goes to markdown-it-py one top-level block at a
time (``core.links._blockwise_links``). These tests compare its links, with their lines,
with a full markdown-it parse of the same text: on documents generated from a grammar of
the lines that make block structure and inline parsing differ (``<``, ``&``, ``\\``,
tabs, HTML blocks of every kind, fences, indented code, reference definitions, lists and
block quotes with lazy lines, link text spread over lines), and on every CommonMark spec
example.
"""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import unquote

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from wikiengine.core.links import _blockwise_links, link_destinations, markdown_it_links, relative_target
from wikiengine.lint.rules._prose import prose_lines

SPEC = Path(__file__).resolve().parent / "data" / "commonmark" / "spec.json"

INDENTS = ["", "", "", "", " ", "  ", "   ", "    ", "\t", "  \t",
           "> ", "- ", "  - ", "-     ", ">     ", "1.     ", "> - ", "- > ", "*    "]  # containers
LINES = [
    # links the line scan is certain of, and links on lines it is not
    "[a](a.md)", "see [b](b.md) and ![i](img/i.png)", "x < y, see [lt](lt.md)", "R&D [amp](amp&amp;.md)",
    "&copy; [e](e.md)", "a \\[not](esc.md) [yes](yes.md)", "tab\t[t](tab.md)", "[sp](<with space.md>)",
    "`[code](code.md)` [real](real.md)", "``[two](two.md)`` [after](after.md)", "<span>[in](in.md)</span>",
    "[spread", "over](spread.md)", "[x](<broken.md)", "[outer [inner](in2.md)](out.md)",
    # reference definitions and uses
    "[ref]: r.md", "[ref]: <r b.md> \"t\"", "[ref]", "[use][ref]", "[other][]", "[ref]:",
    # HTML blocks of each kind
    "<div>", "</div>", "<!-- c -->", "<!--", "-->", "<script>", "</script>", "<pre>", "</pre>", "<?php", "?>",
    "<!DOCTYPE html>", "<![CDATA[", "]]>", "<custom-tag>", "<a href='h.md'>",
    # fences, code, breaks, headings
    "```", "````", "~~~", "```md", "# h [h](h.md)", "## two [t2](t2.md)", "===", "---", "***",
    # containers
    "- [l](l.md)", "* <b>[s](s.md)</b>", "1. [o](o.md)", "2) x & [o2](o2.md)", "> [q](q.md)", "> <div>",
    ">> [qq](qq.md)", "> ```", "- ```", "-", "  [cont](cont.md)", "    [deep](deep.md)",
    # inline HTML and code spans that go on over the next line, an escaped backtick
    "a <span title=\"", "x\">", "b <!-- note", "c <a", "d <?pi", "?> [pi](pi.md)", "\\`:`", "e \\` `",
    "text", "more text", "", "", "",
]


def _line():
    marked = st.builds(lambda indent, line: indent + line, st.sampled_from(INDENTS), st.sampled_from(LINES))
    noise = st.text(alphabet="[]()<>&\\`!#-*> \tab.md:", max_size=12)
    return st.one_of(marked, marked, marked, noise)


documents = st.builds(lambda lines, final: "\n".join(lines) + ("\n" if final else ""),
                      st.lists(_line(), max_size=24), st.booleans())


def _relative(found):
    """``(line, destination)`` of the relative links (the ones LNK001 judges), in document order."""
    return [(line, dest) for line, _col, dest in found if relative_target(dest) is not None]


def _markdown_it_reference(text: str, first_line: int) -> list[tuple[int | None, int, int, str]]:
    """``(line, first, last, destination)`` of the relative links of a full markdown-it parse,
    in document order: ``first``..``last`` the lines of the block that holds the link, and
    ``line`` its line, or None where markdown-it cannot tell it (its line count goes by
    soft breaks, and a code span or inline HTML that crosses a line hides one)."""
    from markdown_it import MarkdownIt

    found = []
    for token in MarkdownIt("commonmark").parse(text):
        if token.type != "inline" or not token.children:
            continue
        first, last = token.map[0] + first_line, token.map[1] - 1 + first_line
        exact = "\n" not in token.content or ("`" not in token.content and "<" not in token.content)
        line = first
        for child in token.children:
            line += child.type in ("softbreak", "hardbreak")
            dest = unquote(child.attrs.get("href" if child.type == "link_open" else "src", ""))
            if child.type in ("link_open", "image") and relative_target(dest) is not None:
                found.append((line if exact else None, first, last, dest))
    return found


def _assert_same_links(found, text: str, first_line: int) -> None:
    reference = _markdown_it_reference(text, first_line)
    assert [dest for _line, dest in found] == [dest for *_lines, dest in reference]
    for (line, _dest), (expected, first, last, _) in zip(found, reference):
        assert line == expected if expected is not None else first <= line <= last


@settings(max_examples=600, deadline=None, suppress_health_check=list(HealthCheck))
@given(documents)
@example("\\`:`\n`[code](code.md)` [real](real.md)")  # the escaped backtick opens no code span
@example("a <span title=\"\n[x](y.md)\">\n")  # a tag's quoted attribute goes on over the line
@example("a <!-- \n[x](y.md) -->\n")  # and a comment in a paragraph
@example("``:`\n`[code](code.md)` [real](real.md)")  # a code span opens on a whole backtick run
def test_row41_blockwise_links_equal_a_full_markdown_it_parse(text):
    _assert_same_links(_relative(_blockwise_links(text, 4)), text, 4)
    _assert_same_links(_relative(link_destinations(text, 4)), text, 4)


def test_row41_blockwise_links_equal_markdown_it_on_every_spec_example():
    for case in json.loads(SPEC.read_text(encoding="utf-8")):
        markdown = case["markdown"]
        assert _relative(_blockwise_links(markdown, 1)) == _relative(markdown_it_links(markdown, 1)), case["example"]


@pytest.mark.parametrize("text, links", [
    ("`\n[a](a.md)\n`", []),  # found by the property above: one code span over three lines
    ("Run `make\n[a](a.md) all` and see [b](b.md).\n", ["b.md"]),
    ("``\n[a](a.md)\n``\n", []),
    ("a `b` c\n[a](a.md)\n", ["a.md"]),  # the backticks pair on their own line: the link stands
])
def test_row41_a_code_span_that_runs_over_lines_hides_the_links_in_it(text, links):
    """A line with a backtick string left open may start a code span that ends lines later,
    in the same paragraph: the line scan must not take the lines between as certain."""
    assert [dest for _line, _col, dest in link_destinations(text)] == links
    assert [dest for _line, _col, dest in _blockwise_links(text, 1)] == links
    assert [dest for _line, _col, dest in markdown_it_links(text)] == links


@pytest.mark.parametrize("text, links", [
    ("- a\n  ```\nb [x](x.md)\n", ["x.md"]),  # the column-0 line ends the item and its fence
    ("- <div>\n  [x](x.md)\n", []),  # an HTML block inside a list item
    (">     [x](x.md)\n", []),  # indented code inside a block quote
    ("- ```\n  [a](a.md)", []),  # a fence inside a list item
    ("-     [x](x.md)\n", []),  # indented code as a list item's first block
    ("1. a\n\n   ```\n   [f](f.md)\n   ```\n[g](g.md)\n", ["g.md"]),
])
def test_row41_fences_html_and_code_inside_containers(text, links):
    """Constructs inside list items and block quotes that the line scans once misread."""
    assert [dest for _line, _col, dest in link_destinations(text)] == links
    assert [dest for _line, _col, dest in markdown_it_links(text)] == links


def test_row41_one_odd_line_sends_only_its_block_to_markdown_it():
    """A page with one line the scan cannot judge keeps exact columns everywhere else:
    only the block that holds the line is parsed by markdown-it (which gives column 1)."""
    page = ("Intro with [first](first.md).\n\n"
            "- item [second](second.md)\n- item [third](third.md)\n\n"
            "A & B see [odd](odd.md) here\nand [odd2](odd2.md).\n\n"
            "```\n[not](fenced.md) <x>\n```\n\n"
            "Last [last](last.md).\n")
    assert link_destinations(page, 10) == [
        (10, 12, "first.md"), (12, 8, "second.md"), (13, 8, "third.md"),
        (15, 1, "odd.md"), (16, 1, "odd2.md"), (22, 6, "last.md"),
    ]


def test_row41_a_reference_definition_anywhere_sends_the_whole_text_to_markdown_it():
    """A definition in one block makes ``[ref]`` a link in another: the text is parsed whole."""
    page = "Use [ref] here & there.\n\nAnd [x](x.md).\n\n[ref]: defined.md\n"
    assert link_destinations(page, 1) == [(1, 1, "defined.md"), (3, 1, "x.md")]
    assert _relative(link_destinations(page.replace("[ref]: defined.md\n", ""), 1)) == [(3, "x.md")]


FRAGMENTS = ["[a](a.md)", "[`c`](c.md)", "[`x", "`](y.md)", "`", "`k`", "![i](i.png)", "!", "[", "]", "(", ")",
             "](", "[t] ", "[n [m](m.md)](o.md)", " ", " ", "\n", "\n", "(p)", '"q"', "'r'", "%20", "b", ".md",
             "| ", "- ", "> ", "1. ", "#L12", "[a](b]c.md)", "[a](b(c).md)", "[a]( d.md 'e' )", "[u](<v.md>)",
             "[`a](b.md)`", "`[a](b.md)`", "[a`](b.md)`", "[a](b`c.md)`", "](`k`", "`[a` ", "b](c.md)", "`x [y`",
             "`](z.md)`", "[`](x)`](y.md)", "[a](x`y`z.md)", "[a `b](c.md)`", "[a](b%20c.md)"]


@settings(max_examples=1500, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.sampled_from(FRAGMENTS), max_size=30).map("".join))
def test_row41_the_one_pass_scan_equals_the_line_scan_on_link_and_code_span_texts(text):
    """The one-pass scan of plain texts (a link that starts after an odd number of backticks
    on its line skipped, brackets and backticks judged per distinct line shape) gives the line scan's
    answer, links, lines and columns, on texts dense with links, code spans and brackets."""
    from wikiengine.core.links import _plain, _scan_careful, _scan_plain, destinations

    if _plain(text):
        assert _scan_plain(text, 7) == _scan_careful(text, 7)
    assert destinations(text) == [dest for _line, _col, dest in link_destinations(text)]  # without places


@pytest.mark.parametrize("text, dests", [
    ("| `name` | class | [f.py#L1](../f.py#L1) |", ["../f.py#L1"]),  # a generated page's row
    ("[`](x)`](y.md)", ["y.md"]),  # a span in link text, holding "](": the link stands
    ("[a `b](c.md)` d]", []),  # a span that the link's brackets cross binds first: no link
    ("`[a](b.md)` [c](d%20e.md)", ["d e.md"]),
])
def test_row41_the_findall_of_a_plain_text_with_code_spans_gives_markdown_it_s_destinations(text, dests):
    from wikiengine.core.links import _plain_destinations, destinations, markdown_it_links

    assert _plain_destinations(text) == dests  # taken by the one findall, not handed on
    assert destinations(text) == dests == [dest for _line, _col, dest in markdown_it_links(text, 1)]


@pytest.mark.parametrize("line, prose", [
    ("``:` see v012", "``:` see v012"),  # a run of two and a run of one: no code span
    ("`` a ` b `` v012", " " * 11 + " v012"),  # the inner single backtick is the span's text
    ("`a` v012 ```b```", "    v012 " + " " * 7),
])
def test_the_prose_rules_blank_the_code_spans_commonmark_sees(line, prose):
    """CON001 and HYP003 read ids in prose with the link scan's code spans (whole backtick runs)."""
    assert list(prose_lines(line)) == [prose]


@settings(max_examples=1500, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.text(alphabet="ab `\\", max_size=14))
@example("\\`v012` a")  # an escaped backtick opens no code span
@example("\\``a`")  # and the run after it is whole
def test_the_prose_rules_read_the_text_commonmark_puts_outside_code_spans(text):
    """The letters of a one-line paragraph that the prose rules keep are those markdown-it
    puts outside its code spans (escapes and unpaired backtick runs included)."""
    from markdown_it import MarkdownIt

    line = "x" + text  # a paragraph, whatever the text begins with
    outside = "".join(child.content for token in MarkdownIt("commonmark").parse(line) if token.type == "inline"
                      for child in token.children if child.type != "code_inline")
    assert [c for c in next(prose_lines(line)) if c in "ab"] == [c for c in outside if c in "ab"]
