"""EXP017."""

from __future__ import annotations

from wikiengine.core.identity import MODEL_DIR_SUFFIX
from wikiengine.lint.kinds import kind_of
from wikiengine.lint.rule import Rule
from wikiengine.lint.rules._experiments import key_line, lane_dirs, lint_cache, model_dirs
from wikiengine.lint.rules._shared import target_experiments
from wikiengine.model.lanes import Lane


def _stem(value: str) -> str:
    """``gemma4-tpu`` from ``gemma4-tpu``, ``gemma4-tpu.md``, ``wiki/models/gemma4-tpu.md`` or
    ``[gemma4-tpu](../models/gemma4-tpu.md)``."""
    text = value.strip()
    if "](" in text:
        text = text.split("](", 1)[1].rstrip(")")
    text = text.rsplit("/", 1)[-1]
    return (text[:-3] if text.endswith(".md") else text).casefold()


def model_page_owners(ctx) -> dict[str, set[tuple[str, str]]]:
    """``{model page stem: the lanes it is the model page of}``: every name form of every lane
    (``<MODEL_NAME>-<lane>``, ``<folder prefix>-<lane>``), and the pages under ``wiki/models/``."""
    cache = lint_cache(ctx, "model-page-owners")
    if "owners" not in cache:
        owners: dict[str, set[tuple[str, str]]] = {}
        for model_dir in model_dirs(ctx):
            for lane in lane_dirs(ctx, model_dir):
                for name in Lane(model_dir, lane).model_page_names():
                    owners.setdefault(name[:-3].casefold(), set()).add((model_dir, lane))
        for rel in ctx.files_under("wiki/models/"):
            if kind_of(rel) == "model":
                owners.setdefault(_stem(rel), set())
        cache["owners"] = owners
    return cache["owners"]


class ModelOfAnotherLane(Rule):
    """## What it does
    Reports an experiment whose `model:` names the model page of another lane: `model:
    gemma4-jax` on a page of the `tpu` lane, whose model page is `gemma4-tpu`. The value
    is read as a page stem, a file name (`gemma4-tpu.md`), a path or a link. The lane's own
    model page in either name form (`llama3-8b-tpu`, `llama3_8B-tpu`), the model's name
    (`gemma4`, `llama3-8b`) and its folder prefix (`llama3_8B`) are all accepted; a value
    that names no model page of any lane is not this rule's business.

    ## Why is this bad?
    Readers and the writers follow `model:` to the variant matrix the run belongs to. A
    page naming another lane's model page (a copied stub, a lane renamed) sends them to
    the wrong matrix: the wrong baseline, the wrong Current best.

    ## Example
    `model: gemma4-jax` on
    `wiki/experiments/gemma4_autoresearch_optimization/tpu/experiments/2026-06-03-v043-remat.md`.

    Use the lane's own model page: `model: gemma4-tpu`.

    ## Options
    None.
    """

    code = "EXP017"
    name = "experiment-model-other-lane"
    summary = "an experiment's model: names another lane's model page"
    reports_on = ("experiment",)
    by_lane = True  # lint/lane_parts.py

    def check_wiki(self, ctx):
        owners = model_page_owners(ctx)
        for info, facts in target_experiments(ctx):
            value = facts.frontmatter.get("model")
            if not isinstance(value, str) or not value.strip():
                continue
            stem = _stem(value)
            lane = Lane(*facts.lane_key)
            own = {n[:-3].casefold() for n in lane.model_page_names()}
            own |= {lane.model_name.casefold(), lane.model_prefix.casefold(), lane.model_dir.casefold()}
            if stem in own or stem not in owners:
                continue
            others = sorted(f"{m[: -len(MODEL_DIR_SUFFIX)]}/{ln}" for m, ln in owners[stem] if (m, ln) != lane.key)
            whose = f" (of {', '.join(others)})" if others else ""
            yield self.finding(
                info.rel, key_line(info, "model"),
                f"model {value.strip()!r} names another lane's model page{whose}; this page is in "
                f"{lane.model_prefix}/{lane.name}: model: {lane.model_page_names()[0][:-3]}",
            )
