"""Git's index as the lint cache's change feed (lint/changefeed.py): a warm whole-wiki run
takes the pages git compared and found as their index blobs as fresh without looking at
them, and never takes git's word where git did not compare (assume-unchanged,
skip-worktree, an fsmonitor) or where the index changed during the run."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

from tests.lint_support import generated_git_wiki
from tests.rules_wiki import commit_all, git
from wikiengine.lint import lint, runner
from wikiengine.lint.config import LintConfig
from wikiengine.lint.context import discover

AN_HOUR_AGO = time.time() - 3600


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> Path:
    return generated_git_wiki(tmp_path_factory.mktemp("template") / "wiki", 20, seed=7)


@pytest.fixture
def wiki(template, tmp_path, monkeypatch) -> Path:
    """The wiki, linted until its entries carry their blobs, every file and the index an hour old
    (the feed taken at any size: it pays from thousands of pages)."""
    monkeypatch.setattr(runner, "FEED_THRESHOLD", 0)
    root = tmp_path / "wiki"
    shutil.copytree(template, root, symlinks=True)
    for path in (root / "wiki").rglob("*"):
        os.utime(path, (AN_HOUR_AGO, AN_HOUR_AGO))
    for _ in range(3):  # cold; then the blobs taken; then from git
        settle_index(root)
        result = lint(root)
    assert result.stats["vouched"] > 20 and not result.stats.get("analysed")
    return root


def settle_index(root: Path) -> None:
    """Make git's index older than the next run, as on a wiki committed a while ago."""
    os.utime(root / ".git" / "index", (time.time() - 10, time.time() - 10))


def an_experiment(root: Path) -> str:
    return sorted(p.relative_to(root).as_posix() for p in (root / "wiki" / "experiments").rglob("*-v*.md"))[0]


def break_status(root: Path, rel: str) -> None:
    """Give the page an invalid status (a finding), its mtime and size kept as they were."""
    path = root / rel
    text = path.read_text(encoding="utf-8")
    status = next(line for line in text.splitlines() if line.startswith("status: "))
    broken = "status: " + "x" * (len(status) - len("status: "))
    path.write_text(text.replace(status, broken, 1), encoding="utf-8")
    os.utime(path, (AN_HOUR_AGO + 1, AN_HOUR_AGO + 1))


def findings(root: Path, **kw) -> list[str]:
    settle_index(root)
    return [f.render() for f in lint(root, **kw).findings]


def test_a_warm_run_takes_the_pages_git_vouches_for_and_sees_an_edit(wiki):
    rel = an_experiment(wiki)
    before = findings(wiki)
    break_status(wiki, rel)
    settle_index(wiki)
    result = lint(wiki)
    assert result.stats["analysed"] == 1  # the edited page alone, named by git's diff
    assert [f.render() for f in result.findings] == findings(wiki, use_cache=False) != before
    assert any(f.path == rel for f in result.findings)


@pytest.mark.parametrize("flag", ["--assume-unchanged", "--skip-worktree"])
def test_a_page_git_does_not_compare_is_looked_at(wiki, flag):
    rel = an_experiment(wiki)
    git(wiki, "update-index", flag, "--", rel)
    break_status(wiki, rel)
    assert findings(wiki) == findings(wiki, use_cache=False)
    assert any(line.startswith(rel) for line in findings(wiki))


@pytest.mark.parametrize("setting", ["fsmonitor", "checkStat", "ignoreStat"])
def test_a_repository_where_git_may_skip_the_comparison_is_looked_at_page_by_page(wiki, setting):
    if setting == "fsmonitor":
        hook = wiki.parent / "fsmonitor-hook"  # says nothing changed: git compares nothing
        hook.write_text("#!/bin/sh\nprintf 'token\\0'\n", encoding="utf-8")
        hook.chmod(0o755)
        git(wiki, "config", "core.fsmonitor", str(hook))
    else:
        git(wiki, "config", f"core.{setting}", "minimal" if setting == "checkStat" else "true")
    rel = an_experiment(wiki)
    break_status(wiki, rel)
    settle_index(wiki)
    result = lint(wiki)
    assert result.stats["vouched"] == 0
    assert [f.render() for f in result.findings] == findings(wiki, use_cache=False)
    assert any(f.path == rel for f in result.findings)


def test_a_page_staged_then_restored_is_looked_at(wiki):
    """The index holds an edit, the work tree the committed bytes: git's diff against HEAD
    names nothing, the index's own diff names the page. Here the edit's blob is one the
    cache knows the page by (it was committed and linted before)."""
    rel = an_experiment(wiki)
    path = wiki / rel
    committed = path.read_bytes()
    break_status(wiki, rel)
    commit_all(wiki, "broken")
    findings(wiki)
    assert findings(wiki) == findings(wiki, use_cache=False)  # the entry now names the broken page's blob
    path.write_bytes(committed)
    commit_all(wiki, "mended")
    break_status(wiki, rel)
    git(wiki, "add", "--", rel)  # the broken bytes staged again...
    path.write_bytes(committed)  # ...and the work tree mended
    os.utime(path, (AN_HOUR_AGO + 2, AN_HOUR_AGO + 2))
    assert findings(wiki) == findings(wiki, use_cache=False)
    assert not any(line.startswith(rel) for line in findings(wiki))


def test_an_index_written_during_the_run_is_not_taken(wiki, monkeypatch):
    rel = an_experiment(wiki)
    break_status(wiki, rel)
    real_index_before = runner.index_before

    def index_rewritten_after(root):
        """What the run saw before its git processes; then a `git add` of the broken page."""
        before = real_index_before(root)
        git(wiki, "add", "--", rel)
        return before

    monkeypatch.setattr(runner, "index_before", index_rewritten_after)
    result = lint(wiki)
    assert result.stats["vouched"] == 0
    assert [f.render() for f in result.findings] == findings(wiki, use_cache=False)


def test_a_run_right_after_git_rewrote_its_index_takes_the_feed(wiki):
    """A page edited and put back: the run that reads it makes git refresh (rewrite) its
    index; the next run, the index untouched since before it, takes git's word again."""
    path = wiki / an_experiment(wiki)
    committed = path.read_bytes()
    path.write_bytes(committed + b"\nEdited.\n")
    lint(wiki)
    path.write_bytes(committed)
    lint(wiki)
    result = lint(wiki)  # no settle_index: the index may be seconds old
    assert result.stats["vouched"] > 20 and not result.stats.get("analysed")
    assert [f.render() for f in result.findings] == findings(wiki, use_cache=False)


def test_where_the_index_cannot_be_told_without_git_it_must_be_older_than_the_run(wiki, monkeypatch):
    monkeypatch.setenv("GIT_INDEX_FILE", str(wiki / ".git" / "index"))
    os.utime(wiki / ".git" / "index")  # written now
    assert lint(wiki).stats["vouched"] == 0
    settle_index(wiki)
    assert lint(wiki).stats["vouched"] > 20


def test_a_path_run_a_select_without_git_rules_no_cache_and_a_small_wiki_do_not_ask(wiki, monkeypatch):
    rel = an_experiment(wiki)
    settle_index(wiki)
    assert "vouched" not in lint(wiki, [rel]).stats
    assert "vouched" not in lint(wiki, config=LintConfig(select=["WK"])).stats
    assert "vouched" not in lint(wiki, base=None).stats
    assert lint(wiki).stats["vouched"]
    monkeypatch.setattr(runner, "FEED_THRESHOLD", len(discover(wiki)) + 1)
    assert "vouched" not in lint(wiki).stats
