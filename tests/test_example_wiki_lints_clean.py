"""The repository's own example wiki is a worked example of every domain rule: it lints
clean as a whole, it covers every verdict state and both experiment layouts, and each
seed mistake made to a copy of it fails with the right code."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.rules_wiki import codes
from wikiengine.lint import lint
from wikiengine.lint.config import LintConfig, load_config
from wikiengine.lint.context import LintContext, discover
from wikiengine.lint.rules._experiments import experiment_facts

REPO = Path(__file__).resolve().parent.parent
GEMMA_TPU = "wiki/experiments/gemma4_autoresearch_optimization/tpu"


def test_example_wiki_lints_clean():
    result = lint(REPO, config=load_config(REPO), base=None, use_cache=False)
    assert [f.render() for f in result.findings] == []


def test_example_wiki_covers_every_state_and_layout():
    files = discover(REPO)
    ctx = LintContext(root=REPO, config=LintConfig(), files=files, targets=files)
    facts = [experiment_facts(ctx.info(rel), ctx) for rel in files if ctx.info(rel).kind == "experiment"]
    states = {f.verdict or f.status for f in facts}
    assert {"supported", "refuted", "inconclusive", "invalid", "in_progress"} <= states
    assert any(f.backfilled for f in facts)
    assert any(f.status == "filed" for f in facts)  # the status: filed + verdict: schema
    assert any("/experiments/" in f.rel.split("_optimization/")[1] for f in facts)
    assert any("/experiments/" not in f.rel.split("_optimization/")[1] for f in facts)
    lanes = {f.lane_key for f in facts}
    assert len(lanes) >= 3
    for rel in ("wiki/log.md", f"{GEMMA_TPU}/log.md", "wiki/models/gemma4-tpu.md"):
        assert rel in files


@pytest.fixture()
def wiki_copy(tmp_path):
    shutil.copytree(REPO / "wiki", tmp_path / "wiki")
    return tmp_path


def _edit(root: Path, rel: str, old: str, new: str) -> None:
    path = root / rel
    text = path.read_text(encoding="utf-8")
    assert old in text, (rel, old)
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


V046 = f"{GEMMA_TPU}/experiments/2026-06-10-v046-splash-blocks.md"
V044 = f"{GEMMA_TPU}/experiments/2026-06-04-v044-async-collective.md"
V047 = f"{GEMMA_TPU}/experiments/2026-06-12-v047-fsdp-overlap.md"

MISTAKES = [
    ("backfilled page claims supported", V044, "status: inconclusive", "status: supported", "EXP005"),
    ("backfilled page loses its marker", V044, "backfilled: true\n", "", "EXP004"),
    ("stub drops a placeholder", V047, "## HLO Dump\n", "", "EXP002"),
    ("stub loses a labelled paragraph", V047, "**Mechanism**", "Mechanism", "EXP003"),
    ("verdict without reasoning", V046, "**supported** — +0.7 MFU with the predicted signal. Current best moves to v046.", "", "EXP006"),
    ("status and verdict disagree", V046, "status: filed", "status: refuted", "EXP009"),
    ("workload name too long", V046, "demo-gemma4-tpu-v046-splash-blk\n", "demo-gemma4-tpu-v046-splash-block-sizes-2048\n", "WKL001"),
    ("loop-iteration in the global log", "wiki/log.md", "## [2026-06-09] retrospective", "## [2026-06-09] loop-iteration", "LOG003"),
    ("entry appended at the bottom", f"{GEMMA_TPU}/log.md", "## [2026-06-01] start", "## [2026-06-30] start", "LOG002"),
    ("unknown op", f"{GEMMA_TPU}/log.md", "] backfill |", "] back-fill |", "LOG004"),
    ("iteration without a page", f"{GEMMA_TPU}/log.md", "v043-remat-dots on", "v049-remat-dots on", "LOG005"),
    ("stop without retrospective", f"{GEMMA_TPU}/retrospectives/2026-06-09-session-1.md", "created: 2026-06-09", "created: 2026-05-09", "RUN001"),
    ("current best not supported", "wiki/models/gemma4-tpu.md", "| [v046-splash-blocks](", "| v045 [v045](", "MOD001"),
    ("current best not the best", "wiki/models/gemma4-tpu.md", "[v046-splash-blocks](../experiments/gemma4_autoresearch_optimization/tpu/experiments/2026-06-10-v046-splash-blocks.md)", "v042", "MOD002"),
    ("variant typo", V046, "variant: 2B/v5p-16", "variant: 2B/v5p-8", "EXP010"),
]


@pytest.mark.parametrize("case,rel,old,new,code", MISTAKES, ids=[m[0] for m in MISTAKES])
def test_seed_mistake_fails_with_its_code(wiki_copy, case, rel, old, new, code):
    assert codes(wiki_copy) == set()
    _edit(wiki_copy, rel, old, new)
    assert code in codes(wiki_copy)


def test_duplicate_id_across_layouts(wiki_copy):
    shutil.copy(wiki_copy / V046, wiki_copy / GEMMA_TPU / "2026-06-10-v046-splash-blocks.md")
    assert "EXP008" in codes(wiki_copy)


@pytest.mark.parametrize("name", ["experiment", "model", "hypothesis", "retrospective"])
def test_domain_schemas_are_draft7_and_compile(name):
    import json

    import fastjsonschema
    import jsonschema

    schema = json.loads((REPO / "schema" / f"{name}.schema.json").read_text())
    assert schema["$schema"] == "http://json-schema.org/draft-07/schema#"
    jsonschema.Draft7Validator.check_schema(schema)
    fastjsonschema.compile(schema)


@pytest.mark.parametrize(
    "rel,old,new",
    [
        (V046, "status: filed", "status: done"),
        (V046, "created: 2026-06-10", "created: soon"),
        ("wiki/models/gemma4-tpu.md", "lane: tpu\n", ""),
        ("wiki/hypotheses/fsdp-collective-overlap.md", "status: testing", "status: maybe"),
        ("wiki/retrospectives/2026-05-21-gemma4-jax.md", "created: 2026-05-21\n", ""),
    ],
)
def test_domain_frontmatter_breaks_its_schema(wiki_copy, rel, old, new):
    _edit(wiki_copy, rel, old, new)
    found = [f for f in lint(wiki_copy, config=LintConfig(select=["WK002"]), base=None, use_cache=False).findings]
    assert [f.path for f in found] == [rel]
