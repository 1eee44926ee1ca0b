"""EXP008."""

from __future__ import annotations

from wikiengine.lint.rule import Rule
from wikiengine.lint.rules._experiments import experiment_facts, lane_ids
from wikiengine.lint.rules._shared import target_experiments


class DuplicateExperimentId(Rule):
    """## What it does
    Checks that no two experiment pages of one lane share an id (`v<NNN>`, or the
    configured scheme). Pages directly in `<lane>/` and in `<lane>/experiments/` belong
    to the same lane; `v45` and `v045` are the same id, `v043b` (a retry) is another, so is
    `v043-e` (a retry letter written after a hyphen, as some wikis do), and
    a page with text before its id (`2026-06-03-qwen3-jax-v024-...`) still has that id.
    Different lanes may reuse ids. The finding is on the later page of a pair (by the
    date in its name, or `created`), naming the earlier one, which may be filed and
    immutable.

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
    reports_on = ("experiment",)
    by_lane = True  # lint/lane_parts.py

    def check_wiki(self, ctx):
        # From the pages reported on, through their lane's ids: a pre-commit run on five
        # pages reads five lanes' file names, not the whole wiki.
        for _info, facts in target_experiments(ctx):
            if not facts.exp_id:
                continue
            sharing = [
                f for f in (experiment_facts(ctx.info(rel), ctx) for rel in lane_ids(ctx, facts.lane_key).get(facts.exp_id, ()))
                if f is not None
            ]
            if len(sharing) < 2:
                continue
            first = min(sharing, key=_filed_order)
            if first.rel != facts.rel:  # the earlier page is the id's owner, and may be immutable
                yield self.finding(
                    facts.rel, 1, f"{facts.exp_id} was first used in lane {facts.folder.name!r} by {first.rel}: "
                    "this page needs the next free id"
                )


def _filed_order(facts) -> tuple:
    """Which of two pages came first: the date in its name (or ``created``), then its path."""
    from wikiengine.model.experiment import frontmatter_date

    return (facts.file_date or frontmatter_date(facts.frontmatter.get("created")) or "9999-99-99", facts.rel)
