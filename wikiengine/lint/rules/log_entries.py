"""LOG001, LOG002, LOG003 and LOG004: the shape and order of log entries."""

from __future__ import annotations

from wikiengine.lint.options import Option
from wikiengine.lint.rule import Rule
from wikiengine.lint.rules._logs import GLOBAL_LOG, log_entries, log_split_date, log_tier


class LogEntryHeading(Rule):
    """## What it does
    Checks that every H2 in a log is an entry heading `## [YYYY-MM-DD] op | text`: a
    real calendar date in brackets, an op (a word; compound ops join words with `+`, as
    in `run-experiment + CLOSING`), a `|` and a text.

    ## Why is this bad?
    Agents re-ground by reading the last lines of the logs and tools grep them
    (`grep '^## \\[' log.md | head`); a malformed heading hides an entry from both, and a
    date like `2026-02-30` breaks every ordering.

    ## Example
    `## 2026-06-05 loop-iteration: v045` or `## [2026-13-01] start | session begin`.

    Use `## [2026-06-05] loop-iteration | v045-splash on 2b-seq8k: supported (+0.6%)`.

    ## Options
    None.
    """

    code = "LOG001"
    name = "log-entry-heading"
    summary = "a log entry heading is not '## [YYYY-MM-DD] op | text' with a real date"
    kinds = ("log",)

    def check_page(self, info, ctx):
        for entry in log_entries(info, ctx):
            if entry.problem:
                yield self.finding(info.rel, entry.line, f"{entry.problem}: '## {entry.title}'", date=entry.finding_date)


class LogNewestFirst(Rule):
    """## What it does
    Checks that log entries are newest-first: no entry is dated later than the entry
    above it. Entries of the same day may come in any order. Malformed headings
    (LOG001) are skipped.

    ## Why is this bad?
    New entries are inserted at the top, and readers take "the last 50 lines" of a log
    to mean the latest state. An entry appended at the bottom is never read.

    ## Example
    ```markdown
    ## [2026-06-01] start | session begin
    ## [2026-06-03] loop-iteration | v045-splash on 2b-seq8k: supported
    ```
    Put the 2026-06-03 entry first.

    ## Options
    None.
    """

    code = "LOG002"
    name = "log-newest-first"
    summary = "log entries are not newest-first"
    kinds = ("log",)

    def check_page(self, info, ctx):
        previous = None
        for entry in log_entries(info, ctx):
            if entry.date is None:
                continue
            if previous is not None and entry.date > previous.date:
                yield self.finding(
                    info.rel, entry.line,
                    f"entry of {entry.date} is below an entry of {previous.date} (line {previous.line}): logs are newest-first",
                    date=entry.finding_date, subject=entry.subject,
                )
            else:
                previous = entry


class LoopIterationInGlobalLog(Rule):
    """## What it does
    Flags a `loop-iteration` entry (alone or in a compound op) in the global
    `wiki/log.md`.

    ## Why is this bad?
    Logs have two tiers: `wiki/log.md` holds cross-cutting events (schema changes,
    ingests, lane scaffolding), each lane's `log.md` its loop. Iterations in the global
    log drown the events every lane needs to see.

    ## Example
    `## [2026-06-05] loop-iteration | v045 ...` in `wiki/log.md`.

    Move it to `wiki/experiments/<model>_autoresearch_optimization/<lane>/log.md`.

    ## Options
    - `split-date` (`YYYY-MM-DD`): the day the wiki split its logs into two tiers; entries
      dated before it stay in the global log and are not reported. Default: the date of
      the oldest entry of any lane log (before it, the global log was the only one).
    """

    code = "LOG003"
    name = "loop-iteration-in-global-log"
    summary = "a loop-iteration entry in the global wiki/log.md (it belongs in the lane's log)"
    kinds = ("log",)
    options = {"split-date": Option("date")}

    def check_page(self, info, ctx):
        if info.rel != GLOBAL_LOG:
            return
        for entry in log_entries(info, ctx):
            if entry.has_op("loop-iteration") and not _before_split(entry, ctx):
                yield self.finding(
                    info.rel, entry.line, "loop-iteration entry in the global log: it belongs in the lane's log.md",
                    date=entry.finding_date,
                )


class UnknownLogOp(Rule):
    """## What it does
    Checks every op of every entry (each part of a compound op) against the vocabulary
    of the log's tier in the configuration: `global` for `wiki/log.md`, `lane` for a
    lane's `log.md`, `family` for a kernel family's log. Ops compare case-insensitively.
    Global-log entries dated before the wiki split its logs (LOG003's `split-date`, by
    default the oldest lane-log entry) may also carry lane ops: the global log was the
    only one then. Logs of other tiers, and tiers the configuration does not list, are not checked; a
    `loop-iteration` in the global log is LOG003's finding, not this rule's.

    ## Why is this bad?
    Tools and readers select entries by op (`start`, `stop`, `loop-iteration`); a typo
    (`loop-iter`, `strat`) makes an entry invisible to RUN001, LOG003 and LOG005 and to
    every agent that greps the log.

    ## Example
    `## [2026-06-05] loop-iter | v045 ...` in a lane log.

    Use `loop-iteration`, or add the new op to the tier:
    ```toml
    [tool.wiki.log-ops]
    lane = ["start", "stop", "loop-iteration", "my-new-op"]
    ```

    ## Options
    `[tool.wiki.log-ops]` (one list of ops per tier).
    """

    code = "LOG004"
    name = "unknown-log-op"
    summary = "a log op that the configuration does not know"
    kinds = ("log",)

    def check_page(self, info, ctx):
        tier = log_tier(info.rel)
        known = ctx.config.log_ops.get(tier) if tier else None
        if known is None:
            return
        folded = {op.casefold() for op in known}
        lane_ops = {op.casefold() for op in ctx.config.log_ops.get("lane", ())}
        for entry in log_entries(info, ctx):
            for op in entry.ops:
                if tier == "global" and op.casefold() == "loop-iteration":
                    continue  # LOG003 says where it belongs
                if entry.problem is not None or op.casefold() in folded:
                    continue
                if tier == "global" and op.casefold() in lane_ops and _before_split(entry, ctx):
                    continue  # the global log was the only one then
                yield self.finding(
                        info.rel, entry.line, f"op {op!r} is not a known {tier}-log op ({', '.join(known)})",
                        date=entry.finding_date,
                    )


def _before_split(entry, ctx) -> bool:
    """Is a global-log entry dated before the wiki split its logs? (The split is read only
    when an entry needs it, and once per lint.)"""
    split = log_split_date(ctx)
    return split is not None and entry.date is not None and entry.date < str(split)
