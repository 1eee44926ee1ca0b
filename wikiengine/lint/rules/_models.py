"""Facts about model pages (``wiki/models/<model>-<lane>.md``) shared by EXP010 and MOD*.

The page is read through :mod:`wikiengine.model.variant_matrix`: one table keyed by
``Size/Hardware`` whose Current best and Frontier exp are cells of each row. An older
page that keeps Current best in a ``## Current best`` section is read from the section.
"""

from __future__ import annotations

from collections import namedtuple
from dataclasses import dataclass

from wikiengine.lint.rules._experiments import (
    canonical_id,
    compiled,
    experiment_facts,
    lane_ids,
    lint_cache,
    sections_led_by,
)
from wikiengine.model.experiment import ExperimentPage, metric_of
from wikiengine.model.variant_matrix import CURRENT_BEST, VARIANT_MATRIX, VariantMatrix, cell_reference, parse_matrix

TYPE_CHECKING = False  # typing's constant, without importing typing
if TYPE_CHECKING:
    from wikiengine.lint.context import LintContext, PageInfo

__all__ = ["CURRENT_BEST", "VARIANT_MATRIX", "BestReference", "Supported", "best_references", "current_best",
           "lane_supported", "matrix_of", "metric_value"]


def matrix_of(info: PageInfo, ctx: LintContext) -> VariantMatrix | None:
    """The variant matrix of a model page, parsed once per lint (None: no table)."""
    cache = lint_cache(ctx, "variant-matrix")
    if info.rel not in cache:
        cache[info.rel] = parse_matrix(info.page) if info.page is not None else None
    return cache[info.rel]


@dataclass(frozen=True)
class BestReference:
    """One experiment named as Current best: by link (``text`` is the target) or by id."""

    line: int
    text: str
    facts: ExperimentPage | None  # None: names nothing that exists
    variant: str | None  # the row whose cell names it (None: an older Current best section)


def _facts_of(ref, lane, ctx) -> ExperimentPage | None:
    if ref.target is not None:
        return experiment_facts(ctx.info(ref.target), ctx) if ctx.exists(ref.target) else None
    pages = [f for f in (experiment_facts(ctx.info(r), ctx) for r in lane_ids(ctx, lane).get(canonical_id(ref.exp_id), ()))
             if f is not None] if lane else []
    return pages[0] if len(pages) == 1 else None


def current_best(info: PageInfo, lane: tuple[str, str] | None, ctx: LintContext) -> list[BestReference] | None:
    """The experiments named as Current best: the Current best cell of each row, or the
    lines of an older ``## Current best`` section (None when the page has neither)."""
    named = best_references(info, ctx)
    if named is None:
        return None
    return [BestReference(line, ref.text, _facts_of(ref, lane, ctx), variant) for line, ref, variant in named]


def best_references(info: PageInfo, ctx: LintContext) -> list[tuple] | None:
    """``(line, reference, row key)`` of what the model page names as Current best, read from
    the page alone (None when it has neither a Current best column nor section)."""
    id_re = compiled(ctx)["id"]
    matrix = matrix_of(info, ctx)
    if matrix is not None and matrix.has_column(CURRENT_BEST):
        named = []
        for row in matrix.rows:
            ref = cell_reference(row.cell(CURRENT_BEST), info.rel, id_re)
            if ref is not None:
                named.append((row.line, ref, row.key))
        return named
    sections = sections_led_by(info.page, CURRENT_BEST)
    if not sections:
        return None
    named = []
    for section in sections:
        for offset, line in enumerate(section.body.splitlines()):
            ref = cell_reference(line, info.rel, id_re)
            if ref is not None:
                named.append((section.body_line + offset, ref, None))
    return named


# A supported experiment of a lane with its headline metric: what MOD002 compares. ``variant``:
# the frontmatter's as text ("None" when it has none). (typing.NamedTuple would import typing.)
Supported = namedtuple("Supported", ["rel", "variant", "value"])


def lane_supported(ctx: LintContext, lane: tuple[str, str], metric: str) -> list[Supported]:
    """The readable supported experiment pages of one lane that have an id and a ``metric``,
    by id then path. Each page's figures are kept in one table checked by lstat
    (:meth:`~wikiengine.lint.context.LintContext.pages_fact`): a writer's re-lint of the model
    page then reads none of the lane's pages and opens no cache shard for them."""

    def figures(rel: str):
        facts = experiment_facts(ctx.info(rel), ctx)
        if facts is None or facts.verdict != "supported":
            return None
        value = metric_value(facts, metric)
        return None if value is None else (str(facts.frontmatter.get("variant")), value)

    def listed() -> list[tuple]:
        rels = [rel for rels in lane_ids(ctx, lane).values() for rel in rels]
        known = ctx.pages_fact(rels, f"MOD002:{metric}", figures, key=ctx.config.rule_fingerprint("MOD002"))
        return [(rel, *known[rel]) for rel in rels if known[rel] is not None]

    # a whole-wiki run after an edit in another lane takes the list from the cache
    memo = f"MOD002-supported:{metric}:{ctx.config.rule_fingerprint('MOD002')}"
    return [Supported(*row) for row in ctx.lane_memo(memo, lane, listed)]


def metric_value(facts: ExperimentPage, name: str) -> float | None:
    """The page's headline metric (``mfu: 41.3`` or ``metrics: {mfu: 41.3}``; ``"41.3%"`` is read too)."""
    return metric_of(facts.frontmatter, name)
