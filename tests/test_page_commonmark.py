"""Row 41: the H2 finder agrees with the CommonMark spec examples.

For each of the 652 examples of CommonMark 0.31.2 (``tests/data/commonmark/spec.json``),
alone and between two H2 sections, the headings ``find_h2`` returns, rendered inline,
must be exactly markdown-it-py's level-0 ``h2`` headings of a full parse, and the
top-level ``<h2>`` elements of its HTML render (outside raw HTML); where that render
equals the spec's reference HTML (649 of 652), the reference has the same ``<h2>``.
"""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from wikiengine.core.page import find_h2, parse_page, split_lines

SPEC = json.loads((Path(__file__).parent / "data" / "commonmark" / "spec.json").read_text(encoding="utf-8"))
# Elements that markdown creates as containers: an <h2> inside one is not a page section.
CONTAINERS = {"blockquote", "ul", "ol", "li"}


class _TopLevelH2(HTMLParser):
    """Collect the inner HTML of every <h2> outside a blockquote or list."""

    def __init__(self, html: str):
        super().__init__(convert_charrefs=False)
        self.html = html
        self.line_starts = [0]
        for index, char in enumerate(html):
            if char == "\n":
                self.line_starts.append(index + 1)
        self.depth = 0
        self.open_at: int | None = None
        self.found: list[str] = []
        self.feed(html)
        self.close()

    def _offset(self) -> int:
        line, column = self.getpos()
        return self.line_starts[line - 1] + column

    def handle_starttag(self, tag, attrs):
        if tag in CONTAINERS:
            self.depth += 1
        elif tag == "h2" and self.depth == 0 and self.open_at is None:
            self.open_at = self._offset() + len(self.get_starttag_text())

    def handle_endtag(self, tag):
        if tag in CONTAINERS:
            self.depth -= 1
        elif tag == "h2" and self.open_at is not None:
            self.found.append(self.html[self.open_at : self._offset()])
            self.open_at = None


def top_level_h2(html: str) -> list[str]:
    return _TopLevelH2(html).found


MD = MarkdownIt("commonmark")


@pytest.mark.parametrize("example", SPEC, ids=[f"ex{e['example']}-{e['section']}" for e in SPEC])
def test_row41_find_h2_matches_the_spec_examples(example):
    _check(example, example["markdown"])


@pytest.mark.parametrize("example", SPEC, ids=[f"ex{e['example']}-{e['section']}" for e in SPEC])
def test_row41_find_h2_matches_the_spec_examples_between_sections(example):
    # Each example inside a page: does it swallow, or make, the sections around it?
    _check(None, "## Before\n" + example["markdown"] + "\n## After\n")


def _check(example, markdown):
    env: dict = {}
    tokens = MD.parse(markdown, env)
    rendered = MD.renderer.render(tokens, MD.options, env)
    found = [MD.renderInline(title, env) for _, _, title in find_h2(split_lines(markdown))]
    # The full parse's level-0 h2 tokens, rendered as the HTML renders them.
    expected = [
        MD.renderer.render(tokens[i + 1].children, MD.options, env)
        for i, t in enumerate(tokens)
        if t.type == "heading_open" and t.tag == "h2" and t.level == 0
    ]
    assert found == expected
    if not any(t.type == "html_block" for t in tokens):
        # Raw HTML (an unclosed '<div id="foo"') can confuse an HTML parser; elsewhere the
        # top-level <h2> elements of the rendered HTML are the oracle too.
        assert top_level_h2(rendered) == expected
    if example is not None and rendered == example["html"]:
        assert top_level_h2(example["html"]) == top_level_h2(rendered)
    # and the page model keeps every byte of the example
    assert parse_page(markdown, parse_yaml=False).to_text() == markdown


def test_row41_markdown_it_matches_the_reference_html_almost_everywhere():
    matching = sum(MD.render(e["markdown"]) == e["html"] for e in SPEC)
    assert matching >= 645, matching  # 649 of 652 with markdown-it-py 4.3.0
    with_h2 = [e for e in SPEC if top_level_h2(e["html"])]
    assert len(with_h2) >= 15  # 20 examples have a top-level H2 (the sandwich test adds two to each)
