"""The embedded compute backend: a training session as a detached local process.

:class:`LocalProcessCompute` satisfies :class:`executors.compute.ComputeBackend` with no
account and no network. Each launch gets a directory ``<state_dir>/<name>/`` holding:

- ``session.json``: slug, version, submission time (written before the process starts,
  so a launch that happened is always visible to the next wake);
- ``script.py``: the rendered bootstrap, the whole body of the session;
- ``started.json`` / ``exit.json``: written by the supervisor (``python -m
  executors.local_compute supervise DIR``), which runs the script, waits for it and
  records the exit code and end time. The supervisor is detached (its own session), so
  the wake that launched it may exit;
- ``output.log``: standard output and error of the script.

Liveness: the supervisor's pid is alive (and is ours: its command line names the
directory). A supervisor that died without ``exit.json`` ended as ``cancelled`` (killed),
judged on ``exit.json`` read again once the supervisor was found gone (a session can end
between the first look and the look at its pid).
The supervisor enforces the session timeout itself, as a platform does: past
``timeout_s`` it stops the script and records ``cancelled`` with the reason; so does
:meth:`LocalProcessCompute.cancel`.

The quota is this backend's own: ``quota_hours`` per window of ``quota_window_hours``
(default a week) starting at ``quota_reset_at`` (default a Saturday 00:00 UTC, the seed's
reset), used by the wall time every session spent inside the current window; the
quota's ``refresh_at`` is the end of the current window, so it is never in the past.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from wikiengine.core.atomic import atomic_write_json
from wikiengine.core.clock import from_epoch, parse_iso, parse_utc, utc_iso, utcnow
from wikiengine.core.errors import ExitCode, PageError
from wikiengine.core.safe_read import load_json, read_optional, read_tail
from wikiengine.executors.clean_room import clean_environment, is_secret, scratch_environment
from wikiengine.executors.compute import (
    ComputeError,
    ComputeUnavailableError,
    LaunchRecord,
    LaunchRequest,
    Quota,
    SessionState,
    SessionStatus,
)
from wikiengine.executors.proc import identity_of, still_running

_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
START_GRACE_S = 30.0
TAIL_BYTES = 256 * 1024  # how much of a session's log its tail is read from
STOP_GRACE_S = 10.0  # after SIGTERM, how long the script has before SIGKILL
WEEK_HOURS = 168.0
SATURDAY = dt.datetime(1970, 1, 3, tzinfo=dt.UTC)  # the default anchor of the quota window


def _read_json(path: Path) -> dict | None:
    """A session's record, None when absent: a regular file of its own folder, bounded JSON."""
    try:
        text = read_optional(path, kind="metrics", within=path.parent)
        return None if text is None else load_json(text, path)
    except (PageError, ValueError) as exc:
        raise ComputeUnavailableError(f"{path.name} of {path.parent.name} is unreadable: {exc}") from None


def _log_lines(path: Path, lines: int) -> list[str]:
    """The last ``lines`` lines of a session's log ([] when absent): its tail only, never a pipe."""
    data = read_tail(path, TAIL_BYTES, within=path.parent)
    return data.decode("utf-8", errors="replace").splitlines()[-lines:]


def dir_name(slug: str) -> str:
    """The directory name of a slug (``owner/name`` -> ``owner__name``); refuses path tricks."""
    name = slug.replace("/", "__")
    if not _NAME_RE.match(name) or ".." in name:
        raise ComputeError(f"bad session slug {slug!r}")
    return name


class LocalProcessCompute:
    """Sessions as detached local processes under ``state_dir`` (see the module docstring)."""

    def __init__(self, state_dir: Path, quota_hours: float = 10.0, quota_reset_at: dt.datetime | None = None,
                 python: str | None = None, accelerator: str = "cpu", quota_window_hours: float = WEEK_HOURS,
                 clock=None):
        self.state_dir = Path(state_dir)
        self.quota_hours = float(quota_hours)
        self.quota_reset_at = quota_reset_at or SATURDAY
        self.quota_window_hours = float(quota_window_hours)
        if not self.quota_window_hours > 0:
            raise ComputeError("local-process: quota_window_hours must be positive")
        self.python = python or sys.executable
        self.accelerator = accelerator
        self.clock = clock or utcnow

    @classmethod
    def from_config(cls, config: dict, root: Path) -> LocalProcessCompute:
        """From a run's ``compute`` block: ``state_dir`` (relative to ``root``, default
        ``.wiki/compute``), ``quota_hours`` (default 10) per ``quota_window_hours`` (default
        168) from ``quota_reset_at`` (ISO, default a Saturday 00:00 UTC)."""
        state_dir = Path(config.get("state_dir", ".wiki/compute"))
        if not state_dir.is_absolute():
            state_dir = Path(root) / state_dir
        reset = config.get("quota_reset_at")
        reset_at = parse_iso(str(reset)) if reset else None
        if reset and reset_at is None:
            raise ComputeError(f"local-process: quota_reset_at is not an ISO time with a time zone: {reset!r}")
        return cls(state_dir, float(config.get("quota_hours", 10.0)), reset_at,
                   quota_window_hours=float(config.get("quota_window_hours", WEEK_HOURS)))

    # ---------------------------------------------------------------- launch

    def launch(self, request: LaunchRequest) -> LaunchRecord:
        """Start the session detached; refuse a slug that was already launched (no double launch)."""
        directory = self.state_dir / dir_name(request.slug)
        self.state_dir.mkdir(parents=True, exist_ok=True)
        try:
            directory.mkdir()
        except FileExistsError:
            if (directory / "session.json").exists():
                raise ComputeError(f"{request.slug} was already launched") from None
            # a launch killed before it wrote session.json never started anything: reuse the directory
        submitted = utcnow()
        (directory / "script.py").write_text(request.script_text, encoding="utf-8")
        atomic_write_json(directory / "session.json", {"slug": request.slug, "version": 1, "submitted_at": utc_iso(submitted, "auto"),
                                                 "timeout_s": request.session_timeout_s, "pid": None})
        env = {k: v for k, v in os.environ.items() if not is_secret(k, v)}  # the session needs no credential
        env["PYTHONUNBUFFERED"] = "1"
        with open(directory / "output.log", "ab") as log:
            process = subprocess.Popen(
                [self.python, "-m", "wikiengine.executors.local_compute", "supervise", str(directory)],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=directory,
                start_new_session=True)
        record = _read_json(directory / "session.json") or {}
        record.update(pid=process.pid, **identity_of(process.pid))
        atomic_write_json(directory / "session.json", record)
        return LaunchRecord(ref=request.slug, version=1, kernel_id=str(process.pid), submitted_at=submitted)

    # ---------------------------------------------------------------- status

    def status(self, ref: str) -> SessionStatus:
        """The session's state from its directory and its supervisor's pid; UNKNOWN (never an
        exception) when its files cannot be read."""
        try:
            return self._status(self.state_dir / dir_name(ref))
        except ComputeUnavailableError as exc:
            return SessionStatus(SessionState.UNKNOWN, failure_message=str(exc))

    def _status(self, directory: Path) -> SessionStatus:
        info = _read_json(directory / "session.json")
        if info is None:
            return SessionStatus(SessionState.GONE)
        started = _read_json(directory / "started.json")
        ended = _read_json(directory / "exit.json")
        record = _supervisor(info, started)
        pid = record.get("pid")
        alive = ended is None and still_running(pid, record, directory)
        if ended is None and not alive:  # the session may have started and ended since its files were read
            started, ended = _read_json(directory / "started.json"), _read_json(directory / "exit.json")
        started_at = parse_utc(started["started_at"]) if started else None
        known = {"version": info.get("version"), "kernel_id": str(info["pid"]) if info.get("pid") else None}
        if ended is not None:
            code = ended.get("exit_code")
            state = SessionState.COMPLETE if code == 0 else SessionState.ERROR
            if ended.get("stopped"):
                state = SessionState.CANCELLED
            failure = None if code == 0 else ended.get("stopped") or ended.get("failure") or f"exit code {code}"
            return SessionStatus(state, started_at, parse_utc(ended["ended_at"]), code, failure, **known)
        if alive:
            return SessionStatus(SessionState.RUNNING if started else SessionState.QUEUED, started_at, **known)
        submitted = parse_utc(info["submitted_at"])
        if not pid and (utcnow() - submitted).total_seconds() < START_GRACE_S:
            return SessionStatus(SessionState.QUEUED, **known)
        log = directory / "output.log"
        ended_at = from_epoch(log.stat().st_mtime) if log.exists() else None
        return SessionStatus(SessionState.CANCELLED, started_at, ended_at, None,
                             "the session process died without an exit code (killed)", **known)

    def log_tail(self, ref: str, lines: int = 200) -> str:
        try:
            return "\n".join(_log_lines(self.state_dir / dir_name(ref) / "output.log", lines))
        except PageError as exc:
            raise ComputeUnavailableError(str(exc)) from None

    def window(self, now: dt.datetime) -> tuple[dt.datetime, dt.datetime]:
        """The quota window holding ``now``: ``[start, end)``, windows of ``quota_window_hours`` from the anchor."""
        span = dt.timedelta(hours=self.quota_window_hours)
        periods = (now - self.quota_reset_at) // span
        start = self.quota_reset_at + periods * span
        return start, start + span

    def quota(self) -> Quota:
        """``quota_hours`` less the wall time sessions spent in the current window (running ones up to now)."""
        now = self.clock()
        start, end = self.window(now)
        used = 0.0
        for name, _ in self._sessions():
            directory = self.state_dir / name
            started = _read_json(directory / "started.json")
            if not started:
                continue
            ended = _read_json(directory / "exit.json")
            stop = min(parse_utc(ended["ended_at"]) if ended else now, now)
            used += max(0.0, (stop - max(parse_utc(started["started_at"]), start)).total_seconds()) / 3600
        return Quota(used_hours=used, total_hours=self.quota_hours, refresh_at=end)

    def list_sessions(self) -> list[tuple[str, SessionState]]:
        """Every launched session; one whose files cannot be read is UNKNOWN; an unreadable
        state directory raises ComputeUnavailableError (the protocol's "unknown")."""
        return [(slug, self.status(slug).state) for _, slug in self._sessions()]

    def cancel(self, ref: str) -> None:
        """Stop a session: SIGTERM to its supervisor, which stops the script and records ``cancelled``."""
        directory = self.state_dir / dir_name(ref)
        record = _supervisor(_read_json(directory / "session.json") or {}, _read_json(directory / "started.json"))
        pid = record.get("pid")
        if not still_running(pid, record, directory):
            return  # not running: nothing to stop
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        except OSError as exc:
            raise ComputeError(f"cannot stop {ref}: {exc.strerror}") from None

    def _sessions(self) -> list[tuple[str, str]]:
        try:
            if not self.state_dir.exists():
                return []  # nothing launched yet
            directories = sorted(self.state_dir.iterdir())
        except OSError as exc:
            raise ComputeUnavailableError(f"the session directory {self.state_dir} cannot be listed: "
                                          f"{exc.strerror}") from None
        found = []
        for directory in directories:
            try:
                info = _read_json(directory / "session.json") if directory.is_dir() else None
            except ComputeUnavailableError:
                info = {"slug": directory.name.replace("__", "/")}  # ours, state unreadable: listed as unknown
            if info:
                found.append((directory.name, info.get("slug", directory.name)))
        return found


def _supervisor(info: dict, started: dict | None) -> dict:
    """The record of a session's supervisor: its own (``started.json``) once it wrote one, else the launch's."""
    return started if started and started.get("pid") else info


# ---------------------------------------------------------------- the supervisor


def supervise(directory: Path) -> int:
    """Run ``script.py``; record start, exit code, end time and the failure line.

    The session's ``timeout_s`` is enforced here, as a platform does: past it the script
    is stopped (SIGTERM, then SIGKILL after :data:`STOP_GRACE_S`) and the exit records
    ``stopped`` with the reason; a SIGTERM to the supervisor (:meth:`LocalProcessCompute.cancel`)
    does the same.
    """
    directory = Path(directory)
    stopped: list[str] = []

    def stop(why: str) -> None:
        if stopped:
            return  # our own group signal coming back to us
        stopped.append(why)
        os.killpg(os.getpgrp(), signal.SIGTERM)  # the script and every process it started (this group)

    # before the session is seen running: a cancel that comes while the script starts is recorded, not fatal
    signal.signal(signal.SIGTERM, lambda _signum, _frame: stop("cancelled through the backend (SIGTERM)"))
    info = _read_json(directory / "session.json") or {}
    timeout_s = info.get("timeout_s")
    atomic_write_json(directory / "started.json", {"started_at": utc_iso(utcnow(), "auto"), "pid": os.getpid(),
                                                   **identity_of(os.getpid())})
    sys.stdout.flush()
    # The session gets the clean room's environment, a fresh empty HOME (no token file,
    # .netrc or kaggle.json in reach) and its own TMPDIR; both are removed when it ends.
    with tempfile.TemporaryDirectory(prefix="session-scratch-") as scratch:
        env = scratch_environment(clean_environment(os.environ, Path(scratch) / "home"), Path(scratch) / "tmp")
        os.makedirs(env["HOME"])
        child = subprocess.Popen([sys.executable, str(directory / "script.py")], cwd=directory, env=env)
        if stopped:  # cancelled before the script existed: it is stopped as it starts
            os.killpg(os.getpgrp(), signal.SIGTERM)
        try:
            code = child.wait(timeout=float(timeout_s) if timeout_s else None)
        except subprocess.TimeoutExpired:
            stop(f"session timeout: stopped after {timeout_s} s")
            code = None
        while code is None:
            try:
                code = child.wait(timeout=STOP_GRACE_S)
            except subprocess.TimeoutExpired:
                child.kill()
    failure = None
    if code != 0:
        try:
            log = _log_lines(directory / "output.log", 200)
        except PageError:  # the script replaced its log: the exit code says enough
            log = []
        failure = next((ln.strip() for ln in reversed(log) if ln.strip()), f"exit code {code}")[:300]
    record = {"exit_code": code, "ended_at": utc_iso(utcnow(), "auto"), "failure": failure}
    if stopped:
        record["stopped"] = stopped[0]
    atomic_write_json(directory / "exit.json", record)
    return code


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "supervise":
        raise SystemExit(supervise(Path(sys.argv[2])))
    print("usage: python -m wikiengine.executors.local_compute supervise DIR", file=sys.stderr)
    raise SystemExit(ExitCode.BAD_INPUT)
