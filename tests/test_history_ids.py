"""The ids a lane's history ever added are kept per clone with the commits they were read up
to (model/journal.py's HistoryIds): the next writer walks only the commits since, and what it
finds is always what a walk of every ref's whole history finds, and more only where a branch
was deleted (numbers are never reused)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from wikiengine.core.history_record import record_path
from wikiengine.model.journal import BranchIds, _ids_in_names
from wikiengine.model.lanes import Lane

LANE = Lane("m_autoresearch_optimization", "l")
ENV = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
       "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid"}


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, env=ENV, check=True, capture_output=True, text=True).stdout


def add_page(root: Path, vid: str, message: str | None = None) -> Path:
    page = root / LANE.dir / "experiments" / f"2026-05-01-{vid}-idea.md"
    page.parent.mkdir(parents=True, exist_ok=True)
    page.write_text(f"---\ntitle: {vid}\nstatus: running\n---\n# {vid}\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", message or f"stub {vid}")
    return page


def ids(root: Path) -> set[str]:
    with BranchIds(root, LANE) as branches:
        return {str(v) for v in branches.ids()}


def whole_walk(root: Path) -> set[str]:
    """What one `git log --all` over the lane finds (the engine's walk before it kept a record)."""
    out = git(root, "log", "--all", "--format=", "--name-only", "--diff-filter=A", "--", LANE.dir + "/")
    return {str(v) for v in _ids_in_names(line for line in out.splitlines() if line.endswith(".md"))}


def record(root: Path) -> Path:
    path = record_path(root, "ids", LANE.dir)
    assert path is not None and path.parent == root / ".git" / "wiki-lane"
    return path


@pytest.fixture
def repo(tmp_path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    for number in (1, 2, 3):
        add_page(root, f"v00{number}")
    return root


def test_each_walk_finds_what_a_whole_walk_finds_through_branches_deletions_and_rewrites(repo):
    assert ids(repo) == whole_walk(repo) == {"v001", "v002", "v003"}
    assert record(repo).is_file()
    add_page(repo, "v004")
    assert ids(repo) == whole_walk(repo)
    git(repo, "checkout", "-qb", "side")
    add_page(repo, "v010")
    git(repo, "checkout", "-q", "main")
    gone = add_page(repo, "v005")
    git(repo, "rm", "-q", str(gone))
    git(repo, "commit", "-qm", "drop v005")
    assert ids(repo) == whole_walk(repo) >= {"v004", "v005", "v010"}
    git(repo, "checkout", "-q", "--detach", "HEAD")  # a detached HEAD's commits count too
    add_page(repo, "v011")
    assert "v011" in ids(repo) and ids(repo) >= whole_walk(repo) - {"v011"}
    git(repo, "checkout", "-q", "main")
    git(repo, "reset", "-q", "--hard", "HEAD~3")  # main rewritten: its old tip is no ref's now
    add_page(repo, "v012")
    assert ids(repo) >= whole_walk(repo) | {"v005"}  # what was seen once stays used


def test_the_record_spares_the_walk_and_a_record_naming_a_pruned_commit_walks_again(repo):
    assert ids(repo) == {"v001", "v002", "v003"}
    held = json.loads(record(repo).read_text())
    held["ids"] = ["v001", "v900"]  # what the record holds is taken as walked: history is not walked again
    record(repo).write_text(json.dumps(held))
    assert ids(repo) == {"v001", "v900"}
    add_page(repo, "v004")  # only the commits since the record's tips are walked
    assert ids(repo) == {"v001", "v900", "v004"}
    held["tips"] = ["0" * 40]  # a commit that is not there (pruned): the whole history is walked again
    record(repo).write_text(json.dumps(held))
    assert ids(repo) == {"v001", "v002", "v003", "v004"}
    record(repo).write_text("{not json")
    assert ids(repo) == {"v001", "v002", "v003", "v004"}


def test_no_history_before_the_first_commit(tmp_path):
    root = tmp_path / "fresh"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    assert ids(root) == set()
    assert not record(root).exists()


def test_first_commit_times_kept_along_head_are_those_of_a_whole_walk(repo, monkeypatch):
    """The watcher's first commit times (step/audit.py): kept per clone with the HEAD they were
    read at; a HEAD that descends from it walks only the commits since, a rewritten one walks
    everything again, and the answer is always the whole walk's."""
    from wikiengine.step import audit

    clock = iter(range(1_800_000_000, 1_800_100_000, 100))
    monkeypatch.setitem(ENV, "GIT_COMMITTER_DATE", "")

    def commit_page(vid: str) -> str:
        ENV["GIT_COMMITTER_DATE"] = f"{next(clock)} +0000"
        return str(add_page(repo, vid).relative_to(repo))

    def both(rels: list[str]) -> tuple[dict, dict]:
        return audit.first_commit_times(repo, rels, LANE.dir), audit.first_commit_times(repo, rels)

    rels = [commit_page(vid) for vid in ("v004", "v005")]
    kept, whole = both(rels)
    assert kept == whole and len(kept) == 2
    path = next((repo / ".git" / "wiki-lane").glob("added-*.json"))
    held = json.loads(path.read_text())
    held["value"][rels[0]] = 7.0  # a record at HEAD is taken as it is: git is not asked
    path.write_text(json.dumps(held))
    assert audit.first_commit_times(repo, rels, LANE.dir)[rels[0]] == 7.0
    rels.append(commit_page("v006"))  # HEAD moved on: only the new commit is walked
    assert audit.first_commit_times(repo, rels, LANE.dir)[rels[0]] == 7.0
    git(repo, "rm", "-q", rels[1])
    ENV["GIT_COMMITTER_DATE"] = f"{next(clock)} +0000"
    git(repo, "commit", "-qm", "drop v005")
    readded = commit_page("v005")  # added again, later: its first addition stays the first
    assert readded == rels[1]
    kept, whole = both(rels)
    assert kept[rels[1]] == whole[rels[1]] and kept[rels[2]] == whole[rels[2]]
    held = json.loads(path.read_text())
    path.write_text(json.dumps({**held, "value": {rels[0]: "yesterday"}}))  # not times: walked again
    assert audit.first_commit_times(repo, rels, LANE.dir) == audit.first_commit_times(repo, rels)
    git(repo, "reset", "-q", "--hard", "HEAD~4")  # history rewritten: everything is walked again
    kept, whole = both(rels)
    assert kept == whole and rels[0] in kept and rels[2] not in kept


def test_a_session_start_commit_kept_along_head_is_the_newest_one_git_finds(repo):
    """The watcher's search for the commit that started a session (step/audit.py): kept with
    the HEAD it was found at; a later start of the same number, made since, is the one found."""
    from wikiengine.step import audit

    journal = repo / LANE.journal

    def start_session(number: int, note: str) -> str:
        journal.parent.mkdir(parents=True, exist_ok=True)
        with journal.open("a") as handle:
            handle.write(json.dumps({"op": "start", "session": number, "note": note}) + "\n")
        git(repo, "add", "-A")
        git(repo, "commit", "-qm", f"loop({LANE.name}): start session {number} ({note})")
        return git(repo, "rev-parse", "HEAD").strip()

    def plain(number: int) -> str | None:
        out = git(repo, "log", "--format=%H", "--fixed-strings", f"--grep=loop({LANE.name}): start session {number} ",
                  "--", LANE.journal).split()
        return out[0] if out else None

    assert audit.session_start_commit(repo, LANE, 1) is None
    first = start_session(1, "first")
    assert audit.session_start_commit(repo, LANE, 1) == first == plain(1)
    add_page(repo, "v004")
    assert audit.session_start_commit(repo, LANE, 1) == first  # the commits since hold no newer start
    again = start_session(1, "again, by hand")
    assert audit.session_start_commit(repo, LANE, 1) == again == plain(1)
    git(repo, "reset", "-q", "--hard", "HEAD~1")  # rewritten: searched again from scratch
    assert audit.session_start_commit(repo, LANE, 1) == first == plain(1)
    assert audit.session_start_commit(repo, LANE, 2) is None
