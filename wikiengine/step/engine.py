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
relay     :func:`wikiengine.step.relay.wake.wake`          :func:`wikiengine.step.relay.decide.decide`
lane      :func:`wikiengine.step.lane.wake.wake`           :func:`wikiengine.step.lane.decide.decide`
kernel    :func:`wikiengine.step.kernel.wake.wake`         :func:`wikiengine.step.kernel.decide.decide`
========  ==========================================  =====================================
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from wikiengine.core.errors import WikiError

MIN_WAKE_S, MAX_WAKE_S = 120, 600  # the seed's bounds of the next wake, in every mode
LOCK_NAME = "wiki-step.lock"  # inside .git (or the .wiki/ state dir): never a stray file in the work tree


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


@dataclass(frozen=True)
class Mode:
    name: str
    wake: Callable  # (root, *, dry_run, clock, **backends) -> result
    locked: Callable[[], object]  # the result of a wake that found the lock held


# mode -> the module that declares it (as ``MODE``). Modes sit above the engine and are
# loaded by name, as the rule registry loads rules: the engine never imports a mode.
MODES: dict[str, str] = {
    "relay": "wikiengine.step.relay.wake",
    "lane": "wikiengine.step.lane.wake",
    "kernel": "wikiengine.step.kernel.wake",
}


def load_mode(name: str) -> Mode:
    import importlib

    return importlib.import_module(MODES[name]).MODE


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

    from wikiengine.model.state import state_mode

    root = Path(root)
    name = mode or state_mode(root)
    if name is None:
        raise WikiError("memory/STATE.md does not exist: start a lane (wiki loop start), a kernel session (wiki kernel start) "
                        "or a relay run (wiki init --memory)")
    chosen = load_mode(name)
    lock = FileLock(str(lock_path(root)))
    try:
        lock.acquire(timeout=0)
    except Timeout:
        return chosen.locked()
    try:
        return chosen.wake(root, dry_run=dry_run, clock=clock, **backends)
    finally:
        lock.release()
