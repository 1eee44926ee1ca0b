"""The per-user cache: ``$XDG_CACHE_HOME/wikiengine/`` (default ``~/.cache/wikiengine/``).

What is kept here may run as code (compiled schema validators), so the place is trusted
only outside every git work tree: CI often points ``XDG_CACHE_HOME`` into the checkout,
where a commit could plant a file (the rule the lint cache's signing key follows, in
``lint/cache.py``). A file is read back only when it is a regular file of this user that
no one else may write; everything is best effort: a cache that cannot be used is skipped.
"""

from __future__ import annotations

import marshal
import os
import stat
from pathlib import Path


def base_dir() -> Path:
    """``$XDG_CACHE_HOME/wikiengine`` (default ``~/.cache/wikiengine``)."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "wikiengine"


def cache_dir(kind: str) -> Path | None:
    """``<cache>/wikiengine/<kind>``, or None when it lies inside a git work tree."""
    folder = base_dir() / kind
    return None if work_tree_holding(folder) is not None else folder


def work_tree_holding(path: Path) -> Path | None:
    """The git work tree that ``path`` (its links resolved) lies in, or None."""
    resolved = Path(os.path.realpath(path))
    return next((parent for parent in (resolved, *resolved.parents) if os.path.lexists(parent / ".git")), None)


def read_private(path: Path, *, secret: bool = False, limit: int = -1) -> bytes | None:
    """The bytes of ``path`` (at most ``limit``) when it is a regular file of this user that
    no one else may write (``secret``: nor read), not a link; else None."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & (0o077 if secret else 0o022):
            return None
        return handle.read(limit)


def write_private(path: Path, data: bytes) -> None:
    """Keep ``data`` at ``path`` (its folder private to this user); a failure is ignored."""
    from wikiengine.core.atomic import atomic_write_bytes  # a reader need not load the writer

    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        atomic_write_bytes(path, data, durable=False)
        os.chmod(path, 0o600)  # whatever the umask: read_private takes no file others may write
    except OSError:
        pass


def code_stamp(*modules: str, files: tuple[str, ...] = ()) -> str:
    """A :class:`KeptMap` stamp naming the code its values come from: the interpreter, and
    the size and modification time of ``files`` and of each installed module's file (by name,
    found without importing it)."""
    import importlib.util
    import sys

    found = [spec.origin for spec in map(importlib.util.find_spec, modules) if spec is not None and spec.origin]
    stats = [(name, os.stat(name)) for name in (*files, *found)]
    return repr((tuple(sys.version_info), [(name, st.st_size, st.st_mtime_ns) for name, st in stats]))


_UNSET = object()


class KeptMap:
    """A map of ``str``/``bytes`` keys to ``bytes`` kept in one private file of the cache.

    The file is read at the first lookup of a process; what the process added is written back
    (with what the file held) by :func:`save_all`, which the CLI calls as it ends. ``stamp``
    names what the values depend on (the code that made them): a file holding another stamp
    reads as empty and is replaced. Past ``limit`` entries the oldest are dropped, and a
    process adds at most ``per_process`` (a cold lint of 4,000 pages does not flush out
    what the short commands keep). ``admit``, when given, is asked of each key as it is
    written back: a key it refuses is not kept. ``second_sight``: a key is kept only when a
    later process meets it again (the first one keeps its checksum alone), so that keys made
    anew by every process (the standard tokenizer's pattern, built from a set in hash order:
    204 of 843 kept patterns, 2 of their 2.2 MB, on a machine that ran the suite) never fill
    the file every process reads. ``kind_files``: for maps kept one file per something that
    comes and goes (a lane folder: every clone, worktree and test folder has its own), the
    most files the kind's folder keeps; a map that writes a new one removes the least
    recently written past it."""

    def __init__(self, kind: str, name: str, stamp, *, limit: int, per_process: int | None = None,
                 admit=None, second_sight: bool = False, kind_files: int | None = None) -> None:
        self.kind, self.name, self.stamp = kind, name, stamp  # stamp: a callable, asked once, when needed
        self.limit, self.per_process = limit, limit if per_process is None else per_process
        self.admit, self.second_sight, self.kind_files = admit, second_sight, kind_files
        self._kept: dict | None = None
        self._seen: dict[int, None] = {}  # the checksums of keys met once (second_sight), oldest first
        self._added: dict = {}
        self._sighted: dict = {}  # key -> checksum: met for the first time by this process
        self._where, self._stamp_taken = _UNSET, None
        _MAPS.append(self)

    def get(self, key):
        found = self._added.get(key)
        return found if found is not None else self._read().get(key)

    def recall(self, key, default=None):
        """The value kept under ``key``, unmarshalled afresh (the caller may change it);
        ``default`` when there is none or it is damaged."""
        held = self.get(key)
        if held is None:
            return default
        try:
            return marshal.loads(held)
        except (EOFError, ValueError, TypeError):
            return default

    def keep(self, key, value) -> None:
        """:meth:`put` of ``value`` marshalled; a value marshal cannot hold is not kept."""
        try:
            data = marshal.dumps(value)
        except ValueError:
            return
        self.put(key, data)

    def has_room(self) -> bool:
        """Would :meth:`put` keep a new entry (this process has not added its share)?"""
        return len(self._added) + len(self._sighted) < self.per_process

    def put(self, key, value: bytes) -> None:
        if not self.has_room():
            return
        if self.second_sight:
            mark = _checksum(key)
            if mark not in self._read_seen():
                self._sighted[key] = mark
                return
        self._added[key] = value

    def save(self) -> None:
        """Write back what this process added and met (nothing: nothing written)."""
        added, sighted = dict(self._added), dict(self._sighted)  # asking admit may compile, and add, more
        if self.admit is not None:
            added = {key: value for key, value in added.items() if self.admit(key)}
            sighted = {key: mark for key, mark in sighted.items() if self.admit(key)}
        path = self._path() if added or sighted else None
        if path is not None:
            kept = {**self._read(), **added}
            for stale in list(kept)[:max(0, len(kept) - self.limit)]:
                del kept[stale]
            promoted = {_checksum(key) for key in added} if self.second_sight else set()
            seen = [mark for mark in self._read_seen() if mark not in promoted] + list(sighted.values())
            seen = dict.fromkeys(seen[max(0, len(seen) - SEEN_PER_ENTRY * self.limit):])
            new_file = self.kind_files is not None and not os.path.lexists(path)
            write_private(path, marshal.dumps((self._stamp(), kept, seen)))
            if new_file:
                _keep_newest(path.parent, self.kind_files)
            self._kept, self._seen = kept, seen
        self._added, self._sighted = {}, {}

    def _path(self) -> Path | None:
        if self._where is _UNSET:  # one walk up for a git work tree per map and process
            folder = cache_dir(self.kind)
            self._where = folder / self.name if folder is not None else None
        return self._where

    def _stamp(self) -> str:
        if self._stamp_taken is None:
            self._stamp_taken = str(self.stamp())
        return self._stamp_taken

    def _read(self) -> dict:
        if self._kept is None:
            path = self._path()
            data = read_private(path) if path is not None else None
            try:
                stamp, kept, seen = marshal.loads(data) if data else ("", {}, {})
            except (EOFError, ValueError, TypeError):
                stamp, kept, seen = "", {}, {}
            ok = (stamp == self._stamp() and isinstance(kept, dict) and isinstance(seen, dict)
                  and all(type(k) in (str, bytes) and type(v) is bytes for k, v in kept.items())
                  and all(type(mark) is int for mark in seen))
            self._kept, self._seen = (kept, seen) if ok else ({}, {})
        return self._kept

    def _read_seen(self) -> dict[int, None]:
        self._read()
        return self._seen


def _keep_newest(folder: Path, files: int) -> None:
    """Remove the least recently written ``.marshal`` files of ``folder`` past the newest ``files``."""
    found = []
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                if entry.name.endswith(".marshal") and entry.is_file(follow_symlinks=False):
                    found.append((entry.stat(follow_symlinks=False).st_mtime_ns, entry.path))
    except OSError:
        return
    for _written, path in sorted(found)[:max(0, len(found) - files)]:
        try:
            os.unlink(path)
        except OSError:
            pass  # another process removed it, or may not


_MAPS: list[KeptMap] = []
SEEN_PER_ENTRY = 4  # a second-sight map remembers this many keys met once for each it may keep


def _checksum(key: str | bytes) -> int:
    """What a second-sight map remembers of a key met once."""
    import zlib

    return zlib.crc32(key if isinstance(key, bytes) else key.encode("utf-8", "surrogatepass"))


def save_all() -> None:
    """Write back every map that this process added to."""
    for kept in _MAPS:
        kept.save()
