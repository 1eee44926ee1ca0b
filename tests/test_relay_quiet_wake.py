"""Row 38 on a quiet relay wake: when HEAD is the trusted commit and no page differs from it,
nothing can have changed an immutable record, so the wake re-lints nothing (and imports no
linter); a page edited in the work tree, even uncommitted, still sends it to the re-lint,
which blocks the run."""

from __future__ import annotations

import subprocess

import pytest

from tests.test_step_wake import step, wiki  # noqa: F401 - the fixture
from wikiengine.lint import runner
from wikiengine.model import memory
from wikiengine.model.state import RelayState

PAGE = "wiki/experiments/demo_autoresearch_optimization/tpu/2026-06-01-v001-base.md"


def git(root, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t.invalid", *args], cwd=root,
                          capture_output=True, text=True, check=True).stdout


@pytest.fixture()
def trusted(wiki):  # noqa: F811 - the fixture above
    """A filed verdict page committed, then a wake whose memory commit is the trusted HEAD."""
    root = wiki[0]
    page = root / PAGE
    page.parent.mkdir(parents=True)
    page.write_text("---\ncreated: 2026-06-01\nstatus: refuted\n---\n# v001\n\n## Results\n\nslower\n")
    git(root, "add", "wiki/experiments")
    git(root, "commit", "--quiet", "-m", "v001 verdict")
    step(wiki)  # launches session 1; HEAD, its own memory commit, is trusted from here
    assert RelayState.read(root).trusted_commit
    return wiki


def test_a_quiet_wake_re_lints_nothing(trusted, monkeypatch):
    root = trusted[0]
    monkeypatch.setattr(runner, "lint", lambda *a, **k: pytest.fail("re-linted with nothing changed since HEAD"))
    (root / "notes.txt").write_text("a file that is no page: nothing immutable\n")
    result = step(trusted)
    assert result.decision != "blocked", result.reasons


def test_an_uncommitted_edit_of_a_verdict_page_still_blocks(trusted):
    root, _store, compute, _clock = trusted
    page = root / PAGE
    page.write_text(page.read_text().replace("slower", "faster"))
    compute.end("tiny-session1")
    assert step(trusted).decision == "blocked"
    error = memory.read_errors(root)[0]
    assert error.kind == "immutable_page_edited" and "EXP007" in error.evidence and PAGE in error.evidence


def test_a_wake_that_writes_no_memory_asks_git_nothing_to_commit(trusted, monkeypatch):
    """Memory was clean at the wake's start (sanity) and nothing was written since: no commit
    probe runs, HEAD stays, and the head it checked is recorded as this host's own commit."""
    from wikiengine.core import git as core_git

    root = trusted[0]
    head = git(root, "rev-parse", "HEAD").strip()
    monkeypatch.setattr(core_git, "commit_paths", lambda *a, **k: pytest.fail("asked git to commit unchanged memory"))
    result = step(trusted)
    assert result.commits == [] and git(root, "rev-parse", "HEAD").strip() == head
    assert (root / ".git" / "wiki-step-last-commit").read_text().strip() == head
