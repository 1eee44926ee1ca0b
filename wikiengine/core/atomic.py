"""The one atomic write: a unique temp file beside the target, fsync, rename, fsync the folder.

A reader sees the old file or the new one, never a part; a crash leaves no half-written
file, and two writers never share a temp file (its name carries the pid and a random
token) (RELIABILITY row 39).
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` via a temp file, fsync and rename; then fsync the folder."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}-{secrets.token_hex(4)}")
    try:
        with open(tmp, "xb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
    fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write_text(path: Path, text: str) -> None:
    """:func:`atomic_write_bytes` of ``text`` in UTF-8, newlines as given."""
    atomic_write_bytes(path, text.encode("utf-8"))
