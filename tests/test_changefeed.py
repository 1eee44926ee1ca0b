"""Git's index as the lint cache's change feed (lint/changefeed.py): a warm whole-wiki run
takes the pages git compared and found as their index blobs as fresh without looking at
them, and never takes git's word where git did not compare (assume-unchanged,
skip-worktree, an fsmonitor) or where the index changed during the run. A run whose files
git vouches for as the last run left them takes that run's per-file results whole (the run
snapshot, lint/snapshot.py), and no other run does."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from tests.lint_support import generated_git_wiki
from tests.rules_wiki import commit_all, git
from wikiengine.core.errors import WikiError
from wikiengine.lint import LintResult, gitview, lint, runner
from wikiengine.lint.cache import read_signed
from wikiengine.lint.config import LintConfig
from wikiengine.lint.context import discover
from wikiengine.lint.gitview import TrackedTree

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
    for _ in range(3):  # cold; then the blobs taken (and the run snapshot); then from git
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


def _git_started(monkeypatch, *prefix: str) -> list[tuple]:
    """The arguments of the git processes the runs start (those beginning with ``prefix``), as
    they start them."""
    from wikiengine.core import git as core_git

    asked: list[tuple] = []
    real_start = core_git.start

    def start(root, *args, **options):
        if args[:len(prefix)] == prefix:
            asked.append(args)
        return real_start(root, *args, **options)

    monkeypatch.setattr(core_git, "start", start)
    return asked


def test_git_is_asked_for_the_index_files_path_only_where_it_cannot_be_told(wiki, monkeypatch):
    """``<root>/.git/index`` is the index of a work tree whose ``.git`` is a folder, with no
    ``GIT_DIR`` or ``GIT_INDEX_FILE``: no ``git rev-parse --git-path index`` there (a process
    less per warm run); asked under ``GIT_INDEX_FILE``, and the feed taken in both."""
    asked = _git_started(monkeypatch)
    settle_index(wiki)
    lint(wiki)
    assert lint(wiki).stats["vouched"] > 20
    assert asked and not [args for args in asked if "--git-path" in args]
    monkeypatch.setenv("GIT_INDEX_FILE", str(wiki / ".git" / "index"))
    asked.clear()
    assert lint(wiki).stats["vouched"] > 20
    assert [args for args in asked if args[:3] == ("rev-parse", "--git-path", "index")]


def test_what_an_index_file_stages_against_a_commit_is_asked_of_git_once(wiki, monkeypatch):
    """The index file (its path and lstat: git replaces it by a rename) and HEAD's commit fix
    the paths the index stages: a warm run on both asks git no more; one after `git add` does."""
    asked = _git_started(monkeypatch, "diff-index", "--cached")
    settle_index(wiki)  # once: a new time would make it another index file
    lint(wiki)
    assert len(asked) == 1
    result = lint(wiki)
    assert len(asked) == 1 and result.stats["vouched"] > 20
    assert rendered(result) == rendered(lint(wiki, use_cache=False))
    rel = an_experiment(wiki)
    break_status(wiki, rel)
    git(wiki, "add", "--", rel)
    settle_index(wiki)
    result = lint(wiki)
    assert len(asked) == 2 and any(f.path == rel for f in result.findings)


def test_what_an_index_stages_is_asked_again_once_head_names_another_commit(wiki, monkeypatch):
    """The same index file under another commit (``git update-ref`` moves HEAD alone): the
    index stages a mended page against the broken one HEAD now names, and the work tree holds
    the broken bytes. Git's diff against HEAD names nothing (and, with the index locked, does
    not refresh it); taken from the run before, the staged paths would name nothing either,
    and the page would pass as its mended blob."""
    asked = _git_started(monkeypatch, "diff-index", "--cached")
    rel = an_experiment(wiki)
    path = wiki / rel
    mended = path.read_bytes()
    break_status(wiki, rel)
    broken_bytes = path.read_bytes()
    broken = commit_all(wiki, "broken")
    path.write_bytes(mended)
    commit_all(wiki, "mended")
    settle_index(wiki)
    lint(wiki)
    assert not any(f.path == rel for f in lint(wiki).findings)
    assert len(asked) == 1  # the second run took what the first asked
    git(wiki, "update-ref", "HEAD", broken)
    path.write_bytes(broken_bytes)
    os.utime(path, (AN_HOUR_AGO + 3, AN_HOUR_AGO + 3))
    (wiki / ".git" / "index.lock").touch()  # another git at work: the diff leaves the index as it is
    result = lint(wiki)
    assert rendered(result) == rendered(lint(wiki, use_cache=False))
    assert any(f.path == rel for f in result.findings)
    assert len(asked) == 2 and result.stats["vouched"] > 20


def test_a_path_run_a_select_without_git_rules_no_cache_and_a_small_wiki_do_not_ask(wiki, monkeypatch):
    rel = an_experiment(wiki)
    settle_index(wiki)
    assert "vouched" not in lint(wiki, [rel]).stats
    assert "vouched" not in lint(wiki, config=LintConfig(select=["WK"])).stats
    assert "vouched" not in lint(wiki, base=None).stats
    assert lint(wiki).stats["vouched"]
    monkeypatch.setattr(runner, "FEED_THRESHOLD", len(discover(wiki)) + 1)
    assert "vouched" not in lint(wiki).stats


def test_the_bases_diff_runs_while_the_cache_is_read_and_stops_when_the_run_fails(wiki, monkeypatch):
    """The diff that ``lstat``s every tracked file starts before the run reads its cache (80 ms
    of wall at 50,000 pages run beside it); a run that fails meanwhile leaves no git behind."""
    opened = []
    real_init = gitview.OpeningView.__init__

    def kept(self, *args, **kwargs):
        real_init(self, *args, **kwargs)
        opened.append(self)

    def unreadable_cache(*args, **kwargs):
        assert opened, "the base's diff was not under way when the cache was read"
        raise WikiError("the cache cannot be read")

    monkeypatch.setattr(gitview.OpeningView, "__init__", kept)
    monkeypatch.setattr(runner, "_open_context", unreadable_cache)
    with pytest.raises(WikiError):
        lint(wiki)
    assert [r.proc.returncode is not None and r.proc.stdout.closed for r in opened[0]._running] == [True]


def test_the_change_feed_stops_when_the_base_cannot_be_opened(wiki, monkeypatch):
    """The feed's gits start before the run waits for the diff; a run whose view of the base
    then fails leaves none of them behind."""
    feeds = []
    real_start = runner._start_feed

    def kept(*args):
        feed = real_start(*args)
        feeds.append(feed)
        return feed

    def base_fails(*args, **kwargs):
        raise WikiError("git diff failed")

    monkeypatch.setattr(runner, "_start_feed", kept)
    monkeypatch.setattr(runner, "_open_git", base_fails)
    settle_index(wiki)
    with pytest.raises(WikiError):
        lint(wiki)
    assert feeds[0] is not None
    assert [r.proc.returncode is not None and r.proc.stdout.closed for r in feeds[0]._running] == [True] * 2


def rendered(result) -> list[str]:
    return [f.render() for f in result.findings]


def test_a_run_over_the_bytes_the_last_run_saw_takes_its_snapshot_and_reads_no_entry(wiki):
    settle_index(wiki)
    result = lint(wiki)
    assert result.stats["snapshot"] == 1 and "index_read" not in result.stats and not result.stats.get("analysed")
    assert rendered(result) == findings(wiki, use_cache=False)


def test_an_edit_is_analysed_and_recorded_and_a_commit_of_it_recorded_again(wiki):
    rel = an_experiment(wiki)
    break_status(wiki, rel)
    settle_index(wiki)
    edited = lint(wiki)  # the last run's snapshot, and the edited page alone analysed
    assert edited.stats["snapshot"] == 1 and edited.stats["snapshot_changed"] == 1
    assert edited.stats["analysed"] == 1 and edited.stats["snapshot_saved"] == 1
    settle_index(wiki)
    again = lint(wiki)  # the edited page is no blob of git's: known by its content hash
    assert again.stats["snapshot"] == 1
    assert rendered(again) == rendered(edited) == findings(wiki, use_cache=False)
    assert any(f.path == rel for f in again.findings)
    (wiki / rel).write_text((wiki / rel).read_text(encoding="utf-8") + "\nAnd [gone](gone.md).\n", encoding="utf-8")
    os.utime(wiki / rel, (AN_HOUR_AGO + 2, AN_HOUR_AGO + 2))
    settle_index(wiki)
    edited = lint(wiki)  # edited again: another content hash
    assert edited.stats["snapshot_changed"] == 1 and edited.stats["analysed"] == 1
    assert rendered(edited) == findings(wiki, use_cache=False) != rendered(again)
    commit_all(wiki, "broken")
    settle_index(wiki)
    committed = lint(wiki)  # another listing: git says what moved since, the page's bytes are the snapshot's
    assert committed.stats["snapshot_moved"] == 1 and not committed.stats.get("analysed")
    assert committed.stats["snapshot_saved"] == 1 and committed.stats.get("index_read", 0) <= 1
    settle_index(wiki)
    taken = lint(wiki)  # recorded under the new listing
    assert taken.stats["snapshot"] == 1 and "snapshot_moved" not in taken.stats
    assert rendered(taken) == rendered(committed) == findings(wiki, use_cache=False)
    assert any(f.path == rel and f.code == "WK002" for f in taken.findings)


def test_a_page_committed_right_after_its_edit_is_recorded_by_its_blob_at_once(wiki, monkeypatch):
    """A run that reads every entry after a commit (git cannot say what moved since the
    snapshot's commit: a history rewritten) reads the page again (its time too near its entry's
    to take the entry on its stat), finds the bytes are the committed blob and says so: it
    records the snapshot, and the run after it takes it (one run more looked up every entry)."""
    rel = an_experiment(wiki)
    (wiki / rel).write_text((wiki / rel).read_text(encoding="utf-8") + "\nEdited just now.\n", encoding="utf-8")
    settle_index(wiki)
    assert lint(wiki).stats["analysed"] == 1
    commit_all(wiki, "the edit")
    monkeypatch.setattr(gitview.GitView, "index_changes_since", lambda self, commit: None)
    settle_index(wiki)
    committed = lint(wiki)
    assert "snapshot" not in committed.stats and committed.stats["snapshot_saved"] == 1
    settle_index(wiki)
    taken = lint(wiki)
    assert taken.stats["snapshot"] == 1 and "index_read" not in taken.stats and not taken.stats.get("analysed")
    assert rendered(taken) == rendered(committed) == findings(wiki, use_cache=False)


def test_a_commit_of_edits_no_run_saw_has_them_analysed_on_the_snapshot_made_before(wiki):
    """The snapshot was made under the listing before the commit: the pages whose index entry
    moved since are looked at (git vouches for their new bytes, not the snapshot's), and only
    those; a page staged and never committed too."""
    broken, staged = an_experiment(wiki), sorted(p.relative_to(wiki).as_posix() for p in (wiki / "wiki").rglob("*.md")
                                                  if "experiments" not in p.parts)[0]
    break_status(wiki, broken)
    commit_all(wiki, "a broken status, never linted")
    (wiki / staged).write_text((wiki / staged).read_text(encoding="utf-8") + "\nSee [gone](gone.md).\n",
                               encoding="utf-8")
    git(wiki, "add", staged)
    settle_index(wiki)
    result = lint(wiki)
    assert result.stats["snapshot_moved"] == 1 and result.stats["analysed"] == 2
    assert result.stats["snapshot_changed"] == 2 and result.stats["snapshot_saved"] == 1
    assert rendered(result) == findings(wiki, use_cache=False)
    assert {f.path for f in result.findings} >= {broken, staged}
    settle_index(wiki)
    assert lint(wiki).stats["snapshot"] == 1 and rendered(lint(wiki)) == rendered(result)


def test_a_page_added_and_committed_carries_the_snapshot_over_to_the_new_files(wiki):
    """A wake files a new page and commits it: the next whole-wiki run is over other files
    under another listing. It carries the snapshot over (the files it saw, kept beside it),
    analyses the new page alone and records the snapshot over the new files."""
    rel = an_experiment(wiki)
    new = rel.replace(".md", "-again.md")
    (wiki / new).write_text((wiki / rel).read_text(encoding="utf-8").replace("status: ", "status: x", 1),
                            encoding="utf-8")
    commit_all(wiki, "a new page")
    settle_index(wiki)
    added = lint(wiki)
    assert added.stats["snapshot_moved"] == 1 and added.stats["analysed"] == 1
    assert added.stats.get("index_read", 0) <= 2 and added.stats["snapshot_saved"] == 1
    assert added.stats["kinds_classified"] == 1  # the kinds of the files it saw are the snapshot's files'
    assert rendered(added) == findings(wiki, use_cache=False)
    assert any(f.path == new for f in added.findings)
    settle_index(wiki)
    taken = lint(wiki)
    assert taken.stats["snapshot"] == 1 and "snapshot_moved" not in taken.stats and rendered(taken) == rendered(added)


def test_a_page_gone_takes_its_findings_with_it_and_a_lane_log_gone_the_global_logs(wiki):
    """Pages removed and committed: their results are dropped from the carried snapshot, nothing
    is analysed but the global log, judged again when a lane log is gone (the log split), and the
    findings are those of a run without the cache."""
    rel = an_experiment(wiki)
    break_status(wiki, rel)
    settle_index(wiki)
    assert any(f.path == rel for f in lint(wiki).findings)
    git(wiki, "rm", "-qf", rel)
    commit_all(wiki, "a page gone")
    settle_index(wiki)
    gone = lint(wiki)
    assert gone.stats["snapshot_moved"] == 1 and not gone.stats.get("analysed")
    assert rendered(gone) == findings(wiki, use_cache=False) and not any(f.path == rel for f in gone.findings)
    log = sorted(p.relative_to(wiki).as_posix() for p in (wiki / "wiki" / "experiments").rglob("log.md"))[0]
    git(wiki, "rm", "-q", log)
    commit_all(wiki, "a lane log gone")
    settle_index(wiki)
    log_gone = lint(wiki)
    assert log_gone.stats["snapshot_moved"] == 1 and log_gone.stats["analysed"] == 1  # the global log
    assert rendered(log_gone) == findings(wiki, use_cache=False)


def test_a_page_gone_keeps_no_date_in_the_snapshot_it_was_carried_from(wiki):
    """A filed page deleted (not committed) is reported by EXP007 on its path. Its date, kept
    by the snapshot while it had findings, is not carried into the next snapshot: a run without
    the cache cannot read it either (it dates the page by its first commit), and grandfathering
    by ``since`` would differ."""
    rel = an_experiment(wiki)
    config = LintConfig(rules={"EXP007": {"since": "2026-01-01"}})
    break_status(wiki, rel)  # a finding: its date is kept with the snapshot
    settle_index(wiki)
    lint(wiki, config=config)
    (wiki / rel).unlink()
    settle_index(wiki)
    gone = lint(wiki, config=config)
    assert gone.stats["snapshot_moved"] == 1
    settle_index(wiki)
    again = lint(wiki, config=config)
    uncached = [f.render() for f in lint(wiki, config=config, use_cache=False).findings]
    assert rendered(gone) == rendered(again) == uncached
    assert any(line.startswith(rel) and "EXP007" in line for line in uncached)


def test_without_the_files_it_saw_a_snapshot_is_not_carried_to_others(wiki):
    """The files a snapshot saw are kept beside it (``run-files.marshal``); where they cannot be
    read, a run over other files looks up every entry."""
    from wikiengine.lint.cache import CACHE_DIR, FILES_FILE

    (wiki / CACHE_DIR / FILES_FILE).unlink()
    (wiki / "wiki" / "new-note.md").write_text("# New\n\nSee [gone](gone.md).\n", encoding="utf-8")
    settle_index(wiki)
    result = lint(wiki)
    assert "snapshot" not in result.stats and result.stats["index_read"] > 2
    assert rendered(result) == findings(wiki, use_cache=False)
    assert (wiki / CACHE_DIR / FILES_FILE).is_file()  # written again with the new snapshot
    (wiki / "wiki" / "newer-note.md").write_text("# Newer\n", encoding="utf-8")
    settle_index(wiki)
    assert lint(wiki).stats["snapshot_moved"] == 1


def test_a_snapshot_from_before_git_can_say_what_moved_is_not_taken(wiki, monkeypatch):
    """Where git cannot compare the index with the commit the snapshot was made at (a history
    rewritten and collected), or the index is not the one the run began with, every entry is
    looked up, as without a snapshot."""
    rel = an_experiment(wiki)
    break_status(wiki, rel)
    commit_all(wiki, "a broken status")
    monkeypatch.setattr(gitview.GitView, "index_changes_since", lambda self, commit: None)
    settle_index(wiki)
    gone = lint(wiki)
    assert "snapshot" not in gone.stats and gone.stats["index_read"] > 1
    assert rendered(gone) == findings(wiki, use_cache=False)
    monkeypatch.undo()
    break_status(wiki, rel)  # another commit: the run's snapshot is from before it
    (wiki / rel).write_text((wiki / rel).read_text(encoding="utf-8").replace("status: x", "status: y"),
                            encoding="utf-8")
    commit_all(wiki, "another status")
    real = gitview.GitView.index_changes_since

    def index_rewritten(self, commit):
        moved = real(self, commit)
        os.utime(wiki / ".git" / "index", (time.time(), time.time()))  # a `git add` now, say
        return moved

    monkeypatch.setattr(gitview.GitView, "index_changes_since", index_rewritten)
    settle_index(wiki)
    raced = lint(wiki)
    assert "snapshot" not in raced.stats and raced.stats["index_read"] > 1
    assert rendered(raced) == findings(wiki, use_cache=False)


def test_an_untracked_page_and_its_suppressions_come_back_with_the_snapshot(wiki):
    page = wiki / "wiki" / "new-note.md"
    page.write_text("# New\n\n<!-- wiki-lint: disable LNK001 -->\nSee [gone](gone.md).\n\n"
                    "See [lost](lost.md).\n\n<!-- wiki-lint: disable-file LAY003 -->\n", encoding="utf-8")
    os.utime(page, (AN_HOUR_AGO, AN_HOUR_AGO))
    settle_index(wiki)
    first = lint(wiki)  # the snapshot carried over to the files with the note, the note analysed
    assert first.stats["snapshot_moved"] == 1 and first.stats["analysed"] == 1
    settle_index(wiki)
    second = lint(wiki)
    uncached = lint(wiki, use_cache=False)
    assert second.stats["snapshot"] == 1 and "snapshot_moved" not in second.stats
    assert rendered(second) == rendered(first) == rendered(uncached)
    assert second.suppressed == first.suppressed == uncached.suppressed >= 1
    ours = [f.code for f in second.findings if f.path == "wiki/new-note.md"]
    assert "LNK001" in ours and "WK100" in ours  # the link left unsilenced, the unused directive
    page.unlink()
    assert findings(wiki) == findings(wiki, use_cache=False)
    assert not any(line.startswith("wiki/new-note.md") for line in findings(wiki))


def test_a_known_listing_still_leaves_an_untracked_page_to_be_looked_at(wiki):
    """What a run knows of git's listing without parsing it is keyed by the listing and the
    files: an untracked page edited (the same listing, the same files) is still not one git
    vouches for, and its edit is seen."""
    page = wiki / "wiki" / "new-note.md"
    page.write_text("# New\n", encoding="utf-8")
    for _ in range(2):
        settle_index(wiki)
        lint(wiki)
    page.write_text("# New\n\nSee [gone](gone.md).\n", encoding="utf-8")
    settle_index(wiki)
    result = lint(wiki)
    assert result.stats["snapshot_changed"] == 1 and result.stats["analysed"] == 1
    assert rendered(result) == findings(wiki, use_cache=False)
    assert any(f.path == "wiki/new-note.md" and f.code == "LNK001" for f in result.findings)


def test_what_a_run_knows_of_the_listing_goes_with_the_listing(wiki):
    """A link's target that git stops tracking, and ignores, is judged again: the answers a run
    keeps of git's listing (does it track this target?) are kept under the listing's hash."""
    (wiki / "raw").mkdir(exist_ok=True)
    (wiki / "raw" / "kept.csv").write_text("x\n", encoding="utf-8")
    (wiki / "wiki" / "data-note.md").write_text("# Data\n\nSee [the data](../raw/kept.csv).\n", encoding="utf-8")
    commit_all(wiki, "data")
    for _ in range(2):
        settle_index(wiki)
        before = lint(wiki)
    assert not any(f.path == "wiki/data-note.md" for f in before.findings)
    with (wiki / ".gitignore").open("a", encoding="utf-8") as ignore:
        ignore.write("raw/kept.csv\n")
    git(wiki, "rm", "-q", "--cached", "raw/kept.csv")
    settle_index(wiki)
    after = lint(wiki)
    assert rendered(after) == findings(wiki, use_cache=False)
    assert any(f.path == "wiki/data-note.md" and f.code == "LNK002" for f in after.findings)


def test_the_index_a_past_run_listed_is_not_listed_again_until_a_question_needs_it(wiki, monkeypatch):
    """The index file a run listed (its path and lstat: git replaces it by a rename) hashes to
    the same listing: a warm run starts no `git ls-files`, one after `git add` does (and the
    next too while the index is within git's racy margin), and a run that asks the listing
    something new (an edited page links to a new target) lists it then."""
    listed: list[Path] = []
    real_start = TrackedTree.start
    monkeypatch.setattr(TrackedTree, "start", staticmethod(lambda root: listed.append(root) or real_start(root)))

    def run() -> tuple[LintResult, int]:
        listed.clear()
        result, count = lint(wiki), len(listed)
        assert rendered(result) == rendered(lint(wiki, use_cache=False))  # (findings() settles the index anew)
        return result, count

    settle_index(wiki)  # once: a new time would make it another index file
    lint(wiki)
    result, count = run()
    assert result.stats["snapshot"] == 1 and count == 0
    page = wiki / "wiki" / "added-note.md"
    page.write_text("# Added\n\nSee [the index](index.md).\n", encoding="utf-8")
    os.utime(page, (AN_HOUR_AGO, AN_HOUR_AGO))  # older than the index: git's diff finds it clean, and does not refresh
    git(wiki, "add", "--", "wiki/added-note.md")
    assert run()[1] == 1  # a new index file, written a moment ago: listed...
    assert run()[1] == 1  # ...and not kept under a time that another write in the same tick would keep
    settle_index(wiki)
    assert run()[1] == 1
    assert run()[1] == 0
    page.write_text("# Added\n\nSee [the index](index.md) and [a gone page](gone-page.md).\n", encoding="utf-8")
    os.utime(page, (AN_HOUR_AGO + 2, AN_HOUR_AGO + 2))
    result, count = run()
    assert count == 1  # the new target's question needed the listing itself
    assert any(f.path == "wiki/added-note.md" and f.code == "LNK001" for f in result.findings)


def test_a_listing_that_is_not_the_one_known_is_marked_moved(wiki):
    """An index listed on need that does not hash to the listing the run took it for (it changed
    during the run) is marked, and the run keeps nothing it asked of it."""
    tree = TrackedTree.read(wiki)
    assert not _asked(TrackedTree.listed_as(wiki, tree.digest)).moved
    moved = _asked(TrackedTree.listed_as(wiki, "0" * 64))
    assert moved.moved and moved.tracks(tree.sorted_files[0]) and moved.files == tree.files


def _asked(tree: TrackedTree) -> TrackedTree:
    tree.files  # noqa: B018 (a question that needs the listing itself)
    return tree


def test_another_selection_of_rules_does_not_take_the_snapshot(wiki):
    selected = LintConfig(select=["EXP", "LNK"])
    settle_index(wiki)
    result = lint(wiki, config=selected)
    assert "snapshot" not in result.stats and result.stats["vouched"]
    assert rendered(result) == rendered(lint(wiki, config=selected, use_cache=False))
    settle_index(wiki)
    assert lint(wiki, config=selected).stats["snapshot"] == 1
    settle_index(wiki)
    assert "snapshot" not in lint(wiki).stats  # one snapshot is kept: the last run's


def test_a_snapshot_not_signed_with_the_users_key_is_not_taken(wiki):
    planted = wiki / ".wiki_cache" / "run.marshal"
    data = planted.read_bytes()
    planted.write_bytes(bytes(32) + data[32:])  # its tag forged
    settle_index(wiki)
    result = lint(wiki)
    assert "snapshot" not in result.stats and result.stats["snapshot_saved"] == 1
    assert rendered(result) == findings(wiki, use_cache=False)


def test_a_page_edited_after_git_compared_it_is_not_recorded_by_its_blob(wiki, monkeypatch):
    """Git vouched for the committed bytes of a page whose entry it had not vouched for before;
    the run then read an edit. The edit's results must not be kept under the committed blob:
    with those bytes back, the page would show the edit's findings."""
    rel = an_experiment(wiki)
    path = wiki / rel
    committed = path.read_bytes()

    def put_back() -> None:
        path.write_bytes(committed)
        os.utime(path, (AN_HOUR_AGO + 5, AN_HOUR_AGO + 5))
        findings(wiki)  # the committed bytes analysed again: an entry with no blob yet

    break_status(wiki, rel)
    findings(wiki)
    put_back()
    real_take_feed = runner._take_feed

    def edited_after_git_looked(ctx, feed, *args):
        real_take_feed(ctx, feed, *args)
        break_status(wiki, rel)

    monkeypatch.setattr(runner, "_take_feed", edited_after_git_looked)
    settle_index(wiki)
    raced = lint(wiki)
    assert raced.stats["vouched"] and raced.stats["analysed"] == 1 and "snapshot_saved" not in raced.stats
    monkeypatch.setattr(runner, "_take_feed", real_take_feed)
    put_back()
    assert findings(wiki) == findings(wiki, use_cache=False)
    assert not any(line.startswith(rel) for line in findings(wiki))


def test_an_entry_made_after_the_snapshot_is_not_taken_for_what_the_snapshot_saw(wiki, monkeypatch):
    """A run after an edit takes the snapshot but for the files whose bytes it did not see: a
    fresh entry holding another content hash than the snapshot's is such a file. Here the entry
    comes from a run that could record no snapshot (the page was edited after git compared it)."""
    rel = an_experiment(wiki)
    path = wiki / rel
    committed = path.read_bytes()
    break_status(wiki, rel)
    settle_index(wiki)
    assert lint(wiki).stats["snapshot_saved"] == 1  # it knows the page by its broken status
    path.write_bytes(committed)
    os.utime(path, (AN_HOUR_AGO + 5, AN_HOUR_AGO + 5))
    real_take_feed = runner._take_feed

    def edited_after_git_looked(ctx, feed, *args):
        real_take_feed(ctx, feed, *args)
        path.write_bytes(committed + b"\nSee [a gone page](gone-page.md).\n")
        os.utime(path, (AN_HOUR_AGO + 7, AN_HOUR_AGO + 7))

    monkeypatch.setattr(runner, "_take_feed", edited_after_git_looked)
    settle_index(wiki)
    raced = lint(wiki)
    assert raced.stats["analysed"] == 1 and "snapshot_saved" not in raced.stats
    monkeypatch.setattr(runner, "_take_feed", real_take_feed)
    settle_index(wiki)
    seen = lint(wiki)  # git names the page; its entry is fresh, made from bytes the snapshot never saw
    assert seen.stats["snapshot"] == 1 and seen.stats["snapshot_changed"] == 1
    assert rendered(seen) == findings(wiki, use_cache=False)
    assert "LNK001" in {f.code for f in seen.findings if f.path == rel}


def test_a_link_mended_after_the_snapshot_is_no_longer_reported(wiki):
    """A run after an edit takes the other pages' link rows from the run before it (LNK001's
    rows of the whole wiki) and judges the edited page's links anew: a mended link goes."""
    rel = an_experiment(wiki)
    path = wiki / rel
    text = path.read_text(encoding="utf-8")
    path.write_text(text + "\nSee [a gone page](gone-page.md).\n", encoding="utf-8")
    os.utime(path, (AN_HOUR_AGO + 2, AN_HOUR_AGO + 2))
    settle_index(wiki)
    broken = lint(wiki)
    assert any(f.path == rel and f.code == "LNK001" for f in broken.findings)
    path.write_text(text + f"\nSee [itself]({rel.rsplit('/', 1)[1]}).\n", encoding="utf-8")
    os.utime(path, (AN_HOUR_AGO + 4, AN_HOUR_AGO + 4))
    settle_index(wiki)
    mended = lint(wiki)
    assert mended.stats["snapshot_changed"] == 1 and mended.stats["link_pages_judged"] == 1
    assert rendered(mended) == findings(wiki, use_cache=False)
    assert not any(f.path == rel and f.code == "LNK001" for f in mended.findings)


def test_a_run_on_a_snapshot_checks_records_by_the_content_hashes_it_knows(tmp_path):
    """After an edit, a lane rule reads the records of the edited lane's pages: checked against
    the content hashes the run knows from the snapshot, they need no index entry (nor git's
    listing); a record of other bytes is not taken, nor a page known to be unreadable."""
    from wikiengine.lint.cache import LintCache

    files = ["a.md", "b.md"]
    cache = LintCache.open(tmp_path, "fingerprint")
    for rel in files:
        entry = {"key": (1, 1, 1), "sha": f"sha-{rel}", "error": None, "findings": [], "supp": None, "rules": frozenset()}
        cache.store(rel, entry, [f"sha-{rel}", None, {}])
    cache.save(files)
    known = LintCache.open(tmp_path, "fingerprint")
    known.know_shas(files, ["sha-a.md", "sha-other"], {"b.md"})
    assert known.record("a.md")[0] == "sha-a.md" and known.known_readable("a.md")
    assert known.stats["index_read"] == 0 and known.stats["shards_read"] == 1
    assert known.record("b.md") is None and not known.known_readable("b.md")
    assert known.stats["index_read"] == 0


@pytest.mark.parametrize("damage", ["gone", "another run's", "forged"])
def test_a_run_after_an_edit_without_the_snapshots_hashes_takes_every_entrys(wiki, damage):
    """Every file's content hash lies beside the snapshot (read only after an edit); when it is
    gone, another snapshot's or not signed with the user's key, the run takes each file's from
    its entry instead, and finds what a run without the cache finds."""
    shas = wiki / ".wiki_cache" / "run-shas.marshal"
    rel = an_experiment(wiki)
    if damage == "another run's":
        break_status(wiki, rel)
        settle_index(wiki)
        lint(wiki)
        older = shas.read_bytes()
        (wiki / rel).write_text((wiki / rel).read_text(encoding="utf-8") + "\nMore.\n", encoding="utf-8")
        os.utime(wiki / rel, (AN_HOUR_AGO + 2, AN_HOUR_AGO + 2))
        settle_index(wiki)
        lint(wiki)
        shas.write_bytes(older)
    elif damage == "gone":
        shas.unlink()
    else:
        data = shas.read_bytes()
        shas.write_bytes(bytes(32) + data[32:])
    (wiki / rel).write_text((wiki / rel).read_text(encoding="utf-8") + "\nSee [gone](gone-page.md).\n", encoding="utf-8")
    os.utime(wiki / rel, (AN_HOUR_AGO + 4, AN_HOUR_AGO + 4))
    settle_index(wiki)
    edited = lint(wiki)
    every_shard = len(list((wiki / ".wiki_cache" / "index").glob("*.marshal")))
    assert edited.stats["snapshot_changed"] == 1 and edited.stats["index_read"] == every_shard
    assert rendered(edited) == findings(wiki, use_cache=False)
    assert any(f.path == rel and f.code == "LNK001" for f in edited.findings)
    made = read_signed(wiki / ".wiki_cache" / "run.marshal", wiki)["wiki_fp"]  # its hash of every page
    (wiki / ".wiki_cache" / "run.marshal").unlink()
    settle_index(wiki)
    assert "snapshot" not in lint(wiki).stats  # every entry looked up: the same hash of the pages
    assert read_signed(wiki / ".wiki_cache" / "run.marshal", wiki)["wiki_fp"] == made


def test_a_cold_run_knows_the_pages_whose_bytes_are_their_blobs_and_makes_a_snapshot(wiki):
    """Each page a cold run reads is hashed as git hashes a blob: the pages that are their index
    blobs are known by them at once, so the run after it takes the snapshot."""
    shutil.rmtree(wiki / ".wiki_cache")
    settle_index(wiki)
    cold = lint(wiki)
    assert cold.stats["analysed"] > 20 and cold.stats["snapshot_saved"] == 1
    settle_index(wiki)
    warm = lint(wiki)
    assert warm.stats["snapshot"] == 1
    assert rendered(warm) == rendered(cold) == findings(wiki, use_cache=False)


def test_a_sha256_repository_is_hashed_as_git_hashes_it(template, tmp_path, monkeypatch):
    monkeypatch.setattr(runner, "FEED_THRESHOLD", 0)
    root = tmp_path / "wiki256"
    shutil.copytree(template, root, ignore=shutil.ignore_patterns(".git", ".wiki_cache"))
    for path in root.rglob("*"):
        os.utime(path, (AN_HOUR_AGO, AN_HOUR_AGO))
    git(root, "init", "-q", "-b", "main", "--object-format=sha256")
    git(root, "config", "commit.gpgsign", "false")
    commit_all(root, "pages")
    assert len(git(root, "rev-parse", "HEAD")) == 64
    settle_index(root)
    cold = lint(root)
    assert cold.stats["vouched"] > 20 and cold.stats["snapshot_saved"] == 1
    settle_index(root)
    warm = lint(root)
    assert warm.stats["snapshot"] == 1 and rendered(warm) == findings(root, use_cache=False)


def test_a_snapshot_run_makes_no_table_of_blobs(wiki, monkeypatch):
    """The run that takes the snapshot asks git only which files it does not vouch for and the
    hash of its index listing: the table of every path's blob is never made, and the listing
    is not even parsed (the last run with the same listing and files said what it holds)."""

    def no_table(self):
        raise AssertionError("the table of blobs was made")

    def no_parse(self):
        raise AssertionError("the listing was parsed")

    expected = findings(wiki, use_cache=False)
    with monkeypatch.context() as patched:
        patched.setattr(TrackedTree, "blobs", no_table)
        patched.setattr(TrackedTree, "_parse", no_parse)
        settle_index(wiki)
        result = lint(wiki)
    assert result.stats["snapshot"] == 1 and result.stats["vouched"] > 20
    assert rendered(result) == expected


def test_a_page_git_does_not_compare_is_known_by_its_content_in_the_snapshot(wiki):
    """An assume-unchanged page (git's listing is then not plain: the entry-by-entry way) is one
    git does not vouch for: the snapshot knows it by its content, and an edit git cannot see
    is still found and analysed."""
    rel = an_experiment(wiki)
    git(wiki, "update-index", "--assume-unchanged", "--", rel)
    break_status(wiki, rel)
    first = findings(wiki)
    settle_index(wiki)
    again = lint(wiki)
    assert again.stats["snapshot"] == 1 and rendered(again) == first == findings(wiki, use_cache=False)
    assert any(line.startswith(rel) for line in first)
    committed = git(wiki, "show", f"HEAD:{rel}") + "\n"
    (wiki / rel).write_text(committed, encoding="utf-8")  # back to its committed bytes: git is not asked
    os.utime(wiki / rel, (AN_HOUR_AGO + 3, AN_HOUR_AGO + 3))
    settle_index(wiki)
    mended = lint(wiki)  # the edit seen by its content: that page alone analysed
    assert mended.stats["snapshot_changed"] == 1 and mended.stats["analysed"] == 1
    assert rendered(mended) == findings(wiki, use_cache=False)
    assert not any(f.path == rel for f in mended.findings)


def test_what_git_vouches_for_is_one_answer_however_it_is_asked(tmp_path):
    """Vouched's cheap questions (whether, which not, how many) agree with its table of blobs,
    in a plain index and in one holding every kind of entry git does not check as it should."""
    from wikiengine.lint.changefeed import Vouched

    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    names = [f"wiki/p{n}.md" for n in range(6)]
    for name in names:
        (root / name).parent.mkdir(exist_ok=True)
        (root / name).write_text(f"# {name}\n", encoding="utf-8")
    git(root, "add", "-A")
    files = [*names, "wiki/untracked.md"]
    plain = TrackedTree.read(root)
    blob = git(root, "rev-parse", ":wiki/p0.md")
    assert plain.plain and not plain.unvouchable() and plain.digest
    for listed in (files, names):  # an untracked file among them, or every one tracked
        _agree(Vouched(plain, {"wiki/p1.md", "raw/data.csv"}, listed), listed, plain.blobs())
    git(root, "update-index", "--assume-unchanged", "wiki/p2.md")
    git(root, "update-index", "--skip-worktree", "wiki/p3.md")
    (root / "wiki" / "link.md").symlink_to("p0.md")
    git(root, "add", "wiki/link.md")
    git(root, "update-index", "--add", "--cacheinfo", f"160000,{git(root, 'hash-object', '--stdin')},wiki/sub")
    git(root, "update-index", "--force-remove", "wiki/p4.md")
    conflict = "".join(f"100644 {blob} {stage}\twiki/p4.md\n" for stage in (1, 2, 3))
    subprocess.run(["git", "update-index", "--index-info"], cwd=root, input=conflict, text=True, check=True)
    mixed = TrackedTree.read(root)
    assert not mixed.plain and mixed.digest != plain.digest
    assert mixed.unvouchable() == {"wiki/p2.md", "wiki/p3.md", "wiki/p4.md", "wiki/link.md", "wiki/sub"}
    assert "wiki/sub" in mixed.gitlinks and "wiki/p4.md" in mixed.files
    listed = sorted([*files, "wiki/link.md"])
    _agree(Vouched(mixed, {"wiki/p1.md", "raw/data.csv"}, listed), listed, mixed.blobs())


def _agree(vouched, files: list[str], blobs: dict[str, str]) -> None:
    table = {rel: blob for rel, blob in blobs.items() if rel != "wiki/p1.md"}
    assert {rel for rel in files if vouched.get(rel)} == {rel for rel in files if rel in table}
    assert all(vouched.get(rel) == table[rel] for rel in files if rel in table)
    assert vouched.others() == [rel for rel in files if rel not in table]
    assert vouched.covers() == vouched.tree.files.issuperset(files)
    assert "wiki/p0.md" in table and "wiki/p1.md" not in table


def test_a_snapshot_run_grandfathers_by_the_page_dates_it_holds(wiki):
    """``since``: the frontmatter dates of the pages with findings come with the snapshot (the
    bytes its key pins), so grandfathering them loads no index shard."""
    config = LintConfig(rules={"WK002": {"since": "2999-01-01"}})
    broken = sorted(p.relative_to(wiki).as_posix() for p in (wiki / "wiki" / "experiments").rglob("*-v*.md"))[:4]
    for rel in broken:
        break_status(wiki, rel)
    commit_all(wiki, "broken statuses")  # committed: git vouches for them, no entry is looked up
    settle_index(wiki)
    first = lint(wiki, config=config)
    assert first.stats["snapshot_saved"] == 1 and first.grandfathered == len(broken)
    settle_index(wiki)
    again = lint(wiki, config=config)
    uncached = lint(wiki, config=config, use_cache=False)
    assert again.stats["snapshot"] == 1 and "index_read" not in again.stats
    assert again.grandfathered == first.grandfathered == uncached.grandfathered
    assert rendered(again) == rendered(first) == rendered(uncached)


def test_the_entries_taken_at_once_are_those_taken_one_by_one(wiki, monkeypatch):
    """A whole run takes the entries of the pages git vouches for in one pass
    (``LintCache.fresh_all``): the same entries as ``fresh`` one page at a time, after an edit
    git sees, an edit git was told not to look at (assume-unchanged), an edit committed (git vouches
    for a blob the entry was not made from) and a new page."""
    from wikiengine.lint.cache import LintCache

    taken = []
    at_once = LintCache.fresh_all

    def both(self, rels):
        entries = at_once(self, rels)
        self._fresh.clear()
        taken.append((entries, [self.fresh(rel) for rel in rels]))
        return entries

    monkeypatch.setattr(LintCache, "fresh_all", both)
    pages = sorted(p.relative_to(wiki).as_posix() for p in (wiki / "wiki" / "experiments").rglob("*-v*.md"))
    (wiki / pages[2]).write_text((wiki / pages[2]).read_text(encoding="utf-8") + "\nCommitted.\n", encoding="utf-8")
    git(wiki, "commit", "-qam", "edit")  # git vouches for its new blob: not the one its entry was made from
    (wiki / pages[0]).write_text((wiki / pages[0]).read_text(encoding="utf-8") + "\nEdited.\n", encoding="utf-8")
    git(wiki, "update-index", "--assume-unchanged", pages[1])
    (wiki / pages[1]).write_text((wiki / pages[1]).read_text(encoding="utf-8") + "\nHidden.\n", encoding="utf-8")
    (wiki / "wiki" / "notes").mkdir(exist_ok=True)
    (wiki / "wiki" / "notes" / "new.md").write_text("# new\n", encoding="utf-8")
    monkeypatch.setattr(gitview.GitView, "index_changes_since", lambda self, commit: None)  # no snapshot carried
    findings(wiki)
    (entries, one_by_one), = taken
    assert entries == one_by_one and sum(entry is None for entry in entries) == 4


def test_a_path_run_lists_an_index_file_once_and_the_next_on_that_file_not_again(wiki, monkeypatch):
    """The watcher's PATH runs on an unchanged wiki (``reuse``: its cross-file findings kept under
    git's view of every page): the first on a new index file lists it and keeps the listing's
    hash and what it asked of it under that file; the next starts no `git ls-files`, its view
    of the pages told by what it knows of the listing (every page tracked); an untracked page
    makes the view need the listing itself again."""
    listed: list[Path] = []
    real_start = TrackedTree.start
    monkeypatch.setattr(TrackedTree, "start", staticmethod(lambda root: listed.append(root) or real_start(root)))
    rel = an_experiment(wiki)

    def path_run() -> tuple[LintResult, int]:
        listed.clear()
        result, count = lint(wiki, [rel], reuse=True), len(listed)
        assert rendered(result) == rendered(lint(wiki, [rel], use_cache=False))
        return result, count

    page = wiki / "wiki" / "added-note.md"
    page.write_text("# Added\n\nSee [the index](index.md).\n", encoding="utf-8")
    git(wiki, "add", "--", "wiki/added-note.md")
    settle_index(wiki)
    first, count = path_run()
    assert count == 1 and first.stats["wiki_rules_run"] > 0
    again, count = path_run()
    assert count == 0 and again.stats.get("wiki_rules_run", 0) == 0 and again.stats["wiki_rules_reused"] > 0
    assert again.stats.get("memos_read", 0) == 0  # the listing's tables are read, not the whole-wiki runs' memos
    git(wiki, "rm", "-q", "--cached", "wiki/added-note.md")  # a new index file, the page left untracked
    settle_index(wiki)
    assert path_run()[1] == 1
    assert path_run()[1] == 1  # the listing tells which pages git does not vouch for
    page.write_text("# Added\n\nSee [the index](index.md), edited.\n", encoding="utf-8")
    edited, count = path_run()
    assert count == 1 and edited.stats["wiki_rules_run"] > 0  # the untracked page's edit is seen


def test_a_run_after_an_edit_reads_no_index_shard_for_what_unchanged_lanes_hold(wiki):
    """After an edit in one lane, the cross-file rules that read every lane log (the log split:
    their oldest entry) take what they keep of the unchanged logs by the content hashes the run
    knows from its snapshot: no index shard is read but the edited page's, and the findings are
    those of a run without the cache."""
    from wikiengine.lint.cache import shard_of

    rel = an_experiment(wiki)
    logs = sorted(p.relative_to(wiki).as_posix() for p in (wiki / "wiki" / "experiments").rglob("log.md"))
    assert len({shard_of(log) for log in logs} - {shard_of(rel)}) > 3  # the logs lie in other shards
    (wiki / rel).write_text((wiki / rel).read_text(encoding="utf-8") + "\nMore.\n", encoding="utf-8")
    os.utime(wiki / rel, (AN_HOUR_AGO + 4, AN_HOUR_AGO + 4))
    settle_index(wiki)
    edited = lint(wiki)
    assert edited.stats["snapshot_changed"] == 1 and edited.stats["index_read"] == 1
    assert rendered(edited) == findings(wiki, use_cache=False)


def test_a_lane_log_edited_has_the_global_log_judged_beside_no_other_logs_index_shard(wiki):
    """The global log is judged again after a lane log's edit (its LOG003 and LOG004 hang on the
    log split), during the pass over the changed files: the other lane logs' hashes come from
    the snapshot then too, and only the two logs' own shards are read (the edit of `wiki log`,
    the most common, read every lane log's shard: 18 of 64 at 50,000 pages)."""
    from wikiengine.lint.cache import shard_of

    logs = sorted(p.relative_to(wiki).as_posix() for p in (wiki / "wiki" / "experiments").rglob("log.md"))
    edited_log = logs[0]
    assert len({shard_of(log) for log in logs[1:]} - {shard_of(edited_log), shard_of("wiki/log.md")}) > 3
    (wiki / edited_log).write_text((wiki / edited_log).read_text(encoding="utf-8") + "\nMore.\n", encoding="utf-8")
    os.utime(wiki / edited_log, (AN_HOUR_AGO + 4, AN_HOUR_AGO + 4))
    settle_index(wiki)
    edited = lint(wiki)
    assert edited.stats["snapshot_changed"] == 2 and edited.stats["index_read"] <= 2
    assert rendered(edited) == findings(wiki, use_cache=False)
    settle_index(wiki)
    again = lint(wiki)
    assert again.stats["snapshot"] == 1 and again.stats["index_read"] == 1  # the edited log's, git vouching not for it
    assert rendered(again) == rendered(edited)


def test_a_lane_log_that_moves_the_log_split_has_the_global_log_judged_again(wiki):
    """The global log's LOG003 findings hang on the log-split date, the lane logs' oldest entry:
    an entry older than any other, added to a lane log, makes the global log's loop iteration
    of the year after a finding, in a run on the snapshot as in a run without the cache (the
    global log's own bytes did not change: its entry was taken, without the finding)."""
    global_log = wiki / "wiki" / "log.md"
    global_log.write_text(global_log.read_text(encoding="utf-8")
                          + "\n## [2021-06-01] loop-iteration | v009-old: refuted\n", encoding="utf-8")
    os.utime(global_log, (AN_HOUR_AGO + 2, AN_HOUR_AGO + 2))
    settle_index(wiki)
    assert not [f for f in lint(wiki).findings if f.code == "LOG003"]  # before the split
    lane_log = sorted((wiki / "wiki" / "experiments").rglob("log.md"))[-1]
    lane_log.write_text(lane_log.read_text(encoding="utf-8") + "\n## [2020-01-01] note | older than any\n",
                        encoding="utf-8")
    os.utime(lane_log, (AN_HOUR_AGO + 4, AN_HOUR_AGO + 4))
    settle_index(wiki)
    edited = lint(wiki)
    assert edited.stats["snapshot"] == 1 and edited.stats["snapshot_changed"] == 2  # the lane log, the global log
    assert [(f.path, f.code) for f in edited.findings if f.code == "LOG003"] == [("wiki/log.md", "LOG003")]
    assert rendered(edited) == findings(wiki, use_cache=False)
