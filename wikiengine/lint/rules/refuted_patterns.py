"""HYP003."""

from __future__ import annotations

from wikiengine.core.identity import MODEL_DIR_SUFFIX
from wikiengine.lint.rule import Rule
from wikiengine.lint.rules._experiments import compiled, lane_dirs, lane_ids
from wikiengine.lint.rules._prose import prose_lines
from wikiengine.model.experiment import base_id, canonical_id

REFUTED_PATTERNS = "refuted-patterns.md"


class RefutedPatternIdsExist(Rule):
    """## What it does
    Checks the experiment ids a model's refuted-patterns page
    (`wiki/experiments/<model>_autoresearch_optimization/refuted-patterns.md`) cites:
    each must be the id of an experiment page in one of that model's lanes (a retry
    such as `v043b` counts for `v043`, and the reverse). Ids inside code are not read.

    ## Why is this bad?
    `/formulate-hypothesis` reads the refuted patterns to avoid proposing what already
    failed, and follows the cited experiments for the evidence. An id that names no
    page (mistyped, or from another model) is a pattern nobody can check, and the
    evidence for ruling an idea out is gone.

    ## Example
    ```markdown
    - **v999** (jax): splash attention with 512 blocks loses 2% MFU.
    ```
    when no lane of the model has a v999. Cite the experiment that refuted it.

    ## Options
    Uses `id-pattern` from EXP001.
    """

    code = "HYP003"
    name = "refuted-pattern-ids-exist"
    summary = "a refuted-patterns page cites an experiment id that no lane of its model has"
    reports_on = ("page",)

    def check_wiki(self, ctx):
        id_re = compiled(ctx)["id"]
        for rel in ctx.targets:
            if not rel.endswith(REFUTED_PATTERNS):
                continue  # (50,000 paths split for a few pages)
            parts = rel.split("/")
            if len(parts) != 4 or parts[:2] != ["wiki", "experiments"] or parts[3] != REFUTED_PATTERNS:
                continue
            model_dir = parts[2]
            if not model_dir.endswith(MODEL_DIR_SUFFIX):
                continue
            info = ctx.info(rel)
            page = info.page
            if page is None:
                continue
            ids = set()
            for lane in lane_dirs(ctx, model_dir):
                for exp_id in lane_ids(ctx, (model_dir, lane)):
                    ids.update((exp_id, base_id(exp_id)))
            text = page.body
            for number, line in enumerate(prose_lines(text), start=page.body_line):
                for match in id_re.finditer(line):
                    cited = canonical_id(match.group("id"))
                    if cited not in ids and base_id(cited) not in ids:
                        yield self.finding(
                            rel, number, f"cites {cited}, which is the id of no experiment page of {model_dir}",
                            match.start() + 1,
                        )

