"""EXP013."""

from __future__ import annotations

from wikiengine.lint.kinds import log_lane
from wikiengine.lint.rule import Rule
from wikiengine.lint.rules._experiments import (
    canonical_id,
    compiled,
    lane_id_pattern,
    lane_log,
    lint_cache,
)
from wikiengine.lint.rules._logs import log_entries
from wikiengine.lint.rules._shared import target_experiments
from wikiengine.model.experiment import with_hyphen_retry


class VerdictLogged(Rule):
    """## What it does
    Checks that every experiment page with a verdict is named (by its id, in an entry
    heading) somewhere in its lane's `log.md`: the `loop-iteration` entry the loop
    appends when it assigns a verdict, or a `backfill` entry. An id written with its retry
    letter after a hyphen (`v196-b-rerun`) names the retry `v196b`. A lane with no `log.md`
    at all is one finding of the lane (LAY003), not one per page.

    ## Why is this bad?
    Agents re-ground from the last lines of the lane's log, not from a directory
    listing. A verdict that never reached the log is invisible to the next iteration,
    which may run the same experiment again. (LOG005 is the other direction: an entry
    whose page is missing.)

    ## Example
    `2026-06-10-v046-splash-blocks.md` is `supported` but the lane log has no entry
    mentioning v046.

    Add `## [2026-06-11] loop-iteration | v046-splash-blocks on 2b-seq8k: supported (+0.7)`.

    ## Options
    Uses `id-pattern` from EXP001.
    """

    code = "EXP013"
    name = "verdict-logged"
    summary = "an experiment page with a verdict is not named in its lane's log"

    collect_kinds = ("log",)
    reports_on = ("experiment",)
    by_lane = True  # lint/lane_parts.py

    def lane_inputs(self, ctx):
        from wikiengine.lint.rules._logs import log_split_date

        return str(log_split_date(ctx))  # the oldest entry of every lane log: _before_split reads it

    def collect(self, info, ctx):
        """The ids named in the entry headings of a lane log (by the wiki's id pattern and the
        lane's own), sorted (cached with the file)."""
        lane = log_lane(info.rel)
        if lane is None:
            return None
        patterns = [compiled(ctx)["id"], _id_regex(lane_id_pattern(ctx, lane))]
        return sorted({with_hyphen_retry(canonical_id(m.group("id")), entry.title, m.end())
                       for entry in log_entries(info, ctx) for id_re in patterns for m in id_re.finditer(entry.title)})

    def check_wiki(self, ctx):
        # From the pages reported on: each reads its lane log's ids from the cache.
        logged: dict[str, set[str] | None] = {}
        for _info, facts in target_experiments(ctx):
            if facts.verdict is None or not facts.exp_id:
                continue
            log = lane_log(facts.lane_key)
            if log not in logged:
                ids = ctx.facts(self.code, log) if ctx.exists(log) else None
                logged[log] = set(ids) if ids is not None else None
            mentioned = logged[log]
            if mentioned is not None and facts.exp_id in mentioned:
                continue
            if facts.exp_id in _before_split(ctx, facts):
                continue  # logged in the global log, before the wiki split its logs
            if mentioned is not None and facts.exp_id not in mentioned:
                yield self.finding(
                    facts.rel, 1, f"verdict {facts.verdict!r} but no entry of the lane's log.md names {facts.exp_id}"
                )


def _id_regex(pattern: str):
    import re

    return re.compile(r"(?<![A-Za-z0-9])(?P<id>" + pattern + r")(?![0-9])")


def _before_split(ctx, facts) -> set[str]:
    """The ids of this lane named in global-log entries dated before the log split."""
    from wikiengine.lint.rules._logs import GLOBAL_LOG, log_split_date

    split = log_split_date(ctx)
    if split is None or not ctx.exists(GLOBAL_LOG):
        return set()
    cache = lint_cache(ctx, "ids-before-split")
    key = facts.lane_key
    if key not in cache:
        patterns = [compiled(ctx)["id"], _id_regex(lane_id_pattern(ctx, key))]

        def named() -> list[str]:
            return sorted({canonical_id(m.group("id")) for entry in log_entries(ctx.info(GLOBAL_LOG), ctx)
                           if entry.date is not None and entry.date < split for id_re in patterns
                           for m in id_re.finditer(entry.title)})

        # kept with the global log's cache entry, by what it depends on: a pre-commit run parses no log
        memo = "ids-before:" + repr((split, [p.pattern for p in patterns]))
        cache[key] = set(ctx.page_fact(GLOBAL_LOG, memo, named))
    return cache[key]
