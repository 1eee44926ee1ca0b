"""The compute backend interface: where a training session runs.

A backend launches one session from a script's text (the rendered bootstrap), reports
its status, its log tail and the accelerator quota, and cancels a session. Liveness
always comes from here, never from the checkpoint pointer.

How a backend says "unknown" (every backend is tested against this contract in
``tests/test_compute_contract.py``):

- ``status(ref)`` never raises for a failed call: it returns ``SessionState.UNKNOWN``.
  ``GONE`` is only for a backend that positively answers that the session does not
  exist (a 404, no record at all);
- ``list_sessions()`` raises :class:`ComputeUnavailableError` when the listing cannot be
  read; it never returns a stand-in row. A listed session whose own status cannot be
  read is listed as ``UNKNOWN``;
- ``quota()`` and ``log_tail()`` raise :class:`ComputeUnavailableError` when unreadable;
- ``cancel(ref)`` raises :class:`ComputeError` when the request fails (the next wake
  sees the session still alive and tries again).

``UNKNOWN`` never counts as "gone", never allows a launch and never closes a claim.
"""

from __future__ import annotations

import datetime as dt
import enum
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from wikiengine.executors.compute_errors import (  # noqa: F401 - compute.ComputeError, as its callers name it
    CapacityError,
    ComputeError,
    ComputeUnavailableError,
)


class SessionState(str, enum.Enum):
    QUEUED = "queued"
    RUNNING = "running"
    COMPLETE = "complete"
    ERROR = "error"
    CANCELLED = "cancelled"
    GONE = "gone"  # the backend positively says it does not exist (e.g. 404)
    UNKNOWN = "unknown"  # the backend could not be asked or did not answer clearly

    @property
    def alive(self) -> bool:
        """Queued or running: a new launch must wait."""
        return self in (SessionState.QUEUED, SessionState.RUNNING)

    @property
    def ended(self) -> bool:
        return self in (SessionState.COMPLETE, SessionState.ERROR, SessionState.CANCELLED, SessionState.GONE)


@dataclass(frozen=True)
class LaunchRequest:
    """Everything one launch needs; the backend adds its own envelope."""

    slug: str  # e.g. "owner/ounce100m-p4-session3" on Kaggle, a name locally
    script_text: str  # the rendered bootstrap, the whole body of the session
    session_timeout_s: int
    title: str | None = None  # only for a kernel that does not exist yet


@dataclass(frozen=True)
class LaunchRecord:
    """What a launch returned, as recorded in ASSETS.md."""

    ref: str  # the returned reference: always poll this, never the requested slug
    version: int | None
    kernel_id: str | None
    submitted_at: dt.datetime


@dataclass(frozen=True)
class SessionStatus:
    """What a compute backend says of a launched session."""

    state: SessionState
    started_at: dt.datetime | None = None
    ended_at: dt.datetime | None = None
    exit_code: int | None = None
    failure_message: str | None = None
    version: int | None = None  # what the backend knows of the launch (an adopted launch records them)
    kernel_id: str | None = None


@dataclass(frozen=True)
class Quota:
    """Accelerator quota in hours; ``refresh_at`` is when it resets."""

    used_hours: float
    total_hours: float
    refresh_at: dt.datetime | None

    @property
    def left_hours(self) -> float:
        return max(0.0, self.total_hours - self.used_hours)


@runtime_checkable
class ComputeBackend(Protocol):
    def launch(self, request: LaunchRequest) -> LaunchRecord:
        """Submit one session. Raises CapacityError or ComputeError."""

    def status(self, ref: str) -> SessionStatus:
        """The session's state; UNKNOWN (not an exception) when it cannot be told."""

    def log_tail(self, ref: str, lines: int = 200) -> str:
        """The last lines of the session's output log (outside text: quote it, never parse it as memory)."""

    def quota(self) -> Quota:
        """The live accelerator quota. Raises ComputeUnavailableError when unreadable."""

    def list_sessions(self) -> list[tuple[str, SessionState]]:
        """Every session of the account that the backend can see (for foreign-kernel checks).
        Raises ComputeUnavailableError when the listing cannot be read (never a stand-in row)."""

    def cancel(self, ref: str) -> None:
        """Stop the session ``ref`` (a block stops everything, seed section 5). Raises ComputeError."""
