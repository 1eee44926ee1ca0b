"""The rule docs in wiki/rules/ are generated from the docstrings and kept in sync."""

from __future__ import annotations

from pathlib import Path

from wikiengine.lint import lint
from wikiengine.lint.config import LintConfig
from wikiengine.lint.docs import DOCS_DIR, expected_docs, stale_docs, write_docs
from wikiengine.lint.registry import REGISTRY

REPO = Path(__file__).resolve().parent.parent


def test_committed_rule_docs_are_in_sync():
    stale = stale_docs(REPO)
    assert stale == [], f"run `python -m wikiengine.lint.docs` to regenerate: {stale}"


def test_every_rule_has_a_page_with_the_four_parts_and_the_index_lists_it():
    pages = expected_docs()
    index = pages[f"{DOCS_DIR}/index.md"]
    for code in REGISTRY:
        page = pages[f"{DOCS_DIR}/{code}.md"]
        for part in ("## What it does", "## Why is this bad?", "## Example", "## Options"):
            assert part in page, (code, part)
        assert f"[{code}]({code}.md)" in index


def test_generated_docs_lint_clean_and_stale_pages_are_rewritten(tmp_path):
    (tmp_path / "wiki").mkdir()
    assert sorted(write_docs(tmp_path)) == sorted(expected_docs())
    result = lint(tmp_path, config=LintConfig(), base=None, use_cache=False)
    assert [f.render() for f in result.findings] == []
    page = tmp_path / DOCS_DIR / "WK001.md"
    page.write_text(page.read_text() + "hand edit\n")
    assert stale_docs(tmp_path) == [f"{DOCS_DIR}/WK001.md"]
    assert write_docs(tmp_path) == [f"{DOCS_DIR}/WK001.md"] and stale_docs(tmp_path) == []
