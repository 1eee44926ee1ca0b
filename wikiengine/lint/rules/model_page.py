"""MOD001, MOD002 and MOD003: the model page of a lane."""

from __future__ import annotations

from wikiengine.lint.finding import Finding
from wikiengine.lint.options import Option
from wikiengine.lint.rule import Rule
from wikiengine.lint.rules._experiments import model_page_lane, sections_led_by
from wikiengine.lint.rules._models import (
    CURRENT_BEST,
    VARIANT_MATRIX,
    best_references,
    current_best,
    lane_supported,
    matrix_of,
    metric_value,
)
from wikiengine.model.cell_figures import DEFAULT_METRIC


class _CurrentBestRule(Rule):
    """MOD001 and MOD002: each target model page that parsed, with its lane and the references
    of its Current best (None: the page names none); a rule writes ``check_current_best``.

    The findings on the model pages of one lane are kept lane by lane (``lane_memo``) when
    every page they name lies in that lane: a whole-wiki run after an edit in one lane reads
    that lane's pages again, not the pages named by every model page of the wiki."""

    reports_on = ("model",)

    def check_wiki(self, ctx):
        by_lane: dict[tuple[str, str] | None, list] = {}
        for info in ctx.target_pages("model"):
            if info.page is not None:
                by_lane.setdefault(model_page_lane(info.rel, ctx), []).append(info)
        memo = f"{self.code}-current-best:{ctx.config.rule_fingerprint(self.code)}:{ctx.config.rule_fingerprint('EXP001')}"
        for lane, infos in by_lane.items():
            if lane is None or not all(self._names_within(info, lane, ctx) for info in infos):
                for info in infos:
                    yield from self.check_current_best(info, lane, current_best(info, lane, ctx), ctx)
                continue
            rows = ctx.lane_memo(memo, lane, lambda lane=lane, infos=infos: [
                f.row() for info in infos for f in self.check_current_best(info, lane, current_best(info, lane, ctx), ctx)])
            yield from (Finding(*row) for row in rows)

    @staticmethod
    def _names_within(info, lane: tuple[str, str], ctx) -> bool:
        """Does the model page name (by link) only pages inside its lane's folder? (By id, it names
        the lane's own.)"""
        folder = f"wiki/experiments/{lane[0]}/{lane[1]}/"
        return all(ref.target is None or ref.target.startswith(folder) for _line, ref, _row in best_references(info, ctx) or ())

    def check_current_best(self, info, lane, refs, ctx):
        return ()


class CurrentBestExists(_CurrentBestRule):
    """## What it does
    Checks that every experiment named as Current best, the `Current best` cell of each
    row of the variant matrix (by a link to its page, or by its id, e.g. `v045`), exists
    in the model page's lane and has verdict `supported`. An older page that keeps a
    `## Current best` section is read from the section.

    ## Why is this bad?
    Current best is the frontier that the next hypothesis starts from and that trunk
    merges follow. Pointing it at an experiment that is missing, in progress, refuted or
    inconclusive sends the loop off a result that does not stand.

    ## Example
    ```markdown
    | Size | Hardware | Status | Baseline | Current best | Open hyps | Frontier exp |
    |---|---|---|---|---|---|---|
    | 2B | v5p-16 | live | 38.9% | [v047](../experiments/.../2026-06-12-v047-remat.md) 43.0% | 1 | v047 |
    ```
    when v047 is `inconclusive`. Name the best `supported` experiment instead.

    ## Options
    Uses `id-pattern` from EXP001.
    """

    code = "MOD001"
    name = "current-best-supported"
    summary = "a model page's Current best names an experiment that does not exist or is not supported"

    def check_current_best(self, info, lane, refs, ctx):
        for ref in refs or ():
            if ref.facts is None:
                where = f"lane {lane[0]}/{lane[1]}" if lane else "the wiki (no lane matches this model page)"
                yield self.finding(info.rel, ref.line, f"Current best names {ref.text}, which is not an experiment page of {where}")
            elif ref.facts.verdict != "supported":
                state = ref.facts.verdict or ref.facts.status or "no status"
                yield self.finding(info.rel, ref.line, f"Current best names {ref.facts.rel}, which is {state!r}, not 'supported'")


class CurrentBestIsBest(_CurrentBestRule):
    """## What it does
    Checks that the Current best of each row of the variant matrix is the best
    `supported` experiment of that variant: no other `supported` experiment on the same
    `variant` has a better headline metric (the frontmatter key `mfu`, or `metrics.mfu`;
    higher is better). Experiments without the metric are not compared. A row whose
    Current best names no experiment while its variant has supported, measured
    experiments is flagged too.

    ## Why is this bad?
    The seed moves Current best whenever a supported verdict beats it, and merges that
    experiment to trunk. A stale Current best means the next experiments fork from a
    slower trunk and compare against the wrong baseline.

    ## Example
    The `2B/v5p-16` row's Current best names v045 (`mfu: 41.3`) while v049 on
    `variant: 2B/v5p-16` is `supported` with `mfu: 42.0`. Point the cell at v049.

    ## Options
    - `metric` (string): the frontmatter key compared (`mfu: 42.0` or `metrics: {mfu: 42.0}`).
      Default: the lane program's `target_metric` (its `## Config` block), else `mfu`.
    - `higher-is-better` (bool): default the lane program's `higher_is_better`, else true.
    """

    code = "MOD002"
    options = {"metric": Option("str"), "higher-is-better": Option("bool")}
    name = "current-best-is-best"
    summary = "a model page's Current best is not the best supported experiment of its lane"

    def check_current_best(self, info, lane, refs, ctx):
        if lane is None or refs is None:
            return
        metric, higher = _lane_metric(ctx, self.code, lane)
        sign = 1.0 if higher else -1.0
        supported = lane_supported(ctx, lane, metric)
        matrix = matrix_of(info, ctx)
        named_rows = {ref.variant for ref in refs}
        by_cells = matrix is not None and matrix.has_column(CURRENT_BEST)
        for row in matrix.rows if by_cells else ():
            of_row = [f for f in supported if f.variant == row.key]
            if row.key not in named_rows and of_row:
                best = max(of_row, key=lambda f: sign * f.value)
                yield self.finding(info.rel, row.line, f"row {row.key}: Current best names no experiment; the best supported is {best.rel}")
        if not refs and not by_cells:
            if supported:
                best = max(supported, key=lambda f: sign * f.value)
                section = sections_led_by(info.page, CURRENT_BEST)[0]
                yield self.finding(info.rel, section.line, f"Current best names no experiment; the best supported is {best.rel}")
            return
        for ref in refs:
            if ref.facts is None or ref.facts.verdict != "supported":
                continue  # MOD001
            own = metric_value(ref.facts, metric)
            if own is None:
                continue
            variant = ref.variant if ref.variant is not None else ref.facts.frontmatter.get("variant")
            rivals = [f for f in supported if f.variant == str(variant) and f.rel != ref.facts.rel]
            better = [f for f in rivals if sign * f.value > sign * own]
            if better:
                best = max(better, key=lambda f: sign * f.value)
                yield self.finding(
                    info.rel, ref.line,
                    f"Current best {ref.facts.exp_id} has {metric} {own:g}, but {best.rel} (supported, same variant) has "
                    f"{best.value:g}",
                )


def _lane_metric(ctx, code: str, lane: tuple[str, str]) -> tuple[str, bool]:
    """The metric MOD002 compares and its direction: the rule's options, else the lane
    program's ``target_metric`` / ``higher_is_better`` (what ``wiki exp file`` used)."""
    metric = ctx.config.option(code, "metric")
    higher = ctx.config.option(code, "higher-is-better")
    if metric is None or higher is None:
        from wikiengine.core.errors import WikiError
        from wikiengine.model.cascade import resolve
        from wikiengine.model.targets import target_for_path

        try:
            config = resolve(target_for_path(ctx.root, ctx.root / f"wiki/experiments/{lane[0]}/{lane[1]}"),
                             additive_marker=ctx.config.additive_marker, validate=False).config or {}
        except WikiError:
            config = {}  # PRG001/PRG002 report a broken program
        metric = metric if metric is not None else config.get("target_metric", DEFAULT_METRIC)
        higher = higher if higher is not None else config.get("higher_is_better", True)
    return str(metric), bool(higher)


class ModelPageSections(Rule):
    """## What it does
    Checks that a model page has the sections of the template (Target metrics, How to
    run, Variant matrix, Cross-variant open hypotheses, Variant-specific open hypotheses,
    Retired hypotheses, Knobs translation matrix, Iteration ladder; found by leading
    title), that its `## Variant matrix` has one pipe table, keyed by its `Size` and
    `Hardware` columns (a row's key is `Size/Hardware`, e.g. `2B/v5p-16`), and that
    Current best is a column of it (an older page may keep a `## Current best` section
    instead).

    ## Why is this bad?
    The loop re-grounds from the model page every iteration (variant matrix, current
    best, open hypotheses, frontier experiment); EXP010, MOD001 and MOD002 read the
    matrix and cannot check a page without it.

    ## Example
    A model page with prose only. Add:
    ```markdown
    ## Variant matrix
    | Size | Hardware | Status | Baseline | Current best | Open hyps | Frontier exp |
    |---|---|---|---|---|---|---|
    | 2B | v5p-16 | live | 38.9% MFU | [v045](...) 41.3% MFU | 2 | v047 |
    ```

    ## Options
    - `sections` (list of titles): the required sections (default: the template's).
    """

    code = "MOD003"
    name = "model-page-sections"
    summary = "a model page lacks a template section, a Variant matrix table, or a Current best column"
    kinds = ("model",)
    options = {"sections": Option("str-list")}

    def check_page(self, info, ctx):
        from wikiengine.model.variant_matrix import MODEL_PAGE_SECTIONS

        missing = [t for t in ctx.config.option(self.code, "sections", MODEL_PAGE_SECTIONS)
                   if t != VARIANT_MATRIX and not sections_led_by(info.page, t)]
        if missing:
            yield self.finding(info.rel, 1, "missing required section(s): " + ", ".join(f"'## {t}'" for t in missing))
        matrix = matrix_of(info, ctx)
        if matrix is None:
            found = sections_led_by(info.page, VARIANT_MATRIX)
            what = "'## Variant matrix' has no table" if found else "no '## Variant matrix' section"
            yield self.finding(info.rel, found[0].line if found else 1, what)
        elif not matrix.has_column(CURRENT_BEST) and not sections_led_by(info.page, CURRENT_BEST):
            yield self.finding(info.rel, matrix.header_line, "the variant matrix has no 'Current best' column")
