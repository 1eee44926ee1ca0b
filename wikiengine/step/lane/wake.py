"""The lane mode of `wiki step`: one wake of an autoresearch session (seeds 001/003).

observe (journal, backend, pages) -> :func:`wikiengine.step.lane.decide.decide` (pure) -> act:

0. backfill finished workloads that have no page (``wiki backfill``);
1. the re-ground summary (frontier per row, last verdicts, open hypotheses, newest
   retrospective) goes into the result, for the agent to read;
2. per track: ``process`` a finished run (Setup gets the command that ran, Results the
   metrics the run wrote; then a verdict is owed), ``skip`` one in flight, ``dispatch``
   a ready stub (the journal's dispatch record, an expectation, is committed before the
   backend is asked; a lost answer is re-asked and adopted by name, never launched twice),
   ``redispatch`` a preempted run as its next attempt (a ``preempted`` record first; never
   a crash), ``wait`` while the backend restarts a run itself (``retrying``),
   ``kill`` a hung run or one past its ceiling, ``wait`` when the backend cannot be read;
   every track's expectations are one commit, what the acts learned one more;
3. reconcile journal, backend, pages and log, and say what disagreed;
4. ``next_wake_s`` (120..600 s) and ``needs``: the judgement the agent owes, with inputs
   (a verdict, a hypothesis; a spent budget and a stall: raise the budget or rotate the
   hypothesis, or stop with a retrospective).

Past a budget of the program (:mod:`wikiengine.model.budgets`) nothing new is dispatched;
what the budgets have burnt is in every result (``budgets``), `wiki loop status` included.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import shlex
from dataclasses import dataclass, field, replace
from pathlib import Path

from wikiengine.core.clock import timestamp, utc_iso
from wikiengine.core.errors import WikiError
from wikiengine.core.page import parse_page
from wikiengine.core.safe_read import read_text, repo_text
from wikiengine.model import budgets, logbook, progress
from wikiengine.model import experiment as ex
from wikiengine.model.experiment import AA_VID
from wikiengine.model.journal import (
    SEEN,
    UNSEEN,
    append_record,
    dispatch_expectations,
    launched_names,
    parse_journal,
)
from wikiengine.model.lane_queue import LaneQueue, lane_queue
from wikiengine.model.lanes import Lane
from wikiengine.model.state import LaneState, require_lane, write_heartbeat
from wikiengine.step import engine, lane_read
from wikiengine.step.lane import calibrate
from wikiengine.step.lane.decide import BudgetGate, LaneLimits, TrackDecision, TrackView, decide
from wikiengine.step.lane.session import lane_config, make_backend, session_start
from wikiengine.step.result import WakeResult
from wikiengine.step.txn import LaneLock, LaneTxn

STATE_REL = "memory/STATE.md"


# --- settings -------------------------------------------------------------------------------


@dataclass(frozen=True)
class LaneRun:
    """The lane a wake acts on: its state, settings, configuration and limits."""

    root: Path
    lane: Lane
    state: LaneState
    settings: lane_read.LaneSettings
    config: dict
    limits: LaneLimits
    backend: object

    @property
    def prefix(self) -> str:
        return f"{self.settings.user_prefix}-{self.lane.model_name}-{self.lane.name}"


def load_lane_run(root: Path, backend=None) -> LaneRun:
    """The session STATE.md points at, with the lane's resolved config (a lane without its
    own program.md inherits the model's: the cascade skips missing levels)."""
    state = LaneState.read(root)
    lane = require_lane(root, state)
    own = config = lane_config(root, lane)
    start = session_start(root, lane)
    if not config.get("launch_cmd") and start.get("launch_cmd"):
        config = {**config, "launch_cmd": start["launch_cmd"]}  # given to `wiki loop start`
    limits = LaneLimits(hung_after_s=float(config.get("hung_after_s", 1800)),
                        ceiling_s=budgets.run_ceiling_s(config),
                        wake_interval_s=int(config.get("wake_interval_s", 600)))
    return LaneRun(root, lane, state, lane_read.lane_settings(root, lane, own), config, limits,
                   backend or make_backend(state.backend, root, lane, config, list(start.get("tracks", []))))


# --- observe ----------------------------------------------------------------------------------


@dataclass
class Observed:
    """What a lane wake read: the journal, the pages, the backend's workloads and the tracks."""

    records: list[dict]
    pages: dict[str, ex.ExperimentPage]
    workloads: dict[str, object] | None  # vid -> LaneWorkload; None: the backend cannot be read
    views: list[TrackView]
    disagreements: list[str]
    backend_error: str | None = None
    band_needs: dict = field(default_factory=dict)  # (variant, frontier, round) -> BandNeed
    aa_workloads: dict = field(default_factory=dict)  # name -> LaneWorkload of the A/A runs listed
    burn: dict = field(default_factory=dict)  # budget name -> Burn of the session
    queue: LaneQueue | None = None  # which v-id each track runs, and what waits

    @property
    def gate(self) -> BudgetGate:
        """What the budgets leave for new dispatches."""
        spent = budgets.exhausted(self.burn)
        return BudgetGate(tuple(self.burn[name].describe(name) for name in spent), budgets.experiments_left(self.burn))


def observe(run: LaneRun, now: float) -> Observed:
    from wikiengine.executors.compute_errors import ComputeError

    journal_text = repo_text(run.root, run.lane.journal, "journal") or ""
    records = parse_journal(journal_text, run.lane.journal)
    every = lane_read.lane_pages(run.root, run.lane)
    pages = {p.exp_id: p for p in every}
    duplicates = pages_by_id(every)
    error = None
    try:
        listed = run.backend.list_workloads(run.prefix)
    except ComputeError as exc:
        listed, error = None, str(exc)
    workloads = None if listed is None else {w.vid: w for w in listed if w.vid != AA_VID}
    aa_workloads = None if listed is None else {w.name: w for w in listed if w.vid == AA_VID}
    aa_runs = calibrate.open_aa_runs(records, run.state.session, aa_workloads)
    ops: dict[str, set[str]] = {}
    for record in records:
        if record.get("vid"):
            ops.setdefault(record["vid"], set()).add(record.get("op", ""))
    expected = dispatch_expectations(records)
    launched = launched_names(records)
    queue = lane_queue(records, {vid: "filed" if ex.is_filed(p.frontmatter) else "open" for vid, p in pages.items()},
                       run.state.tracks)
    views, foreign = [], []
    for track in range(1, run.state.tracks + 1):
        held = queue.track(track)
        vid = held.active or held.last
        page = pages.get(vid) if vid else None
        page_state = None if vid is None else ("missing" if page is None else
                                               "filed" if ex.is_filed(page.frontmatter) else "open")
        done = ops.get(vid, set()) if vid else set()
        workload = None if workloads is None or vid is None else workloads.get(vid)
        view = TrackView(
            track=track, vid=vid, page_state=page_state, expected=expected.get(vid) if vid else None, processed="complete" in done,
            killed="kill" in done, workload=page.frontmatter.get("workload_name") if page else None,
            backend_state="unknown" if workloads is None else (workload.state if workload else None),
            attempt=getattr(workload, "attempt", 1) or 1,
            started_at=timestamp(getattr(workload, "started", None)),
            progress_at=timestamp(getattr(workload, "progress_at", None)), aa=aa_runs.get(track),
            elapsed_s=getattr(workload, "elapsed_s", None),
            launched=bool(vid and expected.get(vid) and expected[vid].name in launched),
            duplicate=tuple(p.rel for p in duplicates.get(vid, ())),
        )
        theirs = foreign_workload(view, page, workload)
        if theirs:
            view = replace(view, duplicate=(page.rel, theirs))
            foreign.append(f"{vid} is on the backend as {theirs}, not as {page.rel}'s "
                           f"{page.frontmatter.get('workload_name')}: another clone allocated {vid} too; never "
                           f"dispatched here until its stub is fetched and merged and `wiki exp renumber {vid} "
                           f"{run.lane.model_prefix} {run.lane.name}` gives the later page the next free id")
        if page_state == "open" and view.expected is None and not view.duplicate:
            frontier = _frontier_page(run, str(page.frontmatter.get("variant", "")))
            view = replace(view, band_key=calibrate.band_key(run, records, view, page, frontier.rel if frontier else None, now))
        views.append(view)
    disagreements = reconcile(records, pages, workloads, ops) + duplicate_ids(run, duplicates) + foreign
    disagreements += lost_runs(views)
    needs = calibrate.band_needs(run, records, {v.band_key for v in views if v.band_key})
    return Observed(records, pages, workloads, views, disagreements, error, needs, aa_workloads or {},
                    budgets.burn(run.config, records, now), queue)


def pages_by_id(pages: list[ex.ExperimentPage]) -> dict[str, list[ex.ExperimentPage]]:
    """The v-ids that name more than one page of the lane (two clones allocated one offline)."""
    found: dict[str, list[ex.ExperimentPage]] = {}
    for page in pages:
        found.setdefault(page.exp_id, []).append(page)
    return {vid: same for vid, same in found.items() if len(same) > 1}


def foreign_workload(view: TrackView, page: ex.ExperimentPage | None, workload) -> str | None:
    """The name of a workload of this v-id that another clone launched for its own stub (the
    backend is shared; the other stub is not here yet): this stub, never dispatched here,
    must not also run under the id. None when there is none."""
    own = page.frontmatter.get("workload_name") if page is not None else None
    if view.page_state != "open" or view.expected is not None or workload is None or not own:
        return None
    return workload.name if workload.name != own else None


def duplicate_ids(run: LaneRun, duplicates: dict[str, list[ex.ExperimentPage]]) -> list[str]:
    """One line per v-id that names two pages: never dispatched, and the command that fixes it."""
    return [f"{vid} names {len(same)} pages ({', '.join(p.rel for p in same)}): never dispatched until "
            f"`wiki exp renumber {vid} {run.lane.model_prefix} {run.lane.name}` gives the later one the next free id"
            for vid, same in sorted(duplicates.items())]


def lost_runs(views: list[TrackView]) -> list[str]:
    """Runs the backend launched but no longer knows: never launched again (a second live run)."""
    return [f"{v.vid}: the backend has no record of {v.workload}, which it launched: unknown, not gone (never "
            "launched again; recorded killed once its ceiling has passed)"
            for v in views if v.launched and v.sighting == UNSEEN and not (v.processed or v.killed)]


def reconcile(records, pages, workloads, ops) -> list[str]:
    """What journal, backend and pages disagree on (said every wake, never silently fixed)."""
    said = []
    claimed = {r.get("vid") for r in records if r.get("op") in ("claim", "retry", "backfill")}
    for vid, workload in sorted((workloads or {}).items()):
        if vid not in claimed and vid not in pages:
            said.append(f"{workload.name} is on the backend with no stub committed before it")
    for vid in sorted(v for v in claimed if v and v not in pages):
        said.append(f"{vid} was claimed in the journal but has no page")
    for vid, page in sorted(pages.items()):
        if ex.is_filed(page.frontmatter) and workloads and vid in workloads and workloads[vid].state == "running":
            said.append(f"{vid} is filed but {workloads[vid].name} is still running")
        if "dispatch" in ops.get(vid, set()) and not ex.is_filed(page.frontmatter) and ex.is_open(page.frontmatter) is False:
            said.append(f"{vid} was dispatched but its page has status {page.frontmatter.get('status')!r}")
    return said


# --- the re-ground summary and what the agent owes ----------------------------------------------


def reground(run: LaneRun, obs: Observed) -> dict:
    from wikiengine.model.variant_matrix import CURRENT_BEST, FRONTIER_EXP, parse_matrix

    frontier = []
    model_rel = run.lane.model_page(run.root)
    if model_rel:
        matrix = parse_matrix(parse_page(repo_text(run.root, model_rel) or "", model_rel))
        for row in matrix.rows if matrix else ():
            frontier.append({"variant": row.key, "status": row.status, "baseline": row.cell("Baseline"),
                             "current_best": row.cell(CURRENT_BEST), "frontier_exp": row.cell(FRONTIER_EXP)})
    filed = sorted((p for p in obs.pages.values() if ex.is_filed(p.frontmatter)),
                   key=lambda p: (str(p.frontmatter.get("updated", "")), p.exp_id))
    last = [{"vid": p.exp_id, "verdict": ex.resolve_verdict(p.frontmatter)[0], "variant": p.frontmatter.get("variant"),
             "page": p.rel} for p in filed[-3:]]
    hypotheses = []
    folder = run.root / "wiki/hypotheses"
    for path in sorted(folder.glob("*.md")) if folder.is_dir() else ():
        try:
            front = parse_page(read_text(path, path, within=run.root), path).frontmatter
        except WikiError:
            continue
        if front.get("status") in ("open", "in_progress", "testing"):
            hypotheses.append({"slug": path.stem, "status": front.get("status"), "title": front.get("title")})
    retros = sorted(run.root.glob(f"wiki/analyses/*-{run.lane.model_name}-{run.lane.name}-retrospective*.md"))
    retros += sorted((run.root / run.lane.dir / "retrospectives").glob("*.md"))
    return {"frontier": frontier, "last_verdicts": last, "open_hypotheses": hypotheses,
            "newest_retrospective": retros[-1].relative_to(run.root).as_posix() if retros else None}


def budget_owed(run: LaneRun, obs: Observed) -> list[dict]:
    """One owed judgement per spent budget: raise it in the program, or stop with a retrospective."""
    lane_args = f"{run.lane.model_prefix} {run.lane.name}"
    return [{"kind": "budget", "track": None, "vid": None,
             "inputs": {"budget": name, **obs.burn[name].as_json(), "program": run.lane.program},
             "command": f"raise {name} in the ## Config of {run.lane.program} (the cascade: `wiki resolve {lane_args}`), "
                        f"or stop with a retrospective (`wiki loop stop`)"}
            for name in budgets.exhausted(obs.burn)]


def stall_owed(run: LaneRun, obs: Observed) -> dict | None:
    """A stall (:mod:`wikiengine.model.progress`): rotate the hypothesis, or stop with a retrospective."""
    hypotheses = {vid: str(p.frontmatter.get("hypothesis") or "") for vid, p in obs.pages.items()}
    found = progress.stall(obs.records, hypotheses, progress.stall_after(run.config))
    if not found.stalled:
        return None
    lane_args = f"{run.lane.model_prefix} {run.lane.name}"
    return {"kind": "stall", "track": None, "vid": None,
            "inputs": {"filings": list(found.filings), "hypotheses": list(found.hypotheses),
                       "stall_after_filings": found.after},
            "command": f"rotate the hypothesis (`wiki exp new {lane_args} --slug SLUG --variant KEY --proposal FILE` with "
                       "a hypothesis none of these filings tested), or stop with a retrospective (`wiki loop stop`)"}


def owed(run: LaneRun, decision: TrackDecision, obs: Observed, summary: dict) -> dict | None:
    lane_args = f"{run.lane.model_prefix} {run.lane.name}"
    if decision.kind == "need_hypothesis" and not obs.gate.spent:  # past a budget no new stub would run
        in_flight = [{"vid": v.vid, "track": v.track} for v in obs.views if v.page_state == "open"]
        return {"kind": "hypothesis", "track": decision.track, "vid": None,
                "inputs": {"last_verdicts": summary["last_verdicts"], "open_hypotheses": summary["open_hypotheses"],
                           "in_flight": in_flight, "frontier": summary["frontier"]},
                "command": f"wiki exp new {lane_args} --track {decision.track} --slug SLUG --variant KEY --proposal FILE"}
    if decision.kind == "need_verdict":
        return _verdict_owed(run, decision, lane_args)
    return None


def _verdict_owed(run: LaneRun, decision: TrackDecision, lane_args: str) -> dict:
    """The verdict owed for a processed run: the evidence the engine holds (figures, band,
    confidence, the caps that apply to `supported`) and a command that needs only the
    agent's judgement."""
    from wikiengine.step import writers as lw

    preview = lw.preview_filing(run.root, run.lane, decision.vid)
    evidence, band, measured = preview.evidence, preview.band, preview.measured
    inputs = {"metric": preview.metric, "metrics": preview.metrics, "value": measured.value,
              "reference": measured.reference, "reference_label": measured.reference_label, "delta": measured.delta,
              "noise_band": measured.noise_band, "noise_source": measured.noise_source,
              "band_n": band.n if band else None, "band_mad": band.mad if band else None,
              "confidence_mads": band.confidence(measured.delta) if band else None,
              "exit_code": evidence.exit_code, "killed": evidence.killed, "parity": evidence.parity,
              "caps": preview.caps, "strongest_verdict": preview.verdict, "artifacts": evidence.artifacts}
    return {"kind": "verdict", "track": decision.track, "vid": decision.vid, "inputs": inputs,
            "command": f"wiki exp file {decision.vid} {lane_args} --verdict V --reason TEXT"}


# --- act ----------------------------------------------------------------------------------------


def setup_config(text: str, rel: str | None = None) -> dict:
    """The knobs the run gets as its config (:func:`~wikiengine.model.knobs.parse_knobs`:
    the yaml block of the page's Setup; none: {})."""
    from wikiengine.model.knobs import parse_knobs

    knobs = parse_knobs(parse_page(text, rel), rel)
    return knobs.values if knobs is not None else {}


def _frontier_page(run: LaneRun, variant: str) -> ex.ExperimentPage | None:
    from wikiengine.model.variant_matrix import CURRENT_BEST, cell_reference, parse_matrix

    model_rel = run.lane.model_page(run.root)
    if not model_rel:
        return None
    matrix = parse_matrix(parse_page(repo_text(run.root, model_rel) or "", model_rel))
    row = matrix.row(variant) if matrix else None
    ref = cell_reference(row.cell(CURRENT_BEST), model_rel, re.compile(r"(?P<id>v\d{3,}[a-z]?)")) if row else None
    if ref is None or not ref.target or not (run.root / ref.target).is_file():
        return None
    return ex.ExperimentPage.at(run.root, ref.target)


def launch_spec(run: LaneRun, page: ex.ExperimentPage, track: int):
    """The backend's LaunchSpec for a stub, and the frontier page it is measured against.

    The command is the lane program's ``launch_cmd`` with ``{config}`` (a JSON file of the
    knobs in the yaml block of the stub's Setup), ``{frontier}`` (the same of the row's
    Current best, else the lane's ``baseline_config``), ``{artifacts}`` (where the run
    writes metrics.json, profile.md and hlo.md: the stub's declared ``artifacts.root`` when it
    is a folder of the repository), ``{python}`` and ``{smoke}`` (docs/run-contract.md).
    """
    variant = str(page.frontmatter.get("variant", ""))
    frontier = _frontier_page(run, variant)
    vid = ex.parse_vid(page.exp_id)
    spec = build_spec(run, name=page.frontmatter.get("workload_name"), vid=page.exp_id,
                 slug=ex.parse_file_name(page.rel.rsplit("/", 1)[-1]).slug or "", track=track,
                 config=setup_config(page.text, page.rel), frontier=_frontier_config(run, frontier), stem=page.exp_id,
                 env={"WIKI_VID": str(vid) if vid else page.exp_id}, artifacts=declared_artifact_dir(page))
    return spec, (frontier.rel if frontier else None)


def declared_artifact_dir(page: ex.ExperimentPage) -> str | None:
    """The artifact folder the stub declares (frontmatter ``artifacts.root``): a plain
    repository-relative path, or a URL (``gs://``, a ``storage_root``); the run writes where
    its page says it does."""
    declared = page.frontmatter.get("artifacts")
    found = declared.get("root") if isinstance(declared, dict) else None
    if not isinstance(found, str) or not found.strip():
        return None
    if "://" in found:
        return found.rstrip("/")
    if found.startswith(("/", "~")) or ".." in Path(found).parts:
        return None
    return found.rstrip("/")


def aa_launch_spec(run: LaneRun, decision: TrackDecision):
    """The LaunchSpec of an A/A run: the frontier's config measured against itself."""
    variant, frontier_rel, _round, _index = decision.aa
    frontier = ex.ExperimentPage.at(run.root, frontier_rel) if frontier_rel and (run.root / frontier_rel).is_file() else None
    config = _frontier_config(run, frontier)
    name = calibrate.aa_name(run, decision.aa)
    return build_spec(run, name=name, vid=AA_VID, slug=name.split(f"-{AA_VID}-", 1)[1], track=decision.track,
                 config=config, frontier=config, stem=name, env={"WIKI_VID": AA_VID, "WIKI_AA_VARIANT": variant})


def _frontier_config(run: LaneRun, frontier: ex.ExperimentPage | None) -> dict:
    """The knobs of a frontier page's Setup, else the lane's ``baseline_config``."""
    baseline = run.config.get("baseline_config") if isinstance(run.config.get("baseline_config"), dict) else {}
    return setup_config(frontier.text, frontier.rel) if frontier else baseline


LAUNCH_FIELDS = ("config", "frontier", "artifacts", "python", "smoke")


def check_launch_cmd(template: str, where: str) -> None:
    """A launch command every wake can fill: shell-split, each word formatted with only
    ``{config}``, ``{frontier}``, ``{artifacts}``, ``{python}`` and ``{smoke}`` (``${VAR}`` or another brace
    would stop every wake later; the command runs without a shell, so no ``VAR=1 cmd`` either)."""
    import shlex

    try:
        words = shlex.split(template)
    except ValueError as exc:
        raise WikiError(f"{where}: not a command line: {exc}") from None
    if not words:
        raise WikiError(f"{where} is empty")
    for word in words:
        try:
            word.format(**{name: "x" for name in LAUNCH_FIELDS})
        except (KeyError, IndexError, ValueError) as exc:
            raise WikiError(f"{where}: {word!r} has a brace that is not one of {{{'}, {'.join(LAUNCH_FIELDS)}}} "
                            f"({type(exc).__name__}: {exc}); write a literal brace as {{{{ or }}}}") from None
    if "=" in words[0] and not words[0].startswith(("/", ".")):
        raise WikiError(f"{where}: {words[0]!r} reads as a variable assignment, but the command runs without a shell: "
                        "put it in the lane's environment, or run `env VAR=value cmd`")


def build_spec(run: LaneRun, *, name: str, vid: str, slug: str, track: int, config: dict, frontier: dict, stem: str,
          env: dict, artifacts: str | None = None, smoke: bool = False, timeout_s: float | None = None):
    """A LaunchSpec of the lane's ``launch_cmd`` with its two config files written (the
    placeholders and the environment a run gets: docs/run-contract.md)."""
    import sys

    from wikiengine.executors.lane_backend import LaunchSpec

    template = run.config.get("launch_cmd")
    if not template:
        raise WikiError(f"lane {run.lane.model_prefix}/{run.lane.name} has no launch_cmd in its program's ## Config")
    check_launch_cmd(template, f"launch_cmd of {run.lane.model_prefix}/{run.lane.name}")
    folder = run.root / ".wiki" / "lane-configs" / run.lane.model_dir / run.lane.name
    folder.mkdir(parents=True, exist_ok=True)
    local = getattr(run.state, "backend", "local") == "local"
    if not artifacts or ("://" in artifacts and local):  # a URL is a remote backend's place, never a local folder
        artifacts = f".wiki/lane-artifacts/{run.lane.model_dir}/{run.lane.name}/{name}"
    candidate_cfg, frontier_cfg = folder / f"{stem}.json", folder / f"{stem}-frontier.json"
    candidate_cfg.write_text(json.dumps(config, sort_keys=True))
    frontier_cfg.write_text(json.dumps(frontier, sort_keys=True))
    values = {"config": candidate_cfg, "frontier": frontier_cfg,
              "artifacts": artifacts if "://" in artifacts else run.root / artifacts,
              "python": sys.executable, "smoke": "1" if smoke else "0"}
    argv = [a.format(**values) for a in shlex.split(template)]
    env = {**env, "WIKI_CONFIG": str(candidate_cfg), "WIKI_FRONTIER": str(frontier_cfg)}
    if smoke:
        env["WIKI_SMOKE"] = "1"
    return LaunchSpec(name=name, vid=vid, slug=slug, track=track, argv=argv, env=env, artifact_dir=artifacts,
                      timeout_s=timeout_s or run.limits.ceiling_s)


def portable(text: str, root: Path) -> str:
    """A command as a page may show it: this repository's paths relative, the engine's
    interpreter as ``python`` (the journal and the backend keep the exact argv)."""
    import sys

    for prefix in {str(root) + "/", str(Path(root).resolve()) + "/"}:
        text = text.replace(prefix, "")
    return text.replace(sys.executable, "python")


def wake(root: Path, *, dry_run: bool = False, clock=None, backend=None, **_unused) -> WakeResult:
    """One lane wake (the engine's skeleton, see the module docstring), without the lock."""
    return engine.wake(MODE, root, dry_run=dry_run, clock=clock, backend=backend)


@dataclass
class LaneWake:
    """What a lane wake works on, phase by phase."""

    run: LaneRun
    now: float = 0.0
    obs: Observed | None = None
    decision: object = None  # LaneDecision
    launches: dict = field(default_factory=dict)  # vid -> (LaunchSpec, frontier page): what a dispatch asks for
    outcome: dict = field(default_factory=dict)  # rel -> new text: what the acts learned, committed after them
    completions: list = field(default_factory=list)  # the journal's ``complete`` records of this wake
    subjects: list = field(default_factory=list)  # what the outcome commit says


def settle(root: Path) -> str | None:
    """Finish a writer of the session's lane killed mid-commit (its redo record replayed under
    the lane's lock) before anything reads the session: the commit it made, if any (row 76)."""
    lane = require_lane(root, LaneState.read(root))
    with LaneLock(root, lane) as lock:
        return lock.recovered


def _recover(wake: engine.Wake) -> None:
    recovered = settle(wake.root)
    if recovered:
        wake.result.actions.append(f"finished a killed writer first: its redo record replayed as commit {recovered[:12]}")
        wake.result.commits.append(recovered)


def _load(wake: engine.Wake) -> None:
    run = load_lane_run(wake.root, wake.backends.get("backend"))
    wake.run = LaneWake(run)
    wake.result.subject, wake.result.state = run.state.lane, run.state.status
    if run.state.status != "running":
        wake.result.actions.append(f"the session is {run.state.status}: nothing to drive (wiki loop start begins one)")
        wake.end()


def _owned_paths(wake: engine.Wake) -> list[str]:
    return [STATE_REL, wake.run.run.lane.journal]


def unfiled_workloads(run: LaneRun) -> bool:
    """Does the backend list a finished workload (not an A/A run) that has no page? Only
    then is there anything to backfill (and the writers to import)."""
    finished = {w.vid for w in run.backend.list_workloads(run.prefix) if w.is_finished and w.vid != AA_VID}
    if not finished:
        return False
    have = {p.exp_id for p in lane_read.lane_pages(run.root, run.lane)}
    return any(ex.canonical_id(vid) not in have for vid in finished)


def _reconcile(wake: engine.Wake) -> None:
    """Backfill: pages for finished workloads that have none (``wiki backfill``)."""
    from wikiengine.executors.compute_errors import ComputeError

    run, result = wake.run.run, wake.result
    try:
        if not unfiled_workloads(run):
            return
        from wikiengine.step import writers as lw

        done = lw.backfill(wake.root, run.lane, run.backend)
    except ComputeError as exc:
        done = {"backfilled": []}
        result.actions.append(f"backfill skipped: the backend cannot be listed ({exc})")
    result.actions += [f"backfilled {b['vid']} ({b['verdict']}): {b['page']}" for b in done["backfilled"]]
    if done.get("commit"):
        result.commits.append(done["commit"])


def _observe(wake: engine.Wake) -> None:
    wake.run.now = wake.clock().timestamp()
    wake.run.obs = observe(wake.run.run, wake.run.now)


def _decide(wake: engine.Wake) -> None:
    lane, result = wake.run, wake.result
    lane.decision = decide(lane.obs.views, lane.now, lane.run.limits, lane.obs.disagreements, lane.obs.band_needs,
                           lane.obs.gate)
    result.budgets = {name: burn.as_json() for name, burn in lane.obs.burn.items()}
    result.decisions = [d.as_json() for d in lane.decision.tracks]
    result.disagreements = list(lane.obs.disagreements)
    result.queue = lane.obs.queue.as_json() if lane.obs.queue else {}
    if lane.obs.backend_error:
        result.disagreements.append(f"backend cannot be read: {lane.obs.backend_error}")
    result.next_wake_s = lane.decision.next_wake_s


def _act(wake: engine.Wake) -> None:
    """The expectations of every track in one commit, then the backend is asked (dispatch,
    kill), then what the acts learned (finished runs' results) in one commit."""
    lane = wake.run
    if wake.dry_run:
        wake.result.actions += [f"(dry run) track {d.track}: {d.kind}" for d in lane.decision.tracks]
        return
    _expect(wake)
    for decision in lane.decision.tracks:
        ACTS.get(decision.kind, lambda *a: None)(lane, decision, wake.result)
    for view in lane.obs.views:
        if view.expected is not None and view.sighting == SEEN and not view.launched:
            _launched(lane, view.vid, view.expected.name, view.track)  # launched by a wake whose answer was lost
    _commit_outcome(wake)


def _launched(lane: LaneWake, vid: str, name: str, track: int) -> None:
    """Journal that the backend holds ``name`` (with the acts' outcome): from then on a backend
    that cannot find it is unknown, and the run is never launched again."""
    lane.completions.append({"op": "launched", "vid": vid, "workload": name, "track": track,
                             "at": calibrate.stamp(lane.now)})
    lane.subjects.append(f"exp({vid}): {name} launched on track {track}")


def _commit_outcome(wake: engine.Wake) -> None:
    """One commit of what the acts learned: the pages and ``complete`` records of every
    finished run, re-linted (the needs that follow read them)."""
    lane, root = wake.run, wake.root
    if not lane.outcome and not lane.completions:
        return
    run = lane.run
    with LaneLock(root, run.lane):
        txn = LaneTxn(root, run.lane)
        for rel, text in lane.outcome.items():
            txn.write(rel, text)
        journal = txn.read(run.lane.journal)
        for record in lane.completions:
            journal = append_record(journal, record)
        txn.write(run.lane.journal, journal)
        sha = txn.commit("; ".join(lane.subjects))
        if sha:
            wake.result.commits.append(sha)


def _expect(wake: engine.Wake) -> None:
    """Commit the journal's ``dispatch`` and ``kill`` records before the backend is asked: a
    wake killed after this commit is re-asked by name on the next one, never doubled."""
    lane, root = wake.run, wake.root
    records, subjects = [], []
    for decision in lane.decision.tracks:
        view = next(v for v in lane.obs.views if v.track == decision.track)
        if decision.kind == "dispatch":
            spec, frontier = launch_spec(lane.run, lane.obs.pages[decision.vid], decision.track)
            lane.launches[decision.vid] = spec
            if view.expected is None:
                records.append({"op": "dispatch", "vid": decision.vid, "track": decision.track, "workload": spec.name,
                                "argv": [portable(a, root) for a in spec.argv], "frontier": frontier,
                                "at": utc_iso(wake.clock())})
                subjects.append(f"exp({decision.vid}): dispatch {spec.name} on track {decision.track}")
        elif decision.kind == "redispatch":
            spec, _frontier = launch_spec(lane.run, lane.obs.pages[decision.vid], decision.track)
            lane.launches[decision.vid] = replace(spec, attempt=view.attempt + 1)
            if not _preemption_recorded(lane.obs.records, decision.vid, view.attempt):
                records.append({"op": "preempted", "vid": decision.vid, "workload": spec.name, "attempt": view.attempt,
                                "track": decision.track, "reason": decision.reason, "at": utc_iso(wake.clock())})
                subjects.append(f"exp({decision.vid}): {spec.name} preempted; attempt {view.attempt + 1}")
        elif decision.kind == "kill":
            name = lane.obs.pages[decision.vid].frontmatter.get("workload_name")
            records.append({"op": "kill", "vid": decision.vid, "workload": name, "reason": decision.reason,
                            "at": utc_iso(wake.clock())})
            subjects.append(f"exp({decision.vid}): kill {name}: {decision.reason[:60]}")
        elif decision.kind == "aa_dispatch":
            spec = aa_launch_spec(lane.run, decision)
            lane.launches[decision.aa] = spec
            if view.aa is None:
                record = calibrate.aa_dispatch_record(lane.run, decision, spec, utc_iso(wake.clock()))
                records.append({**record, "argv": [portable(a, root) for a in spec.argv]})
                subjects.append(f"band: A/A run {spec.name} on track {decision.track}")
        elif decision.kind == "aa_kill":
            records.append(calibrate.aa_kill_record(lane.run, decision, utc_iso(wake.clock())))
            subjects.append(f"band: kill A/A run {view.aa.workload}: {decision.reason[:60]}")
    if not records:
        return
    run = lane.run
    with LaneLock(root, run.lane):
        txn = LaneTxn(root, run.lane)
        journal = txn.read(run.lane.journal)
        for record in records:
            journal = append_record(journal, record)
        txn.write(run.lane.journal, journal)
        sha = txn.commit("; ".join(subjects), relint=False)
        if sha:
            wake.result.commits.append(sha)


def _preemption_recorded(records: list[dict], vid: str, attempt: int) -> bool:
    """The journal already counts this attempt of ``vid``'s newest dispatch as preempted."""
    since = max((i for i, r in enumerate(records) if r.get("op") == "dispatch" and r.get("vid") == vid), default=-1)
    return any(r.get("op") == "preempted" and r.get("vid") == vid and r.get("attempt") == attempt
               for r in records[since + 1:])


def _needs(wake: engine.Wake) -> None:
    lane = wake.run
    fresh = observe(lane.run, lane.now) if not wake.dry_run else lane.obs  # the world after this wake's acts, read once
    summary = reground(lane.run, fresh)
    wake.result.reground = summary
    wake.result.budgets = {name: burn.as_json() for name, burn in fresh.burn.items()}  # after this wake's dispatches
    for decision in decide(fresh.views, lane.now, lane.run.limits, needs=fresh.band_needs, gate=fresh.gate).tracks:
        need = owed(lane.run, decision, fresh, summary)
        if need:
            wake.result.needs.append(need)
    wake.result.needs += budget_owed(lane.run, fresh)
    stalled = stall_owed(lane.run, fresh)
    if stalled:
        wake.result.needs.append(stalled)


def _record(wake: engine.Wake) -> None:
    """STATE.md changes (and commits) when what the wake decided changed; the watcher reads
    every wake's time from the heartbeat, so an idle replay commits nothing."""
    run, result, root = wake.run.run, wake.result, wake.root
    moment = wake.clock()
    write_heartbeat(root, run.lane, moment)
    summary_line = ", ".join(f"t{d['track']} {d['decision']} {d['vid'] or ''}".rstrip() for d in result.decisions)
    if summary_line == _last_summary(root) and not result.actions:
        return
    state = run.state.replace(last_wake_at=utc_iso(moment), updated_at=utc_iso(moment),
                              next_check_at=utc_iso(moment + dt.timedelta(seconds=result.next_wake_s)))
    with LaneLock(root, run.lane):
        txn = LaneTxn(root, run.lane)
        txn.write(STATE_REL, state.text(state_body(state, result, summary_line)))
        sha = txn.commit(f"step(lane {run.lane.name}): {summary_line}", relint=False)
        if sha:
            result.commits.append(sha)


_SUMMARY_RE = re.compile(r"^Tracks: (?P<line>.*)$", re.M)


def _last_summary(root: Path) -> str | None:
    match = _SUMMARY_RE.search(repo_text(root, STATE_REL, "state") or "")
    return match.group("line") if match else None


def state_body(state: LaneState, result: WakeResult, summary_line: str) -> str:
    lines = ["", f"# {state.lane}: {state.status} (session {state.session}, {state.tracks} track(s), {state.backend})", ""]
    lines += [f"Tracks: {summary_line}", ""]
    lines += [f"- track {d['track']}: {d['decision']} {d['vid'] or ''} — {d['reason']}".rstrip() for d in result.decisions]
    if result.needs:
        lines += ["", "Owed by the agent:"] + [f"- {n['kind']}: `{n['command']}`" for n in result.needs]
    lines += ["", f"Next check at {state.next_check_at}. `wiki step` reads this file first."]
    return "\n".join(lines) + "\n"


def act_dispatch(lane: LaneWake, decision: TrackDecision, result: WakeResult) -> None:
    """Ask the backend for the workload its committed dispatch record names (a lost answer is
    asked again on the next wake and adopted by name)."""
    from wikiengine.executors.compute_errors import ComputeError

    spec = lane.launches[decision.vid]
    try:
        workload = lane.run.backend.launch(spec)
    except ComputeError as exc:
        result.actions.append(f"track {decision.track}: launch of {spec.name} unknown ({exc}); the dispatch record "
                              "stays and the next wake asks again")
        return
    _launched(lane, decision.vid, workload.name, decision.track)
    again = f" (attempt {spec.attempt}: the one before was preempted)" if decision.kind == "redispatch" else ""
    result.actions.append(f"track {decision.track}: dispatched {decision.vid} as {workload.name}{again}")


def act_kill(lane: LaneWake, decision: TrackDecision, result: WakeResult) -> None:
    name = lane.obs.pages[decision.vid].frontmatter.get("workload_name")
    lane.run.backend.delete(name)
    result.actions.append(f"track {decision.track}: killed {name} ({decision.reason})")


def run_outputs(arts: dict, root: Path, declared: dict | None = None) -> dict[str, str]:
    """The files a run left: ``metrics`` (metrics.json), ``profile`` and ``hlo`` (the
    analyzer's sections: what the run declared in metrics.json's ``artifacts``, else the
    ``xprof``/``hlo`` paths when they are files, else ``profile.md``/``hlo.md`` in the artifact
    dir); paths inside the repository are repository-relative (pages carry no machine's paths)."""
    folder = Path(arts["artifact_dir"]) if arts.get("artifact_dir") else None
    declared = declared or {}
    candidates = {
        "metrics": [arts.get("metrics")],
        "profile": [folder / declared["profile"] if folder and declared.get("profile") else None, arts.get("xprof"),
                    folder / "profile.md" if folder else None],
        "hlo": [folder / declared["hlo"] if folder and declared.get("hlo") else None, arts.get("hlo"),
                folder / "hlo.md" if folder else None],
    }
    found = {}
    for key, paths in candidates.items():
        path = next((Path(p) for p in paths if p and Path(p).is_file()), None)
        if path is not None:
            found[key] = repo_relative(path, root)
    return found


def repo_relative(path: Path, root: Path) -> str:
    """``path`` relative to the repository when it lies inside it, else as it is."""
    try:
        return Path(path).resolve().relative_to(Path(root).resolve()).as_posix()
    except ValueError:
        return str(path)


def act_process(lane: LaneWake, decision: TrackDecision, result: WakeResult) -> None:
    """Record the run's completion (exit code, the metrics it wrote, parity: the evidence `wiki
    exp file` files from) and fill Setup with the command that ran and Results with the
    comparison (staged for the acts' one outcome commit); a verdict is then owed."""
    from wikiengine.model.evidence import run_evidence

    run, obs = lane.run, lane.obs
    page = obs.pages[decision.vid]
    workload = obs.workloads.get(decision.vid) if obs.workloads else None
    dispatches = [r for r in obs.records if r.get("vid") == decision.vid and r.get("op") == "dispatch"]
    argv = dispatches[-1].get("argv", []) if dispatches else []
    command = workload.command if workload is not None and workload.command else (shlex.join(argv) if argv else None)
    command = portable(command, run.root) if command else None
    arts = dict(run.backend.artifacts(workload.name)) if workload is not None else {}
    from wikiengine.model.evidence import read_run_metrics as read

    found = read(arts.get("metrics"))
    metrics, checks, parity = found.figures, found.checks, found.parity
    if found.problems:
        checks["metrics_problems"] = list(found.problems)
    record = {"op": "complete", "vid": decision.vid, "workload": workload.name if workload else None,
              "state": workload.state if workload else None, "exit_code": workload.exit_code if workload else None,
              "attempt": workload.attempt if workload else None,
              "metrics": metrics, **checks, "artifacts": run_outputs(arts, run.root, found.artifacts),
              **calibrate.run_times(workload), "at": calibrate.stamp(lane.now)}
    records = obs.records + lane.completions + [record]
    evidence = run_evidence(records, decision.vid)
    from wikiengine.step import writers as lw

    model = lane_read.model_page_of(run.root, run.lane)
    baseline, _best, band, measured = lw.measure_run(run.root, run.settings, page, model, records, evidence)
    record.update(baseline=baseline, noise_band=measured.noise_band, band_n=band.n if band else None)
    metric = run.settings.target_metric
    shown = {k: v for k, v in metrics.items() if k in (metric, "step_time_ms", "peak_hbm_gib", "mfu", "tps")} or metrics
    text = parse_page(page.text, page.rel)
    setup = text.section("Setup")
    ran = f"**Command that ran**: `{command}`" if command else "**Command that ran**: unknown (no dispatch record)"
    text = text.with_section_body(setup.title if setup else "Setup",
                                  (setup.body.rstrip("\n") + "\n\n" if setup else "\n") + ran + "\n\n")
    results = "\n" + lw.results_table(shown, metric, measured, band) + (
        f"\nExit code {record['exit_code']}; state {record['state'] or 'unknown'}"
        + (f"; parity check {parity}" if parity else "")
        + (f"; attempt {evidence.attempts} ({evidence.preempted} preempted before it: not failures)"
           if evidence.preempted else "") + ".\n\n")
    lane.outcome[page.rel] = text.with_section_body(lw.section_title(text, "Results"), results).to_text()
    lane.completions.append(record)
    lane.subjects.append(f"exp({decision.vid}): results of {record['workload'] or decision.vid}")
    result.actions.append(f"track {decision.track}: processed {decision.vid} (Setup and Results filled); a verdict is owed")


def act_aa_dispatch(lane: LaneWake, decision: TrackDecision, result: WakeResult) -> None:
    """Ask the backend for the A/A run its committed ``aa-dispatch`` record names."""
    from wikiengine.executors.compute_errors import ComputeError

    spec = lane.launches[decision.aa]
    try:
        lane.run.backend.launch(spec)
    except ComputeError as exc:
        result.actions.append(f"track {decision.track}: A/A launch of {spec.name} unknown ({exc}); asked again next wake")
        return
    result.actions.append(f"track {decision.track}: A/A run {decision.aa[3]} of the frontier as {spec.name}")


def act_aa_kill(lane: LaneWake, decision: TrackDecision, result: WakeResult) -> None:
    name = calibrate.aa_name(lane.run, decision.aa)
    lane.run.backend.delete(name)
    result.actions.append(f"track {decision.track}: killed A/A run {name} ({decision.reason})")


def act_aa_process(lane: LaneWake, decision: TrackDecision, result: WakeResult) -> None:
    """Record an ended A/A run's figure; the run that completes the set records the band and
    its lane log entry."""
    run = lane.run
    name = calibrate.aa_name(run, decision.aa)
    workload = lane.obs.aa_workloads.get(name)  # None (killed, gone): no exit code, so the run counts as failed
    at = calibrate.stamp(lane.now)
    lane.completions.append(calibrate.aa_complete(run, decision, workload, at))
    lane.subjects.append(f"band: A/A run {name} ended")
    band = calibrate.band_record(run, lane.obs.records + lane.completions, decision.aa[:3], at)
    if band is not None:
        lane.completions.append(band)
        log = lane.outcome.get(run.lane.log) or (repo_text(run.root, run.lane.log) or "")
        lane.outcome[run.lane.log] = logbook.insert_entry(log, calibrate.band_log_entry(run, band, at[:10]))
        lane.subjects.append(f"band: {band['variant']} measured")
        figure = "not measured" if band.get("band") is None else f"±{band['band']:.4g} {band['metric']} (n={band['n']})"
        result.actions.append(f"the lane's A/A noise band of {band['variant']}: {figure}")
        _record_baseline(lane, band, at[:10], result)
    result.actions.append(f"track {decision.track}: recorded A/A run {name}")


def _record_baseline(lane: LaneWake, band: dict, date: str, result: WakeResult) -> None:
    """A band of the row's Baseline config is a measurement of the Baseline: an empty
    Baseline cell gets the runs' median and the band (staged for the outcome commit)."""
    run = lane.run
    model_rel = run.lane.model_page(run.root)
    if not model_rel:
        return
    text = lane.outcome.get(model_rel) or (run.root / model_rel).read_text(encoding="utf-8")
    from wikiengine.step import writers as lw

    new = lw.baseline_text(model_rel, text, band, date)
    if new is not None:
        lane.outcome[model_rel] = new
        lane.subjects.append(f"baseline: {band['variant']} measured by its A/A runs")
        result.actions.append(f"the Baseline of {band['variant']}: {band['value']:.6g} {band['metric']} "
                              f"±{band['band']:.3g} (median of {band['n']} A/A runs), recorded on {model_rel}")


ACTS = {"dispatch": act_dispatch, "redispatch": act_dispatch, "kill": act_kill, "process": act_process, "aa_dispatch": act_aa_dispatch,
        "aa_kill": act_aa_kill, "aa_process": act_aa_process}


MODE = engine.Mode("lane", load=_load, observe=_observe, decide=_decide, act=_act, record=_record,
                   recover=_recover, owned_paths=_owned_paths, reconcile=_reconcile, needs=_needs)
