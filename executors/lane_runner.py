"""The supervisor of one local lane run: ``python -m wikiengine.executors.lane_runner FOLDER``.

:class:`executors.lane_local.LocalLaneBackend` starts it detached (its own session) in
the clean-room environment. It reads ``FOLDER/spec.json`` and

- writes ``status.json`` (atomically: temp file, fsync, rename) when it starts (with
  ``pgid``: the runner leads its own session, and the run and everything it starts stay
  in that process group), once the run's process exists (``pid``) and when the run ended
  (``exit_code``, ``finished``, ``reason``);
- runs ``argv`` with its output appended to ``log.txt``, with its own ``TMPDIR`` at
  ``FOLDER/tmp`` (``TORCHINDUCTOR_CACHE_DIR`` and ``TRITON_CACHE_DIR`` inside it), removed
  when the run ends: a session leaves no ``torchinductor_<user>`` in the host's TMPDIR;
- kills every other process of the group (SIGTERM, then SIGKILL after the grace period)
  when the run passes ``timeout_s``, when ``deleted.json`` appears (the backend's delete)
  or when the runner itself gets SIGTERM, and records why in ``reason`` and in the log;
  whatever the run left behind is killed when it exits: the runner is a child subreaper,
  so a process the run moved to its own session (``setsid``, a double fork) is re-parented
  to the runner, not to init, and killed with the rest (RELIABILITY row 77).

A runner killed with SIGKILL writes nothing more; the backend tells that from the
runner's pid being gone while ``status.json`` still says ``running``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from wikiengine.core.atomic import atomic_write_json
from wikiengine.core.clock import now_iso
from wikiengine.core.errors import ExitCode
from wikiengine.executors.clean_room import scratch_environment
from wikiengine.executors.proc import boot_id

MS = "milliseconds"  # a runner's timestamps: two records of one second differ

POLL_S = 0.1


def exit_code_of(returncode: int) -> int:
    """A shell-style exit code: 128 + N for a run killed by signal N."""
    return returncode if returncode >= 0 else 128 - returncode


def group_members(pgid: int | None) -> list[int]:
    """The live (non-zombie) processes of the process group ``pgid``."""
    if not pgid:
        return []
    members = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if int(fields[2]) == pgid and fields[0] != "Z":
                members.append(int(entry.name))
    return members


def signal_group(pgid: int, signum: int) -> None:
    """Send ``signum`` to every process of the group but this one."""
    for pid in group_members(pgid):
        if pid != os.getpid():
            try:
                os.kill(pid, signum)
            except ProcessLookupError:
                pass


def kill_group(pgid: int, child: subprocess.Popen, grace_s: float) -> None:
    """SIGTERM the run's processes, SIGKILL whatever is left after ``grace_s`` (the runner stays)."""
    signal_group(pgid, signal.SIGTERM)
    try:
        child.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        pass
    signal_group(pgid, signal.SIGKILL)  # stragglers the run left behind, too
    child.wait()


def monotonic_start() -> dict:
    """When a run starts, on the clock no one can set (``CLOCK_MONOTONIC``, shared by every
    process of one boot): how long it has run never depends on a wall clock that jumps."""
    return {"started_monotonic": time.monotonic(), "boot_id": boot_id()}


def elapsed_s(status: dict) -> float | None:
    """How long the run of ``status`` has run by ``CLOCK_MONOTONIC``; None when its start was
    read in another boot, or by an older runner."""
    start = status.get("started_monotonic")
    if not isinstance(start, (int, float)) or isinstance(start, bool) or status.get("boot_id") != boot_id():
        return None
    return max(0.0, time.monotonic() - float(start))


def supervise(folder: Path) -> int:
    from wikiengine.core import warden  # ctypes: the runner's, not a wake's that lists its runs

    folder = Path(folder)
    stopped: list[str] = []
    signal.signal(signal.SIGTERM, lambda *_: stopped.append("the runner got SIGTERM: process group killed"))
    spec = json.loads((folder / "spec.json").read_text(encoding="utf-8"))
    scratch = folder / "tmp"  # the run's own TMPDIR (torch.compile's cache too), removed when it ends
    pgid = os.getpgid(0)  # the runner leads the run's process group: known before the run exists
    warden.become_subreaper()  # orphans of the run come back to the runner, whatever their session
    status = {"state": "running", "exit_code": None, "started": now_iso(timespec=MS), "finished": None,
              "runner_pid": os.getpid(), "pid": None, "pgid": pgid, "reason": None, "timeout_s": spec["timeout_s"],
              **monotonic_start()}
    atomic_write_json(folder / "status.json", status)

    def finish(code: int | None, reason: str | None) -> int:
        import shutil  # here: the backend's readers (a wake, the watcher) import this module, the runner alone ends runs

        shutil.rmtree(scratch, ignore_errors=True)  # the run's TMPDIR and compiler caches: nothing left behind
        status.update(state="succeeded" if code == 0 and reason is None else "failed", exit_code=code,
                      finished=now_iso(timespec=MS), reason=reason)
        if reason:
            with open(folder / "log.txt", "a", encoding="utf-8") as log:
                log.write(f"[lane-runner] {reason}\n")
        atomic_write_json(folder / "status.json", status)
        return 0

    if (folder / "deleted.json").exists():
        return finish(None, "deleted before it started")
    env = scratch_environment({**os.environ, **spec["env"]}, scratch)
    with open(folder / "log.txt", "ab") as log:
        try:
            child = subprocess.Popen(spec["argv"], stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                     env=env, cwd=spec["cwd"])
        except OSError as exc:
            return finish(127, f"cannot start {spec['argv'][0]!r}: {exc.strerror or exc}")
    status.update(pid=child.pid)
    atomic_write_json(folder / "status.json", status)
    deadline = time.monotonic() + float(spec["timeout_s"])
    reason = None
    while True:
        try:
            child.wait(timeout=max(0.0, min(POLL_S, deadline - time.monotonic())))
            break
        except subprocess.TimeoutExpired:
            if (folder / "deleted.json").exists():
                reason = "deleted by the lane: process group killed"
            elif stopped:
                reason = stopped[0]
            elif time.monotonic() >= deadline:
                reason = f"timed out after {spec['timeout_s']:g}s: process group killed"
            if reason:
                kill_group(pgid, child, float(spec["kill_grace_s"]))
                break
    signal_group(pgid, signal.SIGKILL)  # nothing the run started outlives it: its group,
    warden.kill_all()  # and whatever left the group (its own session) under this subreaper
    return finish(exit_code_of(child.returncode), reason)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print("usage: python -m wikiengine.executors.lane_runner FOLDER", file=sys.stderr)
        raise SystemExit(ExitCode.BAD_INPUT)
    raise SystemExit(supervise(Path(sys.argv[1])))
