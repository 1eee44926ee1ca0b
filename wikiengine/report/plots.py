"""The report's two figures as inline SVG, drawn with matplotlib (the ``report`` extra).

No pyplot, no display, no fonts fetched: a :class:`~matplotlib.figure.Figure` saved as SVG
with ``svg.fonttype: none`` (text stays text, in the reader's sans-serif) and a fixed hash
salt (the same report, the same bytes). Every point is a link to its experiment page
(``link``: a repository path -> the href the HTML page uses).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import io
import json
import re
from collections.abc import Callable
from pathlib import Path

from wikiengine.core.atomic import atomic_write_text
from wikiengine.report.data import Experiment, VariantHistory

VERDICT_COLOURS = {"supported": "#2e7d32", "refuted": "#c62828", "inconclusive": "#f9a825", "invalid": "#6a1b9a"}
BAND_COLOUR = "#90a4ae"
STYLE = {"svg.fonttype": "none", "svg.hashsalt": "wiki-report", "font.family": "sans-serif", "font.size": 9,
         "axes.spines.top": False, "axes.spines.right": False}
SIZE = (8.0, 3.2)
MARGINS = {"left": 0.09, "right": 0.78, "top": 0.9, "bottom": 0.2}
LABELLED_MOVES = 12  # the newest frontier moves named beside their point (every point links)
LEGEND = {"loc": "upper left", "bbox_to_anchor": (1.01, 1.0), "frameon": False, "fontsize": 8}


_SOURCE = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()  # a change of the drawing code redraws
_KEY_RE = re.compile(r"[0-9a-f]{32}")


def cached(cache: Path | None, name: str, inputs, draw: Callable[[], str]) -> str:
    """``draw()``, or the SVG an earlier run drew from the same ``inputs`` with the same code
    and matplotlib (``cache``: a folder; None: always draw). A figure is a pure function of
    its inputs, so an unchanged lane costs no drawing; one file per ``name`` is kept."""
    if cache is None:
        return draw()
    import matplotlib

    blob = json.dumps([inputs, matplotlib.__version__, _SOURCE], sort_keys=True, default=str)
    path = cache / f"{name}-{hashlib.sha256(blob.encode()).hexdigest()[:32]}.svg"
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        pass
    svg = draw()
    cache.mkdir(parents=True, exist_ok=True)
    for old in cache.glob(f"{name}-*.svg"):
        if _KEY_RE.fullmatch(old.stem[len(name) + 1:]):
            old.unlink(missing_ok=True)
    atomic_write_text(path, svg, durable=False)
    return svg


def _when(at: float) -> dt.datetime:
    return dt.datetime.fromtimestamp(at, dt.UTC).replace(tzinfo=None)


def _svg(fig) -> str:
    """The figure as an ``<svg>`` element for an HTML page (no XML prolog, no fixed size)."""
    buffer = io.StringIO()
    fig.savefig(buffer, format="svg", metadata={"Date": None, "Creator": None})
    text = buffer.getvalue()
    return text[text.index("<svg"):]


def _band_at(bands: tuple[tuple[float, float], ...], at: float) -> float:
    """The half-width of the newest band measured at or before ``at`` (0: none yet)."""
    return next((w for t, w in reversed(bands) if t <= at), 0.0)


def _figure(title: str, ylabel: str):
    from matplotlib import rc_context
    from matplotlib.figure import Figure

    with rc_context(STYLE):
        fig = Figure(figsize=SIZE)
        fig.subplots_adjust(**MARGINS)  # fixed: a layout engine costs more than the drawing
        ax = fig.subplots()
        ax.set_title(title, loc="left")
        ax.set_ylabel(ylabel)
        ax.grid(True, alpha=0.3)
    return fig, ax


def frontier_svg(variants: list[VariantHistory], metric: str, end: float, link: Callable[[str], str]) -> str:
    """The frontier of each variant over time (a step line of Current best, each move a
    linked point) with the lane's A/A band around it."""
    from matplotlib import rc_context

    fig, ax = _figure(f"Frontier ({metric}) per variant, with the A/A band", metric)
    with rc_context(STYLE):
        for variant in variants:
            steps = [s for s in variant.steps if s.value is not None]
            if not steps:
                continue
            times = sorted({*(s.at for s in steps), *(t for t, _w in variant.bands if t >= steps[0].at),
                            max(end, steps[-1].at)})
            values = [next(s.value for s in reversed(steps) if s.at <= t) for t in times]
            widths = [_band_at(variant.bands, t) for t in times]
            xs = [_when(t) for t in times]
            line, = ax.step(xs, values, where="post", label=variant.key, linewidth=1.6)
            ax.fill_between(xs, [v - w for v, w in zip(values, widths)], [v + w for v, w in zip(values, widths)],
                            step="post", color=line.get_color(), alpha=0.18, linewidth=0)
            moved = [s for s in steps if s.page]
            if moved:
                points = ax.scatter([_when(s.at) for s in moved], [s.value for s in moved], color=line.get_color(),
                                    zorder=3, s=28)
                points.set_urls([link(s.page) for s in moved])
                for s in moved[-LABELLED_MOVES:]:
                    ax.annotate(s.vid, (_when(s.at), s.value), textcoords="offset points", xytext=(4, 4), fontsize=8)
        if ax.lines:
            ax.legend(**LEGEND)
        fig.autofmt_xdate()
        return _svg(fig)


def delta_svg(experiments: list[Experiment], variants: list[VariantHistory], metric: str, end: float,
              link: Callable[[str], str]) -> str:
    """Every filed experiment as a point (time x delta against the frontier), coloured by
    verdict, with the A/A band around zero."""
    from matplotlib import rc_context

    fig, ax = _figure(f"Delta vs frontier ({metric}) of every filed experiment", f"delta {metric}")
    with rc_context(STYLE):
        start = min((e.filed_at for e in experiments if e.filed_at is not None), default=end)
        for variant in variants:
            if not variant.bands:
                continue
            times = sorted({min(start, variant.bands[0][0]), *(t for t, _w in variant.bands), end})
            widths = [_band_at(variant.bands, t) for t in times]
            ax.fill_between([_when(t) for t in times], [-w for w in widths], widths, step="post", color=BAND_COLOUR,
                            alpha=0.3, linewidth=0, label=f"A/A band {variant.key}")
        ax.axhline(0.0, color="#555555", linewidth=0.8)
        for verdict, colour in VERDICT_COLOURS.items():
            mine = [e for e in experiments if e.verdict == verdict and e.delta is not None and e.filed_at is not None]
            if mine:
                points = ax.scatter([_when(e.filed_at) for e in mine], [e.delta for e in mine], color=colour,
                                    label=verdict, zorder=3, s=26)
                points.set_urls([link(e.page) for e in mine])
        if ax.collections:
            ax.legend(**LEGEND)
        fig.autofmt_xdate()
        return _svg(fig)


def speedup_svg(candidates: list, link: Callable[[str], str]) -> str:
    """The speedup of every verified candidate against the reference (1.0: as fast), each bar
    a link to its page; a bar whose receipt is not signed and verified is hatched."""
    from matplotlib import rc_context

    from wikiengine.report.kernels import VERIFIED

    fig, ax = _figure("Speedup per candidate (receipt timing)", "speedup x")
    with rc_context(STYLE):
        shown = [c for c in candidates if c.speedup is not None]
        labels = [f"{c.vid} {c.cand} ({c.mode})" for c in shown]
        colours = [VERDICT_COLOURS["supported"] if c.verdict == "PASS" else VERDICT_COLOURS["refuted"] for c in shown]
        bars = ax.bar(range(len(shown)), [c.speedup for c in shown], color=colours)
        for bar, c in zip(bars, shown):
            if c.status != VERIFIED:
                bar.set_hatch("//")
            if c.page:
                bar.set_url(link(c.page))
        ax.axhline(1.0, color="#555555", linewidth=0.8)
        ax.set_xticks(range(len(shown)), labels, rotation=30, ha="right", fontsize=8)
        return _svg(fig)
