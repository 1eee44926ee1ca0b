"""MOD001-MOD003: the model page's variant matrix and Current best (seed 003 Step 7 and
2(a): "Update the model page variant matrix if Current best moved")."""

from __future__ import annotations

import os
import time

import pytest

from tests.rules_wiki import LANE, MODEL_PAGE, OTHER_LANE, assert_finds, experiment_page, findings, write
from wikiengine.lint import lint
from wikiengine.lint.config import LintConfig

MODEL = "wiki/models/gemma4-tpu.md"
V042 = f"{LANE}/2026-06-02-v042-splash.md"
V043 = f"{LANE}/experiments/2026-06-03-v043-blocks.md"
V044 = f"{LANE}/experiments/2026-06-04-v044-remat.md"
PAGES = {
    V042: experiment_page(mfu=41.3),
    V043: experiment_page(created="2026-06-03", status="filed", verdict="supported", mfu=42.0),
    V044: experiment_page(created="2026-06-04", status="refuted", mfu=43.0, sections={"Verdict": "**refuted**\n"}),
}


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
        ("model: gemma4\nlane: tpu\nexperiments: [42]\n", 0),  # the other cases: the HYP001 fixture wiki
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


# The template's own headers and multi-figure cells, as a hand-grown wiki writes them
# (conventions.md, "A wiki that grew by hand").
REAL_SHAPE = MODEL_PAGE.replace(
    "| Size | Hardware | Status | Baseline | Current best | Open hyps | Frontier exp |",
    "| Size | Hardware | Status | Baseline (step / TPS / MFU) | Current best (step / TPS / MFU) | Open hyps | Frontier exp |",
).replace("| live | 38.9% |", "| live | 1,284 ms / 6,380 TPS / 38.9% MFU |")


@pytest.mark.parametrize("best,codes", [
    (f"[v043-blocks](../../{V043}) 1,190 ms / 6,880 TPS / 42.0% MFU", {}),
    ("v042 1,250 ms / 6,500 TPS / 41.3% MFU", {"MOD002": [V043]}),  # v043 is better
    (f"[v044-remat](../../{V044}) 1,100 ms / 7,000 TPS / 43.0% MFU", {"MOD001": ["'refuted'"]}),
    ("512 ms / 31,955 TPS / 20.5% MFU", {"MOD002": ["names no experiment", V043]}),
])
def test_mod_rules_read_headers_with_units_and_multi_figure_cells(tmp_path, best, codes):
    """``Current best (step / TPS / MFU)`` is the Current best column: MOD001 and MOD002 run
    on its cells and MOD003 finds the column (no false 'no Current best column')."""
    write(tmp_path, {**PAGES, MODEL: REAL_SHAPE.format(best=best)})
    for code in ("MOD001", "MOD002", "MOD003"):
        found = findings(tmp_path, code)
        assert len(found) == (1 if code in codes else 0), (code, [f.render() for f in found])
        for part in codes.get(code, ()):
            assert part in found[0].message and found[0].path == MODEL and found[0].line == 11


def test_mod002_and_mod004_read_a_settled_lane_from_their_tables_and_follow_each_edit(tmp_path):
    """A writer that moves Current best re-lints the model page, and MOD002 and MOD004 ask every
    page of the lane for its figures. Pages settled since the last run answer from one table each
    (no page read, none of their cache shards opened); a page edited since is read again, so an
    edit that changes the answer is seen at once, as an uncached run sees it."""
    model_page = MODEL_PAGE.format(best="v042").replace("lane: tpu\n", "lane: tpu\nupdated: 2026-06-10\n", 1)
    write(tmp_path, {**PAGES, MODEL: model_page})
    old = time.time() - 3600  # past the racy window: the tables may vouch for every page
    for path in tmp_path.rglob("*.md"):
        os.utime(path, (old, old))
    config = LintConfig(select=["MOD002", "MOD004"])

    def both(root):
        cached = lint(root, [MODEL], config, base=None)
        assert [f.render() for f in cached.findings] == [f.render() for f in lint(root, [MODEL], config, base=None,
                                                                                     use_cache=False).findings]
        return cached

    lint(tmp_path, None, LintConfig(), base=None)
    first = both(tmp_path)
    assert [f.code for f in first.findings] == ["MOD002"] and V043 in first.findings[0].message
    settled = both(tmp_path)
    assert settled.stats.get("tabled", 0) == 0 and settled.stats["page_facts_reused"] >= 2 * len(PAGES)
    assert settled.stats.get("shards_read", 0) <= 2  # the model page's and v042's (named as Current best)
    write(tmp_path, {V043: experiment_page(created="2026-06-03", status="filed", verdict="supported", mfu=40.0),
                     V044: experiment_page(created="2026-06-04", updated="2026-06-20", status="refuted", mfu=43.0,
                                           sections={"Verdict": "**refuted**\n"})})
    edited = both(tmp_path)  # v042 is now the best; v044 was filed after the model page's update
    assert [f.code for f in edited.findings] == ["MOD004"] and "2026-06-20" in edited.findings[0].message
    assert "older than v044," in edited.findings[0].message
    for rel in (V043, V044):  # settled under a new stat key (the same time would pass for the old bytes)
        os.utime(tmp_path / rel, (old + 60, old + 60))
    assert both(tmp_path).stats["tabled"] == 4  # the two edited pages, settled: tabled anew in each table
    # another id pattern: no file name gives an id, so MOD004 names the page by its file; the
    # table made under the old pattern is not taken (each table is keyed by its rule's configuration)
    other = LintConfig(select=["MOD002", "MOD004"], rules={"EXP001": {"id-pattern": r"x\d{3,}"}})
    renamed = lint(tmp_path, [MODEL], other, base=None)
    assert [f.render() for f in renamed.findings] == [f.render() for f in lint(tmp_path, [MODEL], other, base=None,
                                                                                  use_cache=False).findings]
    assert "older than 2026-06-04-v044-remat.md," in renamed.findings[0].message


JAX_MODEL = "wiki/models/gemma4-jax.md"
V007 = f"{OTHER_LANE}/experiments/2026-06-02-v007-scan.md"


def _both(root, config):
    cached = lint(root, None, config, base=None)
    assert [f.render() for f in cached.findings] == [f.render() for f in lint(root, None, config, base=None,
                                                                                 use_cache=False).findings]
    return cached


def test_an_edit_in_one_lane_reads_again_what_that_lanes_model_page_names_alone(tmp_path, monkeypatch):
    """MOD001 and MOD002 keep a lane's findings while its part is the same (lint/lane_parts.py): after
    an edit in the jax lane, the experiments the tpu model page names are not read again."""
    from wikiengine.lint.rules import _models

    jax_model = MODEL_PAGE.format(best="v007").replace("lane: tpu", "lane: jax")
    write(tmp_path, {**PAGES, MODEL: MODEL_PAGE.format(best="v042"), JAX_MODEL: jax_model,
                     V007: experiment_page(mfu=30.0)})
    config = LintConfig(select=["MOD001", "MOD002"])
    _both(tmp_path, config)
    resolved: list[str] = []
    real = _models._facts_of
    monkeypatch.setattr(_models, "_facts_of", lambda ref, lane, ctx: resolved.append(lane[1]) or real(ref, lane, ctx))
    write(tmp_path, {V007: experiment_page(status="refuted", mfu=30.0, sections={"Verdict": "**refuted**\n"})})
    edited = lint(tmp_path, None, config, base=None)
    assert [f.path for f in edited.findings] == [JAX_MODEL, MODEL]  # v007 no longer supported; tpu's as before
    assert "jax" in resolved and "tpu" not in resolved
    assert [f.render() for f in edited.findings] == [f.render() for f in lint(tmp_path, None, config, base=None,
                                                                                 use_cache=False).findings]


def test_a_model_page_that_names_a_page_of_another_lane_is_judged_again_when_that_page_changes(tmp_path):
    """A Current best linked into another lane's folder leaves the model page outside the lane
    memo: the named page's verdict, changed in the other lane, is seen at once."""
    link = "[v007](../experiments/gemma4_autoresearch_optimization/jax/experiments/2026-06-02-v007-scan.md)"
    write(tmp_path, {**PAGES, MODEL: MODEL_PAGE.format(best=link), V007: experiment_page(mfu=30.0)})
    config = LintConfig(select=["MOD001"])
    assert not any(f.path == MODEL for f in _both(tmp_path, config).findings)
    write(tmp_path, {V007: experiment_page(status="refuted", mfu=30.0, sections={"Verdict": "**refuted**\n"})})
    found = _both(tmp_path, config).findings
    assert any(f.path == MODEL and "refuted" in f.message for f in found)
