"""A lint finding: a small value; rules only find, the runner reports, suppresses and fixes."""

from __future__ import annotations

import operator
import re
from dataclasses import dataclass, field


@dataclass(frozen=True, order=True)
class Finding:
    """One problem a rule found: where, which rule, and what to do about it."""

    path: str  # posix path relative to the wiki repository root
    line: int  # 1-based; 1 when the finding concerns the whole file
    col: int
    code: str
    message: str
    fixable: bool = False
    # The date of what the finding is about when that is not the page itself (a log
    # entry): ``since`` compares with it instead of the page's date. logbook.UNDATED: never
    # grandfathered. Not part of the finding's identity.
    date: str | None = field(default=None, compare=False)
    # What the finding is about, when the message also quotes other lines (a log entry's
    # "date op | text", an experiment id): with ``code`` and ``path`` it is the finding's
    # identity across edits (:meth:`identity`). None: the message, line numbers left out.
    subject: str | None = field(default=None, compare=False)

    def render(self) -> str:
        """ruff's shape: ``path:line:col: CODE message``."""
        return f"{self.path}:{self.line}:{self.col}: {self.code} {self.message}"

    def identity(self) -> tuple[str, str, str]:
        """``(code, path, subject)``: the same finding before and after an edit that moved
        lines (a writer prepending a log entry), never its line or a line it quotes."""
        return (self.code, self.path, self.subject or without_line_refs(self.message))

    def row(self) -> tuple:
        """Every field, in order, as the lint cache keeps a finding: ``Finding(*row)`` makes it again."""
        return (self.path, self.line, self.col, self.code, self.message, self.fixable, self.date, self.subject)

    def as_dict(self) -> dict:
        """The finding's identity (every field but ``date``), for ``--format json``."""
        return dict(zip(IDENTITY, SORT_KEY(self)))


_LINE_REF_RE = re.compile(r"\b(lines?) \d+(?:\s*-\s*\d+)?")


def without_line_refs(message: str) -> str:
    """``message`` with its line references ("line 12", "lines 3-5") normalised to "line N"."""
    return _LINE_REF_RE.sub(r"\1 N", message)


# The fields that make a finding, in the dataclass order; as a key computed once per finding:
# sorting half a million findings through the generated __lt__ cost 12 s of a 30 s lint.
IDENTITY = ("path", "line", "col", "code", "message", "fixable")
SORT_KEY = operator.attrgetter(*IDENTITY)


def sorted_findings(findings) -> list[Finding]:
    """``findings`` without duplicates, in order (path, line, col, code, message)."""
    return sorted(set(findings), key=SORT_KEY)
