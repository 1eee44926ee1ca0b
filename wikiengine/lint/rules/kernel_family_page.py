"""KRN006 and KRN007: a kernel family page against its experiments."""

from __future__ import annotations

import re

from wikiengine.lint.rule import Rule
from wikiengine.lint.rules._kernels import kernel_facts
from wikiengine.lint.rules._shared import target_kernel_experiments
from wikiengine.model.kernel_page import experiment_leads, family_leads
from wikiengine.model.kernels import family_of_page
from wikiengine.model.variant_matrix import CURRENT_BEST, cell_reference, parse_matrix

_ID_RE = re.compile(r"(?<![A-Za-z0-9])(?P<id>v\d{3,}[a-z]?)(?![0-9])")


class FamilyCurrentBestSupported(Rule):
    """## What it does
    Checks that every `Current best` cell of a kernel family page's variant matrix
    names (by a link, or by its v-id) an experiment page of the family whose verdict is
    `supported`.

    ## Why is this bad?
    The family's Current best is the frontier the next candidate branch starts from.
    In one real wiki a 0.33x kernel was marked supported and Current best pointed at a
    refuted page: every later experiment measured against a result that does not stand.

    ## Example
    ```markdown
    | Op-point | Hardware | Status | Baseline | Current best | Open hyps | Frontier exp |
    |---|---|---|---|---|---|---|
    | b8s4096 | v6e | live | 1.0x | [v003](../kernel_experiments/fa/pallas/2026-06-03-v003-tiling.md) 0.33x | 0 | v003 |
    ```
    when v003 is refuted. Name the best supported experiment, or `—`.

    ## Options
    None.
    """

    code = "KRN006"
    name = "kernel-current-best-supported"
    summary = "a kernel family's Current best names a page that is missing or not supported"
    kinds = ()
    reports_on = ("kernel-family",)

    def check_wiki(self, ctx):
        for info in ctx.target_pages("kernel-family"):
            family = family_of_page(info.rel)
            matrix = parse_matrix(info.page) if info.page is not None else None
            if family is None or matrix is None:
                continue
            pages = [rel for rel in ctx.files_under(family.dir + "/")
                     if rel.count("/") == family.dir.count("/") + 1 and ctx.info(rel).kind == "kernel-experiment"]
            for row in matrix.rows:
                ref = cell_reference(row.cell(CURRENT_BEST), info.rel, _ID_RE)
                if ref is None:
                    continue
                target = ref.target if ref.target and ref.target in pages else next(
                    (p for p in pages if ref.exp_id and f"-{ref.exp_id}-" in p.rsplit("/", 1)[-1]), None)
                if target is None:
                    yield self.finding(info.rel, row.line, f"Current best of {row.key} names {ref.text}, which is not "
                                                           f"an experiment page of {family.dir}")
                    continue
                facts = kernel_facts(ctx.info(target), ctx)
                state = (facts.verdict or facts.frontmatter.get("status") or "no status") if facts else "unreadable"
                if state != "supported":
                    yield self.finding(info.rel, row.line, f"Current best of {row.key} names {target}, which is "
                                                           f"{state!r}, not 'supported'")


class LeadsOnFamilyPage(Rule):
    """## What it does
    Checks that every lead a filed kernel experiment names under `## Next hypotheses`
    (`- **<lead-slug>**: ...`) is kept on its family page, open (`## Cross-variant open
    hypotheses`, `## Variant-specific open hypotheses`) or retired (`## Retired
    hypotheses`). Pages of a family with no family page are not checked.

    ## Why is this bad?
    The family page is where the next session picks its rank-1 lead and where the
    close checks that leads are dry. Leads left on experiment pages are lost: in one
    real wiki leads were named on 32 experiment pages and kept on 3 family pages, and
    families were closed with headroom still named.

    ## Example
    `- **split-k-accumulate**: the verifier saw 38% idle MXU` on a filed page, and no
    `split-k-accumulate` on `wiki/kernels/<family>.md`. `wiki kernel file` propagates
    the leads.

    ## Options
    None.
    """

    code = "KRN007"
    name = "kernel-leads-on-family-page"
    summary = "a lead named on a kernel experiment page is missing from its family page"
    kinds = ()
    reports_on = ("kernel-experiment",)

    def check_wiki(self, ctx):
        kept_by_family: dict[str, set[str] | None] = {}
        for info, facts in target_kernel_experiments(ctx):
            if facts.verdict is None or info.page is None:
                continue
            family_rel = facts.folder.family_page
            if family_rel not in kept_by_family:
                page = ctx.info(family_rel).page if ctx.exists(family_rel) else None
                kept_by_family[family_rel] = family_leads(page) if page is not None else None
            kept = kept_by_family[family_rel]
            if kept is None:
                continue
            for slug, line in experiment_leads(info.page).items():
                if slug not in kept:
                    yield self.finding(info.rel, line, f"lead {slug!r} is not on the family page {family_rel} (open or "
                                                       "retired): propagate it there (K8)")
