"""LOG005."""

from __future__ import annotations

from wikiengine.lint.rules._experiments import canonical_id, compiled, lane_ids
from wikiengine.lint.rules._logs import LaneLogRule, log_entries


class LoopIterationNamesPage(LaneLogRule):
    """## What it does
    Checks that a `loop-iteration` entry in a lane's `log.md` names an experiment id
    (the first `v<NNN>`, or configured id, in its text) that has an experiment page in
    that same lane (`<lane>/` or `<lane>/experiments/`). Entries that name no id are
    not checked.

    ## Why is this bad?
    A loop-iteration entry records a verdict that was filed on a page. An entry whose
    page does not exist is the seed's "dispatch completed without filing" failure: the
    result is in the log but nowhere a reader or the model page can find it.

    ## Example
    `## [2026-06-05] loop-iteration | v046-remat on 2b-seq8k: refuted` with no
    `*-v046-*.md` page in the lane.

    File the page (BACKFILL it, `backfilled: true`, if the stub was never written).

    ## Options
    Uses `id-pattern` from EXP001.
    """

    code = "LOG005"
    name = "loop-iteration-names-page"
    summary = "a loop-iteration entry names a v-id that has no experiment page in that lane"
    by_lane = True  # lint/lane_parts.py

    def check_lane_log(self, info, lane, ctx):
        pages = lane_ids(ctx, lane)
        id_re = compiled(ctx)["id"]
        for entry in log_entries(info, ctx):
            if entry.problem or not entry.has_op("loop-iteration"):
                continue
            match = id_re.search(entry.text)
            if match is None:
                continue
            exp_id = canonical_id(match.group("id"))
            if not pages.get(exp_id):  # a page that exists but cannot be read is WK001's finding
                yield self.finding(
                    info.rel, entry.line, f"loop-iteration names {exp_id}, which has no experiment page in lane {lane[1]!r}",
                    date=entry.finding_date,
                )
