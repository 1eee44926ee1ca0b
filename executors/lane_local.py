"""The local-process lane backend: each workload a supervised process group and a folder.

One workload is one folder ``.wiki/lane-runs/<model folder>/<lane>/<workload name>/``:

- ``spec.json``: what to run (argv, env, cwd, timeout), written before anything starts;
- ``runner.json``: the pid of its runner (:mod:`wikiengine.executors.lane_runner`), which launch
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

A ``status.json`` that says ``running`` while neither the runner nor the run's process
group is alive is reported ``failed`` (the runner was killed). One without a runner pid
(written by another tool) is taken as it says.
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
from wikiengine.core.clock import from_epoch, now_iso, utc_iso
from wikiengine.core.errors import PageError
from wikiengine.core.identity import MAX_WORKLOAD_LEN, NAME_RE
from wikiengine.core.locks import FileLock
from wikiengine.core.safe_read import load_json, read_optional, read_tail
from wikiengine.executors.clean_room import clean_environment
from wikiengine.executors.compute import CapacityError, ComputeError, ComputeUnavailableError
from wikiengine.executors.lane_backend import (
    ARTIFACT_ENV,
    LaneWorkload,
    LaunchConflict,
    LaunchSpec,
    WorkloadNotFound,
    check_spec,
    parse_workload_name,
    split_workload_name,
)
from wikiengine.executors.lane_runner import MS, group_members, signal_group

LOCK_TIMEOUT_S = 30.0
TAIL_BYTES = 256 * 1024


def _read_json(path: Path) -> dict | None:
    """A state file, None when absent; anything but a regular file of the workload's folder
    holding a JSON object is unknown state."""
    try:
        text = read_optional(path, f"{path.parent.name}/{path.name}", "metrics", within=path.parent)
        if text is None:
            return None
        data = load_json(text, path)
    except (PageError, ValueError) as exc:  # a pipe, a link out, not JSON: unknown, never "gone"
        raise ComputeUnavailableError(f"{path.parent.name}/{path.name} is unreadable: {exc}") from None
    if not isinstance(data, dict):
        raise ComputeUnavailableError(f"{path.parent.name}/{path.name} is not a JSON object")
    return data


def _tail(path: Path, lines: int) -> str:
    """The last ``lines`` lines of the run's log ("" when it does not exist): a regular file
    inside the workload's folder, never a link out of it or a pipe."""
    data = read_tail(path, TAIL_BYTES, f"{path.parent.name}/{path.name}", within=path.parent)
    text = data.decode("utf-8", errors="replace")
    return "\n".join(text.splitlines()[-lines:]) if lines > 0 else ""


def _mtime_iso(*paths: Path) -> str | None:
    times = []
    for path in paths:
        try:
            times.append(path.stat().st_mtime)
        except OSError:
            continue
    return utc_iso(from_epoch(max(times)), MS) if times else None


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


def _runner_alive(pid: int | None, folder: Path) -> bool:
    """The pid is alive, not a zombie, and is the runner of ``folder`` (not a reused pid)."""
    if not pid:
        return False
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z" and str(folder).encode() in cmdline


def _group_alive(pgid: int | None) -> bool:
    return bool(group_members(pgid))


class LocalLaneBackend:
    """Local-process workloads of one lane (see the module docstring)."""

    def __init__(self, root: Path, model_dir: str, lane: str, *, python: str | None = None,
                 kill_grace_s: float = 5.0):
        self.root = Path(root)
        self.folder = self.root / ".wiki" / "lane-runs" / model_dir / lane
        self.python = python or sys.executable
        self.kill_grace_s = kill_grace_s

    # ------------------------------------------------------------------ reading

    def list_workloads(self, prefix: str) -> list[LaneWorkload]:
        try:
            entries = sorted(self.folder.iterdir())
        except FileNotFoundError:
            entries = []  # nothing was ever launched in this lane
        except OSError as exc:
            raise ComputeUnavailableError(f"lane runs folder {self.folder} is unreadable: {exc}") from None
        found = []
        for entry in entries:
            parsed = parse_workload_name(entry.name, prefix)
            if parsed is not None and entry.is_dir():
                found.append(self._workload(entry, *parsed))
        return found

    def status(self, name: str) -> LaneWorkload | None:
        folder = self._folder(name)
        if not _exists(folder):
            return None
        return self._workload(folder, *split_workload_name(name))

    def logs(self, name: str, tail: int = 200) -> str:
        folder = self._folder(name)
        if not _exists(folder):
            raise WorkloadNotFound(f"no local workload {name}")
        return _tail(folder / "log.txt", tail)

    def artifacts(self, name: str) -> dict[str, str]:
        folder = self._folder(name)
        if not _exists(folder):
            raise WorkloadNotFound(f"no local workload {name}")
        spec = _read_json(folder / "spec.json")
        if spec is None:
            return self._paths(folder, None)
        return {key: spec["env"][env] for key, env in ARTIFACT_ENV.items()}

    def _workload(self, folder: Path, vid: str, slug: str) -> LaneWorkload:
        status = _read_json(folder / "status.json")
        runner = _read_json(folder / "runner.json") or {}
        log = folder / "log.txt"
        progress = _mtime_iso(folder / "progress", log, folder / "spec.json")
        argv = (_read_json(folder / "spec.json") or {}).get("argv")
        command = shlex.join(argv) if isinstance(argv, list) else None
        if status is None:
            if _runner_alive(_int(runner.get("pid")), folder):
                state, reason = "queued", "the runner is starting"
            elif runner:
                state, reason = "failed", "the runner died before it started the run"
            else:
                state, reason = "queued", "launch was interrupted before the runner started: launch it again"
            return LaneWorkload(folder.name, vid, slug, state, None, None, _mtime_iso(log) if state == "failed" else None,
                                _tail(log, 200), progress, reason, None, command, chips=1)
        state = str(status.get("state", "unknown"))
        reason = status.get("reason")
        finished = status.get("finished")
        runner_pid, pgid = _int(status.get("runner_pid")), _int(status.get("pgid"))
        if state == "running" and runner_pid and not _runner_alive(runner_pid, folder):
            if _group_alive(pgid):
                reason = "the runner died; the run goes on unsupervised (no timeout, no exit code)"
            else:
                status = _read_json(folder / "status.json") or status  # it may have just finished
                state, reason, finished = str(status.get("state")), status.get("reason"), status.get("finished")
                if state == "running":
                    state, finished = "failed", _mtime_iso(log)
                    reason = "the runner died before the run ended (killed?): exit code unknown"
        return LaneWorkload(folder.name, vid, slug, state, _int(status.get("exit_code")), status.get("started"),
                            finished, _tail(log, 200), progress, reason, _int(status.get("pid")), command, chips=1)

    # ------------------------------------------------------------------ acting

    def launch(self, spec: LaunchSpec) -> LaneWorkload:
        check_spec(spec)
        folder = self._folder(spec.name)
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            with self._lock():
                recorded = _read_json(folder / "spec.json")
                if recorded is not None:
                    if recorded.get("argv") != list(spec.argv):
                        raise LaunchConflict(f"{spec.name} already ran another command: use the next retry suffix")
                    if (folder / "status.json").exists() or (folder / "runner.json").exists():
                        return self.status(spec.name)  # adopt: it was launched before
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
            runner_pid = _int((_read_json(folder / "runner.json") or {}).get("pid"))
            deadline = time.monotonic() + self.kill_grace_s + 5.0
            while _runner_alive(runner_pid, folder) and time.monotonic() < deadline:
                time.sleep(0.05)  # the runner sees deleted.json within its poll interval
            if _runner_alive(runner_pid, folder):
                os.kill(runner_pid, signal.SIGKILL)
            status = _read_json(folder / "status.json")
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

    def _folder(self, name: str) -> Path:
        if not NAME_RE.fullmatch(name) or len(name) >= MAX_WORKLOAD_LEN:
            raise ComputeError(f"bad workload name {name!r}: [a-z]([-a-z0-9]*[a-z0-9])? under {MAX_WORKLOAD_LEN} characters")
        return self.folder / name

    def _lock(self) -> FileLock:
        """The lane's lock: one launch or delete at a time, so a name and a track start one run."""
        return FileLock(self.folder / ".lane.lock", timeout=LOCK_TIMEOUT_S, error=ComputeUnavailableError,
                        busy=f"{self.folder}: another launch or delete holds the lane's lock")

    def _in_flight_on(self, track: int) -> list[str]:
        """Names of the workloads of ``track`` that are queued or running."""
        names = []
        for entry in sorted(self.folder.iterdir()):
            spec = _read_json(entry / "spec.json") if entry.is_dir() and not entry.name.startswith(".") else None
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
        atomic_write_json(folder / "runner.json", {"pid": runner.pid, "launched": now_iso(timespec=MS)})
