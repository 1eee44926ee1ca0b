"""Act: the effects of a decision, each idempotent and written ahead.

A launch is three acts with a memory commit between them:

1. :func:`book`: the claim (job id, ledger row, time) in STATE.md and the ``booked``
   ledger row in QUOTA.md, committed *before* the backend is asked (seed section 3:
   "Book the ledger row first"; RELIABILITY rows 22, 30);
2. :func:`launch`: the bootstrap rendered for this launch (only line 13 changes)
   submitted through the compute backend;
3. :func:`record`: the returned ref in ASSETS.md, the claim cleared, the next check time.

A wake that dies between 1 and 3 leaves a claim; the next wake looks the job up at the
backend (decide's ``adopt``) or, when the backend provably never saw it, closes the
row as ``unspent`` (:func:`release`) before booking again.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from pathlib import Path

from wikiengine.core.clock import utc_date, utc_iso
from wikiengine.core.errors import Refused, WikiError
from wikiengine.executors.compute import CapacityError, ComputeBackend, LaunchRecord, LaunchRequest, Quota, SessionState
from wikiengine.model import memory
from wikiengine.model.state import Claim, RelayState
from wikiengine.step.relay.decide import Decision, SessionView


class LaunchRefused(Refused):
    """The backend refused the launch for capacity: infrastructure, the row closes unspent (row 25)."""


def cpu_alternative(steps: int) -> str:
    """The seed's CPU-alternative check, as a ledger cell."""
    return f"none: {steps} steps of real training"


def book(root: Path, state: RelayState, job: str, quota: Quota, steps: int, now: dt.datetime) -> RelayState:
    """Write the claim into STATE.md and append the ``booked`` ledger row; return the new state."""
    row = memory.append_ledger_row(root, utc_iso(now), job, round(quota.left_hours, 2), cpu_alternative(steps),
                                   "booked")
    return dataclasses.replace(state, claim=Claim(job, row.row, utc_iso(now)))


def release(root: Path, state: RelayState, quota: Quota | None, now: dt.datetime, why: str) -> RelayState:
    """Close the claimed booking with an ``unspent`` row (same job) and clear the claim."""
    claim = state.claim
    booked = next((r for r in memory.read_ledger(root) if r.row == claim.row), None)
    hours = quota.left_hours if quota is not None else (booked.live_hours_left if booked else 0.0)
    memory.append_ledger_row(root, utc_iso(now), claim.job, round(hours, 2), why, "unspent")
    return dataclasses.replace(state, claim=None)


def bootstrap_text(config: dict, quota_left_hours: float) -> str:
    """The bootstrap of one launch: the run's pins, line 13 set to the live hours, checked."""
    from wikiengine.training.launch import bootstrap_template, check_rendered, pin_bootstrap, render_bootstrap

    pins = config.get("bootstrap")
    if not pins:
        raise WikiError("the run config has no bootstrap block (repo, rev, launcher_sha256): nothing pinned to launch")
    try:
        pinned = pin_bootstrap(bootstrap_template(), pins["repo"], pins["rev"], pins["launcher_sha256"],
                               list(pins.get("session_args", [])))
    except ValueError as exc:
        raise WikiError(f"the bootstrap pins are invalid: {exc}") from None
    try:
        text = render_bootstrap(pinned, f"{max(0.0, quota_left_hours):.2f}")
        check_rendered(pinned, text)
    except ValueError as exc:
        raise WikiError(f"the bootstrap cannot be rendered: {exc}") from None
    return text


def launch(compute: ComputeBackend, config: dict, slug: str, script_text: str) -> LaunchRecord:
    """Submit the session with its rendered bootstrap; CapacityError becomes :class:`LaunchRefused`.
    Other errors propagate (the launch may have happened: the claim stays, the next wake looks it up)."""
    request = LaunchRequest(slug=slug, script_text=script_text,
                            session_timeout_s=int(config.get("session_timeout_s", 25200)),
                            title=slug.split("/")[-1])
    try:
        return compute.launch(request)
    except CapacityError as exc:
        raise LaunchRefused(str(exc)[:200]) from None


def record(root: Path, state: RelayState, job: str, launched: LaunchRecord, accelerator: str,
           next_check_at: dt.datetime | None) -> RelayState:
    """Record the launch in ASSETS.md; clear the claim; this job is now the last session."""
    memory.append_asset_row(root, job, launched.ref, launched.version, launched.kernel_id,
                            utc_iso(launched.submitted_at), accelerator)
    number = int(job.rsplit("-", 1)[-1])
    return dataclasses.replace(state, claim=None, session=max(state.session, number),
                               next_check_at=utc_iso(next_check_at) if next_check_at else state.next_check_at)


def adopt(root: Path, state: RelayState, claimed: SessionView, accelerator: str, now: dt.datetime) -> RelayState:
    """Record a launch an earlier wake made but did not record (found at the backend by its slug),
    with the version and kernel id the backend reports for it."""
    submitted = claimed.submitted_at or claimed.started_at or now
    launched = LaunchRecord(ref=claimed.ref, version=claimed.version, kernel_id=claimed.kernel_id,
                            submitted_at=submitted)
    return record(root, state, state.claim.job, launched, accelerator, None)


def book_spent(root: Path, view: SessionView, quota: Quota | None, now: dt.datetime) -> bool:
    """Append a ``spent`` row for a session that ran and ended: each ``booked`` row of a job gets
    exactly one outcome row, so a booking closed ``unspent`` by mistake (a claim released while
    the launch had landed) and then booked again still gets the outcome of the session that ran.
    The ``cpu_alternative`` cell repeats the booking's check; the hours used go to the exit record."""
    rows = [r for r in memory.read_ledger(root) if r.job == view.job]
    booked = [r for r in rows if r.outcome == "booked"]
    if len(booked) <= sum(1 for r in rows if r.outcome in ("spent", "unspent")):
        return False
    left = quota.left_hours if quota is not None else booked[-1].live_hours_left
    memory.append_ledger_row(root, utc_iso(now), view.job, round(left, 2), booked[-1].cpu_alternative, "spent")
    return True


def record_exit(root: Path, view: SessionView) -> bool:
    """Write an ended session's exit record to ASSETS.md once (False when already there or not ended)."""
    if not view.state.ended or view.state == SessionState.GONE or view.job in memory.read_exit_records(root):
        return False
    start, end = view.started_at or view.submitted_at, view.ended_at
    used = (end - start).total_seconds() / 3600 if start and end else None
    record = view.record
    memory.append_exit_record(root, view.job, view.state.value, utc_iso(start) if start else None,
                              utc_iso(end) if end else None, used, record.start_step if record else None,
                              record.end_step if record else None, view.reason or view.state.value)
    return True


def record_emergencies(root: Path, state: RelayState, decision: Decision, now: dt.datetime) -> RelayState:
    """Write each emergency to ERRORS.md with its evidence and block the run in STATE.md."""
    from wikiengine.core.secrets import redact

    for emergency in reversed(decision.emergencies):  # newest first: the first emergency ends on top
        memory.prepend_error(root, utc_date(now), emergency.kind, redact(emergency.summary), state.run,
                             decision.step if decision.step is not None else "none", "blocked: no launch",
                             redact(emergency.evidence))
    first = decision.emergencies[0]
    return dataclasses.replace(state, status="blocked", blocker=redact(f"{first.kind}: {first.summary}")[:500])


def next_command() -> str:
    """The exact command the next wake runs (from the wiki repository)."""
    return "wiki step"
