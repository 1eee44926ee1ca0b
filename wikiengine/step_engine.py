"""`wiki step`: one engine, three modes.

The engine reads which mode ``memory/STATE.md`` names (a relay run, seed 000; a lane
session, seeds 001/003: ``mode: lane``; a kernel session, seed 003 Step 1: ``mode:
kernel``), holds the one wake lock (a second wake exits 0
"locked" and does nothing), and runs that mode's wake. A mode supplies its wake (observe,
a pure decide, act, write memory, commit) and its "locked" answer; both results print the
same way (``as_json``, ``exit_code``).

========  ==========================================  =====================================
mode      wake                                        decide (pure)
========  ==========================================  =====================================
relay     :func:`wikiengine.relay.step.wake`          :func:`wikiengine.relay.decide.decide`
lane      :func:`wikiengine.lane_mode.wake`           :func:`wikiengine.lane_decide.decide`
kernel    :func:`wikiengine.kernel_mode.wake`         :func:`wikiengine.kernel_step_decide.decide`
========  ==========================================  =====================================
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from wikiengine.errors import WikiError

LOCK_NAME = "wiki-step.lock"  # inside .git (or the .wiki/ state dir): never a stray file in the work tree


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


@dataclass(frozen=True)
class Mode:
    name: str
    wake: Callable  # (root, *, dry_run, clock, **backends) -> result
    locked: Callable[[], object]  # the result of a wake that found the lock held


def _relay() -> Mode:
    from wikiengine.relay import step

    return Mode("relay", step.wake, step.locked_result)


def _lane() -> Mode:
    from wikiengine import lane_mode

    return Mode("lane", lane_mode.wake, lane_mode.locked_result)


def _kernel() -> Mode:
    from wikiengine import kernel_mode

    return Mode("kernel", kernel_mode.wake, kernel_mode.locked_result)


MODES: dict[str, Callable[[], Mode]] = {"relay": _relay, "lane": _lane, "kernel": _kernel}


def lock_path(root: Path) -> Path:
    """The one-wake-at-a-time lock of ``root``: in its git directory, else in the ``.wiki/`` state dir.

    ``wiki step`` and ``wiki unblock`` take it; a second holder exits "locked".
    """
    import git

    try:
        return Path(git.Repo(root).git_dir) / LOCK_NAME
    except (git.exc.InvalidGitRepositoryError, git.exc.NoSuchPathError):
        state_dir = root / ".wiki"
        state_dir.mkdir(exist_ok=True)
        return state_dir / LOCK_NAME


def run_step(root: Path, *, dry_run: bool = False, clock: Callable[[], dt.datetime] = utcnow, mode: str | None = None,
             **backends):
    """One wake of whatever memory names (see the module docstring)."""
    from filelock import FileLock, Timeout

    from wikiengine.lane_session import state_mode

    root = Path(root)
    name = mode or state_mode(root)
    if name is None:
        raise WikiError("memory/STATE.md does not exist: start a lane (wiki loop start), a kernel session (wiki kernel start) "
                        "or a relay run (wiki init --memory)")
    chosen = MODES[name]()
    lock = FileLock(str(lock_path(root)))
    try:
        lock.acquire(timeout=0)
    except Timeout:
        return chosen.locked()
    try:
        return chosen.wake(root, dry_run=dry_run, clock=clock, **backends)
    finally:
        lock.release()
