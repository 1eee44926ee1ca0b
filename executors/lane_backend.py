"""Lane compute backends: where a lane's experiments run, and what they are as the backend sees them.

A lane's workloads are named ``<USER_PREFIX>-<MODEL_NAME>-<LANE>-v<NNN>-<slug>[-<retry>]``
(:func:`parse_workload_name`). A :class:`LaneBackend` lists them, launches one from a
:class:`LaunchSpec`, reports its status, log and artifact locations, and deletes it.
``wiki backfill`` reads :meth:`LaneBackend.list_workloads`; ``wiki step``'s lane mode
drives all of it. Three implementations:

- :class:`executors.lane_local.LocalLaneBackend`: local processes, one folder per workload
  under ``<git dir>/wiki-lane/runs/<model folder>/<lane>/`` (where ``rm`` of a work folder does not reach);
- :class:`executors.lane_gke.GkeLaneBackend`: JobSets on one GKE cluster, dispatched
  through :mod:`wikiengine.executors.gke.dispatch`;
- :class:`executors.lane_slurm.SlurmLaneBackend`: Slurm batch jobs named after the workload.

The contract every backend keeps (``tests/test_lane_backend_contract.py`` runs it on all three):

- **Unknown is never free and never gone.** :meth:`~LaneBackend.list_workloads` and
  :meth:`~LaneBackend.status` raise :class:`ComputeUnavailableError` when the backend
  cannot answer; an empty list means "no workloads" and ``status() is None`` means "this
  workload positively does not exist", and neither is ever returned for "could not tell".
- **Launch is idempotent by name.** Launching a name that exists returns the existing
  workload (adopt) and starts nothing; the same name with a different command is a
  :class:`LaunchConflict` (use the next retry suffix). The lane mode journals the launch
  first and calls launch again after a crash.
- **One run per track** (a local slot, a GKE cluster): a launch while another run holds
  it is a :class:`~wikiengine.executors.compute.CapacityError` and starts nothing.
- **Delete is idempotent** and leaves nothing of the workload running. Whether the
  record stays is the backend's: locally the folder stays (the log and artifacts feed
  the page and backfill) and the run reads ``failed`` with a reason; on GKE the JobSet
  and its pods are gone, so read the log before deleting.
- A run that ended has ``state`` ``succeeded`` (exit code 0) or ``failed`` (a non-zero
  ``exit_code``, or None when no process reported one, and a ``reason`` when the backend
  knows more: timed out, deleted, its runner killed); in flight is ``queued`` or
  ``running``, or ``retrying`` (the backend restarts it by itself after a preemption).
  A run the infrastructure took away and nothing restarts is ``preempted``: neither
  finished nor a crash; the lane re-dispatches it under the same name with
  ``LaunchSpec.attempt`` above the workload's ``attempt`` (:mod:`executors.preemption`).
  Any other state (a record another tool wrote) is neither: treat it as unknown.
  ``progress_at`` is the last sign of life (the lane mode kills a run whose progress
  is older than its hang limit). ``started``, ``finished`` and ``chips`` are the
  backend's own: the lane journals them at completion, and ``max_chip_hours`` burns them.

Log text comes from outside: quote it, never parse it as memory.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from wikiengine.executors.clean_room import is_secret_name
from wikiengine.executors.compute_errors import ComputeError, ComputeUnavailableError

IN_FLIGHT = ("queued", "running", "retrying")  # retrying: the backend restarts it itself
PREEMPTED = "preempted"  # ended by the infrastructure, not the run: the lane re-dispatches it (executors/preemption.py)
FINISHED = ("succeeded", "failed")
# The keys of LaneBackend.artifacts() and the variables a run finds them in.
ARTIFACT_ENV = {"artifact_dir": "ARTIFACT_DIR", "metrics": "METRICS_PATH", "xprof": "XPROF_PATH", "hlo": "HLO_PATH"}
ARTIFACT_KEYS = tuple(ARTIFACT_ENV)
# Variables the backend sets for every run; a spec cannot redirect them.
RESERVED_ENV = frozenset(ARTIFACT_ENV.values()) | {"PROGRESS_PATH", "WORKLOAD_NAME", "TRACK", "EXP_SLUG",
                                                   "GCS_ROOT"}
_ID = r"-(?P<vid>v\d{3,})-(?P<slug>[a-z0-9][-a-z0-9]*?)(?:-(?P<retry>[b-z]))?"  # -v<NNN>-<slug>[-<retry>]
_VID_RE = re.compile(_ID + "$")
_NAME_ID_RE = re.compile("^.*" + _ID + "$")  # the last -v<NNN>- of a name

__all__ = [
    "ARTIFACT_ENV", "ARTIFACT_KEYS", "FINISHED", "IN_FLIGHT", "RESERVED_ENV", "ComputeUnavailableError",
    "LaneBackend", "LaneWorkload", "LaunchConflict", "LaunchSpec", "WorkloadNotFound", "check_spec",
    "parse_workload_name", "split_workload_name",
]


class LaunchConflict(ComputeError):
    """A different workload already holds this name: launch under the next retry suffix."""


class WorkloadNotFound(ComputeError):
    """The backend positively has no workload of this name (asked for its log or artifacts)."""


@dataclass(frozen=True)
class LaneWorkload:
    """One workload as its backend reports it (times are ISO 8601 strings in UTC)."""

    name: str
    vid: str  # v012, or v012b for a retry
    slug: str
    state: str  # queued | running | succeeded | failed (see the module docstring)
    exit_code: int | None
    started: str | None
    finished: str | None
    log_tail: str  # the log's last 200 lines (GKE: once finished, "" before; a GKE listing reads it for a crashed run only)
    progress_at: str | None = None  # the last progress signal (progress file, log write, condition change)
    reason: str | None = None  # why it failed, timed out, was deleted, or cannot be judged yet
    pid: int | None = None  # local: the run's process; None on GKE
    command: str | None = None  # the command that ran, shlex-joined (for the page's Setup)
    chips: int | None = None  # the accelerator chips the run holds (local: its one slot; GKE: the slice's chips)
    attempt: int = 1  # how many times it started (re-dispatches after preemption, scheduler restarts)
    elapsed_s: float | None = None  # how long it has run by the backend's own clock (local: CLOCK_MONOTONIC), if known

    @property
    def is_finished(self) -> bool:
        return self.state in FINISHED

    @property
    def in_flight(self) -> bool:
        return self.state in IN_FLIGHT

    @property
    def crashed(self) -> bool:
        return self.state == "failed" or (self.state != PREEMPTED and self.exit_code not in (None, 0))


@dataclass(frozen=True)
class LaunchSpec:
    """One run to launch. ``argv`` is executed as given (no shell); ``env`` adds variables
    that are never credentials; ``artifact_dir`` is where the run writes metrics.json,
    its profile and HLO dump (default: the backend's place for this workload)."""

    name: str  # the workload name, <USER_PREFIX>-<MODEL_NAME>-<LANE>-v<NNN>-<slug>[-<retry>]
    vid: str  # v012 or v012b
    slug: str
    track: int
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    artifact_dir: str | None = None
    timeout_s: float = 3600.0
    attempt: int = 1  # > the workload's attempt: relaunch a preempted workload of this name


@runtime_checkable
class LaneBackend(Protocol):
    """Where a lane's runs happen (see the module docstring for the contract)."""

    def list_workloads(self, prefix: str) -> list[LaneWorkload]:
        """This lane's workloads (``prefix`` is ``<USER_PREFIX>-<MODEL_NAME>-<LANE>``), by name.
        Raises ComputeUnavailableError when the listing cannot be read."""

    def launch(self, spec: LaunchSpec) -> LaneWorkload:
        """Start the run, or adopt the one of that name. Raises LaunchConflict, CapacityError (the
        track is busy), ComputeError (a bad spec: nothing written) or ComputeUnavailableError
        (the outcome is unknown: re-read, then re-call)."""

    def status(self, name: str) -> LaneWorkload | None:
        """The workload, or None when it positively does not exist. Raises ComputeUnavailableError."""

    def logs(self, name: str, tail: int = 200) -> str:
        """The last ``tail`` lines of the run's log, joined by newlines ("" when none yet).
        Raises WorkloadNotFound."""

    def delete(self, name: str) -> None:
        """Stop the run; nothing of it keeps running. Deleting twice or a missing name is a no-op;
        a backend that cannot tell whether it worked raises ComputeUnavailableError."""

    def artifacts(self, name: str) -> dict[str, str]:
        """Where the run writes: ``artifact_dir``, ``metrics`` (metrics.json), ``xprof``, ``hlo``."""


def parse_workload_name(name: str, prefix: str) -> tuple[str, str] | None:
    """``(vid, slug)`` of a workload of this lane (``prefix`` is ``<USER_PREFIX>-<MODEL_NAME>-<LANE>``)."""
    if not name.startswith(prefix + "-"):
        return None
    match = _VID_RE.search(name[len(prefix) :])
    if match is None or match.start() != 0:
        return None
    return match.group("vid") + (match.group("retry") or ""), match.group("slug")


def split_workload_name(name: str) -> tuple[str, str]:
    """``(vid, slug)`` of any workload name (the last ``-v<NNN>-`` in it); ``("", name)`` when it has none."""
    match = _NAME_ID_RE.match(name)
    if match is None:
        return "", name
    return match.group("vid") + (match.group("retry") or ""), match.group("slug")


def check_spec(spec: LaunchSpec) -> None:
    """Refuse a spec that cannot run or would pass a credential on (ComputeError; nothing is written)."""
    if not spec.argv or not all(isinstance(arg, str) for arg in spec.argv):
        raise ComputeError(f"{spec.name}: argv must be a non-empty list of strings")
    for name, value in spec.env.items():
        if is_secret_name(name):
            raise ComputeError(f"{spec.name}: {name} looks like a credential and is never passed to a run")
        if name in RESERVED_ENV:
            raise ComputeError(f"{spec.name}: {name} is set by the backend (use artifact_dir to move the artifacts)")
        if not isinstance(value, str):
            raise ComputeError(f"{spec.name}: env {name} must be a string")
    if not spec.timeout_s > 0:
        raise ComputeError(f"{spec.name}: timeout_s must be positive")

