"""Log entries, parsed once per lint for the LOG and RUN rules.

An entry is an H2 ``## [YYYY-MM-DD] op | text`` with an optional body. Ops may be
compound (``run-experiment + CLOSING``). The tier of a log follows from its path:
``wiki/log.md`` is ``global``, ``wiki/experiments/<model>/<lane>/log.md`` is ``lane``,
``wiki/kernel_experiments/<family>/pallas/log.md`` is ``family``; each tier has its own
vocabulary of ops in ``[tool.wiki.log-ops]``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from wikiengine.lint.finding import UNDATED
from wikiengine.lint.kinds import log_lane
from wikiengine.rules._experiments import lint_cache, real_date

if TYPE_CHECKING:
    from wikiengine.lint.context import LintContext, PageInfo

GLOBAL_LOG = "wiki/log.md"
_ENTRY_RE = re.compile(r"\[(?P<date>[^\]]*)\]\s+(?P<ops>[^|]*?)\s*\|\s*(?P<text>.*)")
_OP_SPLIT_RE = re.compile(r"\s*\+\s*")
_OP_RE = re.compile(r"[A-Za-z][A-Za-z0-9_-]*")


@dataclass(frozen=True)
class LogEntry:
    line: int
    title: str
    date: str | None  # the real date, or None when the heading is malformed
    ops: tuple[str, ...]
    text: str
    body: str
    problem: str | None  # why the heading is not a well-formed entry (LOG001)

    @property
    def finding_date(self) -> str:
        """The date a finding about this entry carries (``since`` compares with it)."""
        return self.date or UNDATED

    def has_op(self, op: str) -> bool:
        return any(o.casefold() == op.casefold() for o in self.ops)


def parse_heading(title: str) -> tuple[str | None, tuple[str, ...], str, str | None]:
    """``(date, ops, text, problem)`` of an entry heading's title."""
    match = _ENTRY_RE.fullmatch(title)
    if match is None:
        return None, (), "", "heading is not '[YYYY-MM-DD] op | text'"
    date_text = match.group("date").strip()
    ops = tuple(op for op in _OP_SPLIT_RE.split(match.group("ops").strip()) if op)
    if real_date(date_text) is None:
        return None, ops, match.group("text"), f"[{date_text}] is not a real YYYY-MM-DD date"
    if not ops or not all(_OP_RE.fullmatch(op) for op in ops):
        return date_text, ops, match.group("text"), f"op {match.group('ops').strip()!r} is not a word (or words joined by '+')"
    if not match.group("text").strip():
        return date_text, ops, "", "entry has no text after '|'"
    return date_text, ops, match.group("text").strip(), None


def log_entries(info: PageInfo, ctx: LintContext) -> list[LogEntry]:
    """The entries of a log page, in file order (cached per lint)."""
    cache = lint_cache(ctx, "log-entries")
    if info.rel not in cache:
        entries = []
        for section in info.page.sections if info.page else ():
            date, ops, text, problem = parse_heading(section.title)
            entries.append(LogEntry(section.line, section.title, date, ops, text, section.body, problem))
        cache[info.rel] = entries
    return cache[info.rel]


def log_tier(rel: str) -> str | None:
    """``global``, ``lane`` or ``family`` for a log path; None for any other log."""
    if rel == GLOBAL_LOG:
        return "global"
    if log_lane(rel) is not None:
        return "lane"
    if re.fullmatch(r"wiki/kernel_experiments/[^/]+/[^/]+/log\.md", rel):
        return "family"
    return None
