"""The embedded checkpoint store: a local git repository whose history plays the Hub's.

:class:`LocalGitStore` implements :class:`executors.store.CheckpointStore` on a bare git
repository with one branch (``main``), through the git CLI's plumbing:

- a commit is built without a work tree (``hash-object -w``, a private index file,
  ``write-tree``, ``commit-tree`` with the real current time);
- the branch moves with ``git update-ref refs/heads/main <new> <expected-old>``, a
  compare-and-swap: when the branch is not at the parent the writer named, the update
  is refused and :class:`StaleParentError` raised (a second writer is refused, never
  merged); a lock file a killed writer's git left (``HEAD.lock``, the branch's) is
  removed once no git runs on the store, and the move tried again (RELIABILITY row 35);
- reads are pinned to a revision: ``cat-file`` and ``ls-tree``.

Create a fresh store with ``LocalGitStore.create(path)`` (a bare repository with one
initial commit, so :meth:`head` always has an answer); open an existing one with
``LocalGitStore(path)``.
"""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

from wikiengine.core import git
from wikiengine.core.clock import from_epoch
from wikiengine.executors.store import (
    FINAL_PATH,
    POINTER_PATH,
    FileMissingError,
    Pointer,
    StaleParentError,
    StoreCommit,
    StoreError,
    StoreFormatError,
    StoreUnavailableError,
    checkpoint_message,
    checkpoint_path,
    final_message,
    pointer_message,
)

BRANCH_REF = "refs/heads/main"
COMMIT_ID = re.compile(r"^[0-9a-f]{40}$")
# weights and optimizer moments barely compress: objects are stored uncompressed (faster saves
# and reads), and never repacked behind a writer's back
_SETTINGS = "[core]\n\tlooseCompression = 0\n\tcompression = 0\n[gc]\n\tauto = 0\n"
_IDENTITY = {
    "GIT_AUTHOR_NAME": "wikiengine trainer",
    "GIT_AUTHOR_EMAIL": "trainer@wikiengine.invalid",
    "GIT_COMMITTER_NAME": "wikiengine trainer",
    "GIT_COMMITTER_EMAIL": "trainer@wikiengine.invalid",
}


class LocalGitStore:
    """A checkpoint store on a local bare git repository (see the module docstring)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        if not (self.path / "HEAD").is_file() or not (self.path / "objects").is_dir():
            raise StoreUnavailableError(f"{self.path}: not a git repository created by LocalGitStore.create")

    # ---------------------------------------------------------------- creation

    @classmethod
    def create(cls, path: str | Path, description: str = "checkpoint store") -> LocalGitStore:
        """Create a bare repository at ``path`` with one initial commit; return the store.

        Refuses an existing non-empty directory.
        """
        path = Path(path)
        if path.exists() and any(path.iterdir()):
            raise StoreError(f"{path}: exists and is not empty")
        path.mkdir(parents=True, exist_ok=True)
        _run_git(path, "init", "--bare", "--quiet", "--initial-branch=main")
        with open(path / "config", "a", encoding="utf-8") as config:  # one write, not a `git config` each
            config.write(_SETTINGS)
        store = cls(path)
        text = f"# {description}\n\nCheckpoints live under ckpt/; latest.json names the current one.\n"
        readme = store._hash_blob(text.encode())
        tree = store._build_tree(None, {"README.md": readme}, remove_prefix=None)
        commit = store._commit_tree(tree, None, "create checkpoint store")
        _run_git(path, "update-ref", BRANCH_REF, commit, "0" * 40)
        return store

    # ---------------------------------------------------------------- reads

    def head(self) -> str:
        """The commit id ``main`` points at now."""
        out = self._git("rev-parse", "--verify", "--quiet", BRANCH_REF, check=False)
        commit = out.stdout.decode().strip()
        if out.returncode != 0 or not COMMIT_ID.match(commit):
            raise StoreUnavailableError(f"{self.path}: branch main has no commit")
        return commit

    def list_commits(self, revision: str) -> list[StoreCommit]:
        """History reachable from ``revision``, newest first (id, title, commit date UTC)."""
        out = self._git("log", "--format=%H%x00%ct%x00%s", self._rev(revision), "--").stdout.decode()
        commits = []
        for line in out.splitlines():
            commit_id, stamp, title = line.split("\x00", 2)
            commits.append(StoreCommit(commit_id, title, from_epoch(int(stamp))))
        return commits

    def read_file(self, path: str, revision: str) -> bytes:
        """The bytes of ``path`` at ``revision``; FileMissingError when absent."""
        _check_path(path)
        out = self._git("cat-file", "blob", f"{self._rev(revision)}:{path}", check=False)
        if out.returncode != 0:
            raise FileMissingError(f"{path} does not exist at {revision[:12]}")
        return out.stdout

    def read_files(self, paths: list[str], revision: str) -> dict[str, bytes]:
        """The bytes of each of ``paths`` that exists at ``revision``, from one ``git cat-file --batch``."""
        for path in paths:
            _check_path(path)
        rev = self._rev(revision)
        blobs = git.cat_file_batch(None, [f"{rev}:{path}" for path in paths], git_dir=self.path, isolated=True,
                                   timeout=None, error=StoreError, unavailable=StoreUnavailableError)
        return {path: blob for path, blob in zip(paths, blobs) if blob is not None}

    def list_files(self, prefix: str, revision: str) -> list[str]:
        """Paths of the files under ``prefix`` (a directory path, with or without ``/``) at ``revision``."""
        prefix = prefix.rstrip("/")
        args = ["ls-tree", "-r", "-z", "--name-only", self._rev(revision)]
        if prefix:
            _check_path(prefix)
            args += ["--", prefix + "/"]
        out = self._git(*args).stdout.decode()
        return sorted(name for name in out.split("\x00") if name)

    def read_pointer(self, revision: str) -> Pointer | None:
        """The parsed ``latest.json`` at ``revision``; None before the first pointer commit."""
        try:
            data = self.read_file(POINTER_PATH, revision)
        except FileMissingError:
            return None
        return Pointer.from_bytes(data)

    def is_ancestor(self, ancestor: str, descendant: str) -> bool:
        """True when ``ancestor`` is in the history of ``descendant``."""
        out = self._git("merge-base", "--is-ancestor", self._rev(ancestor), self._rev(descendant), check=False)
        if out.returncode not in (0, 1):
            raise StoreError(f"cannot compare {ancestor[:12]} and {descendant[:12]}")
        return out.returncode == 0

    # ---------------------------------------------------------------- writes

    def commit_checkpoint(self, step: int, local_dir: Path, parent: str) -> str:
        """Commit the files of ``local_dir`` as ``ckpt/checkpoint-<step>/`` (message ``checkpoint N``).

        The folder is replaced as a whole (an older folder of the same name stays in the
        history). StaleParentError when ``main`` is not at ``parent``.
        """
        return self._commit_folder(checkpoint_path(step), local_dir, parent, checkpoint_message(step))

    def commit_final(self, step: int, local_dir: Path, parent: str) -> str:
        """Commit the files of ``local_dir`` as ``final/`` (message ``final N``), replacing any older one."""
        return self._commit_folder(FINAL_PATH, local_dir, parent, final_message(step))

    def _commit_folder(self, folder: str, local_dir: Path, parent: str, message: str) -> str:
        local_dir = Path(local_dir)
        files = sorted(p for p in local_dir.iterdir() if p.is_file())
        if not files:
            raise StoreError(f"{local_dir}: no files to commit")
        blobs = dict(zip((f"{folder}/{p.name}" for p in files), self._hash_files(files)))
        tree = self._build_tree(parent, blobs, remove_prefix=folder)
        return self._advance(parent, tree, message)

    def commit_pointer(self, step: int, parent: str) -> str:
        """Commit ``latest.json`` = ``{"step": N, "path_in_repo": "ckpt/checkpoint-N"}`` (message ``latest -> N``)."""
        blob = self._hash_blob(Pointer(step, checkpoint_path(step)).to_bytes())
        tree = self._build_tree(parent, {POINTER_PATH: blob}, remove_prefix=None)
        return self._advance(parent, tree, pointer_message(step))

    # ---------------------------------------------------------------- plumbing

    def _advance(self, parent: str, tree: str, message: str) -> str:
        self._rev(parent)
        commit = self._commit_tree(tree, parent, message)
        move = ("update-ref", "-m", message, BRANCH_REF, commit, parent)
        out = self._git(*move, check=False)
        if out.returncode != 0 and self.head() == parent:  # not moved: a lock was in the way
            git.settle_locks(self.path, bare=True, error=StoreUnavailableError)
            out = self._git(*move, check=False)
        if out.returncode != 0:
            if self.head() != parent:
                raise StaleParentError(f"main moved: it is no longer at {parent[:12]} (another writer committed)")
            raise StoreError(f"git update-ref failed: {out.error_line}", self.path)
        return commit

    def _commit_tree(self, tree: str, parent: str | None, message: str) -> str:
        args = ["commit-tree", tree, "-m", message]
        if parent:
            args += ["-p", parent]
        return self._git(*args, env=_IDENTITY).stdout.decode().strip()

    def _build_tree(self, parent: str | None, blobs: dict[str, str], remove_prefix: str | None) -> str:
        with tempfile.TemporaryDirectory(prefix="wiki-index-") as tmp:
            env = {"GIT_INDEX_FILE": os.path.join(tmp, "index")}
            if parent:
                self._git("read-tree", parent, env=env)
                if remove_prefix:
                    self._git("rm", "-r", "--cached", "--quiet", "--ignore-unmatch", "--", remove_prefix, env=env)
            index_info = "".join(f"100644 {blob}\t{path}\n" for path, blob in blobs.items())
            self._git("update-index", "--add", "--index-info", env=env, input=index_info.encode())
            return self._git("write-tree", env=env).stdout.decode().strip()

    def _hash_blob(self, data: bytes) -> str:
        return self._git("hash-object", "-w", "--stdin", input=data).stdout.decode().strip()

    def _hash_files(self, paths: list[Path]) -> list[str]:
        """The blob ids of ``paths``, written by one ``hash-object`` process (a checkpoint folder holds
        several files: one process each was the relay's most frequent git call)."""
        if any("\n" in str(path) for path in paths):  # (one path a line: git could not read it back)
            raise StoreFormatError(f"a path with a newline cannot be committed: {paths[0].parent}")
        listed = "".join(f"{path}\n" for path in paths).encode()
        out = self._git("hash-object", "-w", "--no-filters", "--stdin-paths", input=listed).stdout.decode().split()
        if len(out) != len(paths):
            raise StoreError(f"git hash-object gave {len(out)} ids for {len(paths)} files")
        return out

    def _rev(self, revision: str) -> str:
        if not isinstance(revision, str) or not COMMIT_ID.match(revision):
            raise StoreFormatError(f"revision must be a 40-hex commit id, got {revision!r}")
        return revision

    def _git(self, *args: str, env: dict | None = None, input: bytes | None = None, check: bool = True):
        return _run_git(self.path, *args, env=env, input=input, check=check)


def _check_path(path: str) -> None:
    if not path or path.startswith("/") or ".." in path.split("/") or "\x00" in path or "\n" in path or ":" in path:
        raise StoreFormatError(f"bad path in store: {path!r}")


def _run_git(repo: Path, *args: str, env: dict | None = None, input: bytes | None = None,
             check: bool = True) -> git.Result:
    """``git --git-dir repo <args>`` in an environment of its own (no ``GIT_*`` of the caller's,
    no system config, no prompt), bytes in and out, without a deadline (a checkpoint is large)."""
    return git.run(None, *args, git_dir=repo, env=env, isolated=True, input=input, binary=True, timeout=None,
                   check=check, error=StoreError, unavailable=StoreUnavailableError)
