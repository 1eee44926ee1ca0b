"""MOD001, MOD002 and MOD003: the model page of a lane."""

from __future__ import annotations

from wikiengine.lint.options import Option
from wikiengine.lint.rule import Rule
from wikiengine.rules._experiments import model_page_lane, sections_led_by
from wikiengine.rules._models import CURRENT_BEST, VARIANT_MATRIX, current_best, lane_experiments, metric_value, variant_rows

DEFAULT_METRIC = "mfu"


class CurrentBestExists(Rule):
    """## What it does
    Checks that every experiment named in a model page's `## Current best` (by a link
    to its page, or by its id, e.g. `v045`) exists in the model page's lane and has
    verdict `supported`.

    ## Why is this bad?
    Current best is the frontier that the next hypothesis starts from and that trunk
    merges follow. Pointing it at an experiment that is missing, in progress, refuted or
    inconclusive sends the loop off a result that does not stand.

    ## Example
    ```markdown
    ## Current best
    v047 (splash + remat), 43.0% MFU
    ```
    when v047 is `inconclusive`. Name the best `supported` experiment instead.

    ## Options
    Uses `id-pattern` from EXP001.
    """

    code = "MOD001"
    name = "current-best-supported"
    summary = "a model page's Current best names an experiment that does not exist or is not supported"

    def check_wiki(self, ctx):
        for info in ctx.target_pages("model"):
            if info.page is not None:
                yield from self._check(info, ctx)

    def _check(self, info, ctx):
        lane = model_page_lane(info.rel, ctx)
        refs = current_best(info, lane, ctx)
        for ref in refs or ():
            if ref.facts is None:
                where = f"lane {lane[0]}/{lane[1]}" if lane else "the wiki (no lane matches this model page)"
                yield self.finding(info.rel, ref.line, f"Current best names {ref.text}, which is not an experiment page of {where}")
            elif ref.facts.verdict != "supported":
                state = ref.facts.verdict or ref.facts.status or "no status"
                yield self.finding(info.rel, ref.line, f"Current best names {ref.facts.rel}, which is {state!r}, not 'supported'")


class CurrentBestIsBest(Rule):
    """## What it does
    Checks that Current best is the best `supported` experiment of the lane: no other
    `supported` experiment on the same `variant` has a better headline metric (the
    frontmatter key `mfu`, or `metrics.mfu`; higher is better). Experiments without
    the metric are not compared. A Current best that names no experiment while the lane
    has supported, measured experiments is flagged too.

    ## Why is this bad?
    The seed moves Current best whenever a supported verdict beats it, and merges that
    experiment to trunk. A stale Current best means the next experiments fork from a
    slower trunk and compare against the wrong baseline.

    ## Example
    Current best names v045 (`mfu: 41.3`) while v049 on the same variant is
    `supported` with `mfu: 42.0`. Point Current best at v049.

    ## Options
    - `metric` (string, default `mfu`): the frontmatter key compared.
    - `higher-is-better` (bool, default true).
    """

    code = "MOD002"
    options = {"metric": Option("str"), "higher-is-better": Option("bool")}
    name = "current-best-is-best"
    summary = "a model page's Current best is not the best supported experiment of its lane"

    def check_wiki(self, ctx):
        for info in ctx.target_pages("model"):
            if info.page is not None:
                yield from self._check(info, ctx)

    def _check(self, info, ctx):
        lane = model_page_lane(info.rel, ctx)
        refs = current_best(info, lane, ctx)
        if lane is None or refs is None:
            return
        metric = str(ctx.config.option(self.code, "metric", DEFAULT_METRIC))
        sign = 1.0 if ctx.config.option(self.code, "higher-is-better", True) else -1.0
        supported = [
            facts
            for facts in lane_experiments(ctx, lane)
            if facts.verdict == "supported" and metric_value(facts, metric) is not None
        ]
        named = [ref for ref in refs if ref.facts is not None and ref.facts.verdict == "supported"]
        if not named:
            if supported and not refs:
                best = max(supported, key=lambda f: sign * metric_value(f, metric))
                section = sections_led_by(info.page, CURRENT_BEST)[0]
                yield self.finding(info.rel, section.line, f"Current best names no experiment; the best supported is {best.rel}")
            return
        for ref in named:
            own = metric_value(ref.facts, metric)
            if own is None:
                continue
            variant = ref.facts.frontmatter.get("variant")
            rivals = [f for f in supported if f.frontmatter.get("variant") == variant and f is not ref.facts]
            better = [f for f in rivals if sign * metric_value(f, metric) > sign * own]
            if better:
                best = max(better, key=lambda f: sign * metric_value(f, metric))
                yield self.finding(
                    info.rel, ref.line,
                    f"Current best {ref.facts.exp_id} has {metric} {own:g}, but {best.rel} (supported, same variant) has "
                    f"{metric_value(best, metric):g}",
                )


class ModelPageSections(Rule):
    """## What it does
    Checks that a model page has a `## Variant matrix` with a pipe table (one variant
    per row, first column) and a `## Current best` section.

    ## Why is this bad?
    The loop re-grounds from the model page every iteration (variant matrix, current
    best, open hypotheses, frontier experiment); EXP010, MOD001 and MOD002 read these
    two sections and cannot check a page without them.

    ## Example
    A model page with prose only. Add:
    ```markdown
    ## Variant matrix
    | variant | config | best MFU | best exp |
    |---|---|---|---|
    | 2b-seq8k | Gemma 4 2B, seq 8192 | 41.3% | v045 |

    ## Current best
    v045 on 2b-seq8k.
    ```

    ## Options
    None.
    """

    code = "MOD003"
    name = "model-page-sections"
    summary = "a model page has no Variant matrix table or no Current best section"
    kinds = ("model",)

    def check_page(self, info, ctx):
        if variant_rows(info.page) is None:
            found = sections_led_by(info.page, VARIANT_MATRIX)
            what = "'## Variant matrix' has no table" if found else "no '## Variant matrix' section"
            yield self.finding(info.rel, found[0].line if found else 1, what)
        if not sections_led_by(info.page, CURRENT_BEST):
            yield self.finding(info.rel, 1, "no '## Current best' section")
