"""Typed errors that become one clear line and exit status 2 at the command line."""

from __future__ import annotations

import enum
from pathlib import Path


class ExitCode(enum.IntEnum):
    """Every exit status a command returns, each with one meaning."""

    OK = 0
    FINDINGS = 1  # lint found something
    BAD_INPUT = 2
    BLOCKED = 3  # a relay run an emergency stopped: a person clears it (wiki unblock)
    INTERNAL = 70  # a bug (EX_SOFTWARE)
    INTERRUPTED = 130


class WikiError(Exception):
    """Bad input: a file that cannot be read, a target that does not exist, bad usage.

    ``str(err)`` is the one line a user sees: ``path:line: message`` where known.
    """

    exit_code = 2

    def __init__(self, message: str, path: str | Path | None = None, line: int | None = None):
        super().__init__(message)
        self.message = message
        self.path = str(path) if path is not None else None
        self.line = line

    def __str__(self) -> str:
        where = ""
        if self.path:
            where = f"{self.path}:{self.line}: " if self.line else f"{self.path}: "
        return f"{where}{self.message}"


class PageError(WikiError):
    """A markdown page cannot be parsed: encoding, frontmatter fence, YAML."""


class CascadeError(WikiError):
    """A program cascade cannot be resolved (missing root, duplicate section, bad config)."""


class SchemaError(WikiError):
    """A document does not validate against its JSON Schema."""
