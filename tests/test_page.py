"""The page model: frontmatter, preamble and ordered H2 sections, exact round trip, clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wikiengine.core.errors import PageError
from wikiengine.core.page import load_page, parse_page

REPO = Path(__file__).resolve().parent.parent

PAGE = """---
title: v001 splash attention  # the one-line title
status: in_progress
created: 2026-03-18
tags: [tpu, attention]
---
# v001

Preamble text.

## Hypothesis under test

**Hypothesis**: it gets faster.

### A sub-heading stays inside

```python
## not a heading (fenced)
```

    ## not a heading (indented code)

## Setup
Setup body

---
## Results

~~~
## still code
~~~~
"""


def test_parse_splits_frontmatter_preamble_and_sections():
    page = parse_page(PAGE, "exp.md")
    assert page.frontmatter == {
        "title": "v001 splash attention",
        "status": "in_progress",
        "created": "2026-03-18",  # a date is normalised to the ISO text the author wrote
        "tags": ["tpu", "attention"],
    }
    assert page.preamble == "# v001\n\nPreamble text.\n\n"
    assert [s.title for s in page.sections] == ["Hypothesis under test", "Setup", "Results"]
    hyp, setup, results = page.sections
    assert "### A sub-heading stays inside" in hyp.body
    assert "## not a heading (fenced)" in hyp.body and "## not a heading (indented code)" in hyp.body
    assert (hyp.line, hyp.end_line) == (11, 22)
    assert (setup.line, setup.end_line) == (23, 26)
    assert setup.body == "Setup body\n\n---\n"  # after a blank line '---' is a thematic break
    assert results.line == 27 and results.end_line == len(PAGE.splitlines())
    assert "## still code" in results.body
    assert page.to_text() == PAGE


def test_setext_h2_starts_a_section():
    page = parse_page("intro\n\nSetext title\n------------\nbody\n")
    assert [(s.title, s.line, s.heading) for s in page.sections] == [("Setext title", 3, "Setext title\n------------\n")]
    # a paragraph line followed by --- is one too, even inside what looks like a body
    assert [s.title for s in parse_page("## A\ntext\n---\n").sections] == ["A", "text"]


def test_atx_closing_hashes_and_spacing_are_not_part_of_the_title():
    page = parse_page("##   Spaced   title  ##  \n")
    assert page.sections[0].title == "Spaced   title"


@pytest.mark.parametrize(
    "text",
    [
        "---\ntitle: x\n---\n## A\r\nbody",  # mixed endings, no final newline
        "---\r\ntitle: x\r\n---\r\n## A\r\nbody\r\n",  # CRLF
        "\ufeff---\ntitle: x\n---\n## A\n",  # BOM
        "---\n---\n## A\n",  # empty frontmatter
        "---\n\n---\n",  # frontmatter of one blank line, no body
        "---\ntitle: x\n...\nbody\n",  # YAML document end marker closes the frontmatter
        "",
        "\n",
        "no headings at all",
        "## A\r## B\rold Mac line endings",
        "\ufeff",
        "## \n##\n## A #\n",
    ],
)
def test_round_trip_is_byte_exact(text):
    page = parse_page(text, "p.md")
    assert page.to_text() == text
    assert page.to_bytes() == text.encode("utf-8")


def test_the_body_is_split_into_sections_only_when_they_are_read():
    page = parse_page(PAGE, "p.md")
    assert "_parts" not in page.__dict__  # a page no rule reads by section is never split (a cold lint's codebase pages)
    assert [s.title for s in page.sections][:2] == ["Hypothesis under test", "Setup"]
    assert page.preamble == "# v001\n\nPreamble text.\n\n" and "_parts" in page.__dict__


def test_empty_frontmatter_is_an_empty_mapping():
    page = parse_page("---\n---\n## A\n")
    assert page.has_frontmatter and page.frontmatter == {} and page.sections[0].title == "A"


def test_round_trip_on_every_example_wiki_page():
    pages = sorted((REPO / "wiki").rglob("*.md"))
    assert pages
    for path in pages:
        data = path.read_bytes()
        assert load_page(path).to_bytes() == data, path


line_parts = st.sampled_from(
    ["---", "...", "title: x", "a: [1, 2]", "## H", "### h3", "```", "~~~", "    code", "> q", "- l", "text", "", "===",
     "\ufeff", "#", "<div>", "\t## t", "é ü"]
)
any_text = st.one_of(
    st.text(max_size=200),
    st.builds(
        lambda parts, nl, final: nl.join(parts) + (nl if final else ""),
        st.lists(line_parts, max_size=20),
        st.sampled_from(["\n", "\r\n", "\r"]),
        st.booleans(),
    ),
)


@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(any_text)
def test_round_trip_property(text):
    try:
        page = parse_page(text, "p.md", parse_yaml=False)
    except PageError:
        return  # only an unterminated fence may refuse without YAML
    assert page.to_text() == text
    # The parts, split on first use, are the body's exact source, and their lines tile it.
    assert page.preamble + "".join(section.text for section in page.sections) == page.body
    previous_end = page.body_line - 1 + len(page.preamble.splitlines(keepends=True)) if page.preamble else page.body_line - 1
    for section in page.sections:
        assert section.line == previous_end + 1
        assert section.end_line >= section.line
        previous_end = section.end_line


def test_frontmatter_edit_keeps_comments_key_order_and_body():
    page = parse_page(PAGE, "exp.md")
    edited = page.with_frontmatter({"status": "supported", "verdict_date": "2026-03-20", "tags": None})
    text = edited.to_text()
    assert "# the one-line title" in text  # the comment survives
    keys = list(edited.frontmatter)
    assert keys == ["title", "status", "created", "verdict_date"]
    assert edited.frontmatter["status"] == "supported"
    assert edited.body == page.body


def test_frontmatter_edit_keeps_crlf_and_bom():
    text = "\ufeff---\r\na: 1 # keep\r\nb: 2\r\n---\r\n## S\r\nbody\r\n"
    edited = parse_page(text, "p.md").with_frontmatter({"b": 3})
    assert edited.to_text() == "\ufeff---\r\na: 1 # keep\r\nb: 3\r\n---\r\n## S\r\nbody\r\n"


def test_with_section_body_replaces_or_appends():
    page = parse_page("## A\nold\n## B\nkeep\n")
    assert page.with_section_body("a", "new\n").to_text() == "## A\nnew\n## B\nkeep\n"
    assert page.with_section_body("C", "c\n").to_text() == "## A\nold\n## B\nkeep\n## C\nc\n"


# --- errors: one clear line naming file and line --------------------------------------


@pytest.mark.parametrize(
    "text, line, words",
    [
        ("---\ntitle: x\nstatus: [unclosed\n---\n", 4, "invalid YAML"),
        ("---\na: 1\n  b: 2\n---\n", 3, "invalid YAML"),
        ("---\ntitle: x\ntitle: y\n---\n", 3, "duplicate key 'title'"),
        ("---\n- a list\n---\n", 2, "not a mapping"),
        ("---\ntitle: x\n## no closing fence\n", 1, "unterminated frontmatter"),
        ("---\na: !!python/object/apply:os.system [ls]\n---\n", 2, "tags are not allowed"),
        ("---\ncreated: 2026-02-30\n---\n", 2, "not a valid date"),
    ],
)
def test_bad_frontmatter_is_one_page_error_with_file_and_line(tmp_path, text, line, words):
    path = tmp_path / "bad.md"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(PageError) as caught:
        load_page(path)
    message = str(caught.value)
    assert message.startswith(f"{path}:{line}: "), message
    assert words in message
    assert "\n" not in message


def test_non_utf8_names_the_line_of_the_bad_byte(tmp_path):
    path = tmp_path / "latin1.md"
    path.write_bytes(b"---\ntitle: x\n---\n## A\ncaf\xe9\n")
    with pytest.raises(PageError) as caught:
        load_page(path)
    assert str(caught.value) == f"{path}:5: not valid UTF-8 (byte 0xe9 at offset 25)"


def test_missing_file_and_directory_are_page_errors(tmp_path):
    with pytest.raises(PageError, match="no such file"):
        load_page(tmp_path / "absent.md")
    with pytest.raises(PageError, match="is a directory"):
        load_page(tmp_path)
