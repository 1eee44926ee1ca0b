"""The memory files of a relay run: STATE.md, QUOTA.md, ASSETS.md and ERRORS.md.

Formats (the contract with ``wiki lint``'s MEM rules, see the memory spec):

- ``memory/STATE.md``: frontmatter a machine reads, prose below for people; its records
  (the relay run's, and a lane's or kernel session's) are :mod:`wikiengine.model.state`;
- ``memory/QUOTA.md``: a ledger table under ``## Ledger`` that only grows
  (:class:`LedgerRow`: row, booked_at, job, live_hours_left, cpu_alternative, outcome);
- ``memory/ASSETS.md``: a table under ``## Launches`` (:class:`AssetRow`: job, ref,
  version, kernel_id, submitted_at, accelerator), the exit record of each ended session
  under ``## Sessions`` and the first-recorded manifest digest of each checkpoint under
  ``## Checkpoints`` (:class:`Digest`); both tables only grow;
- ``memory/ERRORS.md``: entries newest-first, ``## [YYYY-MM-DD] E-NNN | kind | summary``
  with ``**Run**``, ``**Step**``, ``**Decision**`` lines and the evidence in a fence.

Parsers take text (so a linter can parse a file at a git revision) and raise
:class:`MemoryFormatError` naming the file and line. Appending a row inserts one line
after the table's last row: every other byte of the file is kept. Every write is
atomic (temp file, fsync, rename), so a crash leaves the old file or the new one.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field
from pathlib import Path

from wikiengine.core import clock
from wikiengine.core.atomic import atomic_write_text
from wikiengine.core.clock import utc_iso
from wikiengine.core.page import Page, parse_page, split_lines
from wikiengine.core.text import escape_cell
from wikiengine.model.memory_files import (  # where the files are, and reading one
    ASSETS_FILE,
    ERRORS_FILE,
    MEMORY_DIR,
    MEMORY_FILES,  # noqa: F401 - memory.MEMORY_FILES, as the scaffold reads it
    QUOTA_FILE,
    STATE_FILE,
    MemoryFormatError,
    memory_path,
    read_memory_file,
)

TYPE_CHECKING = False  # typing's constant, without importing typing
if TYPE_CHECKING:
    from typing import Any

OUTCOMES = ("booked", "unspent", "spent")
ACCELERATORS = ("gpu", "tpu", "cpu")
LEDGER_SECTION = "Ledger"
LAUNCHES_SECTION = "Launches"
LEDGER_COLUMNS = ("row", "booked_at", "job", "live_hours_left", "cpu_alternative", "outcome")
ASSET_COLUMNS = ("job", "ref", "version", "kernel_id", "submitted_at", "accelerator")

_ERROR_HEADING_RE = re.compile(r"^\[(\d{4}-\d{2}-\d{2})\] E-(\d{3,9}) \| ([^|]+?) \| (.+)$")
_FIELD_RE = re.compile(r"^\*\*(Run|Step|Decision)\*\*:?\s*(.*?)\s*$")


# ---------------------------------------------------------------- time

def parse_iso(text: str, path=None, line: int | None = None) -> dt.datetime:
    """Parse an ISO-8601 UTC timestamp with a zone (``Z`` or an offset)."""
    moment = clock.parse_iso(text)
    if moment is None:
        raise MemoryFormatError(f"not an ISO-8601 timestamp with a time zone: {text!r}", path, line)
    return moment


# ---------------------------------------------------------------- tables

def _split_row(line: str) -> list[str]:
    body = line.strip()
    if body.startswith("|"):
        body = body[1:]
    if body.endswith("|") and not body.endswith("\\|"):
        body = body[:-1]
    cells, current, index = [], [], 0
    while index < len(body):
        char = body[index]
        if char == "\\" and index + 1 < len(body) and body[index + 1] in "|\\":
            current.append(body[index + 1])
            index += 2
            continue
        if char == "|":
            cells.append("".join(current).strip())
            current = []
        else:
            current.append(char)
        index += 1
    cells.append("".join(current).strip())
    return cells


@dataclass(frozen=True)
class TableRow:
    """One row of a memory file's table, by column name."""

    cells: dict[str, str]
    line: int  # 1-based file line


@dataclass(frozen=True)
class Table:
    """A pipe table inside one section: its rows and where the last row ends."""

    columns: tuple[str, ...]
    rows: tuple[TableRow, ...]
    insert_line: int  # 0-based index in the file's lines after which a new row goes


def parse_table(page: Page, section_title: str, columns: tuple[str, ...], path=None) -> Table:
    """The first pipe table of ``## section_title``, with exactly ``columns``."""
    section = page.section(section_title)
    if section is None:
        raise MemoryFormatError(f"no '## {section_title}' section", path)
    lines = split_lines(section.body)
    first = section.body_line
    start = next((i for i, ln in enumerate(lines) if ln.strip().startswith("|")), None)
    if start is None:
        raise MemoryFormatError(f"'## {section_title}' has no table", path, section.line)
    header = [c.lower() for c in _split_row(lines[start])]
    if tuple(header) != columns:
        raise MemoryFormatError(
            f"table columns are {' | '.join(header)}; expected {' | '.join(columns)}", path, first + start)
    if start + 1 >= len(lines) or not re.fullmatch(r"\s*\|?[\s:|-]+\|?\s*", lines[start + 1].rstrip("\r\n")):
        raise MemoryFormatError("the table has no delimiter row (| --- | ...)", path, first + start + 1)
    rows = []
    index = start + 2
    while index < len(lines) and lines[index].strip().startswith("|"):
        cells = _split_row(lines[index])
        if len(cells) != len(columns):
            raise MemoryFormatError(f"row has {len(cells)} cells; expected {len(columns)}", path, first + index)
        rows.append(TableRow(dict(zip(columns, cells)), first + index))
        index += 1
    return Table(columns, tuple(rows), first + index - 2)


def _append_line(path: Path, text: str, after_line: int, row: str) -> str:
    """``text`` with ``row`` inserted after 0-based file line ``after_line``; nothing else moves."""
    lines = split_lines(text)
    newline = "\r\n" if lines and lines[0].endswith("\r\n") else "\n"
    if after_line < len(lines) and not lines[after_line].endswith(("\n", "\r")):
        lines[after_line] += newline
    lines.insert(after_line + 1, row + newline)
    return "".join(lines)


def _render_row(values: list[Any]) -> str:
    return "| " + " | ".join(escape_cell(v) for v in values) + " |"


# ---------------------------------------------------------------- QUOTA.md

@dataclass(frozen=True)
class LedgerRow:
    """One booking of QUOTA.md's ledger."""

    row: int
    booked_at: str
    job: str
    live_hours_left: float
    cpu_alternative: str
    outcome: str
    line: int = field(default=0, compare=False)


def parse_ledger(text: str, path=None) -> list[LedgerRow]:
    """The rows of QUOTA.md's ledger, checked: typed cells, consecutive rows from 1 (MEM002)."""
    table = parse_table(parse_page(text, path), LEDGER_SECTION, LEDGER_COLUMNS, path)
    rows = []
    for expected, raw in enumerate(table.rows, start=1):
        cells = raw.cells
        try:
            number = int(cells["row"])
        except ValueError:
            raise MemoryFormatError(f"ledger row number is not an integer: {cells['row']!r}", path, raw.line) from None
        if number != expected:
            raise MemoryFormatError(f"ledger row {number} out of order: expected {expected}", path, raw.line)
        parse_iso(cells["booked_at"], path, raw.line)
        try:
            hours = float(cells["live_hours_left"])
        except ValueError:
            raise MemoryFormatError(f"live_hours_left is not a number: {cells['live_hours_left']!r}", path,
                                    raw.line) from None
        if cells["outcome"] not in OUTCOMES:
            raise MemoryFormatError(f"outcome must be one of {', '.join(OUTCOMES)}, got {cells['outcome']!r}", path,
                                    raw.line)
        if not cells["job"]:
            raise MemoryFormatError("ledger row has no job", path, raw.line)
        rows.append(LedgerRow(number, cells["booked_at"], cells["job"], hours, cells["cpu_alternative"],
                              cells["outcome"], raw.line))
    return rows


def read_ledger(root: Path) -> list[LedgerRow]:
    path = memory_path(root, QUOTA_FILE)
    return parse_ledger(read_memory_file(path), path)


def append_ledger_row(root: Path, booked_at: str, job: str, live_hours_left: float, cpu_alternative: str,
                      outcome: str) -> LedgerRow:
    """Append the next ledger row (its number is one past the last); no other byte changes."""
    if outcome not in OUTCOMES:
        raise ValueError(f"outcome must be one of {OUTCOMES}")
    path = memory_path(root, QUOTA_FILE)
    text = read_memory_file(path)
    rows = parse_ledger(text, path)
    table = parse_table(parse_page(text, path), LEDGER_SECTION, LEDGER_COLUMNS, path)
    if type(live_hours_left) not in (int, float) or not live_hours_left >= 0:
        raise ValueError("live_hours_left must be a non-negative number (an unknown quota is never booked)")
    hours = f"{live_hours_left:.2f}"
    row = LedgerRow(len(rows) + 1, booked_at, job, float(hours), cpu_alternative, outcome)
    values = [row.row, booked_at, job, hours, cpu_alternative, outcome]
    atomic_write_text(path, _append_line(path, text, table.insert_line, _render_row(values)))
    return row


# ---------------------------------------------------------------- ASSETS.md

@dataclass(frozen=True)
class AssetRow:
    """One row of ASSETS.md: a job's kernel and what it ran on."""

    job: str
    ref: str
    version: str
    kernel_id: str
    submitted_at: str
    accelerator: str
    line: int = field(default=0, compare=False)


def parse_assets(text: str, path=None) -> list[AssetRow]:
    """The launches recorded in ASSETS.md."""
    table = parse_table(parse_page(text, path), LAUNCHES_SECTION, ASSET_COLUMNS, path)
    rows = []
    for raw in table.rows:
        cells = raw.cells
        parse_iso(cells["submitted_at"], path, raw.line)
        if cells["accelerator"] not in ACCELERATORS:
            raise MemoryFormatError(f"accelerator must be one of {', '.join(ACCELERATORS)}, got "
                                    f"{cells['accelerator']!r}", path, raw.line)
        if not cells["job"] or not cells["ref"]:
            raise MemoryFormatError("a launch needs a job and a ref", path, raw.line)
        rows.append(AssetRow(line=raw.line, **cells))
    return rows


def read_assets(root: Path) -> list[AssetRow]:
    path = memory_path(root, ASSETS_FILE)
    return parse_assets(read_memory_file(path), path)


def append_asset_row(root: Path, job: str, ref: str, version: Any, kernel_id: Any, submitted_at: str,
                     accelerator: str) -> AssetRow:
    """Record one launch in ASSETS.md (one line appended; nothing else changes)."""
    if accelerator not in ACCELERATORS:
        raise ValueError(f"accelerator must be one of {ACCELERATORS}")
    path = memory_path(root, ASSETS_FILE)
    text = read_memory_file(path)
    parse_assets(text, path)
    table = parse_table(parse_page(text, path), LAUNCHES_SECTION, ASSET_COLUMNS, path)
    values = [job, ref, "" if version is None else version, "" if kernel_id is None else kernel_id, submitted_at,
              accelerator]
    atomic_write_text(path, _append_line(path, text, table.insert_line, _render_row(values)))
    return AssetRow(*(escape_cell(v) for v in values))


# ---------------------------------------------------------------- ASSETS.md: checkpoint digests and exit records

CHECKPOINTS_SECTION = "Checkpoints"
CHECKPOINT_COLUMNS = ("checkpoint", "manifest_sha256", "recorded_by", "recorded_at")
SESSIONS_SECTION = "Sessions"
SESSION_COLUMNS = ("job", "state", "started_at", "ended_at", "hours_used", "start_step", "end_step", "exit")
_SHA256_RE = re.compile(r"^[0-9a-f]{64}$")


def read_section_rows(root: Path, name: str, section: str, columns: tuple[str, ...]) -> list[TableRow]:
    """The rows of the table under ``## section`` of a memory file; none when the section is absent."""
    path = memory_path(root, name)
    page = parse_page(read_memory_file(path), path)
    if page.section(section) is None:
        return []
    return list(parse_table(page, section, columns, path).rows)


def append_section_row(root: Path, name: str, section: str, columns: tuple[str, ...], values: list[Any]) -> None:
    """Append one row to the table under ``## section`` (the section is added at the end when absent)."""
    path = memory_path(root, name)
    text = read_memory_file(path)
    page = parse_page(text, path)
    if page.section(section) is None:
        head = text if text.endswith("\n") else text + "\n"
        header = "| " + " | ".join(columns) + " |\n| " + " | ".join("---" for _ in columns) + " |\n"
        atomic_write_text(path, f"{head}\n## {section}\n\n{header}{_render_row(values)}\n")
        return
    table = parse_table(page, section, columns, path)
    atomic_write_text(path, _append_line(path, text, table.insert_line, _render_row(values)))


@dataclass(frozen=True)
class Digest:
    """The sha256 of a checkpoint's manifest.json as the run first recorded it."""

    checkpoint: str  # the step ("8") or "final"
    manifest_sha256: str
    recorded_by: str  # "wake" (seen at the pointer) or the job whose log recorded it
    recorded_at: str
    line: int = field(default=0, compare=False)


def read_digests(root: Path) -> dict[str, Digest]:
    """Every recorded checkpoint digest, the first record of each checkpoint winning."""
    path = memory_path(root, ASSETS_FILE)
    found: dict[str, Digest] = {}
    for raw in read_section_rows(root, ASSETS_FILE, CHECKPOINTS_SECTION, CHECKPOINT_COLUMNS):
        cells = raw.cells
        if not (cells["checkpoint"].isdigit() or cells["checkpoint"] == "final"):
            raise MemoryFormatError(f"checkpoint must be a step or 'final', got {cells['checkpoint']!r}", path,
                                    raw.line)
        if not _SHA256_RE.match(cells["manifest_sha256"]):
            raise MemoryFormatError("manifest_sha256 is not 64 hex digits", path, raw.line)
        found.setdefault(cells["checkpoint"], Digest(line=raw.line, **cells))
    return found


def record_digest(root: Path, checkpoint: str, manifest_sha256: str, recorded_by: str, recorded_at: str) -> None:
    """Record a checkpoint's manifest digest (one row appended)."""
    if not _SHA256_RE.match(manifest_sha256):
        raise ValueError("manifest_sha256 must be 64 hex digits")
    append_section_row(root, ASSETS_FILE, CHECKPOINTS_SECTION, CHECKPOINT_COLUMNS,
                       [checkpoint, manifest_sha256, recorded_by, recorded_at])


def read_exit_records(root: Path) -> dict[str, dict[str, str]]:
    """The exit record of each ended session, by job (``## Sessions`` of ASSETS.md)."""
    return {raw.cells["job"]: raw.cells
            for raw in read_section_rows(root, ASSETS_FILE, SESSIONS_SECTION, SESSION_COLUMNS)}


def append_exit_record(root: Path, job: str, state: str, started_at: str | None, ended_at: str | None,
                       hours_used: float | None, start_step: int | None, end_step: int | None, exit: str) -> None:
    """Record how a session ended: when, the hours it used, the steps it covered and why it stopped."""
    hours = "" if hours_used is None else f"{hours_used:.3f}"
    append_section_row(root, ASSETS_FILE, SESSIONS_SECTION, SESSION_COLUMNS,
                       [job, state, started_at, ended_at, hours, start_step, end_step, exit])


# ---------------------------------------------------------------- ERRORS.md

@dataclass(frozen=True)
class ErrorEntry:
    """One numbered entry of ERRORS.md."""

    date: str  # YYYY-MM-DD
    number: int  # E-NNN
    kind: str
    summary: str
    run: str
    step: str
    decision: str
    evidence: str
    line: int = field(default=0, compare=False)

    @property
    def id(self) -> str:
        return f"E-{self.number:03d}"


def fence(text: str) -> str:
    """``text`` as a fenced block that nothing inside can close or escape (RELIABILITY row 45).

    The fence is a run of backticks longer than any run of backticks in the text;
    carriage returns and NULs (which could change line structure) are replaced.
    """
    clean = text.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "\ufffd")
    longest = max((len(m) for m in re.findall(r"`+", clean)), default=0)
    ticks = "`" * max(3, longest + 1)
    if not clean.endswith("\n"):
        clean += "\n"
    return f"{ticks}text\n{clean}{ticks}\n"


def _unfence(body_lines: list[str]) -> str:
    start = next((i for i, ln in enumerate(body_lines) if ln.startswith("```")), None)
    if start is None:
        return ""
    ticks = re.match(r"`+", body_lines[start]).group(0)
    for end in range(start + 1, len(body_lines)):
        if body_lines[end].rstrip("\r\n") == ticks:
            return "".join(body_lines[start + 1 : end])
    return "".join(body_lines[start + 1 :])


def parse_errors(text: str, path=None) -> list[ErrorEntry]:
    """The entries of ERRORS.md, newest first as written."""
    page = parse_page(text, path)
    entries = []
    for section in page.sections:
        match = _ERROR_HEADING_RE.match(section.title)
        if not match:
            raise MemoryFormatError("an ERRORS.md entry heading must read '## [YYYY-MM-DD] E-NNN | kind | summary'",
                                    path, section.line)
        found = {}
        lines = split_lines(section.body)
        for ln in lines:
            if ln.startswith("```"):
                break
            field_match = _FIELD_RE.match(ln.strip())
            if field_match:
                found[field_match.group(1).lower()] = field_match.group(2)
        missing = [name for name in ("run", "step", "decision") if name not in found]
        if missing:
            raise MemoryFormatError(f"entry lacks the **{missing[0].title()}** line", path, section.line)
        entries.append(ErrorEntry(match.group(1), int(match.group(2)), match.group(3).strip(), match.group(4).strip(),
                                  found["run"], found["step"], found["decision"], _unfence(lines), section.line))
    return entries


def read_errors(root: Path) -> list[ErrorEntry]:
    path = memory_path(root, ERRORS_FILE)
    return parse_errors(read_memory_file(path), path)


def prepend_error(root: Path, date: str, kind: str, summary: str, run: str, step: Any, decision: str,
                  evidence: str) -> ErrorEntry:
    """Add an entry at the top of ERRORS.md (newest first); existing entries keep their bytes.

    ``evidence`` may hold outside text (log tails): it goes inside :func:`fence`.
    """
    path = memory_path(root, ERRORS_FILE)
    text = read_memory_file(path)
    page = parse_page(text, path)
    entries = parse_errors(text, path)
    number = max((e.number for e in entries), default=0) + 1
    one_line = " ".join(summary.replace("|", "/").split())
    kind = " ".join(kind.replace("|", "/").split())
    block = (f"## [{date}] E-{number:03d} | {kind} | {one_line}\n\n"
             f"**Run**: {escape_cell(run)}\n**Step**: {escape_cell(step)}\n**Decision**: {escape_cell(decision)}\n\n"
             f"{fence(evidence)}\n")
    head = page.bom + page.frontmatter_block + page.preamble
    if head and not head.endswith("\n\n"):
        head = head.rstrip("\n") + "\n\n"
    atomic_write_text(path, head + block + "".join(s.text for s in page.sections))
    return parse_errors(read_memory_file(path), path)[0]


# ---------------------------------------------------------------- scaffolding

QUOTA_TEMPLATE = """\
# Quota ledger

Every accelerator session is booked here before it starts; rows are never edited,
an outcome is a new row (booked, then spent or unspent).

## Ledger

| row | booked_at | job | live_hours_left | cpu_alternative | outcome |
| --- | --- | --- | --- | --- | --- |
"""

ASSETS_TEMPLATE = """\
# Assets

Each launch: the returned ref (always poll it, never the requested slug), version,
kernel id and submission time.

## Launches

| job | ref | version | kernel_id | submitted_at | accelerator |
| --- | --- | --- | --- | --- | --- |

## Sessions

How each session ended: its exit record, with the hours it used and the steps it covered.

| job | state | started_at | ended_at | hours_used | start_step | end_step | exit |
| --- | --- | --- | --- | --- | --- | --- | --- |

## Checkpoints

The sha256 of each checkpoint's manifest.json as the run first recorded it (a session's
own log, or the wake that first saw it): the final verification compares against these.

| checkpoint | manifest_sha256 | recorded_by | recorded_at |
| --- | --- | --- | --- |
"""

ERRORS_TEMPLATE = """\
# Errors

Emergencies with their evidence, newest first. Outside text (log tails, remote
errors) is quoted inside a fence and never read as memory.
"""


def scaffold(root: Path, run: str, now: dt.datetime) -> None:
    """Create empty memory files for ``run`` under ``<root>/memory`` (existing files are kept)."""
    directory = Path(root) / MEMORY_DIR
    directory.mkdir(parents=True, exist_ok=True)
    for name, template in ((QUOTA_FILE, QUOTA_TEMPLATE), (ASSETS_FILE, ASSETS_TEMPLATE),
                           (ERRORS_FILE, ERRORS_TEMPLATE)):
        if not (directory / name).exists():
            atomic_write_text(directory / name, template)
    if not (directory / STATE_FILE).exists():
        from wikiengine.model.state import RelayState  # the STATE.md records build on this module

        state = RelayState(run=run, status="running", updated_at=utc_iso(now))
        state.write(root, f"\n# State of run {run}\n\nNo wake yet: the next `wiki step` checks the store and launches session 1.\n")

