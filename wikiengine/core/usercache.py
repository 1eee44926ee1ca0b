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
    written back: a key it refuses is not kept."""

    def __init__(self, kind: str, name: str, stamp, *, limit: int, per_process: int | None = None,
                 admit=None) -> None:
        self.kind, self.name, self.stamp = kind, name, stamp  # stamp: a callable, asked once, when needed
        self.limit, self.per_process = limit, limit if per_process is None else per_process
        self.admit = admit
        self._kept: dict | None = None
        self._added: dict = {}
        self._where, self._stamp_taken = _UNSET, None
        _MAPS.append(self)

    def get(self, key):
        found = self._added.get(key)
        return found if found is not None else self._read().get(key)

    def has_room(self) -> bool:
        """Would :meth:`put` keep a new entry (this process has not added its share)?"""
        return len(self._added) < self.per_process

    def put(self, key, value: bytes) -> None:
        if self.has_room():
            self._added[key] = value

    def save(self) -> None:
        """Write back what this process added (nothing added: nothing written)."""
        added = dict(self._added)  # asking admit may compile, and add, more
        if self.admit is not None:
            added = {key: value for key, value in added.items() if self.admit(key)}
        path = self._path() if added else None
        if path is not None:
            kept = {**self._read(), **added}
            for stale in list(kept)[:max(0, len(kept) - self.limit)]:
                del kept[stale]
            write_private(path, marshal.dumps((self._stamp(), kept)))
            self._kept = kept
        self._added = {}

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
                stamp, kept = marshal.loads(data) if data else ("", {})
            except (EOFError, ValueError, TypeError):
                stamp, kept = "", {}
            ok = (stamp == self._stamp() and isinstance(kept, dict)
                  and all(type(k) in (str, bytes) and type(v) is bytes for k, v in kept.items()))
            self._kept = kept if ok else {}
        return self._kept


_MAPS: list[KeptMap] = []


def save_all() -> None:
    """Write back every map that this process added to."""
    for kept in _MAPS:
        kept.save()
