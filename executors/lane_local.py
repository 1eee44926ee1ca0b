"""The local-process lane backend: each workload a supervised process group and a folder.

One workload is one folder ``<git dir>/wiki-lane/runs/<model folder>/<lane>/<workload name>/``
(:func:`runs_folder`): inside the git directory, where a ``rm -r`` of the checkout's work
folders (``.wiki/``, the artifacts) does not reach, so a run that lives is never taken for
one that never was (RELIABILITY row 70). Outside a git repository the folder is
``.wiki/lane-runs/<model folder>/<lane>/``, which is also still read for the runs an older
engine recorded there. Each folder holds:

- ``spec.json``: what to run (argv, env, cwd, timeout), written before anything starts;
- ``runner.json``: the pid of its runner (:mod:`wikiengine.executors.lane_runner`) and what tells
  that process from a later one of the same pid (:mod:`wikiengine.executors.proc`), which launch
  starts detached in the clean-room environment (:mod:`wikiengine.executors.clean_room`: no
  credential variable, ``HOME`` at the folder's own empty ``home/``);
- ``status.json``: ``state`` (``running | succeeded | failed``), ``exit_code``,
  ``started``, ``finished``, ``pid`` of the run, ``runner_pid`` and ``pgid`` (the
  runner leads the process group the run and its children live in), ``reason``;
  written by the runner (see there) and, for a run whose runner is gone, by delete;
- ``log.txt``: the run's output; ``progress``: touched by the run when it makes
  progress (``$PROGRESS_PATH``); ``artifacts/`` (or the spec's ``artifact_dir``):
  ``$ARTIFACT_DIR``, with ``$METRICS_PATH`` (metrics.json), ``$XPROF_PATH``, ``$HLO_PATH``.

A track has one slot: launching while another run of the same track is in flight is a
:class:`~wikiengine.executors.compute.CapacityError`. Launch and delete hold the lane's file lock,
so two launches of one name (or one track) start one run. Delete
writes ``deleted.json`` (the runner kills the process group and records why), kills the
group itself when the runner is gone, and keeps the folder: the log and artifacts of
a deleted run are what its page and ``wiki backfill`` are written from.

A run that ended by SIGTERM from outside the lane (its runner got it, or the run died of
it while the runner sent none) is ``preempted``, not failed (:mod:`executors.preemption`);
a launch with a higher ``attempt`` moves its ``status.json`` and ``runner.json`` to
``attempt-<n>/`` and starts it again, appending to the same log.

A ``status.json`` that says ``running`` while neither the runner nor the run's process
group is alive is reported ``failed`` (the runner was killed). One without a runner pid
(written by another tool) is taken as it says. A runner is called dead only after
``status.json`` was read again once it was found gone: a whole run can start and end
between a reader's first look and its look at the runner.
"""

from __future__ import annotations

import os
import shlex
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

from wikiengine.core.atomic import atomic_write_json
from wikiengine.core.clock import now_iso
from wikiengine.core.errors import WikiError
from wikiengine.core.git import git_dir
from wikiengine.core.identity import MAX_WORKLOAD_LEN, NAME_RE
from wikiengine.core.locks import FileLock
from wikiengine.executors import preemption
from wikiengine.executors.clean_room import clean_environment
from wikiengine.executors.compute_errors import CapacityError, ComputeError, ComputeUnavailableError
from wikiengine.executors.lane_backend import (
    ARTIFACT_ENV,
    PREEMPTED,
    LaneWorkload,
    LaunchConflict,
    LaunchSpec,
    WorkloadNotFound,
    check_spec,
    parse_workload_name,
    split_workload_name,
)
from wikiengine.executors.lane_runner import MS, elapsed_s, group_members, signal_group
from wikiengine.executors.proc import identity_of, still_running
from wikiengine.executors.run_folder import newest_mtime_iso, read_state, tail_lines

LOCK_TIMEOUT_S = 30.0
LEGACY_RUNS = ".wiki/lane-runs"  # where the records lived before they moved into the git directory


def runs_folder(root: Path, model_dir: str, lane: str) -> Path:
    """Where a lane's local run records live: ``<git dir>/wiki-lane/runs/<model folder>/<lane>``
    (a checkout's own git directory; a worktree's too), else under ``.wiki/lane-runs``."""
    try:
        base = git_dir(root) / "wiki-lane" / "runs"
    except WikiError:
        base = Path(root) / LEGACY_RUNS  # not a git repository
    return base / model_dir / lane


def _exists(folder: Path) -> bool:
    """True for a workload folder, False when it positively is not there; anything else is unknown."""
    try:
        is_dir = stat.S_ISDIR(folder.stat().st_mode)
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise ComputeUnavailableError(f"{folder} is unreadable: {exc}") from None
    if not is_dir:
        raise ComputeUnavailableError(f"{folder} is not a folder")
    return True


def _int(value) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _attempts(folder: Path) -> int:
    """This attempt's number: 1 + the preempted attempts set aside in ``attempt-<n>/``."""
    return 1 + sum(1 for entry in folder.glob("attempt-*") if entry.is_dir())


def _group_alive(pgid: int | None) -> bool:
    return bool(group_members(pgid))


class LocalLaneBackend:
    """Local-process workloads of one lane (see the module docstring)."""

    def __init__(self, root: Path, model_dir: str, lane: str, *, python: str | None = None,
                 kill_grace_s: float = 5.0):
        self.root = Path(root)
        self.folder = runs_folder(self.root, model_dir, lane)
        legacy = self.root / LEGACY_RUNS / model_dir / lane
        self.legacy = legacy if legacy != self.folder else None
        self.python = python or sys.executable
        self.kill_grace_s = kill_grace_s

    # ------------------------------------------------------------------ reading

    def list_workloads(self, prefix: str) -> list[LaneWorkload]:
        found = []
        for entry in self._entries():
            parsed = parse_workload_name(entry.name, prefix)
            if parsed is not None and entry.is_dir():
                found.append(self._workload(entry, *parsed))
        return found

    def _entries(self) -> list[Path]:
        """Every workload folder of the lane (the records of an older engine's folder too)."""
        entries = {}
        for folder in (self.legacy, self.folder):
            try:
                entries.update({p.name: p for p in folder.iterdir()} if folder is not None else {})
            except FileNotFoundError:
                continue  # nothing was ever launched in this lane
            except OSError as exc:
                raise ComputeUnavailableError(f"lane runs folder {folder} is unreadable: {exc}") from None
        return [entries[name] for name in sorted(entries)]

    def status(self, name: str) -> LaneWorkload | None:
        folder = self._folder(name)
        if not _exists(folder):
            return None
        return self._workload(folder, *split_workload_name(name))

    def logs(self, name: str, tail: int = 200) -> str:
        folder = self._folder(name)
        if not _exists(folder):
            raise WorkloadNotFound(f"no local workload {name}")
        return tail_lines(folder / "log.txt", tail)

    def artifacts(self, name: str) -> dict[str, str]:
        folder = self._folder(name)
        if not _exists(folder):
            raise WorkloadNotFound(f"no local workload {name}")
        spec = read_state(folder / "spec.json")
        if spec is None:
            return self._paths(folder, None)
        return {key: spec["env"][env] for key, env in ARTIFACT_ENV.items()}

    def _workload(self, folder: Path, vid: str, slug: str) -> LaneWorkload:
        status = read_state(folder / "status.json")
        runner = read_state(folder / "runner.json") or {}
        log = folder / "log.txt"
        progress = newest_mtime_iso(folder / "progress", log, folder / "spec.json")
        argv = (read_state(folder / "spec.json") or {}).get("argv")
        command = shlex.join(argv) if isinstance(argv, list) else None
        starting = status is None and still_running(_int(runner.get("pid")), runner, folder)
        if status is None and not starting:
            status = read_state(folder / "status.json")  # the runner may have started, run and ended since
        if status is None:
            if starting:
                state, reason = "queued", "the runner is starting"
            elif runner:
                state, reason = "failed", "the runner died before it started the run"
            else:
                state, reason = "queued", "launch was interrupted before the runner started: launch it again"
            return LaneWorkload(folder.name, vid, slug, state, None, None, newest_mtime_iso(log) if state == "failed" else None,
                                tail_lines(log, 200), progress, reason, None, command, chips=1, attempt=_attempts(folder))
        state = str(status.get("state", "unknown"))
        reason = status.get("reason")
        finished = status.get("finished")
        runner_pid, pgid = _int(status.get("runner_pid")), _int(status.get("pgid"))
        runner_record = runner if _int(runner.get("pid")) == runner_pid else {}
        if state == "running" and runner_pid and not still_running(runner_pid, runner_record, folder):
            if _group_alive(pgid):
                reason = "the runner died; the run goes on unsupervised (no timeout, no exit code)"
            else:
                status = read_state(folder / "status.json") or status  # it may have just finished
                state, reason, finished = str(status.get("state")), status.get("reason"), status.get("finished")
                if state == "running":
                    state, finished = "failed", newest_mtime_iso(log)
                    reason = "the runner died before the run ended (killed?): exit code unknown"
        exit_code = _int(status.get("exit_code"))
        if state == "failed" and preemption.local(exit_code, reason) == PREEMPTED:
            state, reason = PREEMPTED, f"{reason or 'SIGTERM'}: sent from outside the lane (not the run's failure)"
        return LaneWorkload(folder.name, vid, slug, state, exit_code, status.get("started"), finished, tail_lines(log, 200),
                            progress, reason, _int(status.get("pid")), command, chips=1, attempt=_attempts(folder),
                            elapsed_s=elapsed_s(status) if state == "running" else None)

    # ------------------------------------------------------------------ acting

    def launch(self, spec: LaunchSpec) -> LaneWorkload:
        check_spec(spec)
        folder = self._folder(spec.name)
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            with self._lock():
                recorded = read_state(folder / "spec.json")
                if recorded is not None:
                    if recorded.get("argv") != list(spec.argv):
                        raise LaunchConflict(f"{spec.name} already ran another command: use the next retry suffix")
                    if (folder / "status.json").exists() or (folder / "runner.json").exists():
                        current = self.status(spec.name)
                        if current.state != PREEMPTED or spec.attempt <= current.attempt:
                            return current  # adopt: it was launched before (this attempt or a later one)
                        self._archive_attempt(folder, current.attempt)
                elif (folder / "status.json").exists():
                    return self.status(spec.name)  # a workload recorded by another tool
                busy = [name for name in self._in_flight_on(spec.track) if name != spec.name]
                if busy:
                    raise CapacityError(f"track {spec.track} is busy with {busy[0]}: one run per track at a time")
                if recorded is None:
                    folder.mkdir(exist_ok=True)
                    atomic_write_json(folder / "spec.json", self._spec_record(folder, spec))
                self._start_runner(folder)
        except OSError as exc:
            raise ComputeUnavailableError(f"cannot launch {spec.name}: {exc}") from None
        return self.status(spec.name)

    def delete(self, name: str) -> None:
        folder = self._folder(name)
        if not _exists(folder):
            return
        with self._lock():
            if not (folder / "deleted.json").exists():
                atomic_write_json(folder / "deleted.json", {"at": now_iso(timespec=MS)})
            runner = read_state(folder / "runner.json") or {}
            runner_pid = _int(runner.get("pid"))
            deadline = time.monotonic() + self.kill_grace_s + 5.0
            while still_running(runner_pid, runner, folder) and time.monotonic() < deadline:
                time.sleep(0.05)  # the runner sees deleted.json within its poll interval
            if still_running(runner_pid, runner, folder):
                os.kill(runner_pid, signal.SIGKILL)
            status = read_state(folder / "status.json")
            pgid = _int((status or {}).get("pgid")) or runner_pid
            if _group_alive(pgid):  # the runner is gone but the run goes on: stop it here
                signal_group(pgid, signal.SIGTERM)
                end = time.monotonic() + self.kill_grace_s
                while _group_alive(pgid) and time.monotonic() < end:
                    time.sleep(0.05)
                signal_group(pgid, signal.SIGKILL)
            if status is None or status.get("state") == "running":
                status = {"state": "running", "exit_code": None, "started": None, **(status or {})}
                status.update(state="failed", finished=now_iso(timespec=MS), reason="deleted by the lane")
                atomic_write_json(folder / "status.json", status)

    # ------------------------------------------------------------------ helpers

    @staticmethod
    def _archive_attempt(folder: Path, attempt: int) -> None:
        """Move a preempted attempt's records to ``attempt-<n>/`` (the log goes on appending)."""
        aside = folder / f"attempt-{attempt}"
        aside.mkdir(exist_ok=True)
        for name in ("status.json", "runner.json"):
            if (folder / name).exists():
                os.replace(folder / name, aside / name)

    def _folder(self, name: str) -> Path:
        if not NAME_RE.fullmatch(name) or len(name) >= MAX_WORKLOAD_LEN:
            raise ComputeError(f"bad workload name {name!r}: [a-z]([-a-z0-9]*[a-z0-9])? under {MAX_WORKLOAD_LEN} characters")
        if self.legacy is not None and not (self.folder / name).exists() and (self.legacy / name).is_dir():
            return self.legacy / name  # recorded by an older engine
        return self.folder / name

    def _lock(self) -> FileLock:
        """The lane's lock: one launch or delete at a time, so a name and a track start one run."""
        return FileLock(self.folder / ".lane.lock", timeout=LOCK_TIMEOUT_S, error=ComputeUnavailableError,
                        busy=f"{self.folder}: another launch or delete holds the lane's lock")

    def _in_flight_on(self, track: int) -> list[str]:
        """Names of the workloads of ``track`` that are queued or running."""
        names = []
        for entry in self._entries():
            spec = read_state(entry / "spec.json") if entry.is_dir() and not entry.name.startswith(".") else None
            if spec is not None and spec.get("track") == track:
                if self._workload(entry, *split_workload_name(entry.name)).in_flight:
                    names.append(entry.name)
        return names

    def _paths(self, folder: Path, artifact_dir: str | None) -> dict[str, str]:
        base = Path(artifact_dir) if artifact_dir else folder / "artifacts"
        base = base if base.is_absolute() else self.root / base
        return {"artifact_dir": str(base), "metrics": str(base / "metrics.json"),
                "xprof": str(base / "xprof"), "hlo": str(base / "hlo")}

    def _spec_record(self, folder: Path, spec: LaunchSpec) -> dict:
        paths = self._paths(folder, spec.artifact_dir)
        Path(paths["artifact_dir"]).mkdir(parents=True, exist_ok=True)
        env = dict(spec.env)
        env.update({env_name: paths[key] for key, env_name in ARTIFACT_ENV.items()})
        env.update(PROGRESS_PATH=str(folder / "progress"), WORKLOAD_NAME=spec.name, TRACK=str(spec.track))
        return {"name": spec.name, "vid": spec.vid, "slug": spec.slug, "track": spec.track, "argv": list(spec.argv),
                "env": env, "cwd": str(self.root), "timeout_s": float(spec.timeout_s),
                "kill_grace_s": self.kill_grace_s, "submitted": now_iso(timespec=MS)}

    def _start_runner(self, folder: Path) -> None:
        home = folder / "home"
        home.mkdir(exist_ok=True)
        env = clean_environment(os.environ, home)
        env["PYTHONUNBUFFERED"] = "1"
        with open(folder / "log.txt", "ab") as log:
            runner = subprocess.Popen([self.python, "-m", "wikiengine.executors.lane_runner", str(folder)],
                                      stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env,
                                      cwd=self.root, start_new_session=True)
        atomic_write_json(folder / "runner.json", {"pid": runner.pid, **identity_of(runner.pid), "launched": now_iso(timespec=MS)})
