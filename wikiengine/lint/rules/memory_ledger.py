"""MEM001 and MEM002: the quota ledger (memory/QUOTA.md) and the launches it books."""

from __future__ import annotations

from wikiengine.core.clock import utc_iso
from wikiengine.lint.rule import Rule
from wikiengine.lint.rules._memory import ASSETS, QUOTA, ledger_table_rows, memory_text, misnumbered
from wikiengine.model import memory

BOOKED_ACCELERATORS = ("gpu", "tpu")


class LaunchBooked(Rule):
    """## What it does
    Checks that every GPU (or TPU) launch in `memory/ASSETS.md` (`## Launches`) has a
    `memory/QUOTA.md` ledger row for the same `job` with outcome `booked` and a
    `booked_at` at or before the launch's `submitted_at`. CPU launches need no row.

    ## Why is this bad?
    The relay seed forbids an unbooked GPU job (§8): the row is booked first, with the
    live hours left and the CPU-alternative check, so that scarce GPU quota is only
    spent on purpose and the week's budget can be reconstructed. A launch booked after
    the fact, or not at all, is exactly the drift the ledger exists to catch.

    ## Example
    ASSETS.md: `| session-3 | demo/ounce100m-p4-session3 | 1 | 42 | 2026-09-21T03:10:00Z | gpu |`
    with the ledger's `session-3` row booked at `2026-09-21T03:14:00Z`.

    Book the row (`wiki step` does) before submitting.

    ## Options
    None.
    """

    code = "MEM001"
    name = "launch-booked"
    summary = "a GPU job in memory/ASSETS.md has no memory/QUOTA.md ledger row booked at or before its submission time"
    reports_on = ("memory-assets",)

    def check_wiki(self, ctx):
        assets_text = memory_text(ctx, ASSETS)
        if assets_text is None:
            return
        try:
            launches = memory.parse_assets(assets_text, ASSETS)
        except memory.MemoryFormatError:
            return  # MEM005
        quota_text = memory_text(ctx, QUOTA)
        try:
            ledger = memory.parse_ledger(quota_text, QUOTA) if quota_text is not None else []
        except memory.MemoryFormatError:
            return  # MEM005 / MEM002
        bookings: dict[str, list] = {}
        for row in ledger:
            if row.outcome == "booked":
                bookings.setdefault(row.job, []).append(memory.parse_iso(row.booked_at))
        for launch in launches:
            if launch.accelerator not in BOOKED_ACCELERATORS:
                continue
            submitted = memory.parse_iso(launch.submitted_at)
            booked = bookings.get(launch.job, [])
            if not any(when <= submitted for when in booked):
                why = (
                    f"its only booking is later ({utc_iso(min(booked))})"
                    if booked else f"no 'booked' row for job {launch.job!r} in {QUOTA}"
                )
                yield self.finding(
                    ASSETS, launch.line, f"{launch.accelerator} launch {launch.job!r} submitted {launch.submitted_at}: {why}"
                )


class LedgerOnlyGrows(Rule):
    """## What it does
    Checks the quota ledger (`memory/QUOTA.md`, `## Ledger`): row numbers run 1, 2, 3, ...
    without gaps, and, compared with the base revision, every row that existed there is
    still present with the same cells at the same place. New rows may only be appended.
    Needs git (base `HEAD`, or `--since REV`): outside a repository the rule is skipped
    with a notice (and `wiki step` itself refuses a misnumbered ledger).

    ## Why is this bad?
    The ledger is the record of every GPU hour booked and spent. An edited or deleted
    row rewrites history (a booking that "never happened", hours that vanish); an
    outcome is always a new row (`unspent`, `spent`), never an edit.

    ## Example
    Changing row 3's outcome from `booked` to `spent`.

    Append row 4: `| 4 | 2026-09-21T09:50:00Z | session-3 | 12.1 | none | spent |`.

    ## Options
    None.
    """

    code = "MEM002"
    name = "ledger-only-grows"
    summary = "an existing ledger row was changed or removed since the base revision, or row numbers are not consecutive"
    needs_git = True
    cache_wiki = False  # compares with the base revision in git
    reports_on = ("memory-quota",)

    def check_wiki(self, ctx):
        text = memory_text(ctx, QUOTA)
        if text is None:
            return
        rows = ledger_table_rows(text, QUOTA)
        if rows is None:
            return  # MEM005
        for row, expected in misnumbered(rows):
            yield self.finding(QUOTA, row.line, f"ledger row numbered {row.cells['row']!r}; expected {expected} (rows are consecutive from 1)")
        if ctx.git is None:
            return
        base_text = ctx.git.base_text(QUOTA)
        base_rows = ledger_table_rows(base_text, QUOTA) if base_text is not None else None
        for index, old in enumerate(base_rows or ()):
            new = rows[index] if index < len(rows) else None
            if new is None:
                last = rows[-1].line if rows else 1
                yield self.finding(QUOTA, last, f"ledger row {old.cells['row']} (job {old.cells['job']!r}) was removed since {ctx.git.base[:12]}")
            elif new.cells != old.cells:
                changed = ", ".join(k for k in memory.LEDGER_COLUMNS if new.cells[k] != old.cells[k])
                yield self.finding(
                    QUOTA, new.line,
                    f"ledger row {old.cells['row']} was changed since {ctx.git.base[:12]} ({changed}): rows are never edited; append a new row",
                )
