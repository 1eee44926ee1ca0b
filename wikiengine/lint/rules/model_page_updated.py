"""MOD004."""

from __future__ import annotations

from wikiengine.lint.rule import Rule
from wikiengine.lint.rules._experiments import experiment_facts, key_line, lane_files, model_page_lane
from wikiengine.model.experiment import frontmatter_date


def filed_on(facts) -> str | None:
    """The day an experiment page was filed: its ``updated``, else ``created``, else the
    date of its file name."""
    fm = facts.frontmatter
    return frontmatter_date(fm.get("updated")) or frontmatter_date(fm.get("created")) or facts.file_date


class ModelPageUpdated(Rule):
    """## What it does
    Checks that a model page's `updated:` is not older than the last experiment its
    lane filed (a page with a verdict; its `updated`, else `created`, else the date in
    its file name). The lane is the one the page is named for:
    `wiki/models/<model>-<lane>.md`. Model pages without `updated`, and lanes with no
    filed experiment, are not checked.

    ## Why is this bad?
    Filing a verdict moves the variant matrix: Current best, Frontier exp, the open
    hypotheses. A model page last updated before the lane's latest verdict shows a
    frontier that is no longer true, and the next iteration plans from it.

    ## Example
    `updated: 2026-06-14` on `wiki/models/llama3-torchax.md` while the torchax lane filed
    `v159` on 2026-07-04. Bring the page up to date (and `updated` with it).

    ## Options
    None.
    """

    code = "MOD004"
    name = "model-page-updated"
    summary = "a model page's updated date is older than its lane's last filed experiment"
    reports_on = ("model",)

    def check_wiki(self, ctx):
        for info in ctx.target_pages("model"):
            updated = frontmatter_date(info.frontmatter.get("updated"))
            lane = model_page_lane(info.rel, ctx) if updated else None
            if lane is None:
                continue
            latest = ctx.lane_memo(f"{self.code}-latest:{ctx.config.rule_fingerprint(self.code)}", lane,
                                   lambda lane=lane: _latest_filing(ctx, lane, self.code))
            if latest is not None and latest[0] > updated:
                yield self.finding(
                    info.rel, key_line(info, "updated"),
                    f"updated {updated} is older than {latest[1]}, filed {latest[0]} in {lane[0]}/{lane[1]}: "
                    "bring the page up to date",
                )


def _latest_filing(ctx, lane: tuple[str, str], code: str) -> tuple[str, str] | None:
    """The latest ``(day filed, id)`` of the lane's experiment pages (None: none filed). Each
    page's filing is kept in one table (its id read by the configured id pattern): a writer's
    re-lint of the model page reads no lane page."""
    latest = None
    filings = ctx.pages_fact(lane_files(ctx, lane), code, lambda rel: _filing(ctx, rel),
                             key=ctx.config.rule_fingerprint(code))
    for filed in filings.values():
        if filed is not None and (latest is None or filed[0] > latest[0]):
            latest = filed
    return latest


def _filing(ctx, rel: str) -> tuple[str, str] | None:
    """``(day filed, id)`` of a lane's experiment page with a verdict (the file name when it has
    no id), else None."""
    facts = experiment_facts(ctx.info(rel), ctx)
    day = filed_on(facts) if facts is not None and facts.verdict is not None else None
    return None if day is None else (day, facts.exp_id or rel.rsplit("/", 1)[-1])
