"""HYP002."""

from __future__ import annotations

from wikiengine.lint.rule import Rule
from wikiengine.lint.rules._experiments import key_line
from wikiengine.model.lanes import MODELS_DIR
from wikiengine.model.variant_matrix import parse_matrix


def model_page_of(frontmatter: dict) -> str | None:
    """The model page a hypothesis names: ``model: qwen3-jax`` (the model page's slug, as
    experiment pages cite it), or ``model`` plus ``lane``."""
    model, lane = frontmatter.get("model"), frontmatter.get("lane")
    if not isinstance(model, str) or not model.strip() or "/" in model:
        return None
    if isinstance(lane, str) and lane.strip() and not model.endswith(f"-{lane}"):
        return f"{MODELS_DIR}/{model.strip()}-{lane.strip()}.md"
    return f"{MODELS_DIR}/{model.strip()}.md"


class HypothesisVariantsAreRows(Rule):
    """## What it does
    Checks that every entry of a hypothesis page's `variants:` list is a row key of its
    model page's variant matrix: the `Size/Hardware` join (`"8B/v6e-8"`) of the page
    named by `model:` (`wiki/models/<model>.md`, or `<model>-<lane>.md` when the
    hypothesis has a `lane:`). Hypotheses without `variants`, or whose model page does
    not exist or has no variant matrix, are not checked.

    ## Why is this bad?
    The loop picks the next experiment for a variant from the hypotheses that list it.
    A hypothesis citing a row that does not exist (a typo, a retired hardware, a size
    renamed) is never picked for any real variant, so it silently stays open.

    ## Example
    ```yaml
    model: qwen3-jax
    variants: ["8B/v6e-32"]
    ```
    when the matrix of `wiki/models/qwen3-jax.md` has the rows `8B/v6e-8` and
    `32B/v5p-16`. Cite the row as the matrix keys it.

    ## Options
    None.
    """

    code = "HYP002"
    name = "hypothesis-variants-are-rows"
    summary = "a hypothesis page's variants list names a row its model page's variant matrix does not have"
    reports_on = ("hypothesis",)

    def check_wiki(self, ctx):
        known = set(ctx.files)
        for info in ctx.target_pages("hypothesis"):
            variants = info.frontmatter.get("variants")
            if not isinstance(variants, list) or not variants:
                continue
            model_rel = model_page_of(info.frontmatter)
            if model_rel not in known:
                continue
            model = ctx.info(model_rel)
            matrix = parse_matrix(model.page) if model.page is not None else None
            if matrix is None or not matrix.rows:
                continue
            keys = set(matrix.keys())
            for variant in variants:
                if str(variant).strip() not in keys:
                    yield self.finding(
                        info.rel, key_line(info, "variants"),
                        f"variants names {str(variant).strip()!r}, which is not a row of the variant matrix of "
                        f"{model_rel} (rows: {', '.join(matrix.keys())})",
                    )
