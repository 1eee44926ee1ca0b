"""`wiki step`: one engine, two modes.

The engine reads which mode ``memory/STATE.md`` names (a relay run, seed 000, or a lane
session, seeds 001/003: ``mode: lane``), holds the wake lock, and runs that mode's wake:
observe, a pure decide, act, write memory, commit, and a JSON result. A wake that finds
the lock held does nothing and says so.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Callable

from wikiengine.errors import WikiError


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


def run_step(root: Path, *, dry_run: bool = False, clock: Callable[[], dt.datetime] = utcnow, **backends):
    """One wake of whatever memory names (see the module docstring)."""
    from wikiengine.lane_session import state_mode

    mode = state_mode(root)
    if mode is None:
        raise WikiError("memory/STATE.md does not exist: start a lane (wiki loop start) or a relay run (wiki init --memory)")
    if mode == "lane":
        from wikiengine import lane_mode

        return lane_mode.wake(root, dry_run=dry_run, clock=clock, backend=backends.get("backend"))
    from wikiengine.relay import step

    return step.run_step(root, dry_run=dry_run, clock=clock, store=backends.get("store"), compute=backends.get("compute"))
