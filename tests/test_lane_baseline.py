"""RELIABILITY row 106 (issue 25): a variant-matrix row with an empty Baseline cell gets the
Baseline the engine measured. The lane's A/A runs of the row's baseline config (before the
first dispatch of a session with no Current best) ARE baseline measurements: the band record
keeps their median, and the outcome commit writes it, with the band, into the empty cell
through the writers. A cell that holds anything is never touched."""

from __future__ import annotations

import json

from tests.test_lane_step import LANE, MemoryBackend, lane_wiki  # noqa: F401 - the fixture
from tests.test_lane_writers import git, proposal, wiki  # noqa: F401 - the fixture lane_wiki uses
from wikiengine.core.page import parse_page
from wikiengine.lint.runner import lint
from wikiengine.model.cell_figures import read_figure
from wikiengine.model.variant_matrix import BASELINE, parse_matrix
from wikiengine.step import writers as lw
from wikiengine.step.lane.start import start_session
from wikiengine.step.lane.wake import wake

MODEL = "wiki/models/gemma4-tpu.md"
ROW = "| 2B | v5p-16 | live | 38.9% MFU | [v046-splash-blocks](../experiments/gemma4_autoresearch_optimization/tpu/experiments/2026-06-10-v046-splash-blocks.md) 42.0% MFU | 2 | v047-fsdp-overlap |"


def _matrix_cell(root) -> str:
    text = (root / MODEL).read_text()
    return parse_matrix(parse_page(text, MODEL)).row("2B/v5p-16").cell(BASELINE)


def _run_aa_until_band(root, backend, figures):
    """Wake, finish every A/A run with the next figure, until the band is journalled."""
    for _ in range(12):
        wake(root, backend=backend)
        for name, run in sorted(backend.runs.items()):
            if run.state == "running" and "-v000-" in name:
                backend.finish(name, metrics={"mfu": figures.pop(0)})
        records = [json.loads(ln) for ln in (root / LANE.journal).read_text().splitlines()]
        if any(r["op"] == "band" for r in records):
            return [r for r in records if r["op"] == "band"][-1]
    raise AssertionError("no band after 12 wakes")


def _empty_baseline(root, baseline: str) -> None:
    text = (root / MODEL).read_text()
    assert ROW in text
    (root / MODEL).write_text(text.replace(ROW, f"| 2B | v5p-16 | live | {baseline} | — | 2 | — |"))
    program = root / LANE.program
    program.write_text(program.read_text().replace("wake_interval_s: 600\n", "wake_interval_s: 600\nnoise_band_runs: 3\n"))
    git(root, "commit", "-qam", "a row with no frontier yet")


def test_row106_an_empty_baseline_cell_gets_the_median_of_the_aa_runs(lane_wiki, tmp_path):
    root = lane_wiki
    _empty_baseline(root, "—")
    before = [f.render() for f in lint(root, base=None, use_cache=False).findings]  # the emptied Current best: MOD002
    backend = MemoryBackend(tmp_path / "art")
    started = start_session(root, LANE, parallelism="1")
    assert started["empty_baselines"]["2B/v5p-16"] == ("recorded by the first wake's A/A runs of the baseline config, "
                                                      "before the first dispatch")
    lw.new_experiment(root, LANE, slug="t1", variant="2B/v5p-16", proposal_path=proposal(root, "t1"), track=1)
    band = _run_aa_until_band(root, backend, [40.1, 40.5, 39.9])
    assert band["frontier"] is None and band["value"] == 40.1 and band["n"] == 3
    cell = _matrix_cell(root)
    assert read_figure(cell, "mfu").value == 40.1 and f"±{band['band']:.3g}" in cell and "median of 3 A/A runs" in cell
    assert git(root, "log", "--format=%s").count("baseline: 2B/v5p-16 measured by its A/A runs") == 1
    log = (root / LANE.log).read_text()
    assert "is a measurement of the row's Baseline config" in log
    assert git(root, "status", "--porcelain", "--", "wiki", "memory") == ""
    assert [f.render() for f in lint(root, base=None, use_cache=False).findings] == before
    # the next wake dispatches the stub against the recorded Baseline; the cell is not rewritten
    after = wake(root, backend=backend)
    assert [d["decision"] for d in after.decisions] == ["dispatch"] and _matrix_cell(root) == cell


def test_row106_a_baseline_cell_that_holds_anything_is_never_touched(lane_wiki, tmp_path):
    root = lane_wiki
    _empty_baseline(root, "38.9% MFU (2026-05 run)")
    backend = MemoryBackend(tmp_path / "art")
    assert "2B/v5p-16" not in start_session(root, LANE, parallelism="1")["empty_baselines"]
    lw.new_experiment(root, LANE, slug="t1", variant="2B/v5p-16", proposal_path=proposal(root, "t1"), track=1)
    _run_aa_until_band(root, backend, [40.1, 40.5, 39.9])
    assert _matrix_cell(root) == "38.9% MFU (2026-05 run)"
    assert lw.baseline_text(MODEL, (root / MODEL).read_text(), {"variant": "2B/v5p-16", "metric": "mfu",
                                                                "frontier": None, "value": 1.0, "band": 0.1,
                                                                "n": 3}, "2026-12-02") is None
