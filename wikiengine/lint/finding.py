"""A lint finding: a small value; rules only find, the runner reports, suppresses and fixes."""

from __future__ import annotations

import operator
from dataclasses import dataclass, field


@dataclass(frozen=True, order=True)
class Finding:
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

    def render(self) -> str:
        """ruff's shape: ``path:line:col: CODE message``."""
        return f"{self.path}:{self.line}:{self.col}: {self.code} {self.message}"

    def as_dict(self) -> dict:
        """The finding's identity (every field but ``date``), for ``--format json``."""
        return dict(zip(IDENTITY, SORT_KEY(self)))


# The fields that make a finding, in the dataclass order; as a key computed once per finding:
# sorting half a million findings through the generated __lt__ cost 12 s of a 30 s lint.
IDENTITY = ("path", "line", "col", "code", "message", "fixable")
SORT_KEY = operator.attrgetter(*IDENTITY)


def sorted_findings(findings) -> list[Finding]:
    """``findings`` without duplicates, in order (path, line, col, code, message)."""
    return sorted(set(findings), key=SORT_KEY)
