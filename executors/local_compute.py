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
directory). A supervisor that died without ``exit.json`` ended as ``cancelled`` (killed).
The quota is this backend's own: ``quota_hours`` per window, used by the wall time of
every session in the state directory.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from executors.clean_room import clean_environment, is_secret
from executors.compute import (
    ComputeError,
    ComputeUnavailableError,
    LaunchRecord,
    LaunchRequest,
    Quota,
    SessionState,
    SessionStatus,
)

_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
START_GRACE_S = 30.0


def _now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


def _iso(moment: dt.datetime) -> str:
    return moment.astimezone(dt.timezone.utc).isoformat()


def _write_json(path: Path, obj: dict) -> None:
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    with open(tmp, "w", encoding="utf-8") as handle:
        json.dump(obj, handle)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


def _read_json(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise ComputeUnavailableError(f"{path.name} of {path.parent.name} is unreadable: {exc}") from None


def dir_name(slug: str) -> str:
    """The directory name of a slug (``owner/name`` -> ``owner__name``); refuses path tricks."""
    name = slug.replace("/", "__")
    if not _NAME_RE.match(name) or ".." in name:
        raise ComputeError(f"bad session slug {slug!r}")
    return name


class LocalProcessCompute:
    """Sessions as detached local processes under ``state_dir`` (see the module docstring)."""

    def __init__(self, state_dir: Path, quota_hours: float = 10.0, quota_reset_at: dt.datetime | None = None,
                 python: str | None = None, accelerator: str = "cpu"):
        self.state_dir = Path(state_dir)
        self.quota_hours = float(quota_hours)
        self.quota_reset_at = quota_reset_at
        self.python = python or sys.executable
        self.accelerator = accelerator

    @classmethod
    def from_config(cls, config: dict, root: Path) -> LocalProcessCompute:
        """From a run's ``compute`` block: ``state_dir`` (relative to ``root``, default
        ``.wiki/compute``), ``quota_hours`` (default 10) and ``quota_reset_at`` (ISO, optional)."""
        state_dir = Path(config.get("state_dir", ".wiki/compute"))
        if not state_dir.is_absolute():
            state_dir = Path(root) / state_dir
        reset = config.get("quota_reset_at")
        reset_at = dt.datetime.fromisoformat(str(reset).replace("Z", "+00:00")) if reset else None
        return cls(state_dir, float(config.get("quota_hours", 10.0)), reset_at)

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
        submitted = _now()
        (directory / "script.py").write_text(request.script_text, encoding="utf-8")
        _write_json(directory / "session.json", {"slug": request.slug, "version": 1, "submitted_at": _iso(submitted),
                                                 "timeout_s": request.session_timeout_s, "pid": None})
        env = {k: v for k, v in os.environ.items() if not is_secret(k, v)}  # the session needs no credential
        env["PYTHONUNBUFFERED"] = "1"
        with open(directory / "output.log", "ab") as log:
            process = subprocess.Popen(
                [self.python, "-m", "executors.local_compute", "supervise", str(directory)],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=directory,
                start_new_session=True)
        record = _read_json(directory / "session.json") or {}
        record["pid"] = process.pid
        _write_json(directory / "session.json", record)
        return LaunchRecord(ref=request.slug, version=1, kernel_id=str(process.pid), submitted_at=submitted)

    # ---------------------------------------------------------------- status

    def status(self, ref: str) -> SessionStatus:
        """The session's state from its directory and its supervisor's pid."""
        directory = self.state_dir / dir_name(ref)
        info = _read_json(directory / "session.json")
        if info is None:
            return SessionStatus(SessionState.GONE)
        started = _read_json(directory / "started.json")
        ended = _read_json(directory / "exit.json")
        started_at = _parse(started["started_at"]) if started else None
        if ended is not None:
            code = ended.get("exit_code")
            state = SessionState.COMPLETE if code == 0 else SessionState.ERROR
            return SessionStatus(state, started_at, _parse(ended["ended_at"]), code,
                                 None if code == 0 else ended.get("failure") or f"exit code {code}")
        pid = (started or {}).get("pid") or info.get("pid")
        if pid and _is_our_process(pid, directory):
            return SessionStatus(SessionState.RUNNING if started else SessionState.QUEUED, started_at)
        submitted = _parse(info["submitted_at"])
        if not pid and (_now() - submitted).total_seconds() < START_GRACE_S:
            return SessionStatus(SessionState.QUEUED)
        log = directory / "output.log"
        ended_at = dt.datetime.fromtimestamp(log.stat().st_mtime, dt.timezone.utc) if log.exists() else None
        return SessionStatus(SessionState.CANCELLED, started_at, ended_at, None,
                             "the session process died without an exit code (killed)")

    def log_tail(self, ref: str, lines: int = 200) -> str:
        path = self.state_dir / dir_name(ref) / "output.log"
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def quota(self) -> Quota:
        """``quota_hours`` less the wall time of every session (running ones up to now)."""
        used = 0.0
        for name, _ in self._sessions():
            directory = self.state_dir / name
            started = _read_json(directory / "started.json")
            if not started:
                continue
            ended = _read_json(directory / "exit.json")
            end = _parse(ended["ended_at"]) if ended else _now()
            used += max(0.0, (end - _parse(started["started_at"])).total_seconds()) / 3600
        return Quota(used_hours=used, total_hours=self.quota_hours, refresh_at=self.quota_reset_at)

    def list_sessions(self) -> list[tuple[str, SessionState]]:
        return [(slug, self.status(slug).state) for _, slug in self._sessions()]

    def cancel(self, ref: str) -> None:
        """Stop a session (its whole process group)."""
        directory = self.state_dir / dir_name(ref)
        info = _read_json(directory / "session.json") or {}
        pid = info.get("pid")
        if pid and _is_our_process(pid, directory):
            os.killpg(pid, signal.SIGTERM)

    def _sessions(self) -> list[tuple[str, str]]:
        if not self.state_dir.is_dir():
            return []
        found = []
        for directory in sorted(self.state_dir.iterdir()):
            info = _read_json(directory / "session.json") if directory.is_dir() else None
            if info:
                found.append((directory.name, info["slug"]))
        return found


def _parse(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text)


def _is_our_process(pid: int, directory: Path) -> bool:
    """The pid is alive and is the supervisor of ``directory`` (not a reused pid)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\x00")
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        if stat.rsplit(")", 1)[1].split()[0] == "Z":
            return False
    except (OSError, IndexError):
        pass
    return str(directory).encode() in cmdline


# ---------------------------------------------------------------- the supervisor


def supervise(directory: Path) -> int:
    """Run ``script.py``, record start, exit code, end time and the failure line."""
    directory = Path(directory)
    _write_json(directory / "started.json", {"started_at": _iso(_now()), "pid": os.getpid()})
    sys.stdout.flush()
    # The session gets the clean room's environment, a fresh empty HOME (no token file,
    # .netrc or kaggle.json in reach) and its own TMPDIR; both are removed when it ends.
    with tempfile.TemporaryDirectory(prefix="session-scratch-") as scratch:
        env = clean_environment(os.environ, Path(scratch) / "home")
        env["TMPDIR"] = str(Path(scratch) / "tmp")
        for place in (env["HOME"], env["TMPDIR"]):
            os.makedirs(place)
        child = subprocess.Popen([sys.executable, str(directory / "script.py")], cwd=directory, env=env)

        def forward(signum, _frame):
            child.send_signal(signum)

        signal.signal(signal.SIGTERM, forward)
        code = child.wait()
    failure = None
    if code != 0:
        log = (directory / "output.log").read_text(encoding="utf-8", errors="replace").splitlines()
        failure = next((ln.strip() for ln in reversed(log) if ln.strip()), f"exit code {code}")[:300]
    _write_json(directory / "exit.json", {"exit_code": code, "ended_at": _iso(_now()), "failure": failure})
    return code


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "supervise":
        raise SystemExit(supervise(Path(sys.argv[2])))
    print("usage: python -m executors.local_compute supervise DIR", file=sys.stderr)
    raise SystemExit(2)
