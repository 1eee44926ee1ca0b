"""`wiki lane check`: run a lane's launch command once, as a smoke run, and say what it left out.

The run contract (``docs/run-contract.md``) is what a lane's ``launch_cmd`` gets (the
placeholders, the environment) and what it must write (``schema/run-metrics.schema.json``,
the profile, the HLO dump with its firing-audit line). The check fills the command the way
a wake does, for the lane's frontier config against itself, with ``WIKI_SMOKE=1`` and
``{smoke}`` = 1, runs it on the local backend for at most ``seconds``, and reads back what it
wrote through the same reader a wake uses. Each problem is one plain line naming the
command, the file or the key; ``ok`` is True when there is none (notes never fail it).
"""

from __future__ import annotations

import shlex
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

from wikiengine.core.errors import WikiError
from wikiengine.model import experiment as ex
from wikiengine.model.evidence import read_run_metrics
from wikiengine.model.experiment import AA_NUMBER, AA_VID
from wikiengine.model.lanes import Lane
from wikiengine.step import writers as lw
from wikiengine.step.lane.decide import LaneLimits
from wikiengine.step.lane.session import lane_config, session_start
from wikiengine.step.lane.wake import (
    LaneRun,
    build_spec,
    check_launch_cmd,
    portable,
    repo_relative,
    run_outputs,
)

DEFAULT_SECONDS = 120.0
CHECK_TRACK = 0  # lane tracks count from 1: a check never takes a session's slot
BARE_PYTHON = ("python", "python3")


@dataclass
class CheckReport:
    """What the smoke run showed: problems (each fails the check) and notes."""

    lane: str
    command: str | None = None
    workload: str | None = None
    exit_code: int | None = None
    seconds: float | None = None
    metrics: dict = field(default_factory=dict)
    files: dict = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def as_json(self) -> dict:
        return {"lane": self.lane, "ok": self.ok, "command": self.command, "workload": self.workload,
                "exit_code": self.exit_code, "seconds": self.seconds, "metrics": self.metrics, "files": self.files,
                "problems": self.problems, "notes": self.notes}

    def text(self) -> str:
        lines = [f"lane check {self.lane}: " + ("all there" if self.ok else f"{len(self.problems)} missing")]
        if self.command:
            lines.append(f"  ran: {self.command}" + (f" (exit {self.exit_code}, {self.seconds:.1f}s)"
                                                     if self.seconds is not None else ""))
        lines += [f"  missing: {p}" for p in self.problems] + [f"  note: {n}" for n in self.notes]
        return "\n".join(lines) + "\n"


def lane_check(root: Path, lane: Lane, *, seconds: float = DEFAULT_SECONDS, backend=None) -> CheckReport:
    """Run the lane's launch command once as a smoke run and check what it wrote."""
    if not seconds > 0:
        raise WikiError(f"--seconds must be positive, got {seconds}")
    config = dict(lane_config(root, lane))
    if not config.get("launch_cmd") and session_start(root, lane).get("launch_cmd"):
        config["launch_cmd"] = session_start(root, lane)["launch_cmd"]
    report = CheckReport(f"{lane.model_prefix}/{lane.name}")
    template = config.get("launch_cmd")
    if not template:
        report.problems.append(f"the command: the lane's program has no launch_cmd in its ## Config (`wiki resolve "
                               f"{lane.model_prefix} {lane.name}` shows the resolved Config); see docs/run-contract.md")
        return report
    if not _command_ok(template, report):
        return report
    settings = lw.lane_settings(root, lane)
    run = _check_run(root, lane, config, settings, backend)
    spec = _smoke_spec(run, seconds)
    report.command, report.workload = portable(shlex.join(spec.argv), root), spec.name
    workload = _run_once(run.backend, spec, seconds)
    report.exit_code = workload.exit_code if workload else None
    report.seconds = _elapsed(workload)
    _judge_run(report, workload, seconds)
    _judge_outputs(report, dict(run.backend.artifacts(spec.name)), root, settings.target_metric)
    if not (Path(run.backend.folder) / spec.name / "progress").is_file():
        report.notes.append("no progress signal ($PROGRESS_PATH, run.progress(step=...)): a long run is judged hung by "
                            "its log writes alone")
    return report


def _command_ok(template: str, report: CheckReport) -> bool:
    """The command can be filled and its program found; a bare ``python`` is a problem too."""
    try:
        check_launch_cmd(template, "the command (launch_cmd)")
    except WikiError as exc:
        report.problems.append(exc.message)
        return False
    program = shlex.split(template)[0]
    if program in BARE_PYTHON:
        report.problems.append(f"the command: launch_cmd starts with `{program}`, which resolves on the caller's PATH "
                               "(from cron or an MCP client that is another interpreter, or none: `No module named "
                               "'torch'`); write {python}, the interpreter the engine runs under, or an absolute path")
    elif "{" not in program and shutil.which(program) is None and not Path(program).is_file():
        report.problems.append(f"the command: {program!r} is not found on PATH (launch_cmd runs without a shell)")
        return False
    return True


def _check_run(root: Path, lane: Lane, config: dict, settings, backend) -> LaneRun:
    from wikiengine.executors.lane_local import LocalLaneBackend

    backend = backend or LocalLaneBackend(root, lane.model_dir, lane.name)
    return LaneRun(root, lane, None, settings, config, LaneLimits(), backend)


def _smoke_spec(run: LaneRun, seconds: float):
    """The smoke run's spec: the lane's frontier config (``baseline_config``) against itself."""
    from wikiengine.core.identity import workload_name

    baseline = run.config.get("baseline_config") if isinstance(run.config.get("baseline_config"), dict) else {}
    slug = f"check-{int(time.time() * 1000):x}"[-14:].lstrip("-")
    name = workload_name(run.settings.user_prefix, run.lane.model_name, run.lane.name, AA_NUMBER, slug)
    return build_spec(run, name=name, vid=AA_VID, slug=name.split(f"-{AA_VID}-", 1)[1], track=CHECK_TRACK,
                      config=baseline, frontier=baseline, stem=name, env={"WIKI_VID": AA_VID}, smoke=True,
                      timeout_s=seconds)


def _run_once(backend, spec, seconds: float):
    """Launch and wait for the end (the runner kills the run at ``seconds``)."""
    backend.launch(spec)
    deadline = time.monotonic() + seconds + 30.0
    workload = backend.status(spec.name)
    while workload is not None and not workload.is_finished and time.monotonic() < deadline:
        time.sleep(0.1)
        workload = backend.status(spec.name)
    if workload is not None and not workload.is_finished:
        backend.delete(spec.name)
        workload = backend.status(spec.name)
    return workload


def _elapsed(workload) -> float | None:
    from wikiengine.core.clock import timestamp

    start, end = timestamp(getattr(workload, "started", None)), timestamp(getattr(workload, "finished", None))
    return round(end - start, 2) if start is not None and end is not None else None


def _judge_run(report: CheckReport, workload, seconds: float) -> None:
    if workload is None:
        report.problems.append("the command: the local backend lost the run (no record of it)")
        return
    if workload.reason and "timed out" in workload.reason:
        report.problems.append(f"the command: still running after {seconds:g}s in a smoke run: read WIKI_SMOKE=1 (or "
                               "pass {smoke}) and run a few steps only (wikiengine.run.steps does it)")
    elif workload.exit_code != 0:
        tail = [line for line in (workload.log_tail or "").splitlines() if line.strip()]
        said = f": {tail[-1].strip()[:200]}" if tail else ""
        report.problems.append(f"the command: exited with code {workload.exit_code}{said}")


def _judge_outputs(report: CheckReport, arts: dict, root: Path, metric: str) -> None:
    """What the run wrote, against the contract: metrics.json and its keys, the profile, the HLO dump."""
    found = read_run_metrics(arts.get("metrics"))
    report.metrics = dict(found.figures)
    where = repo_relative(Path(arts["metrics"]), root) if arts.get("metrics") else "(no path)"
    if not found.found:
        report.problems.append(f"the file: no metrics.json at $METRICS_PATH ({where}); run.log(...) or write it")
    report.problems += [f"the file {where}: {p}" for p in found.problems]
    if found.found:
        _judge_keys(report, found, metric, where)
    outputs = run_outputs(arts, root, found.artifacts)
    report.files = outputs
    if "profile" not in outputs:
        report.problems.append("the file: no profile (profile.md in $ARTIFACT_DIR, $XPROF_PATH, or run.artifact('profile', "
                               "PATH)); a verdict without one is at most inconclusive")
    if "hlo" not in outputs:
        report.problems.append("the file: no HLO dump (hlo.md in $ARTIFACT_DIR, $HLO_PATH, or run.artifact('hlo', PATH)); "
                               "a verdict without one is at most inconclusive")
    else:
        text = (root / outputs["hlo"]).read_text(encoding="utf-8", errors="replace")
        if ex.firing_audit(text) is None:
            report.problems.append(f"the file {outputs['hlo']}: no firing-audit line (`Hypothesis-firing audit: CONFIRMED`"
                                   " or `... SILENT NO-OP`); a verdict without one is at most inconclusive")


def _judge_keys(report: CheckReport, found, metric: str, where: str) -> None:
    if metric not in found.figures:
        report.problems.append(f"the key {metric!r} in {where}: the lane's target_metric, as a number (run.log({metric}=...))")
    if found.parity is None:
        report.problems.append(f"the key 'parity' in {where}: 'pass' or 'fail' of a numerics check against a reference "
                               "(run.parity(ok=..., detail=...)); without it a broken change can be filed supported")
    if f"frontier_{metric}" not in found.figures:
        report.notes.append(f"no frontier_{metric} in {where}: the frontier measured in the same process makes the "
                            "A/A band a co-measured delta, far tighter on a shared machine")
