"""Log entries, parsed once per lint for the LOG and RUN rules (the entry model is
:mod:`wikiengine.model.logbook`, shared with the writers)."""

from __future__ import annotations

from wikiengine.lint.kinds import log_lane
from wikiengine.lint.rule import Rule
from wikiengine.lint.rules._experiments import lint_cache
from wikiengine.model.logbook import GLOBAL_LOG, LogEntry, log_tier, parse_entries, parse_heading  # noqa: F401

TYPE_CHECKING = False  # typing's constant, without importing typing
if TYPE_CHECKING:
    from wikiengine.lint.context import LintContext, PageInfo


def log_entries(info: PageInfo, ctx: LintContext) -> list[LogEntry]:
    """The entries of a log page, in file order (cached per lint)."""
    cache = lint_cache(ctx, "log-entries")
    if info.rel not in cache:
        cache[info.rel] = parse_entries(info.page)
    return cache[info.rel]


def log_split_date(ctx: LintContext) -> str | None:
    """The day the wiki split its logs into two tiers: ``[tool.wiki.rules.LOG003] split-date``,
    else the date of the oldest entry of any lane log (kernel families keep logs of their
    own from their start, so they say nothing of the split). Global-log entries dated
    before it were written when the global log was the only one, and stay where they are."""
    configured = ctx.config.option("LOG003", "split-date")
    if configured is not None:
        return str(configured)
    cache = lint_cache(ctx, "log-split")
    if "date" not in cache:
        logs = ctx.lane_logs()
        # each log's oldest entry is kept with the log's cache entry (a pre-commit run parses no
        # log), and by its content hash where the run knows every file's (a run after an edit)
        oldest = ctx.files_facts("lane-logs-oldest-entry", logs, lambda rel: ctx.page_fact(
            rel, "oldest-entry", lambda: _oldest_entry(ctx, rel)))
        cache["date"] = min((date for date in oldest.values() if date), default=None)
    return cache["date"]


def _oldest_entry(ctx: LintContext, rel: str) -> str:
    """The date of the oldest dated entry of the log ``rel`` ("" when none)."""
    return min((entry.date for entry in log_entries(ctx.info(rel), ctx) if entry.date is not None), default="")


class LaneLogRule(Rule):
    """A cross-file rule on the target lane logs that parsed; a rule writes ``check_lane_log``
    (``lane``: the log's model directory and lane)."""

    reports_on = ("log",)

    def check_wiki(self, ctx: LintContext):
        for info in ctx.target_pages("log"):
            lane = log_lane(info.rel)
            if lane is not None and info.page is not None:
                yield from self.check_lane_log(info, lane, ctx)

    def check_lane_log(self, info: PageInfo, lane: tuple[str, str], ctx: LintContext):
        return ()
