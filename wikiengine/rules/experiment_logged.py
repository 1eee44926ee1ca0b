"""EXP013."""

from __future__ import annotations

from wikiengine.lint.kinds import log_lane
from wikiengine.lint.rule import Rule
from wikiengine.rules._experiments import canonical_id, compiled, lane_index, pages_of
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

    def check_wiki(self, ctx):
        id_re = compiled(ctx)["id"]
        logged: dict[tuple[str, str], set[str]] = {}
        for info in pages_of(ctx, "log"):
            lane = log_lane(info.rel)
            if lane is not None and info.page is not None:
                logged[lane] = {
                    canonical_id(m.group("id")) for entry in log_entries(info, ctx) for m in id_re.finditer(entry.title)
                }
        for lane, by_id in lane_index(ctx).items():
            mentioned = logged.get(lane)
            for exp_id, pages in by_id.items():
                for facts in pages:
                    if facts.verdict is None:
                        continue
                    if mentioned is None:
                        yield self.finding(facts.rel, 1, f"verdict {facts.verdict!r} but lane {lane[1]!r} has no log.md")
                    elif exp_id not in mentioned:
                        yield self.finding(
                            facts.rel, 1, f"verdict {facts.verdict!r} but no entry of the lane's log.md names {exp_id}"
                        )
