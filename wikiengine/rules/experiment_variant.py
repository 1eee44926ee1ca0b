"""EXP010."""

from __future__ import annotations

from wikiengine.lint.rule import Rule
from wikiengine.rules._experiments import experiment_facts, key_line, model_page_for
from wikiengine.rules._models import variant_rows


class VariantInMatrix(Rule):
    """## What it does
    Checks that an experiment's `variant` is a row of its lane's model page variant
    matrix (`wiki/models/<model>-<lane>.md`, section `## Variant matrix`, first column).
    Skipped when the page has no `variant` or the lane has no model page.

    ## Why is this bad?
    The loop picks the next hypothesis for a variant and moves Current best per variant;
    an experiment on a variant the matrix does not know is invisible to both (often a
    typo: `2b-seq8K` for `2b-seq8k`).

    ## Example
    `variant: 2b-8k` when the matrix rows are `2b-seq8k` and `9b-seq8k`.

    Use `variant: 2b-seq8k`, or add the new variant to the matrix first.

    ## Options
    None.
    """

    code = "EXP010"
    name = "variant-in-matrix"
    summary = "an experiment's variant is not a row of the model page's variant matrix"

    def check_wiki(self, ctx):
        matrices: dict = {}  # model page -> its variant rows, read once
        for info in ctx.target_pages("experiment"):
            facts = experiment_facts(info, ctx)
            if facts is None:
                continue
            variant = facts.frontmatter.get("variant")
            model = model_page_for(facts, ctx)
            if variant is None or model is None or model.page is None:
                continue
            if model.rel not in matrices:
                matrices[model.rel] = variant_rows(model.page)
            rows = matrices[model.rel]
            if rows is None:
                continue  # MOD003 reports a model page without a matrix
            if str(variant) not in rows:
                known = ", ".join(sorted(rows)) or "none"
                yield self.finding(
                    info.rel, key_line(info, "variant"),
                    f"variant {variant!r} is not a row of the variant matrix in {model.rel} (rows: {known})",
                )
