"""The figures of a table cell, each found by its unit, never by its position.

A variant matrix cell holds one figure (``38.9%``) or several, with or without a link to
the experiment: ``512 ms / 31,955 TPS / 20.5% MFU``, ``[v046-x](path) 42.0 MFU``
(``shared/reference/conventions.md``, "A wiki that grew by hand"). :func:`read_figure`
gives the figure of one metric (``mfu``, ``tps``, ``step_time_ms``, ... as the lane's
``target_metric``) or says why the cell cannot be read; it never guesses.
:func:`rewrite_figures` writes new values into a cell in the cell's own form.

A figure is a number (thousands separators and a ``k``/``M`` multiplier allowed), an
optional ``%`` and an optional unit word after it. A signed number (``+0.7``, ``-3%``,
``±0.2``) is a change, not a level, and is never read as one. Links, ids (``v046``) and
dates are not figures. A number whose unit names no metric is bare; a single bare number
is the cell's figure of any metric only when the cell holds no other figure.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from wikiengine.model.variant_matrix import LINK_RE

DEFAULT_METRIC = "mfu"  # a lane's target metric when its program's Config names none

# metric -> the names a lane config may give it and the units that mark it in a cell
# (casefolded; a unit's scale turns the figure as written into the metric's unit).
_METRICS = {
    "mfu": (("mfu", "mfu_percent", "mfu_pct"), {"mfu": 1.0}),
    "tps": (("tps", "tokens_per_sec", "tokens_per_second", "tok_per_sec"),
            {"tps": 1.0, "tok/s": 1.0, "tok/sec": 1.0, "tokens/s": 1.0, "tokens/sec": 1.0}),
    "step_time_ms": (("step_time_ms", "step_ms", "step_time"),
                     {"ms": 1.0, "ms/step": 1.0, "s/step": 1000.0, "sec/step": 1000.0}),
    "peak_hbm_gib": (("peak_hbm_gib", "hbm_gib"), {"gib": 1.0}),
}
_ABSOLUTE = ("tps", "step_time_ms", "peak_hbm_gib")  # never a percentage
_MULTIPLIERS = {"": 1.0, "k": 1e3, "K": 1e3, "M": 1e6}
_FIGURE_RE = re.compile(
    r"(?<![\w.,/+\-−±])(?P<sign>[+\-−±]\s?)?(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)(?![\d,]*\d)"
    r"(?P<mult>[kKM](?![A-Za-z]))?(?P<gap>\s*)(?P<pct>%?)(?:\s*(?P<unit>[A-Za-z][A-Za-z_/]*[A-Za-z]|[A-Za-z]))?"
)
_DATE_RE = re.compile(r"\b\d{4}-\d{2}-\d{2}\b")


def canonical_metric(metric: str) -> str:
    """The metric a lane config's name means (``mfu_percent`` -> ``mfu``); an unknown
    name is its own metric, marked in a cell by its own name as the unit."""
    folded = metric.strip().casefold()
    return next((m for m, (names, _units) in _METRICS.items() if folded in names), folded)


def _units_of(metric: str) -> dict[str, float]:
    canonical = canonical_metric(metric)
    return _METRICS[canonical][1] if canonical in _METRICS else {canonical: 1.0, canonical.replace("_", " "): 1.0}


@dataclass(frozen=True)
class Figure:
    """One figure of a cell. ``metric`` None: a number whose unit names no metric; ``unit``
    empty as well: a bare number (a word after a space is not a unit: ``42.0 over v042``)."""

    start: int  # where the number starts in the cell
    text: str  # the number as written (``31,955``, ``31.9k``)
    written: str  # the whole figure as written (``31,955 TPS``)
    value: float  # in the metric's unit (``0.5 s/step`` -> 500.0)
    scale: float  # the number as written * scale = value
    metric: str | None
    unit: str
    percent: bool  # written with a %
    delta: bool  # a signed number: a change, not a level


@dataclass(frozen=True)
class CellFigure:
    """A cell's figure of one metric: ``value`` None and ``reason`` None: the cell holds
    no figure; ``reason`` set: the cell holds figures and none can be said to be it."""

    value: float | None
    reason: str | None = None


def _blanked(cell: str) -> str:
    """The cell with links and dates blanked out (same length: spans stay the cell's)."""
    cell = LINK_RE.sub(lambda m: " " * len(m.group(0)), cell)
    return _DATE_RE.sub(lambda m: " " * len(m.group(0)), cell)


def _metric_of_unit(unit: str) -> tuple[str | None, float]:
    folded = unit.casefold()
    for metric, (_names, units) in _METRICS.items():
        if folded in units:
            return metric, units[folded]
    return None, 1.0


def figures(cell: str, metric: str | None = None) -> list[Figure]:
    """The figures of a cell, in order. ``metric`` (a name outside the known metrics)
    is recognised as a unit too."""
    extra = {} if metric is None or canonical_metric(metric) in _METRICS else _units_of(metric)
    found = []
    for match in _FIGURE_RE.finditer(_blanked(cell)):
        unit = match.group("unit") or ""
        named, scale = (canonical_metric(metric), 1.0) if unit.casefold() in extra else _metric_of_unit(unit)
        if named is None and (match.group("gap") or match.group("pct")):
            unit = ""  # a word after a space or a % is prose, not a unit
        written = cell[match.start(): match.end() if unit else match.end("pct")].strip()
        scale *= _MULTIPLIERS[match.group("mult") or ""]
        number = float(match.group("num").replace(",", ""))
        found.append(Figure(match.start("num"), match.group("num") + (match.group("mult") or ""), written,
                            number * scale, scale, named, unit, bool(match.group("pct")),
                            bool(match.group("sign"))))
    return found


def read_figure(cell: str, metric: str) -> CellFigure:
    """The figure of ``metric`` in a cell: the one figure marked by its unit, else the
    cell's single bare number when it holds nothing else; else a reason, never a guess."""
    canonical = canonical_metric(metric)
    levels = [f for f in figures(cell, metric) if not f.delta]
    marked = [f for f in levels if f.metric == canonical]
    if marked:
        if len({f.value for f in marked}) == 1:
            return CellFigure(marked[0].value)
        return CellFigure(None, f"it holds several {metric} figures ({', '.join(f.written for f in marked)})")
    if not levels:
        return CellFigure(None)
    bare = levels[0]
    if len(levels) == 1 and bare.metric is None and not bare.unit and not (bare.percent and canonical in _ABSOLUTE):
        return CellFigure(bare.value)
    return CellFigure(None, f"none of its figures ({', '.join(f.written for f in levels)}) is marked as {metric}")


def _by_metric(values: dict[str, float]) -> dict[str, float]:
    """``values`` keyed by metric (``mfu_percent`` -> ``mfu``), numbers only."""
    return {canonical_metric(k): float(v) for k, v in values.items()
            if isinstance(v, (int, float)) and not isinstance(v, bool)}


def _written(figure: Figure, value: float) -> str:
    """``value`` in the form ``figure`` was written in (separators, decimals, multiplier)."""
    number, mult = (figure.text[:-1], figure.text[-1]) if figure.text[-1] in "kKM" else (figure.text, "")
    decimals = len(number.split(".")[1]) if "." in number else 0
    written = value / figure.scale
    while decimals < 6 and written and abs(written) < 10 ** (2 - decimals):
        decimals += 1  # three significant digits at least
    return f"{written:{',' if ',' in number else ''}.{decimals}f}{mult}"


def rewrite_figures(cell: str, values: dict[str, float]) -> str | None:
    """The cell with each figure marked by a unit set to ``values[metric]`` in its own form
    (None: the cell has a figure ``values`` does not give, or a change, either of which
    would be left stale next to the new figures, or no figure at all)."""
    values = _by_metric(values)
    found = figures(cell)
    levels = [f for f in found if not f.delta]
    if not levels or len(levels) < len(found) or any(f.metric not in values for f in levels):
        return None
    out = cell
    for figure in reversed(levels):
        out = out[: figure.start] + _written(figure, values[figure.metric]) + out[figure.start + len(figure.text):]
    return out


# The documented form of a cell's figures (conventions.md: "with step/TPS/MFU").
_DOCUMENTED = (("step_time_ms", "{:.6g} ms"), ("tps", "{:,.0f} TPS"), ("mfu", "{:.6g}% MFU"))
_LEADING_REFERENCE_RE = re.compile(r"\s*(?:" + LINK_RE.pattern + r"|v\d{3,}[a-z]?(?:-[\w-]*)?)")
_SEPARATORS_RE = re.compile(r"[\s/,;·()]*")


def render_figures(values: dict[str, float], metric: str) -> str:
    """``values`` in the documented form (``512 ms / 31,955 TPS / 20.5% MFU``): step time,
    TPS and MFU where given, and ``metric`` (the lane's target) always."""
    values = _by_metric(values)
    target = canonical_metric(metric)
    shown = [form.format(values[m]) for m, form in _DOCUMENTED if values.get(m) is not None]
    if target not in dict(_DOCUMENTED) and values.get(target) is not None:
        shown.append(f"{values[target]:.6g} {metric}")
    return " / ".join(shown)


def restated(cell: str, reference: str, values: dict[str, float], metric: str) -> str:
    """A cell naming an experiment, restated for another one: ``reference`` (a link) and
    its figures ``values``. A cell that is a reference followed by figures only keeps its own
    form (``[v046-x](p) 512 ms / 31,955 TPS / 20.5% MFU``: the link and each figure
    replaced, separators and units as written); any other cell (prose, a change, a figure
    the run did not measure) is written in the documented form, never left half stale."""
    lead = _LEADING_REFERENCE_RE.match(cell)
    rest = cell[lead.end():] if lead else cell
    found = figures(rest)
    spans = "".join(" " if any(f.start <= i < f.start + len(f.written) for f in found) else ch
                    for i, ch in enumerate(rest))
    rewritten = rewrite_figures(rest, values) if _SEPARATORS_RE.fullmatch(spans) else None
    figures_text = rewritten.strip() if rewritten is not None else render_figures(values, metric)
    return f"{reference} {figures_text}".rstrip()
