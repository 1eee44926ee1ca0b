"""LNK001, and its link scan checked against markdown-it-py (CommonMark)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.lint_support import NOTE, gen_wiki, write
from wikiengine.core.links import _scan_links, link_destinations, markdown_it_links, relative_target
from wikiengine.core.page import load_page
from wikiengine.lint import lint
from wikiengine.lint.config import LintConfig
from wikiengine.lint.context import discover

REPO = Path(__file__).resolve().parent.parent
SPEC = REPO / "tests" / "data" / "commonmark" / "spec.json"


def run(root):
    return lint(root, config=LintConfig(select=["LNK001"]), base=None, use_cache=False)


def test_lnk001_broken_links_and_images(tmp_path):
    write(tmp_path, {
        NOTE: "# n\n\nSee [gone](gone.md#part), ![img](img/x.png \"t\") and [up](../../../../etc/passwd).\n",
    })
    found = run(tmp_path).findings
    assert [(f.line, f.col, f.message) for f in found] == [
        (3, 5, "link 'gone.md#part' points to wiki/notes/gone.md, which does not exist"),
        (3, 27, "link 'img/x.png' points to wiki/notes/img/x.png, which does not exist"),
        (3, 53, "link '../../../../etc/passwd' points outside the repository"),
    ]


def test_lnk001_passes_existing_targets_urls_anchors_and_code(tmp_path):
    write(tmp_path, {
        "wiki/notes/other.md": "# o\n",
        "wiki/lanes/tpu/program.md": "# p\n",
        NOTE: "# n\n\n[o](other.md) [lane](../lanes/tpu/) [o2](./other.md#x) [web](https://x.org/a.md) "
        "[top](#n) [mail](mailto:a@b.c) [space](<other.md>)\n\n`[x](missing.md)`\n\n```\n[x](missing.md)\n```\n",
    })
    assert run(tmp_path).findings == []


def _relative(found):
    return sorted((line, dest) for line, _col, dest in found if relative_target(dest) is not None)


def test_row41_link_scan_agrees_with_markdown_it_on_the_commonmark_spec():
    """Row 41: where the line scan is certain, it finds the links CommonMark finds."""
    examples = json.loads(SPEC.read_text(encoding="utf-8"))
    certain = 0
    for example in examples:
        scanned = _scan_links(example["markdown"], 1)
        if scanned is None:
            continue
        certain += 1
        assert _relative(scanned) == _relative(markdown_it_links(example["markdown"])), example["example"]
    assert certain > len(examples) // 2


def test_row41_link_destinations_equal_markdown_it_on_every_spec_example():
    for example in json.loads(SPEC.read_text(encoding="utf-8")):
        ours = sorted(d for _l, _c, d in link_destinations(example["markdown"]) if relative_target(d))
        theirs = sorted(d for _l, _c, d in markdown_it_links(example["markdown"]) if relative_target(d))
        assert ours == theirs, example["example"]


def test_link_scan_agrees_with_markdown_it_on_the_example_wiki():
    pages = [load_page(REPO / rel) for rel in discover(REPO)]
    fast = 0
    for page in pages:
        scanned = _scan_links(page.body, page.body_line)
        if scanned is not None:
            fast += 1
            assert _relative(scanned) == _relative(markdown_it_links(page.body, page.body_line)), page.path
    assert fast >= 0.8 * len(pages)  # most pages stay on the fast path


def test_link_scan_agrees_with_markdown_it_on_generated_pages(tmp_path):
    root = tmp_path / "corpus"
    gen_wiki().generate(root, 60, seed=1)
    checked = 0
    for rel in discover(root):
        page = load_page(root / rel)
        scanned = _scan_links(page.body, page.body_line)
        if scanned is not None:
            checked += 1
            assert _relative(scanned) == _relative(markdown_it_links(page.body, page.body_line)), rel
    assert checked > 50


def test_link_scan_agrees_with_markdown_it_on_real_shape_pages(real_shape_corpus):
    """The one-pass scan of plain pages (generated codebase pages, table rows with code
    spans and line-anchored links) finds what CommonMark finds, at the same lines (the
    session's real-shape corpus: tests/conftest.py)."""
    from wikiengine.core.links import _plain

    root = real_shape_corpus[0]
    files = discover(root)
    plain = 0
    for rel in files[::7]:
        page = load_page(root / rel, parse_yaml=False)
        scanned = _scan_links(page.body, page.body_line)
        plain += _plain(page.body)
        assert scanned is not None, rel
        assert _relative(scanned) == _relative(markdown_it_links(page.body, page.body_line)), rel
    assert plain > len(files[::7]) // 2


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_LINKISH = st.text(alphabet="[]()`!# ab./-:\n\"'", max_size=80)


@settings(max_examples=400, deadline=None)
@given(_LINKISH)
def test_plain_scan_equals_the_careful_scan(text):
    """Row 41: the whole-text pass and the line-by-line pass give the same answer (links,
    lines, columns, or 'not certain') on every text the plain pass accepts."""
    from wikiengine.core.links import _plain, _scan_careful, _scan_plain

    if _plain(text):
        assert _scan_plain(text, 3) == _scan_careful(text, 3)
