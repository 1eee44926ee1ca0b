"""What the engine itself recorded of a run, and the lane's measured noise band.

A verdict rests on evidence, never on testimony (DESIGN.md): :func:`run_evidence` reads a
lane journal's ``dispatch``, ``preempted``, ``kill`` and ``complete`` records of one experiment (the exit
code the backend reported, the metrics the run wrote into its own artifacts, its parity
check, the frontier it was measured against, how many attempts preemption cost it), and
says whether there is anything to file.

The noise band is the lane's own A/A figure: before the first dispatch against a frontier
in a session, the lane wake runs the unchanged frontier ``k`` times through the same
backend (``aa-dispatch``/``aa-complete`` records, workloads named ``...-v000-aa...``) and
:func:`measure_band` turns their figures into a ``band`` record: the half-width (the largest
A/A deviation seen), the MAD and ``n``. ``supported`` needs a delta beyond it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from wikiengine.core.errors import PageError
from wikiengine.core.safe_read import load_json, read_optional

NEVER_DISPATCHED, IN_FLIGHT, COMPLETED = "never dispatched", "in flight", "completed"
DEFAULT_AA_RUNS = 3
MAD_SCALE = 1.4826  # the MAD of a normal sample, in units of its standard deviation


@dataclass(frozen=True)
class RunEvidence:
    """The engine's record of one experiment's run (plain data from the journal)."""

    vid: str
    state: str  # NEVER_DISPATCHED | IN_FLIGHT | COMPLETED
    workload: str | None = None
    run_state: str | None = None  # the backend's final state: succeeded | failed | None (not seen)
    exit_code: int | None = None
    metrics: dict = field(default_factory=dict)
    parity: str | None = None
    killed: str | None = None  # why the wake killed it (hung, past the ceiling)
    frontier: str | None = None  # the frontier page it was dispatched against ("" or None: the Baseline)
    artifacts: dict = field(default_factory=dict)
    session: int | None = None  # the session it was dispatched in
    op_digest: str | None = None  # the ops the candidate's step dispatched, hashed by the run
    frontier_op_digest: str | None = None  # the same of the frontier, in the same run
    dispatch_index: int | None = None  # where its dispatch record is in the journal
    attempts: int = 1  # how many times it started: 1 + its preemptions (``preempted`` records), or more

    @property
    def preempted(self) -> int:
        """How many of its attempts the infrastructure took away (never counted as crashes)."""
        return self.attempts - 1

    @property
    def crash(self) -> str | None:
        """Why the run counts as crashed (invalid), else None."""
        if self.killed:
            return f"the wake killed it ({self.killed})"
        if self.exit_code not in (None, 0):
            return f"it exited with code {self.exit_code}"
        if self.run_state == "failed":
            return "the backend reports it failed"
        return None

    @property
    def no_op(self) -> bool:
        """The run's op digests say the candidate dispatched exactly the frontier's ops."""
        return self.op_digest is not None and self.op_digest == self.frontier_op_digest

    @property
    def unrecorded_exit(self) -> bool:
        """Completed, but no exit code was recorded (the backend lost the run)."""
        return self.state == COMPLETED and self.exit_code is None and self.crash is None


def run_evidence(records: list[dict], vid: str) -> RunEvidence:
    """What the journal ``records`` hold of ``vid``'s newest dispatch."""
    session = None
    dispatch = kill = complete = None
    preempted = 0
    for index, record in enumerate(records):
        op = record.get("op")
        if op == "start":
            session = record.get("session")
        if record.get("vid") != vid:
            continue
        if op == "dispatch":
            dispatch, kill, complete = {**record, "session": session, "index": index}, None, None
            preempted = 0
        elif op == "preempted" and dispatch is not None:
            preempted += 1
        elif op == "kill" and dispatch is not None:
            kill = record
        elif op == "complete" and dispatch is not None:
            complete = record
    if dispatch is None:
        return RunEvidence(vid, NEVER_DISPATCHED)
    common = {"workload": dispatch.get("workload"), "frontier": dispatch.get("frontier"), "session": dispatch.get("session"),
              "dispatch_index": dispatch["index"],
              "killed": (kill or {}).get("reason") or ("killed" if kill else None)}
    attempt = (complete or {}).get("attempt")
    common["attempts"] = max(1 + preempted, attempt if isinstance(attempt, int) and not isinstance(attempt, bool) else 1)
    if complete is None:
        return RunEvidence(vid, IN_FLIGHT, **common)
    metrics = {k: float(v) for k, v in (complete.get("metrics") or {}).items()
               if isinstance(v, (int, float)) and not isinstance(v, bool)}
    exit_code = complete.get("exit_code")
    return RunEvidence(vid, COMPLETED, run_state=complete.get("state"),
                       exit_code=exit_code if isinstance(exit_code, int) and not isinstance(exit_code, bool) else None,
                       metrics=metrics, parity=complete.get("parity"), artifacts=dict(complete.get("artifacts") or {}),
                       op_digest=complete.get("op_digest"), frontier_op_digest=complete.get("frontier_op_digest"),
                       **common)


# --- what a run wrote: metrics.json (schema/run-metrics.schema.json) ------------------------------

METRICS_SCHEMA = "run-metrics"
FIXED_KEYS = ("exit_code", "parity", "parity_detail", "op_digest", "frontier_op_digest", "artifacts", "step", "smoke",
              "error", "finished")


@dataclass(frozen=True)
class RunMetrics:
    """A run's metrics.json as the engine reads it: figures, checks, artifacts, and what broke the schema."""

    found: bool = False  # the file exists
    figures: dict = field(default_factory=dict)  # every finite top-level number but the fixed keys
    parity: str | None = None  # pass | fail | None (no check)
    op_digest: str | None = None
    frontier_op_digest: str | None = None
    artifacts: dict = field(default_factory=dict)  # kind -> path relative to the artifact dir
    problems: tuple = ()  # one plain line per way the file breaks the schema

    @property
    def checks(self) -> dict:
        """What the journal's completion record keeps besides the figures."""
        found = {"parity": self.parity}
        found.update({k: v for k, v in (("op_digest", self.op_digest),
                                        ("frontier_op_digest", self.frontier_op_digest)) if v})
        return found


def parse_run_metrics(data) -> RunMetrics:
    """The figures and checks of a decoded metrics.json, validated against the schema: a key
    that breaks it is dropped and said in ``problems``, never read."""
    from wikiengine.core.schemas import issues

    if not isinstance(data, dict):
        return RunMetrics(True, problems=(f"metrics.json holds a JSON {type(data).__name__}, not an object",))
    broken = issues(data, METRICS_SCHEMA)
    bad_keys = {i.key_path[0] for i in broken if i.key_path}
    problems = tuple(f"{i.where()}: {i.message}" for i in broken)
    ok = {k: v for k, v in data.items() if k not in bad_keys}
    figures = {k: float(v) for k, v in ok.items() if k not in FIXED_KEYS and isinstance(v, (int, float))
               and not isinstance(v, bool) and math.isfinite(v)}
    problems += tuple(f"{k}: {v!r} is not a finite number" for k, v in ok.items()
                      if isinstance(v, float) and not math.isfinite(v))
    return RunMetrics(True, figures, ok.get("parity"), ok.get("op_digest"), ok.get("frontier_op_digest"),
                      dict(ok.get("artifacts") or {}), problems)


def read_run_metrics(path) -> RunMetrics:
    """A run's metrics.json (``found`` False when there is none; unreadable or not JSON is a problem)."""
    if path is None:
        return RunMetrics()
    try:  # the run's own file, written by untrusted code: a pipe, /dev/zero or 1 GB is a problem, never a hang
        text = read_optional(path, kind="metrics")
    except PageError as exc:
        return RunMetrics(True, problems=(f"metrics.json cannot be read: {exc.message}",))
    if text is None:
        return RunMetrics()
    try:
        data = load_json(text, path)
    except (PageError, ValueError) as exc:
        return RunMetrics(True, problems=(f"metrics.json is not JSON: {exc}",))
    return parse_run_metrics(data)


# --- the A/A noise band ---------------------------------------------------------------------


@dataclass(frozen=True)
class Band:
    """The lane's measured noise band around one frontier (metric units, always >= 0)."""

    half_width: float
    mad: float  # the scaled median absolute deviation of the A/A figures
    n: int
    samples: tuple[float, ...]
    co_measured: bool

    def confidence(self, delta: float | None) -> float | None:
        """``delta`` in units of the band's MAD (None when either is missing or the MAD is 0)."""
        if delta is None or self.mad <= 0:
            return None
        return abs(delta) / self.mad

    def as_record(self) -> dict:
        return {"band": self.half_width, "mad": self.mad, "n": self.n, "samples": list(self.samples),
                "co_measured": self.co_measured}

    @classmethod
    def from_record(cls, record: dict) -> Band | None:
        try:
            return cls(abs(float(record["band"])), abs(float(record.get("mad") or 0.0)), int(record["n"]),
                       tuple(float(s) for s in record.get("samples") or ()), bool(record.get("co_measured")))
        except (KeyError, TypeError, ValueError):
            return None


def aa_sample(metrics: dict, metric: str) -> tuple[float, bool] | None:
    """One A/A run's figure: its delta against the frontier co-measured in the same process
    when the run measured one (``frontier_<metric>``), else its own value."""
    value = metrics.get(metric)
    if value is None:
        return None
    co = metrics.get(f"frontier_{metric}")
    return (value - co, True) if co is not None and co > 0 else (value, False)


def measure_band(samples: list[float], co_measured: bool) -> Band | None:
    """The band of A/A figures: deviations from 0 (co-measured deltas) or from their median
    (plain values); the half-width is the largest deviation, never negative."""
    if not samples:
        return None
    from wikiengine.core.median import median

    centre = 0.0 if co_measured else median(samples)
    deviations = [abs(s - centre) for s in samples]
    return Band(max(deviations), MAD_SCALE * median(deviations), len(samples), tuple(samples), co_measured)


def aa_slug(session: int, variant: str, frontier: str | None, round_: int, index: int) -> str:
    """The slug of an A/A workload: the session, a short stable tag of (variant, frontier
    page, round) and the run's index."""
    import hashlib

    tag = hashlib.sha256(f"{variant}\0{frontier or ''}\0{round_}".encode()).hexdigest()[:4]
    return f"aa{session}-{tag}-{index}"


@dataclass(frozen=True)
class Calibration:
    """The newest round of A/A runs of one (session, variant, frontier), as journalled."""

    session: int
    variant: str
    frontier: str | None
    round: int = 1
    dispatched: dict = field(default_factory=dict)  # index -> the aa-dispatch record
    completed: dict = field(default_factory=dict)  # index -> the aa-complete record
    killed: frozenset = frozenset()
    band: dict | None = None  # the band record, once measured

    def matches(self, record: dict) -> bool:
        return (record.get("session") == self.session and record.get("variant") == self.variant
                and (record.get("frontier") or None) == (self.frontier or None))

    @property
    def succeeded(self) -> list[float]:
        """The A/A figures of the runs that exited 0 with the metric."""
        return [float(r["sample"]) for r in self.completed.values()
                if r.get("exit_code") == 0 and isinstance(r.get("sample"), (int, float))]

    @property
    def failed(self) -> int:
        return len(self.completed) - len(self.succeeded)

    def next_index(self) -> int:
        return max(self.dispatched, default=0) + 1


def calibration(records: list[dict], session: int, variant: str, frontier: str | None) -> Calibration:
    """The A/A state of the newest round for one frontier in one session."""
    probe = Calibration(session, variant, frontier or None)
    mine = [r for r in records if r.get("op") in ("aa-dispatch", "aa-complete", "aa-kill", "band") and probe.matches(r)]
    round_ = max((int(r.get("round", 1)) for r in mine), default=1)
    dispatched, completed, killed, band = {}, {}, set(), None
    for record in (r for r in mine if int(r.get("round", 1)) == round_):
        index = int(record.get("index", 0))
        op = record["op"]
        if op == "band":
            band = record
        elif op == "aa-dispatch":
            dispatched[index] = record
        elif op == "aa-complete":
            completed[index] = record
        else:
            killed.add(index)
    return Calibration(session, variant, frontier or None, round_, dispatched, completed, frozenset(killed), band)


def band_for_run(records: list[dict], evidence: RunEvidence, variant: str) -> Band | None:
    """The measured band in force when the run was dispatched: the newest ``band`` record of
    its session, variant and frontier journalled before its dispatch record."""
    if evidence.session is None or evidence.dispatch_index is None:
        return None
    found = calibration(records[: evidence.dispatch_index], evidence.session, variant, evidence.frontier).band
    return Band.from_record(found) if found and found.get("band") is not None else None
