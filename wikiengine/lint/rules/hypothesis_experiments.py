"""HYP001."""

from __future__ import annotations

from wikiengine.core.identity import model_name
from wikiengine.lint.rule import Rule
from wikiengine.lint.rules._experiments import canonical_id, experiment_facts, key_line, lane_ids, model_dirs


class HypothesisExperimentsExist(Rule):
    """## What it does
    Checks that every id in a hypothesis page's `experiments:` list has an experiment
    page in the hypothesis's lane (frontmatter `model` and `lane`; `model` may be the
    folder prefix `llama3_8B` or the MODEL_NAME `llama3-8b`). Hypotheses without a
    lane, or without the list, are not checked.

    ## Why is this bad?
    `/formulate-hypothesis` checks precedents through these lists before proposing the
    next experiment; an id that points nowhere hides whether the idea was already
    tested, which is how the same experiment gets run twice.

    ## Example
    ```yaml
    model: gemma4
    lane: tpu
    experiments: [v042, v099]
    ```
    when the tpu lane has no v099. Fix the id, or file the page.

    ## Options
    Uses `id-pattern` from EXP001.
    """

    code = "HYP001"
    name = "hypothesis-experiments-exist"
    summary = "a hypothesis page's experiments list names an id with no experiment page in its lane"
    reports_on = ("hypothesis",)

    def check_wiki(self, ctx):
        for info in ctx.target_pages("hypothesis"):
            fm = info.frontmatter
            model, lane, listed = fm.get("model"), fm.get("lane"), fm.get("experiments")
            if not (isinstance(model, str) and isinstance(lane, str) and isinstance(listed, list)):
                continue
            folders = [d for d in model_dirs(ctx) if model_name(d) == model_name(model)]
            by_id = lane_ids(ctx, (folders[-1], lane)) if folders else {}
            for item in listed:
                exp_id = canonical_id(item)
                if not any(experiment_facts(ctx.info(rel), ctx) is not None for rel in by_id.get(exp_id, ())):
                    yield self.finding(
                        info.rel, key_line(info, "experiments"), f"experiments names {exp_id}, which has no page in {model}/{lane}"
                    )
