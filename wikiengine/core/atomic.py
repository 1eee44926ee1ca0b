"""The one atomic write: a unique temp file beside the target, fsync, rename, fsync the folder.

A reader sees the old file or the new one, never a part; a crash leaves no half-written
file, and two writers never share a temp file (its name, ``.{name}.tmp-{pid}-{token}``,
carries the pid and a random token) (RELIABILITY row 39). A file that is replaced keeps its
mode (a page stays 0644, a script stays executable); a new one gets 0666 less the umask,
as ``open`` would give it.

Stdlib only: the trainer imports this on remote machines.
"""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path

TYPE_CHECKING = False  # typing's constant, without importing typing
if TYPE_CHECKING:
    from typing import Any


def temp_name(path: Path) -> Path:
    """The temp file a write of ``path`` goes through: hidden, beside it, unique to this write."""
    return path.with_name(f".{path.name}.tmp-{os.getpid()}-{os.urandom(4).hex()}")


_TEMP_RE = re.compile(r"\..+\.tmp-(?P<pid>\d+)-[0-9a-f]{8}")


def sweep_temp_files(directories) -> list[Path]:
    """Remove the temp files (:func:`temp_name`) that a killed writer left in ``directories``:
    those whose writing process is gone. Returns what was removed."""
    removed = []
    for directory in directories:
        try:
            names = os.listdir(directory)
        except OSError:
            continue
        for name in names:
            match = _TEMP_RE.fullmatch(name)
            if match and not _alive(int(match.group("pid"))):
                path = Path(directory) / name
                path.unlink(missing_ok=True)
                removed.append(path)
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process
    return True


def fsync_dir(directory: Path) -> None:
    """Make a rename in ``directory`` durable."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write_bytes(path: Path, data: bytes, *, durable: bool = True) -> None:
    """Write ``data`` to ``path`` via a temp file and a rename; keep an existing file's mode.

    ``durable``: fsync the file before the rename and the folder after it (a cache that
    may be lost passes False and saves the two syncs).
    """
    path = Path(path)
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)
    except FileNotFoundError:
        mode = None
    tmp = temp_name(path)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)  # the umask applies
    try:
        with open(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            if mode is not None:
                os.fchmod(handle.fileno(), mode)
            if durable:
                os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    if durable:
        fsync_dir(path.parent)


def atomic_write_text(path: Path, text: str, *, durable: bool = True) -> None:
    """:func:`atomic_write_bytes` of ``text`` in UTF-8, newlines as given."""
    atomic_write_bytes(path, text.encode("utf-8"), durable=durable)


def atomic_write_json(path: Path, obj: Any, *, durable: bool = True, **dumps: Any) -> None:
    """:func:`atomic_write_text` of ``json.dumps(obj, **dumps)``."""
    atomic_write_text(path, json.dumps(obj, **dumps), durable=durable)
