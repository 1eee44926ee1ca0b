"""EXP010."""

from __future__ import annotations

from wikiengine.lint.rule import Rule
from wikiengine.lint.rules._experiments import key_line, model_page_for
from wikiengine.lint.rules._models import matrix_of
from wikiengine.lint.rules._shared import target_experiments


class VariantInMatrix(Rule):
    """## What it does
    Checks that an experiment's `variant` is a row of its lane's model page variant
    matrix (`wiki/models/<model>-<lane>.md`, section `## Variant matrix`): a row's key is
    its `Size/Hardware` join, e.g. `2B/v5p-16` (a table without those columns is keyed by
    its first column).
    Skipped when the page has no `variant` or the lane has no model page.

    ## Why is this bad?
    The loop picks the next hypothesis for a variant and moves Current best per variant;
    an experiment on a variant the matrix does not know is invisible to both (often a
    typo: `2B/v5p-8` for `2B/v5p-16`).

    ## Example
    `variant: 2b-8k` when the matrix rows are `2B/v5p-16` and `9B/v5p-16`.

    Use `variant: 2B/v5p-16`, or add the new variant to the matrix first.

    ## Options
    None.
    """

    code = "EXP010"
    name = "variant-in-matrix"
    summary = "an experiment's variant is not a row of the model page's variant matrix"

    def check_wiki(self, ctx):
        for info, facts in target_experiments(ctx):
            variant = facts.frontmatter.get("variant")
            model = model_page_for(facts, ctx)
            if variant is None or model is None or model.page is None:
                continue
            matrix = matrix_of(model, ctx)
            rows = matrix.keys() if matrix is not None else None
            if rows is None:
                continue  # MOD003 reports a model page without a matrix
            if str(variant) not in rows:
                known = ", ".join(sorted(rows)) or "none"
                yield self.finding(
                    info.rel, key_line(info, "variant"),
                    f"variant {variant!r} is not a row of the variant matrix in {model.rel} (rows: {known})",
                )
