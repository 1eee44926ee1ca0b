"""EXP010 and EXP016: an experiment's variant and the lane's variant matrix."""

from __future__ import annotations

import re

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
    reports_on = ("experiment",)
    by_lane = True  # lint/lane_parts.py

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


# A backfilled page saying its variant could not be recovered ("variant not recovered",
# "unknown variant", "variant: unknown").
_NOT_RECOVERED_RE = re.compile(
    r"(?i)\bvariant\b[^\n]{0,60}?\b(?:not|never|could not be|couldn't be)\s+(?:recovered|known|recorded)"
    r"|\b(?:unknown|unrecovered)\s+variant\b|\bvariant\W{1,4}(?:unknown|not recovered)\b"
)


class VariantMissing(Rule):
    """## What it does
    Reports an experiment page with no `variant` in its frontmatter (or an empty one) in
    a lane whose model page has a variant matrix. A `backfilled: true` page that says the
    variant was not recovered ("variant not recovered", "unknown variant") is exempt; a
    lane without a model page, or a model page without a matrix, is not checked (MOD003
    reports the missing matrix). A variant that is not a row is EXP010's finding.

    ## Why is this bad?
    The loop moves Current best and picks the next hypothesis per variant. A page with no
    variant belongs to no row: its result never reaches the matrix, and its baseline and
    noise band cannot be told apart from another variant's.

    ## Example
    ```yaml
    model: gemma4-tpu
    hypothesis: splash-attention-long-seq
    status: filed
    verdict: supported
    ```
    in a lane whose matrix has the rows `2B/v5p-16` and `9B/v5p-16`. Add the row key the
    run used: `variant: 2B/v5p-16`.

    ## Options
    None. Pages written before the wiki adopted variants: use `since`.
    """

    code = "EXP016"
    name = "experiment-variant-missing"
    summary = "an experiment page has no variant, in a lane whose model page has a variant matrix"
    reports_on = ("experiment",)
    by_lane = True  # lint/lane_parts.py

    def check_wiki(self, ctx):
        for info, facts in target_experiments(ctx):
            variant = facts.frontmatter.get("variant")
            if variant is not None and str(variant).strip():
                continue  # a variant that is no row (TBD included) is EXP010's
            model = model_page_for(facts, ctx)
            if model is None or model.page is None:
                continue
            matrix = matrix_of(model, ctx)
            if matrix is None or not list(matrix.keys()):
                continue
            if facts.backfilled and _NOT_RECOVERED_RE.search(facts.text):
                continue
            yield self.finding(
                info.rel, key_line(info, "variant"),
                f"no variant: name the row of the variant matrix in {model.rel} this run used "
                f"({', '.join(sorted(matrix.keys()))})",
            )
