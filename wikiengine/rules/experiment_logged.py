"""EXP013."""

from __future__ import annotations

from wikiengine.lint.kinds import log_lane
from wikiengine.lint.rule import Rule
from wikiengine.rules._experiments import canonical_id, compiled, experiment_facts, lane_log
from wikiengine.rules._logs import log_entries


class VerdictLogged(Rule):
    """## What it does
    Checks that every experiment page with a verdict is named (by its id, in an entry
    heading) somewhere in its lane's `log.md`: the `loop-iteration` entry the loop
    appends when it assigns a verdict, or a `backfill` entry. A lane with verdict pages
    and no `log.md` at all is flagged on each page.

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

    def collect(self, info, ctx):
        """The ids named in the entry headings of a lane log, sorted (cached with the file)."""
        if log_lane(info.rel) is None:
            return None
        id_re = compiled(ctx)["id"]
        return sorted(
            {canonical_id(m.group("id")) for entry in log_entries(info, ctx) for m in id_re.finditer(entry.title)}
        )

    def check_wiki(self, ctx):
        # From the pages reported on: each reads its lane log's ids from the cache.
        logged: dict[str, set[str] | None] = {}
        for info in ctx.target_pages("experiment"):
            facts = experiment_facts(info, ctx)
            if facts is None or facts.verdict is None or not facts.exp_id:
                continue
            log = lane_log(facts.lane_key)
            if log not in logged:
                ids = ctx.facts(self.code, log) if ctx.exists(log) else None
                logged[log] = set(ids) if ids is not None else None
            mentioned = logged[log]
            if mentioned is None:
                yield self.finding(facts.rel, 1, f"verdict {facts.verdict!r} but lane {facts.lane!r} has no log.md")
            elif facts.exp_id not in mentioned:
                yield self.finding(
                    facts.rel, 1, f"verdict {facts.verdict!r} but no entry of the lane's log.md names {facts.exp_id}"
                )
