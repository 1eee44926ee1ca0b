"""EXP008."""

from __future__ import annotations

from wikiengine.lint.rule import Rule
from wikiengine.rules._experiments import lane_index


class DuplicateExperimentId(Rule):
    """## What it does
    Checks that no two experiment pages of one lane share an id (`v<NNN>`, or the
    configured scheme). Pages directly in `<lane>/` and in `<lane>/experiments/` belong
    to the same lane; `v45` and `v045` are the same id. Different lanes may reuse ids.

    ## Why is this bad?
    The id is what the workload name, the GCS paths, the log entries and the model
    page use to point at an experiment. Two pages with one id make every one of those
    references ambiguous, and BACKFILL's "does v<NNN> have a page?" test meaningless.

    ## Example
    `tpu/2026-06-05-v045-splash.md` and `tpu/experiments/2026-06-07-v045-remat.md`.

    Give the later experiment the next free id: `2026-06-07-v046-remat.md`.

    ## Options
    Uses `id-pattern` from EXP001.
    """

    code = "EXP008"
    name = "duplicate-experiment-id"
    summary = "two experiment pages in one lane share a v-id"

    def check_wiki(self, ctx):
        for (_model, lane), by_id in lane_index(ctx).items():
            for exp_id, pages in by_id.items():
                if len(pages) < 2:
                    continue
                for facts in pages:
                    others = ", ".join(p.rel for p in pages if p is not facts)
                    yield self.finding(facts.rel, 1, f"{exp_id} is also used in lane {lane!r} by {others}")
