"""A variant matrix read by meaning (issue 22): columns by their leading title and a
cell's figure by its unit (``wikiengine.model.cell_figures``)."""

from __future__ import annotations

import pytest

from wikiengine.core.page import parse_page
from wikiengine.model.cell_figures import read_figure, restated, rewrite_figures
from wikiengine.model.variant_matrix import CURRENT_BEST, FRONTIER_EXP, column_of, parse_matrix, set_cells

MULTI = "512 ms / 31,955 TPS / 20.5% MFU"


@pytest.mark.parametrize("header,column", [
    ("Current best (step / TPS / MFU)", "current best"),
    ("current best", "current best"),
    ("Baseline (MFU)", "baseline"),
    ("Baseline MFU %", "baseline"),
    ("Frontier exp", "frontier exp"),
    ("**Size**", "size"),
    ("Baselines", "baselines"),  # a longer word is another column
    ("Notes", "notes"),
])
def test_a_column_is_found_by_its_leading_title(header, column):
    assert column_of(header) == column


@pytest.mark.parametrize("cell,metric,value", [
    (MULTI, "mfu", 20.5),
    (MULTI, "mfu_percent", 20.5),
    (MULTI, "tps", 31955.0),
    (MULTI, "step_time_ms", 512.0),
    ("[v046-x](../experiments/a/2026-06-10-v046-x.md) 42.0 MFU", "mfu", 42.0),
    ("[v046-x](p.md) 1,190 ms / 6,880 TPS / 42.0% MFU", "tps", 6880.0),
    ("31.9k TPS, 0.5 s/step", "tps", 31900.0),
    ("31.9k TPS, 0.5 s/step", "step_time_ms", 500.0),
    ("42.0% MFU (+0.7)", "mfu", 42.0),  # a signed number is a change, not a level
    ("38.9%", "mfu", 38.9),  # a single bare number is the metric's (as before)
    ("[v047](../x/2026-06-12-v047-remat.md) 43.0%", "mfu", 43.0),  # ids, links and dates are no figures
    ("2.31 val_loss", "val_loss", 2.31),  # a metric outside the known ones is its own unit
    ("—", "mfu", None),
    ("", "tps", None),
])
def test_a_figure_is_found_by_its_unit(cell, metric, value):
    assert read_figure(cell, metric).value == value and read_figure(cell, metric).reason is None


@pytest.mark.parametrize("cell,metric", [
    ("1,284 / 6,380 / 38.9", "mfu"),  # several numbers without a unit: never positional
    ("20.5% MFU / 21% MFU", "mfu"),  # several figures of the metric
    ("1,284 ms / 6,380 TPS", "mfu"),  # figures, none of the metric
    ("v046 on 2B (+0.7 over v042)", "mfu"),  # 2B is a size, +0.7 a change
    ("38.9%", "tps"),  # a percentage is no throughput
    ("1.3x", "mfu"),
])
def test_an_unreadable_cell_is_reported_never_guessed(cell, metric):
    found = read_figure(cell, metric)
    assert found.value is None and found.reason


def test_figures_are_rewritten_in_the_cells_own_form():
    values = {"mfu": 21.234, "tps": 32000.4, "step_time_ms": 498.2}
    assert rewrite_figures(MULTI, values) == "498 ms / 32,000 TPS / 21.2% MFU"
    assert rewrite_figures("0.5 s/step", values) == "0.498 s/step"
    assert rewrite_figures(MULTI + " / 30 GiB", values) is None  # the GiB figure would be left stale
    assert rewrite_figures("42.0% MFU (+0.7)", values) is None  # and so would the change


@pytest.mark.parametrize("cell,expected", [
    (f"[v046-x](p.md) {MULTI}", "[v048-y](q.md) 498 ms / 32,000 TPS / 42.6% MFU"),
    (f"v046-x {MULTI}", "[v048-y](q.md) 498 ms / 32,000 TPS / 42.6% MFU"),
    ("[v046-x](p.md) 42.0% MFU", "[v048-y](q.md) 42.6% MFU"),
    ("v046 on 2B (+0.7 over v042)", "[v048-y](q.md) 498.2 ms / 32,000 TPS / 42.6% MFU"),
    ("—", "[v048-y](q.md) 498.2 ms / 32,000 TPS / 42.6% MFU"),
])
def test_a_current_best_cell_is_restated_whole(cell, expected):
    assert restated(cell, "[v048-y](q.md)", {"mfu": 42.6, "tps": 32000.4, "step_time_ms": 498.2}, "mfu") == expected


def test_set_cells_writes_under_headers_with_units():
    text = ("# M\n\n## Variant matrix\n\n| Size | Hardware | Baseline (MFU) | Current best (step / TPS / MFU) |"
            " Frontier exp |\n|---|---|---|---|---|\n| 2B | v5p-16 | 38.9 | v046 42.0% MFU | v046 |\n")
    matrix = parse_matrix(parse_page(text, "m.md"))
    assert matrix.has_column(CURRENT_BEST) and matrix.row("2B/v5p-16").cell("Baseline") == "38.9"
    out = set_cells(text, matrix, "2B/v5p-16", {CURRENT_BEST: "v048 43.0% MFU", FRONTIER_EXP: "v048"})
    assert out.splitlines()[-1] == "| 2B | v5p-16 | 38.9 | v048 43.0% MFU | v048 |"
