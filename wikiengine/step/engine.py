"""`wiki step`: one wake skeleton, run for every mode.

``memory/STATE.md`` names what the wake drives: a relay run (seed 000), a lane session
(``mode: lane``, seeds 001/003) or a kernel session (``mode: kernel``, seed 003 Step 1).
:func:`run_step` holds the one wake lock (a second wake answers "locked", exit 0, and does
nothing) and runs :data:`WAKE`, the same phases in the same order for every mode:

==========  =====================================================================  ========
phase       what it does                                                           dry run
==========  =====================================================================  ========
recover     finish (redo) or discard (undo) the write a killed wake left           skipped
load        read STATE.md and the program; a session that is not running ends here runs
sanity      refuse an unresolved merge, a stale index lock, the mode's own files   skipped
            with uncommitted changes (strays elsewhere are never committed)
reconcile   bring the record up to the world first (a lane's backfill)             skipped
observe     read the world: store, backend, journal, pages (read only)             runs
decide      a pure function of what was observed and what memory says              runs
act         the mode's acts, looked up by decision: a request to a backend is        planned
            committed first (the expectation), what the acts learned after, each
            through the one write transaction (``step/txn.py``)
needs       what the agent owes, with its inputs and the exact command             runs
record      STATE.md and the heartbeat; one commit when something material changed skipped
==========  =====================================================================  ========

A mode declares its phases as data (:class:`Mode`), the way markdown-it-py declares its
rule chains; the modes sit above the engine and are loaded by name (:data:`MODES`), so the
engine never imports a mode. Every mode answers with one :class:`~wikiengine.step.result.WakeResult`.
"""

from __future__ import annotations

import datetime as dt
import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from wikiengine.core.clock import Clock, utcnow
from wikiengine.core.errors import WikiError
from wikiengine.step.result import WakeResult, locked_result

MIN_WAKE_S, MAX_WAKE_S = 120, 600  # the seed's bounds of the next wake, in every mode
LOCK_NAME = "wiki-step.lock"  # inside .git (or the .wiki/ state dir): never a stray file in the work tree

# mode -> the module that declares it (as ``MODE``). Modes sit above the engine and are
# loaded by name, as the rule registry loads rules: the engine never imports a mode.
MODES: dict[str, str] = {
    "relay": "wikiengine.step.relay.wake",
    "lane": "wikiengine.step.lane.wake",
    "kernel": "wikiengine.step.kernel.wake",
}


@dataclass
class Wake:
    """One wake in progress: what the phases read and fill in."""

    root: Path
    dry_run: bool
    clock: Clock
    backends: dict
    result: WakeResult
    run: object = None  # what ``load`` found (the mode's own record)
    observed: object = None
    decided: object = None
    recovered: list[str] = field(default_factory=list)  # what ``recover`` finished or discarded
    over: bool = False  # a phase ended the wake (nothing to drive)

    def end(self) -> None:
        self.over = True


Phase = Callable[[Wake], None]


def _nothing(wake: Wake) -> None:
    return None


@dataclass(frozen=True)
class Mode:
    """A mode of `wiki step`: its name and one function per phase of :data:`WAKE`."""

    name: str
    load: Phase
    observe: Phase
    decide: Phase
    act: Phase
    record: Phase
    recover: Phase = _nothing
    owned_paths: Callable[[Wake], list[str]] = lambda wake: []  # the files it writes: refused when dirty
    reconcile: Phase = _nothing
    needs: Phase = _nothing


def sanity(mode: Mode, wake: Wake) -> None:
    """Refuse to write into a repository mid-merge, with a stale index lock, or over
    uncommitted changes to the files this mode writes (RELIABILITY rows 35-37)."""
    from wikiengine.core.git import CommitProbe, check_repository

    probe = CommitProbe(wake.root, mode.owned_paths(wake))  # both questions asked of git at once
    try:
        dirty = probe.changed()
        if dirty:
            raise WikiError(f"{dirty[0]} has uncommitted changes: commit or revert them before wiki step writes "
                            "memory")
        check_repository(wake.root, probe)
    finally:
        probe.close()


# (phase, runs on a dry run)
WAKE: tuple[tuple[str, bool], ...] = (
    ("recover", False),
    ("load", True),
    ("sanity", False),
    ("reconcile", False),
    ("observe", True),
    ("decide", True),
    ("act", True),  # a dry run's act only says what it would do (wake.dry_run)
    ("needs", True),
    ("record", False),
)


def wake(mode: Mode, root: Path, *, dry_run: bool = False, clock: Clock | None = None, **backends) -> WakeResult:
    """One wake of ``mode`` (without the lock: :func:`run_step` holds it)."""
    state = Wake(Path(root), dry_run, clock or utcnow, backends, WakeResult(mode.name, "unknown", mode.name))
    for name, on_dry_run in WAKE:
        if dry_run and not on_dry_run:
            continue
        if name == "sanity":
            sanity(mode, state)
        else:
            getattr(mode, name)(state)
        if state.over:
            break
    return state.result


def load_mode(name: str) -> Mode:
    return importlib.import_module(MODES[name]).MODE


def lock_path(root: Path) -> Path:
    """The one-wake-at-a-time lock of ``root``: in its git directory, else in the ``.wiki/`` state dir.

    ``wiki step`` and ``wiki unblock`` take it; a second holder exits "locked".
    """
    from wikiengine.core.git import GitCommitError, git_dir

    try:
        return git_dir(root) / LOCK_NAME
    except GitCommitError:
        state_dir = root / ".wiki"
        state_dir.mkdir(exist_ok=True)
        return state_dir / LOCK_NAME


def run_step(root: Path, *, dry_run: bool = False, clock: Callable[[], dt.datetime] | None = None,
             mode: str | None = None, **backends) -> WakeResult:
    """One wake of whatever memory names (see the module docstring), under the wake lock."""
    from wikiengine.core.locks import try_hold
    from wikiengine.model.state import state_mode

    root = Path(root)
    name = mode or state_mode(root)
    if name is None:
        raise WikiError("memory/STATE.md does not exist: start a lane (wiki loop start), a kernel session (wiki kernel start) "
                        "or a relay run (wiki init --memory)")
    chosen = load_mode(name)
    lock = try_hold(lock_path(root))
    if lock is None:
        return locked_result(name)
    with lock:
        return wake(chosen, root, dry_run=dry_run, clock=clock, **backends)
