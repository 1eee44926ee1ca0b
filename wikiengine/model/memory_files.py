"""Where the memory files are and how one is read: the part of :mod:`wikiengine.model.memory`
a reader of STATE.md needs (a lane or kernel wake reads no relay table)."""

from __future__ import annotations

import os
from pathlib import Path

from wikiengine.core.errors import PageError, WikiError
from wikiengine.core.safe_read import read_text

MEMORY_DIR = "memory"
STATE_FILE = "STATE.md"
QUOTA_FILE = "QUOTA.md"
ASSETS_FILE = "ASSETS.md"
ERRORS_FILE = "ERRORS.md"
MEMORY_FILES = (STATE_FILE, QUOTA_FILE, ASSETS_FILE, ERRORS_FILE)


class MemoryFormatError(WikiError):
    """A memory file does not follow its format (one line: ``path:line: message``)."""


def memory_path(root: Path, name: str) -> Path:
    return Path(root) / MEMORY_DIR / name


def read_memory_file(path: Path) -> str:
    """A memory file's text: a regular file only (a symlink to /dev/zero or a FIFO is refused)."""
    if not os.path.lexists(path):
        raise MemoryFormatError("no such memory file (run `wiki demo` or scaffold memory/ first)", path)
    try:
        return read_text(path, kind="state", within=Path(path).parent.parent)
    except PageError as err:
        raise MemoryFormatError(err.message, path, err.line) from None
