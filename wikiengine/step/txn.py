"""One write of a lane: the lane lock, a redo record, atomic file writes, re-lint, one commit.

Every lane writer (``wiki exp``, ``wiki log add``, ``wiki backfill``) builds the whole
new content of each file it changes in memory, then :meth:`LaneTxn.commit`:

1. writes a redo record ``.git/wiki-lane/<model>__<lane>.txn.json`` (the commit
   message and the full new text of every file), fsynced;
2. writes each file atomically (temp file, fsync, rename);
3. re-lints the written files and refuses (restoring the old texts) when the write
   introduced a finding;
4. commits exactly those paths (``core.git.commit_paths``) and deletes the
   redo record.

A writer killed anywhere leaves either no redo record (nothing happened, or the commit
is done) or one that the next writer of the lane replays first: the texts are whole, so
replaying twice writes the same bytes and commits once. The lock is an ``flock`` of a
file in the git directory, so concurrent writers of one lane (one per track) take turns.
It is taken with ``fcntl`` directly, as ``filelock`` does on POSIX: importing
``filelock`` 4.3 costs 17-40 ms (logging, secrets, decimal), a tenth of a writer's run.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from wikiengine.core.errors import WikiError
from wikiengine.core.git import CommitProbe, git_dir
from wikiengine.core.locks import FileLock
from wikiengine.model.lanes import Lane
from wikiengine.core.atomic import atomic_write_text

LOCK_TIMEOUT_S = 120


class LaneWriteRefused(WikiError):
    """The write would leave a lint finding; nothing was committed."""


@dataclass
class LaneTxn:
    """The files one lane write changes, staged in memory until :meth:`commit`."""

    root: Path
    lane: Lane
    texts: dict[str, str] = field(default_factory=dict)  # rel -> new text
    old: dict[str, str | None] = field(default_factory=dict)  # rel -> text before (None: absent)

    def read(self, rel: str) -> str:
        """The text of ``rel`` as this write sees it (staged, else on disk, else "")."""
        if rel in self.texts:
            return self.texts[rel]
        return self._disk(rel) or ""

    def exists(self, rel: str) -> bool:
        return rel in self.texts or (self.root / rel).is_file()

    def write(self, rel: str, text: str) -> None:
        if rel not in self.old:
            self.old[rel] = self._disk(rel)
        self.texts[rel] = text

    def _disk(self, rel: str) -> str | None:
        path = self.root / rel
        try:
            return path.read_text(encoding="utf-8") if path.is_file() else None
        except OSError as exc:
            raise WikiError(f"cannot read: {exc.strerror}", rel) from None

    def changed(self) -> list[str]:
        return sorted(rel for rel, text in self.texts.items() if self.old.get(rel) != text)

    def commit(self, message: str, *, relint: bool = True) -> str | None:
        """Write, re-lint and commit; return the commit sha (None: nothing changed)."""
        paths = self.changed()
        if not paths:
            return None
        record = redo_path(self.root, self.lane)
        record.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(record, json.dumps({"message": message, "files": {p: self.texts[p] for p in paths}}))
        _apply(self.root, {p: self.texts[p] for p in paths})
        probe = CommitProbe(self.root, paths)  # git answers what the commit asks while the re-lint runs
        if relint:
            try:
                after = findings_on(self.root, paths, use_baseline=True)
            except BaseException:
                probe.close()
                raise
            problems = []
            if after:  # were they there before? Linting the old texts swaps files under the probe
                probe.close()
                probe = None
                problems = introduced(self.root, paths, self.old, after)
            if problems:
                _restore(self.root, {p: self.old.get(p) for p in paths})
                record.unlink(missing_ok=True)
                raise LaneWriteRefused(
                    "refused: the write would leave lint findings (nothing committed): " + "; ".join(problems[:5])
                )
        try:
            sha = _commit(self.root, paths, message, probe)
        finally:
            if probe is not None:
                probe.close()
        record.unlink(missing_ok=True)
        return sha


def redo_path(root: Path, lane: Lane) -> Path:
    return git_dir(root) / "wiki-lane" / f"{lane.model_dir}__{lane.name}.txn.json"


def lock_path(root: Path, lane: Lane) -> Path:
    return git_dir(root) / "wiki-lane" / f"{lane.model_dir}__{lane.name}.lock"


def _apply(root: Path, texts: dict[str, str]) -> None:
    for rel, text in texts.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, text)


def _restore(root: Path, texts: dict[str, str | None]) -> None:
    for rel, text in texts.items():
        if text is None:
            (root / rel).unlink(missing_ok=True)
        else:
            atomic_write_text(root / rel, text)


def _commit(root: Path, paths: list[str], message: str, probe=None) -> str | None:
    from wikiengine.core.git import commit_paths

    return commit_paths(root, paths, message, probe)


def recover(root: Path, lane: Lane) -> str | None:
    """Replay the redo record a killed writer left (under the lane lock); the commit sha."""
    record = redo_path(root, lane)
    if not record.is_file():
        return None
    try:
        data = json.loads(record.read_text(encoding="utf-8"))
        files, message = dict(data["files"]), str(data["message"])
    except (OSError, ValueError, KeyError, TypeError):
        record.unlink(missing_ok=True)  # torn before its fsync: nothing was written after it
        return None
    _apply(root, files)
    sha = _commit(root, sorted(files), message)
    record.unlink(missing_ok=True)
    return sha


def findings_on(root: Path, paths: list[str], *, use_baseline: bool) -> dict:
    """The lint findings on ``paths`` (cross-file rules see the whole wiki), keyed by what they say."""
    from wikiengine.lint.runner import lint

    result = lint(root, paths, base=None, use_baseline=use_baseline, jobs=1)
    return {(f.path, f.code, f.message): f for f in result.findings if f.path in paths}


def introduced(root: Path, paths: list[str], old: dict[str, str | None], after: dict) -> list[str]:
    """Which of the findings ``after`` the write introduced (one the old texts had too is not
    the writer's: pre-existing problems are ``wiki lint``'s to report). Lints the old texts
    in place, then puts the new ones back."""
    new_texts = {p: (root / p).read_text(encoding="utf-8") for p in paths}
    _restore(root, {p: old.get(p) for p in paths})
    try:
        before = findings_on(root, [p for p in paths if old.get(p) is not None], use_baseline=True)
    finally:
        _apply(root, new_texts)
    return [f.render() for key, f in sorted(after.items()) if key not in before]


class LaneLock:
    """The lane's write lock, held for a whole write (``with LaneLock(root, lane):``);
    on entry it replays a killed writer's redo record."""

    POLL_S = 0.01

    def __init__(self, root: Path, lane: Lane, timeout: float = LOCK_TIMEOUT_S):
        self.path = lock_path(root, lane)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.root, self.lane, self.recovered, self.timeout = root, lane, None, timeout
        self._lock: FileLock | None = None

    def __enter__(self) -> LaneLock:
        busy = f"lane {self.lane.model_dir}/{self.lane.name} is locked by another writer"
        self._lock = FileLock(self.path, timeout=self.timeout, poll=self.POLL_S, busy=busy).acquire()
        try:
            self.recovered = recover(self.root, self.lane)
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self._lock.release()  # closing the descriptor releases the flock
        self._lock = None
