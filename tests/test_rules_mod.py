"""MOD001-MOD003: the model page's variant matrix and Current best (seed 003 Step 7 and
2(a): "Update the model page variant matrix if Current best moved")."""

from __future__ import annotations

import re

import pytest

from tests.rules_wiki import LANE, MODEL_PAGE, TEMPLATE_SECTIONS, assert_finds, experiment_page, findings, write

MODEL = "wiki/models/gemma4-tpu.md"
V042 = f"{LANE}/2026-06-02-v042-splash.md"
V043 = f"{LANE}/experiments/2026-06-03-v043-blocks.md"
V044 = f"{LANE}/experiments/2026-06-04-v044-remat.md"
PAGES = {
    V042: experiment_page(mfu=41.3),
    V043: experiment_page(created="2026-06-03", status="filed", verdict="supported", mfu=42.0),
    V044: experiment_page(created="2026-06-04", status="refuted", mfu=43.0, sections={"Verdict": "**refuted**\n"}),
}
OLDER_MODEL_PAGE = """\
---
model: gemma4
lane: tpu
---
# Gemma 4 on TPU

## Variant matrix

| variant | config |
|---|---|
| 2B/v5p-16 | 2B, seq 8192 |

## Current best

{best}
""" + TEMPLATE_SECTIONS
LINK_V043 = "[v043](../experiments/gemma4_autoresearch_optimization/tpu/experiments/2026-06-03-v043-blocks.md) at 42.0%"

CASES = [
    # MOD001: names an existing supported experiment
    ("mod001-pass-id", "MOD001", {**PAGES, MODEL: MODEL_PAGE.format(best="v043 on 2B (+0.7 over v042, v044 refuted)")}, 0),
    ("mod001-pass-link", "MOD001", {**PAGES, MODEL: MODEL_PAGE.format(best=LINK_V043)}, 0),
    ("mod001-pass-model-name-form", "MOD001", {**PAGES, "wiki/models/gemma4-tpu.md": MODEL_PAGE.format(best="v042")}, 0),
    ("mod001-refuted", "MOD001", {**PAGES, MODEL: MODEL_PAGE.format(best="v044 at 43.0%")}, 1),
    ("mod001-missing", "MOD001", {**PAGES, MODEL: MODEL_PAGE.format(best="v050")}, 1),
    ("mod001-broken-link", "MOD001", {**PAGES, MODEL: MODEL_PAGE.format(best="[v043](../experiments/nope.md)")}, 1),
    (
        "mod001-in-progress", "MOD001",
        {**PAGES, f"{LANE}/2026-06-05-v045-x.md": experiment_page(created="2026-06-05", status="in_progress"),
         MODEL: MODEL_PAGE.format(best="v045")}, 1,
    ),
    # MOD002: the best supported experiment on the variant
    ("mod002-pass", "MOD002", {**PAGES, MODEL: MODEL_PAGE.format(best="v043")}, 0),
    ("mod002-stale", "MOD002", {**PAGES, MODEL: MODEL_PAGE.format(best="v042")}, 1),
    ("mod002-other-variant-ignored", "MOD002", {
        V042: experiment_page(mfu=41.3), V043: experiment_page(created="2026-06-03", variant="9b", mfu=50.0),
        MODEL: MODEL_PAGE.format(best="v042")}, 0),
    ("mod002-names-nothing", "MOD002", {**PAGES, MODEL: MODEL_PAGE.format(best="to be decided")}, 1),
    # MOD003: the two sections the rules read
    ("mod003-pass", "MOD003", {MODEL: MODEL_PAGE.format(best="v042")}, 0),
    ("mod003-no-matrix-table", "MOD003", {MODEL: re.sub(r"(?m)^\|.*\n", "", MODEL_PAGE.format(best="v042"))}, 1),
    ("mod003-no-current-best", "MOD003", {MODEL: MODEL_PAGE.format(best="").replace("| Current best |", "| Best |")}, 1),
    # an older page: a matrix keyed by its first column, Current best as a section
    ("mod001-older-section-form", "MOD001", {**PAGES, MODEL: OLDER_MODEL_PAGE.format(best="v044 at 43.0%")}, 1),
    ("mod003-older-section-form", "MOD003", {MODEL: OLDER_MODEL_PAGE.format(best="v042")}, 0),
    ("mod003-missing-template-section", "MOD003",
     {MODEL: MODEL_PAGE.format(best="v042").replace("## Knobs translation matrix", "## Knobs")}, 1),
]


@pytest.mark.parametrize("case,code,files,expected", CASES, ids=[c[0] for c in CASES])
def test_model_rule(tmp_path, case, code, files, expected):
    write(tmp_path, files)
    assert_finds(tmp_path, code, expected)


def test_mod002_lower_is_better_option(tmp_path):
    write(tmp_path, {**PAGES, MODEL: MODEL_PAGE.format(best="v042")})
    assert findings(tmp_path, "MOD002", **{"higher-is-better": False}) == []
    (found,) = findings(tmp_path, "MOD002")
    assert V043 in found.message and found.path == MODEL


def test_model_page_for_a_folder_with_capitals(tmp_path):
    lane = "wiki/experiments/llama3_8B_autoresearch_optimization/tpu"
    files = {f"{lane}/2026-07-01-v001-base.md": experiment_page(created="2026-07-01")}
    for stem in ("llama3_8B-tpu", "llama3-8b-tpu"):
        write(tmp_path, {**files, f"wiki/models/{stem}.md": MODEL_PAGE.format(best="v001")})
        assert findings(tmp_path, "MOD001") == []
        (tmp_path / f"wiki/models/{stem}.md").unlink()


HYPOTHESIS = "wiki/hypotheses/splash.md"


@pytest.mark.parametrize(
    "keys,expected",
    [
        ("model: gemma4\nlane: tpu\nexperiments: [v042, v043]\n", 0),
        ("model: gemma4\nlane: tpu\nexperiments: [42]\n", 0),
        ("model: gemma4\nlane: tpu\n", 0),  # no list: nothing to check
        ("experiments: [v099]\n", 0),  # no lane: nothing to check
        ("model: gemma4\nlane: tpu\nexperiments: [v042, v099]\n", 1),
        ("model: gemma4\nlane: jax\nexperiments: [v042]\n", 1),  # another lane's id
    ],
)
def test_hyp001_hypothesis_experiments_exist(tmp_path, keys, expected):
    page = f"---\ncreated: 2026-06-01\nstatus: testing\n{keys}---\n# Splash\n"
    write(tmp_path, {**PAGES, HYPOTHESIS: page})
    assert_finds(tmp_path, "HYP001", expected)


def test_mod002_reads_the_lane_programs_target_metric(tmp_path):
    """With no rule option, MOD002 compares by the metric wiki exp file used: the lane
    program's target_metric (here tps, where v042 is best although v043 has the better mfu)."""
    pages = {
        V042: experiment_page(mfu=41.3, tps=9100),
        V043: experiment_page(created="2026-06-03", status="filed", verdict="supported", mfu=42.0, tps=8800),
        "wiki/experiments/program.md": "# Root\n\n## Rules\n\nOne change per experiment.\n",
        f"{LANE}/program.md": "# Lane\n\n## Config\n\n```yaml\ntarget_metric: tps\n```\n",
    }
    write(tmp_path, {**pages, MODEL: MODEL_PAGE.format(best="v042")})
    assert findings(tmp_path, "MOD002") == []
    write(tmp_path, {**pages, MODEL: MODEL_PAGE.format(best="v043")})
    (found,) = findings(tmp_path, "MOD002")
    assert "tps 8800" in found.message and V042 in found.message
