"""Git, through git's own CLI: the one runner, and the commit protocol of memory and lanes.

Every git process of the project starts here (:func:`run`, :func:`out`, :func:`ok`,
:func:`start`): one place decides the working folder or bare repository, the environment,
text or bytes, the deadline, and what a failure raises (one line, ``git VERB failed:
<git's last stderr line>``). Reads never take git's optional index lock
(``--no-optional-locks``), so a lint or a status never blocks a writer's commit. The
exceptions cannot import the project: ``training/bootstrap.py`` and ``training/launcher.py``
run from pinned, hashed bytes before the tree exists.

:func:`commit_paths` commits exactly the named paths (``git commit --only``), so stray
files of the work tree are never swept in (RELIABILITY row 36). It refuses, with one
clear line, when the repository is mid-merge (row 37), when a git lock is held by a live
git (row 35: a lock a killed git left is removed when no git process runs in the
repository, :func:`settle_locks`), or when
the text being committed holds a secret this process can see (row 46).

Stdlib only (the trainer's store imports it on remote machines): this is the project's one
git runner, a ``git`` subprocess with a deadline, so nothing else starts git or loads GitPython.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from wikiengine.core.errors import GitError, WikiError
from wikiengine.core.locks import FileLock

TYPE_CHECKING = False  # typing's constant, without importing typing
if TYPE_CHECKING:
    from typing import Any

TIMEOUT_S = 120.0
COMMIT_LOCK_TIMEOUT_S = 60.0  # how long a writer waits for another writer's commit (a commit takes ~0.1 s)
IDENTITY = {"GIT_AUTHOR_NAME": "wiki step", "GIT_AUTHOR_EMAIL": "step@wikiengine.invalid",
            "GIT_COMMITTER_NAME": "wiki step", "GIT_COMMITTER_EMAIL": "step@wikiengine.invalid"}
# isolated=True: a bare store's git reads no system config, asks for no password, speaks C.
ISOLATED = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"}


class GitCommitError(GitError):
    """The memory commit was refused (merge in progress, lock held, secret found, git failed)."""


# ---------------------------------------------------------------- the runner


@dataclass(frozen=True)
class Result:
    """A finished git: its arguments (as the caller gave them), status and output."""

    args: tuple[str, ...]
    returncode: int
    stdout: Any  # str, or bytes with binary=True
    stderr: Any

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    @property
    def error_line(self) -> str:
        """Git's first ``fatal:``/``error:`` line (it names the file: a held lock's advice ends
        with "remove the file manually to continue."), else its last stderr line, else the status."""
        text = self.stderr.decode("utf-8", "replace") if isinstance(self.stderr, bytes) else (self.stderr or "")
        lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
        first = next((line for line in lines if line.startswith(("fatal:", "error:"))), None)
        return first or (lines[-1] if lines else str(self.returncode))


def verb(args: Sequence[str]) -> str:
    """The subcommand a message names: the first argument that is not an option."""
    return next((a for a in args if not a.startswith("-")), args[0] if args else "")


def command(args: Sequence[str], *, git_dir: str | Path | None = None, config: Mapping[str, str] | None = None,
            optional_locks: bool = False) -> list[str]:
    """The argv of ``git <args>``: ``--git-dir`` for a bare repository, ``-c`` settings, and
    ``--no-optional-locks`` unless asked otherwise."""
    argv = ["git"]
    if not optional_locks:
        argv.append("--no-optional-locks")
    if git_dir is not None:
        argv += ["--git-dir", str(git_dir)]
    for key, value in (config or {}).items():
        argv += ["-c", f"{key}={value}"]
    return argv + list(args)


def environment(env: Mapping[str, str] | None = None, *, isolated: bool = False) -> dict[str, str] | None:
    """The environment git runs with: this process's (without ``GIT_*`` when ``isolated``) plus ``env``."""
    if not env and not isolated:
        return None
    base = {k: v for k, v in os.environ.items() if not (isolated and k.startswith("GIT_"))}
    return {**base, **(ISOLATED if isolated else {}), **(env or {})}


class Running:
    """A git started now and read later (:meth:`result`), so that it runs beside the caller's work."""

    def __init__(self, root: str | Path | None, args: Sequence[str], *, git_dir: str | Path | None = None,
                 env: Mapping[str, str] | None = None, isolated: bool = False,
                 config: Mapping[str, str] | None = None, binary: bool = False, stdin: bool = False,
                 stderr: bool = True, optional_locks: bool = False, error: type[WikiError] = GitError,
                 unavailable: type[WikiError] | None = None, large: bool = False):
        self.root, self.args, self.error, self.unavailable = root, tuple(args), error, unavailable or error
        self._done: Result | None = None
        # ``large`` (binary output of megabytes, ``ls-files`` of 50,000 paths): git writes it to an
        # unlinked temporary file, read once at the end; a pipe wakes both processes every 64 KB
        # (8 MB: 25 ms of this process's CPU against 7)
        self._spill = _spill_file() if large and binary else None
        where = root if root is not None else git_dir
        try:
            self.proc = subprocess.Popen(
                command(args, git_dir=git_dir, config=config, optional_locks=optional_locks), cwd=root,
                env=environment(env, isolated=isolated), stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
                stdout=self._spill or subprocess.PIPE, stderr=subprocess.PIPE if stderr else subprocess.DEVNULL,
                **({} if binary else {"encoding": "utf-8", "errors": "surrogateescape"}),  # a file name need not be UTF-8
            )
        except OSError as exc:
            self._close_spill()
            raise self.unavailable(f"git {verb(args)} failed: {exc.strerror or exc}", where) from None
        self.where = where

    def result(self, *, input: str | bytes | None = None, timeout: float | None = TIMEOUT_S,
               check: bool = True) -> Result:
        """Wait for git; its :class:`Result` (kept: asked again, it is the same). Raises ``error``
        when it ran past ``timeout`` or, with ``check``, when it failed."""
        if self._done is None:
            try:
                stdout, stderr = self.proc.communicate(input=input, timeout=timeout)
            except subprocess.TimeoutExpired as exc:
                self.close()
                raise self.unavailable(f"git {verb(self.args)} failed: {exc}", self.where) from None
            if self._spill is not None:
                self._spill.seek(0)
                stdout = self._spill.read()
                self._close_spill()
            self._done = Result(self.args, self.proc.returncode, stdout, stderr)
        done = self._done
        if check and not done.ok:
            raise self.error(f"git {verb(self.args)} failed: {done.error_line}", self.where)
        return done

    def close(self) -> None:
        """Stop and reap git, whose answer is not wanted."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        for pipe in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if pipe is not None:
                pipe.close()
        self._close_spill()

    def _close_spill(self) -> None:
        if self._spill is not None:
            self._spill.close()
            self._spill = None


def _spill_file():
    """An unlinked temporary file for a large output; None (a pipe, then) when none can be made.
    Made as ``tempfile.TemporaryFile`` makes it on Linux (``O_TMPFILE`` in the temporary
    folder), without importing ``tempfile`` and ``random`` (1.4 ms) where that works."""
    folder = os.environ.get("TMPDIR") or "/tmp"
    try:
        return os.fdopen(os.open(folder, os.O_TMPFILE | os.O_RDWR | os.O_CLOEXEC, 0o600), "w+b")
    except (AttributeError, OSError):  # no O_TMPFILE here, or a folder that refuses it
        pass
    import tempfile

    try:
        return tempfile.TemporaryFile()
    except OSError:
        return None


def start(root: str | Path | None, *args: str, **options: Any) -> Running:
    """``git <args>`` started in ``root`` (options as :class:`Running`); read it with ``.result()``."""
    return Running(root, args, **options)


def run(root: str | Path | None, *args: str, input: str | bytes | None = None, timeout: float | None = TIMEOUT_S,
        check: bool = True, **options: Any) -> Result:
    """Run ``git <args>`` in ``root`` (None with ``git_dir=`` for a bare repository).

    Options: ``git_dir``, ``env`` (added to this process's), ``isolated``, ``config``
    (``-c`` settings), ``binary`` (bytes in and out, else UTF-8 text), ``stderr=False``
    (discard it), ``optional_locks``, ``error`` (the WikiError class a failure with ``check``
    raises), ``unavailable`` (the one raised when git cannot start or runs past
    ``timeout``; ``error`` unless given) and ``large`` (binary output of megabytes, taken
    through a temporary file instead of a pipe).
    """
    return Running(root, args, stdin=input is not None, **options).result(input=input, timeout=timeout, check=check)


def out(root: str | Path | None, *args: str, check: bool = False, **options: Any) -> str:
    """The stdout of ``git <args>``; "" when git fails (raises instead with ``check``)."""
    done = run(root, *args, check=check, **options)
    return done.stdout if done.ok else ("" if not options.get("binary") else b"")


def ok(root: str | Path | None, *args: str, **options: Any) -> bool:
    """Did ``git <args>`` succeed? False also when git cannot start or runs past its deadline."""
    try:
        return run(root, *args, check=False, **options).ok
    except WikiError:
        return False


def start_all(root: str | Path | None, commands: Sequence[Sequence[str]], **options: Any) -> list[Running]:
    """Several gits started at once (each costs a process start, which a pre-commit run feels);
    options as :class:`Running`; read them with :func:`results`."""
    running: list[Running] = []
    try:
        for args in commands:
            running.append(Running(root, args, **options))
    except BaseException:
        stop_all(running)
        raise
    return running


def results(running: Sequence[Running]) -> list[Result]:
    """The unchecked results of gits :func:`start_all` started; every one stopped when one cannot be read."""
    try:
        return [r.result(check=False) for r in running]
    except BaseException:
        stop_all(running)
        raise


def stop_all(running: Sequence[Running]) -> None:
    """Stop and reap gits whose answers are not wanted."""
    for r in running:
        r.close()


def cat_file_batch(root: str | Path | None, names: Sequence[str], *, timeout: float | None = TIMEOUT_S,
                   **options: Any) -> list[bytes | None]:
    """The blobs ``<rev>:<path>`` of ``names`` from one ``git cat-file --batch``, in order (None
    for a missing one or a non-blob); ``options`` as :func:`run` (``git_dir`` for a bare one)."""
    if not names:
        return []
    if any("\n" in name for name in names):  # cat-file reads one name per line
        raise GitError("a file name with a newline cannot be read from git", root)
    data = run(root, "cat-file", "--batch", input="".join(f"{n}\n" for n in names).encode(), binary=True,
               timeout=timeout, check=False, **options).stdout
    blobs: list[bytes | None] = []
    pos = 0
    for _ in names:
        end = data.find(b"\n", pos)
        if end < 0:
            blobs.append(None)
            continue
        header = data[pos:end].split()
        size = int(header[2]) if len(header) == 3 and header[2].isdigit() else None
        blobs.append(data[end + 1:end + 1 + size] if size is not None and header[1] == b"blob" else None)
        pos = end + 1 + (size + 1 if size is not None else 0)
    return blobs


def is_ancestor(root: Path, older: str, newer: str) -> bool:
    """Is commit ``older`` an ancestor of (or equal to) ``newer``? (One commit named twice,
    by the same full sha, is its own: no git asked.)"""
    if older == newer and _FULL_SHA_RE.fullmatch(older):
        return True
    return ok(root, "merge-base", "--is-ancestor", older, newer)


def changed_paths(root: Path) -> list[str]:
    """Every path of the work tree that differs from HEAD: staged, modified, deleted or
    untracked (ignored ones do not count)."""
    return [entry[3:] for entry in _git(root, *STATUS).split("\0") if len(entry) > 3]


def _git(root: Path, *args: str, env: dict | None = None) -> str:
    """``git <args>`` in ``root``: its stdout, or GitCommitError with git's last line."""
    return run(root, *args, env=env, error=GitCommitError).stdout


STAGED = ("diff", "--cached", "--name-status", "--no-renames", "-z")
_FULL_SHA_RE = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
STATUS = ("status", "--porcelain=v1", "-z", "--untracked-files=all", "--ignored=matching", "--no-renames", "--")


def _staged(root: Path, out: str) -> set[str]:
    """The paths of ``git diff --cached --name-status -z``; GitCommitError on an unmerged entry (row 37)."""
    fields = out.split("\0")
    entries = dict(zip(fields[1::2], fields[0::2]))
    if any(status.startswith("U") for status in entries.values()):
        raise GitCommitError("the index has unresolved merge conflicts: resolve them first", root)
    return set(entries)


def _changed(listed: dict[str, str], paths: list[str]) -> list[str]:
    """Which of ``paths`` a ``git status --porcelain -z`` lists (its :func:`_status_entries`)
    as changed: not as ignored (``!!``)."""
    return [p for p in paths if p in listed and listed[p] != "!!"]


def _status_entries(out: str) -> dict[str, str]:
    """``{path: its two status letters}`` of a ``git status --porcelain -z`` (``??``: untracked)."""
    return {entry[3:]: entry[:2] for entry in out.split("\0") if len(entry) > 3}


class CommitProbe:
    """The two read-only questions a commit asks git, started at once so that they run
    beside the caller's own work (a writer starts them before it re-lints): what the
    index holds that HEAD does not, and which of ``paths`` differ from HEAD. Neither
    takes git's index lock (``--no-optional-locks``), so they never block a writer."""

    def __init__(self, root: Path, paths: list[str]):
        self.root, self.paths = root, list(paths)
        self._staged = start(root, *STAGED, error=GitCommitError)
        self._status = start(root, *STATUS, *self.paths, error=GitCommitError)
        self._listed: dict[str, str] | None = None  # the status's entries, read once

    def staged(self) -> set[str]:
        return _staged(self.root, self._staged.result().stdout)

    def changed(self) -> list[str]:
        return _changed(self._entries(), self.paths)

    def untracked(self) -> set[str]:
        return {path for path, letters in self._entries().items() if letters == "??"}

    def ignored(self) -> set[str]:
        """Which of ``paths`` git ignores (listed ``!!``, or under a folder listed so): a commit
        would leave them out without a word."""
        entries = self._entries()
        folders = tuple(path for path, letters in entries.items() if letters == "!!" and path.endswith("/"))
        return {p for p in self.paths if entries.get(p) == "!!" or p.startswith(folders)}

    def _entries(self) -> dict[str, str]:
        if self._listed is None:
            self._listed = _status_entries(self._status.result().stdout)
        return self._listed

    def settle(self) -> None:
        """Wait for both answers now: the caller is about to change the files they are about
        (a writer puts the old texts in place to lint them) and commits after putting them back."""
        self._staged.result(check=False)
        self._status.result(check=False)

    def close(self) -> None:
        """Reap both processes, whose answers are not wanted (the write was refused or failed)."""
        self._staged.close()
        self._status.close()


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
    """Refuse a repository mid-merge (row 37), from git's files; settle its lock files (row 35)."""
    git_dir_path = git_dir(root)
    if any((git_dir_path / name).exists() for name in ("MERGE_HEAD", "REBASE_HEAD", "rebase-merge", "rebase-apply",
                                                       "CHERRY_PICK_HEAD", "REVERT_HEAD")):
        raise GitCommitError("a merge or rebase is in progress: resolve it before wiki step writes memory", root)
    settle_locks(root)


# git's own lock files a commit may need: the index, HEAD, the packed refs, a branch's ref
_LOCK_FILES = ("index.lock", "HEAD.lock", "ORIG_HEAD.lock", "packed-refs.lock", "config.lock")
STALE_LOCK_S = 2.0  # a lock younger than this may be a git that is starting right now
LOCK_WAIT_S = 10.0  # how long a writer waits for a live git to finish with its lock


def lock_files(root: Path, *, bare: bool = False) -> list[Path]:
    """The git lock files present now in ``root``'s git directories (its own and the shared one;
    ``root`` itself when ``bare``)."""
    found = []
    for directory in (root,) if bare else dict.fromkeys((git_dir(root), common_dir(root))):
        found += [directory / name for name in _LOCK_FILES if (directory / name).exists()]
        refs = directory / "refs"
        if refs.is_dir():
            found += sorted(refs.rglob("*.lock"))
    return found


def git_processes(root: Path) -> list[int]:
    """The live git processes working in ``root`` (their working folder is inside it, or their
    ``--git-dir`` is ``root``: a bare repository), from ``/proc``."""
    here = Path(root).resolve()
    named = (b"--git-dir\0" + os.fsencode(root) + b"\0", b"--git-dir\0" + os.fsencode(here) + b"\0")
    found = []
    try:
        names = os.listdir("/proc")
    except OSError:
        return []
    for name in names:
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/comm", encoding="utf-8", errors="replace") as handle:
                comm = handle.read().strip()
            if comm != "git" and not comm.startswith("git-"):
                continue
            cwd = Path(os.readlink(f"/proc/{name}/cwd"))
            with open(f"/proc/{name}/cmdline", "rb") as handle:
                argv = handle.read()
        except OSError:
            continue  # gone, or not ours to read
        if cwd == here or here in cwd.parents or any(flag in argv for flag in named):
            found.append(int(name))
    return found


def settle_locks(root: Path, *, wait_s: float | None = None, bare: bool = False,
                 error: type[WikiError] = GitCommitError) -> list[Path]:
    """Remove the lock files a killed git left (RELIABILITY row 35, git's own protocol: only
    when no git process is alive in the repository, and never one younger than
    ``STALE_LOCK_S``); while a live git holds one, wait up to ``wait_s``, then raise ``error``
    naming the file. ``bare``: ``root`` is a bare repository. Returns the files removed."""
    deadline = time.monotonic() + (LOCK_WAIT_S if wait_s is None else wait_s)
    removed: list[Path] = []
    while True:
        locks = lock_files(root, bare=bare)
        if not locks:
            return removed
        old = [lock for lock in locks if _age(lock) >= STALE_LOCK_S]
        if old and not git_processes(root):
            for lock in old:
                lock.unlink(missing_ok=True)
            removed += old
            continue
        if time.monotonic() >= deadline:
            raise error(f"{locks[0]} is held: a git process is running in this repository; "
                        "wait for it, or remove the file once no git process runs", root)
        time.sleep(0.05)


def _age(path: Path) -> float:
    try:
        return time.time() - path.stat().st_mtime
    except OSError:
        return 0.0


def check_repository(root: Path, probe: CommitProbe | None = None) -> None:
    """Refuse a repository mid-merge, with a held ``index.lock`` or an unmerged entry (rows 35, 37);
    ``probe``: a :class:`CommitProbe` already asking git what the index holds."""
    check_markers(root)
    if probe is not None:
        probe.staged()
    else:
        _staged(root, _git(root, *STAGED))


def dirty_paths(root: Path, paths: list[str]) -> list[str]:
    """Which of ``paths`` differ from HEAD (staged, modified or untracked)."""
    return _changed(_status_entries(_git(root, *STATUS, *paths)), paths) if paths else []


def assert_no_secret(text: str, where: str) -> None:
    """GitCommitError at ``where``'s first hit when ``text`` holds a secret: a value this process
    can see (plain, URL-encoded or base64; row 46) or a secret-shaped string (a token format,
    a key block, a ``password=`` assignment; row 95). The message names the line and the rule,
    never the value."""
    from wikiengine.core.secrets import secret_hits

    hits = secret_hits(text)
    if hits:
        more = f" (and {len(hits) - 1} more: lines {', '.join(str(h.line) for h in hits[1:6])})" if len(hits) > 1 else ""
        raise GitCommitError(f"refusing to commit: a secret-shaped string ({hits[0].rule}){more}; remove it "
                             "and pass the credential through the environment instead", where,
                             hits[0].line if where != "commit message" else None)


def commit_paths(root: Path, paths: list[str], message: str, probe: CommitProbe | None = None) -> str | None:
    """Commit exactly ``paths`` (relative to ``root``) with ``message``; return the new sha.

    Returns None when none of the paths changed (an idempotent re-run commits nothing).
    ``probe``: the :class:`CommitProbe` of ``paths``, started by the caller once the files
    were written. The new sha is read from the branch's ref file (``git rev-parse`` only
    when the ref is packed or HEAD detached).
    """
    asked = probe or CommitProbe(root, paths)
    try:
        staged_before, changed, untracked = asked.staged(), asked.changed(), asked.untracked()
    finally:
        if probe is None:
            asked.close()
    if not changed:
        check_markers(root)
        return None
    for rel in changed:
        path = Path(root) / rel
        if path.exists():
            assert_no_secret(path.read_text(encoding="utf-8", errors="replace"), rel)
    assert_no_secret(message, "commit message")
    # one commit at a time per work tree: writers of different lanes hold different lane
    # locks, and git refuses a second `git add`/`git commit` while the first holds index.lock
    with FileLock(git_dir(root) / "wiki-commit.lock", timeout=COMMIT_LOCK_TIMEOUT_S,
                  busy=f"another wiki writer has been committing for {COMMIT_LOCK_TIMEOUT_S:g}s"):
        check_markers(root)
        return _add_and_commit(root, changed, message, staged_before, untracked)


def _add_and_commit(root: Path, changed: list[str], message: str, staged_before: set[str], untracked: set[str]) -> str:
    others = staged_before - set(changed)
    if others or untracked & set(changed):
        _git(root, "add", "--all", "--", *changed)
        # `--only` commits just these paths past whatever else is staged, at the price of a
        # temporary index (20 ms more on a 10,000-page wiki); with nothing else staged the
        # index itself holds exactly the commit.
        args = ["commit", "--quiet", "-m", message, *(["--only", "--", *changed] if others else [])]
    else:
        # every path known to git and nothing else staged: `--include` stages them (a deleted
        # one too) and commits the index, one git process instead of `add`'s and `commit`'s
        args = ["commit", "--quiet", "-m", message, "--include", "--", *changed]
    try:
        _git(root, *args)
    except GitCommitError as exc:
        if "tell me who you are" not in str(exc) and "identity" not in str(exc):
            raise
        _git(root, *args, env=IDENTITY)  # no user.name set
    return head_sha(root)


def head_sha(root: Path) -> str:
    """The commit HEAD names: from the loose ref file git just wrote, else ``git rev-parse``."""
    return loose_head(root) or _git(root, "rev-parse", "HEAD").strip()


def current_head(root: Path) -> str | None:
    """The commit HEAD names, None on a branch without a commit yet (the loose ref file, else
    ``git rev-parse``)."""
    return loose_head(root) or out(root, "rev-parse", "--verify", "-q", "HEAD").strip() or None


def loose_head(root: Path) -> str | None:
    """HEAD's commit read from its branch's loose ref file without starting git; None when
    git must be asked (a detached or packed ref, a reftable, an unborn branch, a ``root`` that
    is not the repository's top: a wiki in a subdirectory)."""
    try:
        git_dir_path = git_dir(root)
        head = (git_dir_path / "HEAD").read_text(encoding="utf-8").strip()
        if head.startswith("ref: refs/"):
            ref = head[len("ref: "):]
            for base in (git_dir_path, _common_dir(git_dir_path)):
                sha = (base / ref).read_text(encoding="utf-8").strip() if (base / ref).is_file() else ""
                if len(sha) in (40, 64) and all(c in "0123456789abcdef" for c in sha):
                    return sha
    except (OSError, GitCommitError):
        pass
    return None


def exclude_locally(root: Path, patterns: list[str]) -> None:
    """Add ``patterns`` to this clone's ``info/exclude`` (git's own per-clone ignore list, shared
    by its worktrees), once each: files only this clone writes never show as untracked."""
    from wikiengine.core.atomic import atomic_write_text

    path = common_dir(root) / "info" / "exclude"
    text = path.read_text(encoding="utf-8", errors="replace") if path.is_file() else ""
    missing = [p for p in patterns if p not in text.splitlines()]
    if missing:
        path.parent.mkdir(parents=True, exist_ok=True)
        head = text if not text or text.endswith("\n") else text + "\n"
        atomic_write_text(path, head + "".join(f"{p}\n" for p in missing))


def common_dir(root: Path) -> Path:
    """The git directory every worktree of ``root``'s repository shares (its branches, its
    shared locks): a linked worktree's ``commondir``, else its own git directory."""
    return _common_dir(git_dir(root))


def _common_dir(git_dir_path: Path) -> Path:
    """A linked worktree's branches live in the main repository's git directory (``commondir``)."""
    common = git_dir_path / "commondir"
    if not common.is_file():
        return git_dir_path
    path = Path(common.read_text(encoding="utf-8").strip())
    return path if path.is_absolute() else (git_dir_path / path).resolve()
