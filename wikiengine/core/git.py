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

from wikiengine.core.errors import WikiError

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


def _start(root: Path, *args: str, env: dict | None = None):
    """``git <args>`` started in ``root``; :func:`_finish` reads it."""
    import os
    import subprocess

    try:
        return subprocess.Popen(["git", *args], cwd=root, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env={**os.environ, **env} if env else None)
    except OSError as exc:
        raise GitCommitError(f"git {args[0]} failed: {exc}", root) from None


def _finish(root: Path, proc, what: str) -> str:
    """The stdout of a started git, or GitCommitError with git's last line."""
    import subprocess

    try:
        out, err = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired as exc:
        proc.kill()
        proc.communicate()
        raise GitCommitError(f"git {what} failed: {exc}", root) from None
    if proc.returncode != 0:
        detail = err.strip().splitlines()
        raise GitCommitError(f"git {what} failed: {detail[-1] if detail else proc.returncode}", root)
    return out


def _git(root: Path, *args: str, env: dict | None = None) -> str:
    """``git <args>`` in ``root``: its stdout, or GitCommitError with git's last line."""
    return _finish(root, _start(root, *args, env=env), next(a for a in args if not a.startswith("-")))


STAGED = ("--no-optional-locks", "diff", "--cached", "--name-status", "--no-renames", "-z")
STATUS = ("--no-optional-locks", "status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames", "--")


def _staged(root: Path, out: str) -> set[str]:
    """The paths of ``git diff --cached --name-status -z``; GitCommitError on an unmerged entry (row 37)."""
    fields = out.split("\0")
    entries = dict(zip(fields[1::2], fields[0::2]))
    if any(status.startswith("U") for status in entries.values()):
        raise GitCommitError("the index has unresolved merge conflicts: resolve them first", root)
    return set(entries)


def _changed(out: str, paths: list[str]) -> list[str]:
    """Which of ``paths`` a ``git status --porcelain -z`` lists."""
    listed = {entry[3:] for entry in out.split("\0") if len(entry) > 3}
    return [p for p in paths if p in listed]


class CommitProbe:
    """The two read-only questions a commit asks git, started at once so that they run
    beside the caller's own work (a writer starts them before it re-lints): what the
    index holds that HEAD does not, and which of ``paths`` differ from HEAD. Neither
    takes git's index lock (``--no-optional-locks``), so they never block a writer."""

    def __init__(self, root: Path, paths: list[str]):
        self.root, self.paths = root, list(paths)
        self._staged = _start(root, *STAGED)
        self._status = _start(root, *STATUS, *self.paths)

    def staged(self) -> set[str]:
        return _staged(self.root, _finish(self.root, self._staged, "diff"))

    def changed(self) -> list[str]:
        return _changed(_finish(self.root, self._status, "status"), self.paths)

    def close(self) -> None:
        """Reap both processes, whose answers are not wanted (the write was refused or failed)."""
        for proc in (self._staged, self._status):
            if proc.poll() is None:
                proc.kill()
            proc.wait()
            for pipe in (proc.stdout, proc.stderr):
                pipe.close()


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


def check_markers(root: Path) -> None:
    """Refuse a repository mid-merge or with a held ``index.lock``, from git's files (rows 35, 37)."""
    git_dir_path = git_dir(root)
    if any((git_dir_path / name).exists() for name in ("MERGE_HEAD", "REBASE_HEAD", "rebase-merge", "rebase-apply",
                                                       "CHERRY_PICK_HEAD", "REVERT_HEAD")):
        raise GitCommitError("a merge or rebase is in progress: resolve it before wiki step writes memory", root)
    lock = git_dir_path / "index.lock"
    if lock.exists():
        raise GitCommitError(f"{lock} exists: another git process is running, or one was killed; remove the file "
                             "only if no git process is running", root)


def check_repository(root: Path) -> None:
    """Refuse a repository mid-merge, with a held ``index.lock`` or an unmerged entry (rows 35, 37)."""
    check_markers(root)
    _staged(root, _git(root, *STAGED))


def dirty_paths(root: Path, paths: list[str]) -> list[str]:
    """Which of ``paths`` differ from HEAD (staged, modified or untracked)."""
    return _changed(_git(root, *STATUS, *paths), paths) if paths else []


def assert_no_secret(text: str, where: str) -> None:
    """GitCommitError when ``text`` holds a secret value this process can see: plain, URL-encoded
    or base64 (:func:`core.secrets.secret_values`; row 46)."""
    from wikiengine.core.secrets import secret_values

    if any(form in text for form in secret_values()):
        raise GitCommitError("refusing to commit: a secret value would land in the commit", where)


def commit_paths(root: Path, paths: list[str], message: str, probe: CommitProbe | None = None) -> str | None:
    """Commit exactly ``paths`` (relative to ``root``) with ``message``; return the new sha.

    Returns None when none of the paths changed (an idempotent re-run commits nothing).
    ``probe``: the :class:`CommitProbe` of ``paths``, started by the caller once the files
    were written. The new sha is read from the branch's ref file (``git rev-parse`` only
    when the ref is packed or HEAD detached).
    """
    asked = probe or CommitProbe(root, paths)
    try:
        staged_before, changed = asked.staged(), asked.changed()
    finally:
        if probe is None:
            asked.close()
    check_markers(root)
    if not changed:
        return None
    for rel in changed:
        path = Path(root) / rel
        if path.exists():
            assert_no_secret(path.read_text(encoding="utf-8", errors="replace"), rel)
    assert_no_secret(message, "commit message")
    _git(root, "add", "--all", "--", *changed)
    # `--only` commits just these paths past whatever else is staged, at the price of a
    # temporary index (20 ms more on a 10,000-page wiki); with nothing else staged the
    # index itself holds exactly the commit.
    only = ["--only", "--", *changed] if staged_before - set(changed) else []
    try:
        _git(root, "commit", "--quiet", "-m", message, *only)
    except GitCommitError as exc:
        if "tell me who you are" not in str(exc) and "identity" not in str(exc):
            raise
        _git(root, "commit", "--quiet", "-m", message, *only, env=IDENTITY)  # no user.name set
    return head_sha(root)


def head_sha(root: Path) -> str:
    """The commit HEAD names: from the loose ref file git just wrote, else ``git rev-parse``."""
    git_dir_path = git_dir(root)
    try:
        head = (git_dir_path / "HEAD").read_text(encoding="utf-8").strip()
        if head.startswith("ref: refs/"):
            ref = head[len("ref: "):]
            for base in (git_dir_path, _common_dir(git_dir_path)):
                sha = (base / ref).read_text(encoding="utf-8").strip() if (base / ref).is_file() else ""
                if len(sha) in (40, 64) and all(c in "0123456789abcdef" for c in sha):
                    return sha
    except OSError:
        pass
    return _git(root, "rev-parse", "HEAD").strip()


def _common_dir(git_dir_path: Path) -> Path:
    """A linked worktree's branches live in the main repository's git directory (``commondir``)."""
    common = git_dir_path / "commondir"
    if not common.is_file():
        return git_dir_path
    path = Path(common.read_text(encoding="utf-8").strip())
    return path if path.is_absolute() else (git_dir_path / path).resolve()


def git_out(root: Path, *args: str, check: bool = False) -> str:
    """The stdout of ``git <args>`` in ``root`` ("" when git fails, unless ``check``)."""
    import subprocess

    try:
        out = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise WikiError(f"git {args[0]} failed: {exc}", root) from None
    if out.returncode != 0 and check:
        raise WikiError(f"git {args[0]} failed: {(out.stderr.strip().splitlines() or ['?'])[-1]}", root)
    return out.stdout if out.returncode == 0 else ""


def is_ancestor(root: Path, older: str, newer: str) -> bool:
    """Is commit ``older`` an ancestor of (or equal to) ``newer``?"""
    import subprocess

    done = subprocess.run(["git", "merge-base", "--is-ancestor", older, newer], cwd=root, capture_output=True,
                          timeout=60, check=False)
    return done.returncode == 0
