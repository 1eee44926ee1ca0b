"""Commit memory changes back to the wiki's git repository, through gitpython.

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


def check_repository(root: Path) -> None:
    """Refuse a repository mid-merge or with a held ``index.lock`` (rows 35, 37)."""
    repo = open_repo(root)
    git_dir = Path(repo.git_dir)
    if (git_dir / "MERGE_HEAD").exists() or (git_dir / "REBASE_HEAD").exists() or (git_dir / "rebase-merge").exists():
        raise GitCommitError("a merge or rebase is in progress: resolve it before wiki step writes memory", root)
    if repo.index.unmerged_blobs():
        raise GitCommitError("the index has unresolved merge conflicts: resolve them first", root)
    lock = git_dir / "index.lock"
    if lock.exists():
        raise GitCommitError(f"{lock} exists: another git process is running, or one was killed; remove the file "
                             "only if no git process is running", root)


def dirty_paths(root: Path, paths: list[str]) -> list[str]:
    """Which of ``paths`` differ from HEAD (staged, modified or untracked)."""
    repo = open_repo(root)
    if not repo.head.is_valid():
        return [p for p in paths if (Path(root) / p).exists()]
    changed = {d.a_path for d in repo.index.diff(None)} | {d.a_path for d in repo.index.diff("HEAD")}
    untracked = set(repo.untracked_files)
    return [p for p in paths if p in changed or p in untracked]


def assert_no_secret(text: str, where: str) -> None:
    """GitCommitError when ``text`` holds a secret value this process can see: plain, URL-encoded
    or base64 (:func:`executors.http_policy.secret_values`; row 46)."""
    from executors.http_policy import secret_values

    if any(form in text for form in secret_values()):
        raise GitCommitError("refusing to commit: a secret value would land in the commit", where)


def commit_paths(root: Path, paths: list[str], message: str) -> str | None:
    """Commit exactly ``paths`` (relative to ``root``) with ``message``; return the new sha.

    Returns None when none of the paths changed (an idempotent re-run commits nothing).
    """
    import git

    check_repository(root)
    repo = open_repo(root)
    changed = dirty_paths(root, paths)
    if not changed:
        return None
    for rel in changed:
        path = Path(root) / rel
        if path.exists():
            assert_no_secret(path.read_text(encoding="utf-8", errors="replace"), rel)
    assert_no_secret(message, "commit message")
    env = {} if repo.config_reader().has_option("user", "name") else IDENTITY
    try:
        repo.git.add("--", *changed)
        with repo.git.custom_environment(**env):
            repo.git.commit("--only", "--quiet", "-m", message, "--", *changed)
    except git.exc.GitCommandError as exc:
        detail = (exc.stderr or "").strip().splitlines()
        raise GitCommitError(f"git commit failed: {detail[-1] if detail else exc.status}", root) from None
    return repo.head.commit.hexsha
