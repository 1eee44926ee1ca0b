"""The report of one lane as data: what the wiki and the lane journal hold, nothing else.

:func:`lane_report` reads the lane's experiment pages, its model page's variant matrix, its
program's config and its journal, and returns a :class:`LaneReport` (``as_json`` is what
``wiki report --json`` prints). What the engine recorded decides, what a page says fills in:
a page's verdict, stub and filing times, track, value and noise band come from the journal's
``claim`` and ``file`` records when it has them, else from the page's frontmatter (a
hand-grown lane, a page filed before the journal). The deltas against the frontier are the
co-measured ones the run wrote (``frontier_<metric>``), else the value against the
frontier replayed from the filings: a ``supported`` filing whose value beats the frontier
moves it, the rule ``wiki exp file`` applies to Current best.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from wikiengine.core.clock import timestamp, utc_iso
from wikiengine.core.errors import WikiError
from wikiengine.core.git import out as git_out
from wikiengine.core.median import median
from wikiengine.model import experiment as ex
from wikiengine.model.evidence import COMPLETED, IN_FLIGHT, NEVER_DISPATCHED, run_evidence
from wikiengine.model.journal import parse_journal
from wikiengine.model.lanes import Lane
from wikiengine.model.variant_matrix import BASELINE, CURRENT_BEST
from wikiengine.model.verdicts import is_better
from wikiengine.step import audit
from wikiengine.step import writers as lw

QUEUE_STATES = {NEVER_DISPATCHED: "queued", IN_FLIGHT: "running", COMPLETED: "verdict owed"}


@dataclass(frozen=True)
class Experiment:
    """One experiment page of the lane, as the report shows it."""

    vid: str
    page: str  # repository path
    variant: str
    verdict: str | None  # None: an open stub
    track: int | None = None
    stub_at: float | None = None  # seconds since the epoch
    filed_at: float | None = None
    value: float | None = None  # the target metric as filed
    delta: float | None = None  # against the frontier it was measured against
    band: float | None = None  # the A/A half-width it was judged by
    state: str | None = None  # the run: never dispatched | in flight | completed (None: no journal)
    crash: str | None = None  # why the run counts as crashed
    source: str = "page"  # "journal": the engine's records; "page": the frontmatter alone

    @property
    def in_band(self) -> bool | None:
        """Is the delta inside the A/A band? None without both, or for an invalid run (its
        figure measured nothing the band speaks of)."""
        if self.delta is None or self.band is None or self.verdict == "invalid":
            return None
        return abs(self.delta) <= self.band

    @property
    def queue_state(self) -> str:
        return QUEUE_STATES.get(self.state, "open") if self.verdict is None else "filed"


@dataclass(frozen=True)
class FrontierStep:
    """The frontier of a variant from ``at`` on: the baseline (no ``vid``) or a filed page."""

    at: float
    value: float | None
    vid: str | None = None
    page: str | None = None


@dataclass(frozen=True)
class VariantHistory:
    """One variant's Baseline, Current best and frontier steps, for the report."""

    key: str  # "1.3M/cpu-2"
    baseline: float | None
    current_best: str  # the cell as written
    steps: tuple[FrontierStep, ...]
    bands: tuple[tuple[float, float], ...] = ()  # (at, half-width) of each measured A/A band


@dataclass(frozen=True)
class Budget:
    """One budget of a lane: how much is used of its limit."""

    name: str
    used: float
    limit: float

    @property
    def fraction(self) -> float | None:
        return self.used / self.limit if self.limit else None


@dataclass(frozen=True)
class Signal:
    """One thing the report flags on a lane (thrashing, a stale stub) and what to do."""

    check: str  # thrashing | stale-stub
    path: str
    message: str
    correction: str


@dataclass
class LaneReport:
    """Everything the report shows of one lane."""

    lane: str  # "mlp/cpu"
    dir: str
    model_page: str | None
    metric: str
    higher_is_better: bool
    generated_at: str
    variants: list[VariantHistory] = field(default_factory=list)
    experiments: list[Experiment] = field(default_factory=list)
    budgets: list[Budget] = field(default_factory=list)
    signals: list[Signal] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def filed(self) -> list[Experiment]:
        return [e for e in self.experiments if e.verdict is not None]

    @property
    def open(self) -> list[Experiment]:
        return [e for e in self.experiments if e.verdict is None]

    @property
    def end(self) -> float:
        """The lane's last recorded moment (the plots end there: the same data, the same figure)."""
        times = [t for e in self.experiments for t in (e.stub_at, e.filed_at) if t is not None]
        times += [s.at for v in self.variants for s in v.steps] + [t for v in self.variants for t, _w in v.bands]
        return max(times, default=timestamp(self.generated_at) or 0.0)

    def summary(self) -> dict:
        """The figures of the lane: keep-rate, throughput, stub-to-verdict, the verdict mix."""
        filed = self.filed
        mix = Counter(e.verdict for e in filed)
        starts = [e.stub_at for e in self.experiments if e.stub_at is not None]
        ends = [e.filed_at for e in filed if e.filed_at is not None]
        hours = (max(ends) - min(starts)) / 3600 if starts and ends and max(ends) > min(starts) else None
        tracks = Counter(e.track for e in filed)
        waits = [(e.filed_at - e.stub_at) / 3600 for e in filed if e.filed_at is not None and e.stub_at is not None]
        judged = [e.in_band for e in filed if e.in_band is not None]
        return {
            "experiments": len(self.experiments), "filed": len(filed), "open": len(self.open),
            "keep_rate": mix["supported"] / len(filed) if filed else None,
            "verdict_mix": {v: mix[v] for v in ex.VERDICTS},
            "span_hours": hours,
            "per_hour": len(filed) / hours if hours else None,
            "per_track": {("untracked" if t is None else str(t)): {"filed": n, "per_hour": n / hours if hours else None}
                          for t, n in sorted(tracks.items(), key=lambda kv: (kv[0] is None, kv[0] or 0))},
            "stub_to_verdict_hours": {"median": median(waits) if waits else None,
                                      "max": max(waits) if waits else None, "n": len(waits)},
            "in_band": {"share": sum(judged) / len(judged) if judged else None, "n": len(judged)},
            "crashes": len(self.crashes()),
        }

    def crashes(self) -> list[dict]:
        """Every run that crashed or was filed invalid, with its cause."""
        return [{"vid": e.vid, "page": e.page, "cause": e.crash or "filed invalid (no crash recorded by the engine)"}
                for e in self.experiments if e.crash or e.verdict == "invalid"]

    def as_json(self) -> dict:
        return {"lane": self.lane, "dir": self.dir, "model_page": self.model_page, "metric": self.metric,
                "higher_is_better": self.higher_is_better, "generated_at": self.generated_at,
                "summary": self.summary(), "crashes": self.crashes(),
                "variants": [asdict(v) for v in self.variants],
                "experiments": [{**asdict(e), "in_band": e.in_band, "queue_state": e.queue_state}
                                for e in self.experiments],
                "queue": [{"vid": e.vid, "page": e.page, "state": e.queue_state} for e in self.open],
                "budgets": [{**asdict(b), "fraction": b.fraction} for b in self.budgets],
                "signals": [asdict(s) for s in self.signals], "notes": list(self.notes)}


# --- reading --------------------------------------------------------------------------------


def _date_at(value) -> float | None:
    """A frontmatter or file-name date as seconds since the epoch (midnight UTC)."""
    if isinstance(value, (dt.date, dt.datetime)):
        value = value.isoformat()
    day = ex.frontmatter_date(value) if isinstance(value, str) else None
    return timestamp(value) if isinstance(value, str) and "T" in value else (timestamp(day) if day else None)


def records_by_vid(records: list[dict]) -> dict[str, list[dict]]:
    """Each id's records, each run of them led by the session ``start`` it fell in (what
    :func:`~wikiengine.model.evidence.run_evidence` reads), in one pass over the journal."""
    found: dict[str, list[dict]] = {}
    led: dict[str, int] = {}  # vid -> the index of the start its records were last led by
    start = None
    for index, record in enumerate(records):
        if record.get("op") == "start":
            start = index
            continue
        vid = record.get("vid")
        if not isinstance(vid, str) or not vid:
            continue
        mine = found.setdefault(vid, [])
        if start is not None and led.get(vid) != start:
            mine.append(records[start])
            led[vid] = start
        mine.append(record)
    return found


def _last(records: list[dict], *ops: str) -> dict:
    return next((r for r in reversed(records) if r.get("op") in ops), {})


def _number(value) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def read_experiment(page: ex.ExperimentPage, mine: list[dict], metric: str) -> Experiment:
    """One page with its journal records (``mine``: :func:`records_by_vid`)."""
    fm = page.frontmatter
    claim, filing = _last(mine, "claim", "retry", "backfill"), _last(mine, "file", "backfill")
    verdict = page.verdict
    track = claim.get("track") if isinstance(claim.get("track"), int) else None
    stub_at = timestamp(claim.get("at")) or _date_at(fm.get("created")) or _date_at(page.file_date)
    filed_at = (timestamp(filing.get("at")) or _date_at(fm.get("updated")) or _date_at(page.file_date)) if verdict else None
    evidence = run_evidence(mine, page.exp_id) if mine else None
    value = _number(filing.get("value")) if filing.get("metric", metric) == metric else None
    if value is None and verdict:
        value = ex.metric_of(fm, metric)
    delta = None
    if evidence is not None and evidence.state == COMPLETED:
        run_value, co = evidence.metrics.get(metric), evidence.metrics.get(f"frontier_{metric}")
        delta = run_value - co if run_value is not None and co else None
    return Experiment(
        vid=page.exp_id, page=page.rel, variant=str(claim.get("variant") or fm.get("variant") or ""), verdict=verdict,
        track=track, stub_at=stub_at, filed_at=filed_at, value=value, delta=delta, band=_number(filing.get("band")),
        state=evidence.state if evidence is not None else None,
        crash=(evidence.crash or ("its parity check failed" if evidence.parity == "fail" else None)) if evidence else None,
        source="journal" if claim or filing else "page")


def replay_frontier(baseline: float | None, experiments: list[Experiment], higher_is_better: bool,
                    since: float | None) -> tuple[list[FrontierStep], list[Experiment]]:
    """The frontier of one variant over time, and its experiments with a delta each: a
    ``supported`` filing whose value beats the frontier moves it (``wiki exp file``'s rule);
    a delta the run co-measured is kept, any other is the value against the frontier then."""
    filed = sorted((e for e in experiments if e.verdict and e.filed_at is not None), key=lambda e: (e.filed_at, e.vid))
    start = min([t for t in [since, *(e.stub_at for e in experiments)] if t is not None], default=None)
    steps = [FrontierStep(start, baseline)] if start is not None else []
    current, out = baseline, []
    for e in filed:
        if e.delta is None and e.value is not None and current is not None:
            e = replace(e, delta=e.value - current)
        out.append(e)
        if e.verdict == "supported" and e.value is not None and is_better(e.value, current, higher_is_better):
            current = e.value
            steps.append(FrontierStep(e.filed_at, e.value, e.vid, e.page))
    filed_pages = {e.page for e in filed}
    return steps, out + [e for e in experiments if e.page not in filed_pages]


def first_added(root: Path, lane: Lane) -> dict[str, float]:
    """When each path under the lane was first committed: one history walk (empty outside git)."""
    found: dict[str, float] = {}
    moment = None
    for line in git_out(root, "log", "--diff-filter=A", "--format=@%ct", "--name-only", "--", lane.dir + "/").splitlines():
        if line.startswith("@"):
            moment = float(line[1:])
        elif line.strip() and moment is not None:
            found[line.strip()] = moment  # newest first: the last one read is the first add
    return found


def lane_report(root: Path, lane: Lane, *, budgets: dict[str, tuple[float, float]] | None = None,
                now: float | None = None) -> LaneReport:
    """The report of ``lane`` (see the module docstring). ``budgets``: name -> (used, limit);
    None: the session's burn (:func:`wikiengine.model.budgets.burn`) of the limits its program sets."""
    from wikiengine.model import cascade, targets

    now = now if now is not None else dt.datetime.now(dt.UTC).timestamp()
    settings = lw.lane_settings(root, lane)
    config = cascade.resolve(targets.target_for_model(root, lane.model_prefix, lane.name), validate=False).config or {}
    path = root / lane.journal
    records = parse_journal(path.read_text(encoding="utf-8"), lane.journal) if path.is_file() else []
    if budgets is None:  # the session's burn against the limits its program sets
        from wikiengine.model.budgets import burn

        budgets = {name: (b.used, b.limit) for name, b in burn(config, records, now).items() if b.limit is not None}
    grouped = records_by_vid(records)
    pages = lw.lane_pages(root, lane)
    metric = settings.target_metric
    experiments = [read_experiment(p, grouped.get(p.exp_id, []), metric) for p in pages]
    report = LaneReport(f"{lane.model_prefix}/{lane.name}", lane.dir, lane.model_page(root), metric,
                        settings.higher_is_better, utc_iso(dt.datetime.fromtimestamp(now, dt.UTC)),
                        budgets=[Budget(n, float(u), float(limit)) for n, (u, limit) in (budgets or {}).items()])
    report.variants, report.experiments = _variants(root, lane, report, experiments, records)
    report.signals = _signals(root, lane, records, pages, experiments, config, now)
    if not records:
        report.notes.append(f"{lane.journal} is absent or empty: every figure is read from the pages' frontmatter")
    return report


def _variants(root: Path, lane: Lane, report: LaneReport, experiments: list[Experiment],
              records: list[dict]) -> tuple[list[VariantHistory], list[Experiment]]:
    """Each row of the variant matrix with its frontier replayed, and the experiments with deltas."""
    try:
        model = lw.model_page_of(root, lane)
    except WikiError as err:
        report.notes.append(str(err))
        return [], experiments
    _rel, _text, _page, matrix = model
    since = min((t for t in (timestamp(r.get("at")) for r in records if r.get("op") == "start") if t), default=None)
    histories, done = [], []
    keys = list(dict.fromkeys([*matrix.keys(), *(e.variant for e in experiments if e.variant)]))
    for key in keys:
        row = matrix.row(key)
        try:
            baseline = lw.cell_figure(model, row, BASELINE, report.metric) if row else None
        except WikiError as err:
            baseline = None
            report.notes.append(str(err))
        mine = [e for e in experiments if e.variant == key]
        steps, mine = replay_frontier(baseline, mine, report.higher_is_better, since)
        bands = tuple((timestamp(r.get("at")), float(r["band"])) for r in records
                      if r.get("op") == "band" and r.get("variant") == key and _number(r.get("band")) is not None
                      and timestamp(r.get("at")) is not None)
        histories.append(VariantHistory(key, baseline, row.cell(CURRENT_BEST) if row else "", tuple(steps), bands))
        done += mine
    done += [e for e in experiments if e.variant not in keys]
    done.sort(key=lambda e: (e.filed_at or e.stub_at or 0.0, e.vid))
    return histories, done


def _signals(root: Path, lane: Lane, records: list[dict], pages: list[ex.ExperimentPage],
             experiments: list[Experiment], config: dict, now: float) -> list[Signal]:
    """The watcher's thrash and stall checks (:mod:`wikiengine.step.audit`) on the lane as it
    is; a stub's age from its first commit, else from its claim record or its ``created`` date."""
    by_vid = {p.exp_id: p for p in pages}
    added = first_added(root, lane) if any(e.verdict is None for e in experiments) else {}
    stubbed = {e.page: e.stub_at for e in experiments}
    findings = audit.stale_stubs(lane, by_vid, lambda rel: added.get(rel) or stubbed.get(rel), now,
                                 float(config.get("stale_stub_hours", audit.DEFAULT_STALE_HOURS)))
    findings += audit.thrashing(lane, records, by_vid, int(config.get("thrash_k", audit.DEFAULT_THRASH_K)))
    return [Signal(f.check, f.path, f.message, f.correction) for f in findings]


def all_lanes(root: Path) -> list[Lane]:
    """Every lane of the wiki that has its own program, in path order."""
    from wikiengine.model import targets

    return [Lane(model_dir, name) for model_dir in targets.list_models(root)
            for name in targets.list_lanes(root, model_dir)]
