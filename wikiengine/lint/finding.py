"""A lint finding: a small value; rules only find, the runner reports, suppresses and fixes."""

from __future__ import annotations

from dataclasses import dataclass, field

UNDATED = "-"  # Finding.date of a log entry whose heading has no readable date


@dataclass(frozen=True, order=True)
class Finding:
    path: str  # posix path relative to the wiki repository root
    line: int  # 1-based; 1 when the finding concerns the whole file
    col: int
    code: str
    message: str
    fixable: bool = False
    # The date of what the finding is about when that is not the page itself (a log
    # entry): ``since`` compares with it instead of the page's date. UNDATED: never
    # grandfathered. Not part of the finding's identity.
    date: str | None = field(default=None, compare=False)

    def render(self) -> str:
        """ruff's shape: ``path:line:col: CODE message``."""
        return f"{self.path}:{self.line}:{self.col}: {self.code} {self.message}"

    def as_dict(self) -> dict:
        return {
            "path": self.path,
            "line": self.line,
            "col": self.col,
            "code": self.code,
            "message": self.message,
            "fixable": self.fixable,
        }
