"""A lint finding: a small value; rules only find, the runner reports, suppresses and fixes."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, order=True)
class Finding:
    path: str  # posix path relative to the wiki repository root
    line: int  # 1-based; 1 when the finding concerns the whole file
    col: int
    code: str
    message: str
    fixable: bool = False

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
