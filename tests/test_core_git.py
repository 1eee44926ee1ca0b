"""core.git: the one git runner (cwd or a bare repository, env, input, bytes, deadline, check)."""

from __future__ import annotations

import hashlib
import os
import subprocess
import time
from pathlib import Path

import pytest

from wikiengine.core import git
from wikiengine.core.errors import BackendUnavailable, GitError, WikiError


@pytest.fixture
def repo(tmp_path) -> Path:
    root = tmp_path / "r"
    root.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=root, check=True)
    (root / "a.md").write_text("alpha\n")
    subprocess.run(["git", "add", "a.md"], cwd=root, check=True)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "init"], cwd=root,
                   check=True)
    return root


@pytest.fixture
def slow_git(tmp_path, monkeypatch) -> Path:
    """A `git` on PATH that sleeps for a minute: the stand-in for a hung git (a network remote, a lock)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "git"
    fake.write_text("#!/bin/sh\nsleep 60\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return fake


def test_run_out_and_ok(repo):
    done = git.run(repo, "rev-parse", "HEAD")
    assert done.ok and done.returncode == 0 and len(done.stdout.strip()) == 40 and done.args == ("rev-parse", "HEAD")
    assert git.out(repo, "show", "HEAD:a.md") == "alpha\n"
    assert git.ok(repo, "cat-file", "-e", "HEAD:a.md") and not git.ok(repo, "cat-file", "-e", "HEAD:nope.md")
    assert git.out(repo, "rev-parse", "--verify", "--quiet", "refs/heads/nope") == ""  # unchecked: "" on failure
    assert git.is_ancestor(repo, "HEAD", "HEAD")


def test_check_raises_one_line_naming_the_verb_and_gits_last_line(repo):
    with pytest.raises(GitError) as caught:
        git.run(repo, "--no-pager", "show", "HEAD:nope.md")
    assert caught.value.path == str(repo)
    assert str(caught.value).startswith(f"{repo}: git show failed: fatal: path 'nope.md' does not exist")
    assert "\n" not in str(caught.value)
    with pytest.raises(GitError, match="git show failed"):
        git.out(repo, "show", "HEAD:nope.md", check=True)
    assert not git.run(repo, "show", "HEAD:nope.md", check=False).ok


def test_the_error_class_is_the_callers(repo, tmp_path):
    class StoreLike(WikiError):
        pass

    class Gone(BackendUnavailable):
        pass

    with pytest.raises(StoreLike):
        git.run(repo, "show", "HEAD:nope.md", error=StoreLike, unavailable=Gone)
    with pytest.raises(Gone):  # git cannot start: the unavailable class, not the failure class
        git.run(tmp_path / "no-such-folder", "status", error=StoreLike, unavailable=Gone)


@pytest.mark.waits
def test_a_hung_git_is_killed_at_its_deadline(repo, slow_git):
    started = time.monotonic()
    with pytest.raises(GitError, match="git status failed: .*timed out after 0.5 seconds"):
        git.run(repo, "status", timeout=0.5)
    assert time.monotonic() - started < 10
    assert not git.ok(repo, "status", timeout=0.5)  # ok(): a hung git is a no, not an exception


def test_a_missing_git_is_one_error_line_not_a_traceback(repo, monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(GitError, match="git status failed: No such file or directory"):
        git.run(repo, "status")
    assert not git.ok(repo, "status")


def test_env_is_added_and_isolated_drops_the_callers_git_variables(repo, monkeypatch):
    ident = git.out(repo, "var", "GIT_AUTHOR_IDENT", env={"GIT_AUTHOR_NAME": "Ada", "GIT_AUTHOR_EMAIL": "a@x"})
    assert ident.startswith("Ada <a@x>")
    monkeypatch.setenv("GIT_DIR", str(repo / "nowhere"))  # would send any git elsewhere
    assert not git.ok(repo, "rev-parse", "HEAD")
    bare = repo.parent / "store.git"
    git.run(None, "init", "--bare", "--quiet", git_dir=bare, isolated=True)
    assert git.out(None, "rev-parse", "--is-bare-repository", git_dir=bare, isolated=True).strip() == "true"
    assert git.environment(isolated=True)["GIT_TERMINAL_PROMPT"] == "0" and "GIT_DIR" not in git.environment(isolated=True)
    assert git.environment() is None  # nothing to change: git inherits this process's environment


def test_bytes_in_and_out_and_one_cat_file_batch(repo):
    data = b"\x00\xffbinary\n"
    sha = git.run(repo, "hash-object", "-w", "--stdin", input=data, binary=True).stdout.decode().strip()
    assert sha == hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
    assert git.cat_file_batch(repo, [sha, "HEAD:a.md", "HEAD:missing.md", "HEAD"]) == [data, b"alpha\n", None, None]
    assert git.cat_file_batch(repo, []) == []
    with pytest.raises(GitError, match="newline"):
        git.cat_file_batch(repo, ["HEAD:a\nb"])


def test_reads_take_no_optional_lock_and_config_is_passed_as_c(repo):
    assert git.command(["status"])[:2] == ["git", "--no-optional-locks"]
    assert git.command(["status"], optional_locks=True) == ["git", "status"]
    assert git.command(["commit"], config={"user.name": "wiki demo"}, git_dir="/s") == [
        "git", "--no-optional-locks", "--git-dir", "/s", "-c", "user.name=wiki demo", "commit"]
    assert git.out(repo, "config", "user.name", config={"user.name": "wiki demo"}).strip() == "wiki demo"


def test_started_git_runs_beside_the_caller_and_can_be_abandoned(repo, slow_git):
    running = git.start(repo, "log")
    running.close()  # killed and reaped, its pipes closed
    assert running.proc.returncode is not None


def test_start_all_starts_several_at_once(repo):
    head, missing = git.results(git.start_all(repo, [["rev-parse", "HEAD"], ["rev-parse", "--verify", "-q", "nope"]]))
    assert head.ok and not missing.ok and missing.returncode == 1


def test_a_large_output_comes_through_a_file_as_through_a_pipe(repo):
    """``large``: megabytes of output written to an unlinked temporary file and read once git
    ends; the same bytes, status and errors as through a pipe, and a hung one still killed."""
    for number in range(3000):
        (repo / f"page-with-a-longish-name-{number:05d}.md").write_text(f"{number}\n")
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    piped = git.run(repo, "ls-files", "--stage", "-v", "-z", binary=True)
    spilled = git.run(repo, "ls-files", "--stage", "-v", "-z", binary=True, large=True)
    assert spilled.stdout == piped.stdout and len(spilled.stdout) > 200_000 and spilled.returncode == 0
    failed = git.run(repo, "ls-files", "--error-unmatch", "gone.md", binary=True, large=True, check=False)
    assert not failed.ok and failed.stdout == b"" and b"gone.md" in failed.stderr
    started = git.start(repo, "ls-files", binary=True, large=True)  # started now, read later
    assert started.result().stdout == git.run(repo, "ls-files", binary=True).stdout
    assert started.result() is started.result()  # asked again: the same result, the file read once


def test_a_large_hung_git_is_killed_at_its_deadline(repo, slow_git):
    with pytest.raises(GitError, match="timed out after 0.5 seconds"):
        git.run(repo, "ls-files", binary=True, large=True, timeout=0.5)
