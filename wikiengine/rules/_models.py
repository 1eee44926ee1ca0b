"""Facts about model pages (``wiki/models/<model>-<lane>.md``) shared by EXP010 and MOD*.

A model page has a ``## Variant matrix`` whose first pipe table lists one variant per
row (first column), and a ``## Current best`` section that names experiments by link
(``[v045](../experiments/.../2026-06-05-v045-splash.md)``) or by id (``v045``).
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from wikiengine.rules._experiments import (
    ExperimentFacts,
    canonical_id,
    cell_text,
    compiled,
    experiment_facts,
    lane_ids,
    sections_led_by,
    table_rows,
)

if TYPE_CHECKING:
    from wikiengine.lint.context import LintContext, PageInfo
    from wikiengine.page import Page

VARIANT_MATRIX = "Variant matrix"
CURRENT_BEST = "Current best"
_LINK_RE = re.compile(r"\]\(\s*<?([^)\s>]+\.md)>?(?:\s+\"[^\"]*\")?\s*\)")


def variant_rows(page: Page) -> dict[str, int] | None:
    """Variant name -> file line, from the first table of ``## Variant matrix`` (None: no table)."""
    for section in sections_led_by(page, VARIANT_MATRIX):
        rows = table_rows(section)
        if rows:
            return {cell_text(cells[0]): line for line, cells in rows if cells and cell_text(cells[0])}
    return None


@dataclass(frozen=True)
class BestReference:
    """One experiment named in Current best: by link (``target``) or by id."""

    line: int
    text: str  # as written: the link target or the id
    facts: ExperimentFacts | None  # None: names nothing that exists


def current_best(info: PageInfo, lane: tuple[str, str] | None, ctx: LintContext) -> list[BestReference] | None:
    """The experiments named in ``## Current best`` (None when the page has no such section).

    Each line names at most one: its first link to a page or id, so that prose such as
    "v046 on 2b-seq8k (+0.7 over v042)" names v046 only.
    """
    sections = sections_led_by(info.page, CURRENT_BEST)
    if not sections:
        return None
    refs: list[BestReference] = []
    by_id = lane_ids(ctx, lane) if lane else {}
    id_re = compiled(ctx)["id"]
    base_dir = posixpath.dirname(info.rel)
    for section in sections:
        for offset, line in enumerate(section.body.splitlines()):
            number = section.body_line + offset
            link = _LINK_RE.search(line)
            # An id written before the link's own text names an experiment first.
            before = line[: max(line.rfind("[", 0, link.start()), 0)] if link else line
            bare = id_re.search(_LINK_RE.sub("]", before))
            if link is not None and bare is None:
                target = link.group(1)
                rel = posixpath.normpath(posixpath.join(base_dir, target)) if not target.startswith("/") else target[1:]
                facts = experiment_facts(ctx.info(rel), ctx) if ctx.exists(rel) else None
                refs.append(BestReference(number, target, facts))
            elif bare is not None:
                exp_id = canonical_id(bare.group("id"))
                pages = [f for f in (experiment_facts(ctx.info(r), ctx) for r in by_id.get(exp_id, ())) if f is not None]
                refs.append(BestReference(number, exp_id, pages[0] if len(pages) == 1 else None))
    return refs


def lane_experiments(ctx: LintContext, lane: tuple[str, str]) -> list[ExperimentFacts]:
    """The readable experiment pages of one lane that have an id, by id then path."""
    return [
        facts
        for rels in lane_ids(ctx, lane).values()
        for facts in (experiment_facts(ctx.info(rel), ctx) for rel in rels)
        if facts is not None
    ]


def metric_value(facts: ExperimentFacts, name: str) -> float | None:
    """The page's headline metric (``mfu: 41.3`` or ``metrics: {mfu: 41.3}``; ``"41.3%"`` is read too)."""
    value = facts.frontmatter.get(name)
    if value is None and isinstance(facts.frontmatter.get("metrics"), dict):
        value = facts.frontmatter["metrics"].get(name)
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        match = re.fullmatch(r"\s*(-?\d+(?:\.\d+)?)\s*%?\s*", value)
        return float(match.group(1)) if match else None
    return None
