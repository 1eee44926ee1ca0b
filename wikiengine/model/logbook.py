"""Logs: entries ``## [YYYY-MM-DD] op | subject``, newest first, in two tiers.

``wiki/log.md`` is the ``global`` tier, ``wiki/experiments/<model>/<lane>/log.md`` the
``lane`` tier, ``wiki/kernel_experiments/<family>/pallas/log.md`` the ``family`` tier
(``shared/reference/conventions.md``). Ops may be compound (``run-experiment +
CLOSING``). A full entry has a body of ``**Op**:``, ``**Pages created**:``, ``**Pages
updated**:``, ``**Key result**:``, ``**Notes**:`` lines; only ``loop-iteration`` may be
the one line ``v<NNN>-<slug> on <variant>: <verdict> (<delta vs frontier>)``.

The lint rules read entries with :func:`parse_entries`; ``wiki log add`` and the lane
writers render with :func:`render_entry` and insert with :func:`insert_entry`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from wikiengine.core.page import Page
from wikiengine.model.experiment import real_date

GLOBAL_LOG = "wiki/log.md"
# Ops of each tier (conventions.md), plus the ones this engine and older wikis write.
DEFAULT_OPS = {
    "global": [
        "ingest-source", "ingest-codebase", "ingest", "formulate", "analyze", "record-observation", "lint",
        "manual", "loop-pool", "schema", "lane-scaffold", "retrospective", "decision", "cleanup", "note",
    ],
    "lane": [
        "loop-iteration", "run-experiment", "manual", "start", "stop", "pause", "formulate", "analyze",
        "backfill", "retrospective", "CLOSING", "note", "decision", "hypothesis", "noise-band", "renumber",
    ],
    "family": [
        "loop-iteration", "kernel-iteration", "run-experiment", "manual", "start", "stop", "pause", "formulate",
        "analyze", "backfill", "retrospective", "note",
    ],
}
# Never in the global log (except entries dated before the wiki split its logs).
LANE_ONLY_OPS = ("loop-iteration", "start", "stop", "run-experiment")
# Never in a lane log.
GLOBAL_ONLY_OPS = ("ingest-source", "ingest-codebase", "lint", "loop-pool")
ONE_LINE_OPS = ("loop-iteration",)
BODY_FIELDS = ("Op", "Pages created", "Pages updated", "Key result", "Notes")
START_FIELDS = ("Op", "Cluster pool", "Parallelism", "First-pick hypothesis", "Run target", "Notes")
STOP_FIELDS = ("Op", "Final audit", "Notes")

_ENTRY_RE = re.compile(r"\[(?P<date>[^\]]*)\]\s+(?P<ops>[^|]*?)\s*\|\s*(?P<text>.*)")
_OP_SPLIT_RE = re.compile(r"\s*\+\s*")
_OP_RE = re.compile(r"[A-Za-z][A-Za-z0-9_-]*")
_FIELD_RE = re.compile(r"^\*\*(?P<name>[^*\n]+?)\*\*:[ \t]*(?P<value>.*)$", re.M)
_LANE_LOG_RE = re.compile(r"wiki/experiments/(?P<model>[^/]+_autoresearch_optimization)/(?P<lane>[^/]+)/log\.md")
_FAMILY_LOG_RE = re.compile(r"wiki/kernel_experiments/[^/]+/[^/]+/log\.md")


UNDATED = "-"  # the date of a finding about an entry whose heading has no readable date


@dataclass(frozen=True)
class LogEntry:
    """One dated entry of a log page: its heading, ops and text."""

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

    @property
    def subject(self) -> str:
        """What a finding about this entry is about: its heading, ``[date] op | text`` (never
        its line, which moves when an entry is prepended above it)."""
        return " ".join(self.title.split())

    def has_op(self, op: str) -> bool:
        return any(o.casefold() == op.casefold() for o in self.ops)

    def fields(self) -> dict[str, str]:
        """The body's ``**Name**: value`` lines (first of each name)."""
        found: dict[str, str] = {}
        for match in _FIELD_RE.finditer(self.body):
            found.setdefault(match.group("name").strip(), match.group("value").strip())
        return found


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


def parse_entries(page: Page | None) -> list[LogEntry]:
    """The entries of a log page, in file order."""
    entries = []
    for section in page.sections if page else ():
        date, ops, text, problem = parse_heading(section.title)
        entries.append(LogEntry(section.line, section.title, date, ops, text, section.body, problem))
    return entries


def log_tier(rel: str) -> str | None:
    """``global``, ``lane`` or ``family`` for a log path; None for any other log."""
    if rel == GLOBAL_LOG:
        return "global"
    if _LANE_LOG_RE.fullmatch(rel):
        return "lane"
    if _FAMILY_LOG_RE.fullmatch(rel):
        return "family"
    return None


def render_entry(date: str, op: str, subject: str, fields: dict[str, str] | None = None) -> str:
    """One entry: the heading, then (full form) the body fields, ending in a blank line.

    ``fields`` maps field names to values; ``Op`` is always first. A one-line op
    (``loop-iteration``) takes no fields.
    """
    subject = " ".join(subject.split())
    heading = f"## [{date}] {op} | {subject}\n"
    if op in ONE_LINE_OPS:
        if fields:
            raise ValueError(f"a {op} entry is one line: it takes no fields")
        return heading + "\n"
    body = {"Op": op, **{k: v for k, v in (fields or {}).items() if k != "Op"}}
    lines = [f"**{name}**: {' '.join(str(value).split())}" for name, value in body.items()]
    return heading + "\n" + "\n".join(lines) + "\n\n"


def insert_entry(text: str, entry: str) -> str:
    """``text`` with ``entry`` inserted at the top: above the first entry, below any title
    or preamble; a missing log (``text == ""``) becomes the entry alone."""
    lines = text.splitlines(keepends=True)
    index = next((i for i, ln in enumerate(lines) if ln.startswith("## ")), None)
    if index is None:
        head = text if not text or text.endswith("\n") else text + "\n"
        gap = "\n" if head and not head.endswith("\n\n") else ""
        return head + gap + entry.rstrip("\n") + "\n"
    return "".join(lines[:index]) + entry + "".join(lines[index:])
