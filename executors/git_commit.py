"""Commit memory and lane changes back to the wiki's git repository, through git's own CLI
(one short process per step: gitpython read the whole index in Python, 1 s on a 10,000-page wiki).

:func:`commit_paths` commits exactly the named paths (``git commit --only``), so stray
files of the work tree are never swept in (RELIABILITY row 36). It refuses, with one
clear line, when the repository is mid-merge (row 37), when an ``index.lock`` is held
(row 35: removing it is left to a person, and only when no git process runs), or when
the text being committed holds a secret this process can see (row 46).
"""

from __future__ import annotations

from pathlib import Path

from wikiengine.errors import WikiError

IDENTITY = {"GIT_AUTHOR_NAME": "wiki step", "GIT_AUTHOR_EMAIL": "step@wikiengine.invalid",
            "GIT_COMMITTER_NAME": "wiki step", "GIT_COMMITTER_EMAIL": "step@wikiengine.invalid"}


class GitCommitError(WikiError):
    """The memory commit was refused (merge in progress, lock held, secret found, git failed)."""


def open_repo(root: Path):
    """The git repository at ``root``; GitCommitError when there is none."""
    import git

    try:
        return git.Repo(root)
    except (git.exc.InvalidGitRepositoryError, git.exc.NoSuchPathError):
        raise GitCommitError("not a git repository (wiki step commits memory through git)", root) from None


def _git(root: Path, *args: str, env: dict | None = None) -> str:
    """``git <args>`` in ``root``: its stdout, or GitCommitError with git's last line."""
    import os
    import subprocess

    try:
        done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, timeout=120,
                              env={**os.environ, **env} if env else None)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise GitCommitError(f"git {args[0]} failed: {exc}", root) from None
    if done.returncode != 0:
        detail = done.stderr.strip().splitlines()
        raise GitCommitError(f"git {args[0]} failed: {detail[-1] if detail else done.returncode}", root)
    return done.stdout


def git_dir(root: Path) -> Path:
    """The repository's git directory (a worktree's own), read from ``.git`` without starting git."""
    dot_git = Path(root) / ".git"
    if dot_git.is_file():
        text = dot_git.read_text(encoding="utf-8").strip()
        if text.startswith("gitdir:"):
            path = Path(text[len("gitdir:") :].strip())
            return path if path.is_absolute() else (Path(root) / path).resolve()
    if dot_git.is_dir():
        return dot_git
    raise GitCommitError("not a git repository (wiki step commits memory through git)", root)


def check_repository(root: Path) -> None:
    """Refuse a repository mid-merge or with a held ``index.lock`` (rows 35, 37)."""
    git_dir_path = git_dir(root)
    if any((git_dir_path / name).exists() for name in ("MERGE_HEAD", "REBASE_HEAD", "rebase-merge")):
        raise GitCommitError("a merge or rebase is in progress: resolve it before wiki step writes memory", root)
    lock = git_dir_path / "index.lock"
    if lock.exists():
        raise GitCommitError(f"{lock} exists: another git process is running, or one was killed; remove the file "
                             "only if no git process is running", root)
    if _git(root, "ls-files", "--unmerged").strip():
        raise GitCommitError("the index has unresolved merge conflicts: resolve them first", root)


def dirty_paths(root: Path, paths: list[str]) -> list[str]:
    """Which of ``paths`` differ from HEAD (staged, modified or untracked)."""
    if not paths:
        return []
    out = _git(root, "status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames", "--", *paths)
    changed = {entry[3:] for entry in out.split("\0") if len(entry) > 3}
    return [p for p in paths if p in changed]


def assert_no_secret(text: str, where: str) -> None:
    """GitCommitError when ``text`` holds a secret value this process can see: plain, URL-encoded
    or base64 (:func:`executors.http_policy.secret_values`; row 46)."""
    from wikiengine.executors.http_policy import secret_values

    if any(form in text for form in secret_values()):
        raise GitCommitError("refusing to commit: a secret value would land in the commit", where)


def commit_paths(root: Path, paths: list[str], message: str) -> str | None:
    """Commit exactly ``paths`` (relative to ``root``) with ``message``; return the new sha.

    Returns None when none of the paths changed (an idempotent re-run commits nothing).
    """
    check_repository(root)
    changed = dirty_paths(root, paths)
    if not changed:
        return None
    for rel in changed:
        path = Path(root) / rel
        if path.exists():
            assert_no_secret(path.read_text(encoding="utf-8", errors="replace"), rel)
    assert_no_secret(message, "commit message")
    _git(root, "add", "--all", "--", *changed)
    try:
        _git(root, "commit", "--only", "--quiet", "-m", message, "--", *changed)
    except GitCommitError as exc:
        if "tell me who you are" not in str(exc) and "identity" not in str(exc):
            raise
        _git(root, "commit", "--only", "--quiet", "-m", message, "--", *changed, env=IDENTITY)  # no user.name set
    return _git(root, "rev-parse", "HEAD").strip()
