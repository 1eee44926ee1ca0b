"""MEM005."""

from __future__ import annotations

from wikiengine.lint.rule import Rule
from wikiengine.lint.rules._memory import ledger_table_rows, misnumbered
from wikiengine.model import memory

_PARSERS = {
    "memory-quota": memory.parse_ledger,
    "memory-assets": memory.parse_assets,
    "memory-errors": memory.parse_errors,
}


class MemoryFileFormat(Rule):
    """## What it does
    Checks that `memory/QUOTA.md`, `memory/ASSETS.md` and `memory/ERRORS.md` follow
    their formats (the memory spec), using the same parsers `wiki step` uses: the
    `## Ledger` and `## Launches` tables with their exact columns and typed cells (ISO
    UTC times, numbers, known outcomes and accelerators), and ERRORS.md entries
    `## [YYYY-MM-DD] E-NNN | kind | summary` with their `**Run**`, `**Step**` and
    `**Decision**` lines. Ledger numbering is MEM002's.

    ## Why is this bad?
    `wiki step` refuses to act on memory it cannot parse, so a malformed row found at
    the next wake stops the relay; found at commit time it is a one-line fix.

    ## Example
    `| 4 | yesterday | session-3 | 12.1 | none | spent |` (booked_at is not ISO-8601).

    Use `2026-09-21T09:50:00Z`.

    ## Options
    None.
    """

    code = "MEM005"
    name = "memory-file-format"
    summary = "memory/QUOTA.md, ASSETS.md or ERRORS.md does not follow its format"
    kinds = tuple(_PARSERS)

    def check_page(self, info, ctx):
        text = info.page.to_text()
        try:
            _PARSERS[info.kind](text, info.rel)
        except memory.MemoryFormatError as err:
            if info.kind == "memory-quota":
                rows = ledger_table_rows(text, info.rel) or []
                if any(row.line == err.line for row, _ in misnumbered(rows)):
                    return  # MEM002 reports the numbering
            yield self.finding(info.rel, err.line or 1, err.message)
