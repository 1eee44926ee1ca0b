"""The report as static HTML: one page per lane and an index, readable offline.

No script, no stylesheet or font from the network: the style is inline, the figures are
inline SVG (:mod:`.plots`), every link is relative (to the experiment pages in the
repository, the lane pages beside the index). Each lane page has its data beside it as
``<model>-<lane>.json`` (the same object ``wiki report --json`` prints).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import posixpath
from dataclasses import asdict
from html import escape
from pathlib import Path

from wikiengine.core.atomic import atomic_write_text
from wikiengine.model.kernels import KernelFamily
from wikiengine.model.lanes import Lane
from wikiengine.model.variant_matrix import LINK_RE
from wikiengine.report import plots
from wikiengine.report.data import Experiment, LaneReport, lane_report
from wikiengine.report.kernels import FamilyReport, family_report

FIGURES = ".figures"  # the figures kept between runs (plots.cached)
STYLE = """
body{font-family:sans-serif;margin:2em auto;padding:0 1.5em;max-width:70em;color:#222;line-height:1.4}
h1{font-size:1.5em}h2{font-size:1.15em;margin-top:1.8em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;font-size:.9em}td,th{border:1px solid #ddd;padding:.2em .5em;text-align:left}
th{background:#f5f5f5}td.n{text-align:right;font-variant-numeric:tabular-nums}
figure{margin:1em 0}figure svg{width:100%;height:auto}.muted{color:#777}
.supported{color:#2e7d32}.refuted{color:#c62828}.inconclusive{color:#a07000}.invalid{color:#6a1b9a}
"""


def file_stem(report: LaneReport) -> str:
    return report.lane.replace("/", "-")


def _num(value, digits: int = 4) -> str:
    if value is None:
        return "—"
    return f"{value:.{digits}g}" if isinstance(value, float) else str(value)


def _pct(value) -> str:
    return "—" if value is None else f"{value * 100:.0f}%"


def _when(at: float | None) -> str:
    return "—" if at is None else dt.datetime.fromtimestamp(at, dt.UTC).strftime("%Y-%m-%d %H:%M")


def _table(header: list[str], rows: list[list[str]], empty: str) -> str:
    if not rows:
        return f'<p class="muted">{escape(empty)}</p>'
    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(rows_cell) + "</tr>" for rows_cell in
                   ([c if c.startswith("<td") else f"<td>{c}</td>" for c in row] for row in rows))
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


class Links:
    """Links to repository paths from the folder a page is written in."""

    def __init__(self, root: Path, out: Path):
        self.prefix = Path(os.path.relpath(root.resolve(), out.resolve())).as_posix() + "/"

    def link(self, rel: str) -> str:
        """The href of a repository path from the folder the page is written in."""
        return posixpath.normpath(self.prefix + rel)

    def anchor(self, rel: str, text: str) -> str:
        return f'<a href="{escape(self.link(rel))}">{escape(text)}</a>'


class Page(Links):
    """One lane's HTML page (``cache``: where its figures are kept between runs, None: none)."""

    def __init__(self, root: Path, out: Path, report: LaneReport, cache: Path | None = None):
        super().__init__(root, out)
        self.report, self.cache = report, cache

    def frontier(self) -> str:
        r = self.report
        return plots.cached(self.cache, f"{file_stem(r)}-frontier", [[asdict(v) for v in r.variants], r.metric, r.end,
                                                                    self.prefix],
                            lambda: plots.frontier_svg(r.variants, r.metric, r.end, self.link))

    def delta(self) -> str:
        r = self.report
        points = [(e.filed_at, e.delta, e.verdict, e.page) for e in r.filed]
        return plots.cached(self.cache, f"{file_stem(r)}-delta", [points, [v.bands for v in r.variants], r.metric, r.end,
                                                                 self.prefix],
                            lambda: plots.delta_svg(r.filed, r.variants, r.metric, r.end, self.link))

    def render(self) -> str:
        r = self.report
        model = self.anchor(r.model_page, r.model_page) if r.model_page else "no model page"
        parts = [f"<h1>Lane {escape(r.lane)}</h1>",
                 f'<p>Target metric <b>{escape(r.metric)}</b> ({"higher" if r.higher_is_better else "lower"} is better); '
                 f"model page {model}; generated {escape(r.generated_at)} from the wiki and "
                 f'{escape(r.dir)}/.journal.jsonl. <a href="index.html">Index</a>.</p>',
                 "<h2>Summary</h2>", self.summary(),
                 "<h2>Frontier over time</h2>",
                 '<figure id="plot-frontier">' + self.frontier() + "</figure>",
                 self.variants(),
                 "<h2>Every filed experiment against its frontier</h2>",
                 '<figure id="plot-delta">' + self.delta() + "</figure>",
                 "<h2>Budgets</h2>", self.budgets(),
                 "<h2>Thrash and stall signals</h2>", self.signals(),
                 "<h2>Crashes</h2>", self.crashes(),
                 "<h2>Open stubs and queue</h2>", self.queue(),
                 "<h2>Experiments</h2>", self.experiments()]
        if r.notes:
            parts += ["<h2>Notes</h2><ul>", *(f"<li>{escape(n)}</li>" for n in r.notes), "</ul>"]
        return _document(f"wiki report: {r.lane}", "\n".join(parts))

    def summary(self) -> str:
        s = self.report.summary()
        mix = ", ".join(f'<span class="{v}">{v} {n}</span>' for v, n in s["verdict_mix"].items())
        tracks = ", ".join(f"track {t}: {v['filed']} ({_num(v['per_hour'], 3)}/h)" for t, v in s["per_track"].items())
        waits = s["stub_to_verdict_hours"]
        band = s["in_band"]
        rows = [["experiments", f"{s['experiments']} ({s['filed']} filed, {s['open']} open)"],
                ["keep-rate (supported / filed)", _pct(s["keep_rate"])],
                ["experiments per hour", f"{_num(s['per_hour'], 3)} over {_num(s['span_hours'], 3)} h"],
                ["per track", tracks or "—"],
                ["stub to verdict", f"median {_num(waits['median'], 3)} h, max {_num(waits['max'], 3)} h (n={waits['n']})"],
                ["verdict mix", mix],
                ["deltas inside the A/A band", f"{_pct(band['share'])} of {band['n']}"],
                ["crashes", str(s["crashes"])]]
        return _table(["figure", "value"], [[escape(a), b] for a, b in rows], "")

    def variants(self) -> str:
        rows = []
        for v in self.report.variants:
            moves = ", ".join(self.anchor(s.page, s.vid) for s in v.steps if s.page) or "none"
            rows.append([escape(v.key), f'<td class="n">{_num(v.baseline, 6)}</td>', self.cell(v.current_best), moves])
        return _table(["variant", "baseline", "Current best (model page)", "frontier moves"], rows,
                      "no variant matrix")

    def cell(self, text: str) -> str:
        """A model-page cell with its markdown links as links (resolved from the model page)."""
        base = posixpath.dirname(self.report.model_page or "")
        parts, at = [], 0
        for match in LINK_RE.finditer(text):
            target = match.group("target").split("#")[0]
            rel = target.lstrip("/") if target.startswith("/") else posixpath.normpath(posixpath.join(base, target))
            parts += [escape(text[at:match.start()]), self.anchor(rel, match.group("text"))]
            at = match.end()
        return "".join(parts) + escape(text[at:])

    def budgets(self) -> str:
        rows = [[escape(b.name), f'<td class="n">{_num(b.used, 6)}</td>', f'<td class="n">{_num(b.limit, 6)}</td>',
                 _pct(b.fraction)] for b in self.report.budgets]
        return _table(["budget", "used", "limit", "burnt"], rows, "no budgets set")

    def signals(self) -> str:
        rows = [[escape(s.check), self.anchor(s.path, s.path), escape(s.message), escape(s.correction)]
                for s in self.report.signals]
        return _table(["check", "where", "what", "fix"], rows, "none: no thrashing, no stale stub")

    def crashes(self) -> str:
        rows = [[self.anchor(c["page"], c["vid"]), escape(c["cause"])] for c in self.report.crashes()]
        return _table(["experiment", "cause"], rows, "no crash")

    def queue(self) -> str:
        rows = [[self.anchor(e.page, e.vid), escape(e.variant), _num(e.track), escape(e.queue_state), _when(e.stub_at)]
                for e in self.report.open]
        return _table(["stub", "variant", "track", "state", "since"], rows, "no open stub")

    def experiments(self) -> str:
        return _table(["id", "verdict", "variant", "track", "stub", "filed", "value", "delta", "band", "in band"],
                      [self.experiment_row(e) for e in self.report.experiments], "no experiment page")

    def experiment_row(self, e: Experiment) -> list[str]:
        verdict = f'<span class="{e.verdict}">{e.verdict}</span>' if e.verdict else escape(e.queue_state)
        inside = {True: "yes", False: "no", None: "—"}[e.in_band]
        return [self.anchor(e.page, e.vid), verdict, escape(e.variant), _num(e.track), _when(e.stub_at),
                _when(e.filed_at), f'<td class="n">{_num(e.value, 6)}</td>', f'<td class="n">{_num(e.delta, 4)}</td>',
                f'<td class="n">{_num(e.band, 4)}</td>', inside]


class FamilyPage(Links):
    """One kernel family's HTML page: speedup per candidate and what each receipt is worth."""

    def __init__(self, root: Path, out: Path, report: FamilyReport):
        super().__init__(root, out)
        self.report = report

    def render(self) -> str:
        r = self.report
        best = r.best
        rows = [[self.anchor(c.page, c.vid) if c.page else escape(c.vid), escape(c.cand), escape(c.mode),
                 escape(c.verdict), f'<td class="n">{_num(c.speedup, 4)}</td>', self.anchor(c.receipt, c.status),
                 _when(c.at)] for c in r.candidates]
        mix = ", ".join(f'<span class="{v}">{v} {n}</span>' for v, n in sorted(r.verdicts.items())) or "none filed"
        parts = [f"<h1>Kernel family {escape(r.family)}</h1>",
                 f"<p>Generated {escape(r.generated_at)} from {escape(r.dir)}/.journal.jsonl and its receipts. "
                 f'Filed pages: {mix}. Best verified candidate: '
                 + (f"{escape(best.vid)} {escape(best.cand)} at {best.speedup:.3g}x" if best else "none")
                 + '. <a href="index.html">Index</a>.</p>',
                 "<h2>Speedup per candidate</h2>",
                 '<figure id="plot-speedup">' + plots.speedup_svg(r.candidates, self.link) + "</figure>",
                 "<h2>Receipts</h2>",
                 _table(["page", "candidate", "mode", "verifier", "speedup", "receipt", "verified at"], rows,
                        "no candidate verified")]
        if r.notes:
            parts += ["<h2>Notes</h2><ul>", *(f"<li>{escape(n)}</li>" for n in r.notes), "</ul>"]
        return _document(f"wiki report: kernel family {r.family}", "\n".join(parts))


def _document(title: str, body: str) -> str:
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title>'
            f"<style>{STYLE}</style></head><body>\n{body}\n</body></html>\n")


def index_html(lanes: list[dict], families: list[dict] = ()) -> str:
    """The index: one row per lane and per kernel family (their data as ``as_json`` gives it)."""
    rows = []
    for data in lanes:
        s = data["summary"]
        rows.append([f'<a href="{escape(data["lane"].replace("/", "-"))}.html">{escape(data["lane"])}</a>', str(s["filed"]),
                     str(s["open"]), _pct(s["keep_rate"]), _num(s["per_hour"], 3), str(s["crashes"]),
                     str(len(data["signals"]))])
    table = _table(["lane", "filed", "open", "keep-rate", "per hour", "crashes", "signals"], rows, "no lane")
    kernel_rows = [[f'<a href="kernel-{escape(f["family"])}.html">{escape(f["family"])}</a>', str(len(f["candidates"])),
                    f'{f["best"]["speedup"]:.3g}x ({escape(f["best"]["vid"])} {escape(f["best"]["cand"])})'
                    if f["best"] and f["best"]["speedup"] is not None else "—"] for f in families]
    kernels = _table(["kernel family", "receipts", "best verified speedup"], kernel_rows, "no kernel family")
    return _document("wiki report", f"<h1>wiki report</h1>\n<h2>Lanes</h2>\n{table}\n<h2>Kernel families</h2>\n{kernels}")


def render_lane(root: Path, out: Path, lane: Lane, budgets: dict | None = None,
                cache: Path | None = None) -> tuple[str, str, dict]:
    """One lane's ``(file stem, HTML, data)``: the unit of work a worker process does."""
    report = lane_report(root, lane, budgets=budgets)
    return file_stem(report), Page(root, out, report, cache).render(), report.as_json()


def render_family(root: Path, out: Path, family: KernelFamily) -> tuple[str, str, dict]:
    report = family_report(root, family)
    return f"kernel-{family.slug}", FamilyPage(root, out, report).render(), report.as_json()


def write_report(root: Path, out: Path, lanes: list[Lane], families: list[KernelFamily] = (), *, jobs: int = 1,
                 budgets: dict[tuple[str, str], dict] | None = None,
                 cache: bool = True) -> tuple[list[dict], list[dict], list[Path]]:
    """Build each lane's and family's page and data (lanes in ``jobs`` processes when there are
    several), write them and the index into ``out``: ``(lanes' data, families' data, paths written)``.
    ``budgets``: a lane's key -> its {name: (used, limit)}; ``cache``: keep the lanes' figures
    in ``out/.figures/`` and draw again only those whose data changed."""
    out.mkdir(parents=True, exist_ok=True)
    out = out.resolve()
    budgets = budgets or {}
    args = [(root, out, lane, budgets.get(lane.key), out / FIGURES if cache else None) for lane in lanes]
    if jobs > 1 and len(lanes) > 1:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(min(jobs, len(lanes)), mp_context=multiprocessing.get_context("fork")) as pool:
            built = list(pool.map(render_lane, *zip(*args)))
    else:
        built = [render_lane(*a) for a in args]
    kernels = [render_family(root, out, family) for family in families]
    written = []
    for stem, page, data in [*built, *kernels]:
        atomic_write_text(out / f"{stem}.html", page, durable=False)
        atomic_write_text(out / f"{stem}.json", json.dumps(data, indent=2, sort_keys=True) + "\n", durable=False)
        written += [out / f"{stem}.html", out / f"{stem}.json"]
    lanes_data, families_data = [d for _s, _p, d in built], [d for _s, _p, d in kernels]
    atomic_write_text(out / "index.html", index_html(lanes_data, families_data), durable=False)
    return lanes_data, families_data, [*written, out / "index.html"]
