"""Decide: a pure function from what one wake observed and what memory says to a Decision.

Read it next to seed section 2 (the three states) and section 5 (the emergencies):

- a session is alive                      -> ``running``: report the step, do nothing (whatever
  its age: past the timeout it is reported overdue, without pointer progress stalled;
  a live session is never launched over);
- the session ended, pointer short of max -> ``launch`` session k+1 from the pointer;
- ``latest -> max_steps``                 -> ``finish`` (verify, publish, eval, report);
- the quota cannot fund the next session  -> ``park`` until the reset;
- any emergency of :data:`EMERGENCIES`    -> ``blocked``: write the evidence, launch nothing,
  and cancel a live session (seed section 5: "stop everything").

Two more answers keep the loop safe: ``wait`` (the store, the session or the quota could
not be read: unknown is never "gone", "exhausted" or "funded") and ``adopt`` (a launch
claimed by a crashed wake is found at the backend and recorded instead of relaunched).
No I/O here: the clock is an input (``Observations.now``), so every row of the seed is a
table-driven test.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass

from wikiengine.core.errors import WikiError
from wikiengine.executors.compute import Quota, SessionState
from wikiengine.model.journal import MET, PENDING, SEEN, UNKNOWN, UNSEEN, Expectation
from wikiengine.step.relay.records import CORRUPT_REASON, SessionRecord

# ---------------------------------------------------------------- inputs


_COUNTS = ("max_steps", "save_steps", "session_steps", "tokens_per_step", "samples_per_step")


def _exact_int(config: dict, key: str) -> int:
    """A count from the config as an exact int: JSON Schema's draft 7 accepts ``3814.0`` as an
    integer, but the step arithmetic is exact (RELIABILITY row 10), so a float or bool is refused."""
    value = config[key]
    if type(value) is not int:
        raise WikiError(f"run config {key} must be a whole number written without a decimal point, not {value!r}")
    return value


@dataclass(frozen=True)
class Settings:
    """The run's arithmetic and policies, from the program's config block."""

    max_steps: int
    save_steps: int
    session_steps: int
    tokens_per_step: int
    samples_per_step: int
    dataset_files_sha: str | None = None
    shuffle_perm_sha: str | None = None
    session_hours: float = 7.0  # the worst-case hours of one full session
    reserve_hours: float = 0.0  # kept back on top of a session
    session_timeout_s: int = 25200
    crash_window_s: float = 120.0  # "exits inside ~2 min"
    clock_slack_s: float = 30.0
    max_clock_skew_s: float = 3600.0  # how far the agent's clock may be from the platform's
    claim_ttl_s: float = 600.0  # how long a claimed launch may stay invisible at the backend
    check_every_s: float = 1800.0
    loss_sigma: float = 6.0  # a jump beyond this many sigmas of step-to-step noise is a discontinuity
    stall_after_saves: float = 3.0  # alive with no pointer progress for this many save intervals: stalled
    accelerator: str = "gpu"

    @staticmethod
    def from_config(config: dict) -> Settings:
        """Settings from a validated run config (``quota``, ``relay`` and ``compute`` blocks)."""
        quota = config.get("quota") or {}
        relay = config.get("relay") or {}
        compute = config.get("compute") or {}
        timeout = int(config.get("session_timeout_s", 25200))
        counts = {key: _exact_int(config, key) for key in _COUNTS}
        return Settings(
            **counts,
            dataset_files_sha=config.get("dataset_files_sha") or None,
            shuffle_perm_sha=config.get("shuffle_perm_sha") or None,
            session_hours=float(quota.get("session_hours", timeout / 3600)),
            reserve_hours=float(quota.get("reserve_hours", 0.0)),
            session_timeout_s=timeout,
            crash_window_s=float(relay.get("crash_window_s", 120.0)),
            clock_slack_s=float(relay.get("clock_slack_s", 30.0)),
            max_clock_skew_s=float(relay.get("max_clock_skew_s", 3600.0)),
            claim_ttl_s=float(relay.get("claim_ttl_s", compute.get("claim_ttl_s", 600.0))),
            check_every_s=float(relay.get("check_every_s", 1800.0)),
            loss_sigma=float(relay.get("loss_sigma", 6.0)),
            stall_after_saves=float(relay.get("stall_after_saves", 3.0)),
            accelerator=str(compute.get("accelerator", "gpu")),
        )


@dataclass(frozen=True)
class Finding:
    """One failed check of seed section 1 (or of the store's integrity)."""

    check: str  # e.g. "cursor.json.tokens_consumed"
    emergency: str | None  # a key of EMERGENCIES, or None for a warning that does not block
    detail: str  # both values, one line


@dataclass(frozen=True)
class SessionView:
    """What the compute backend says about one launch (server times, never the agent's clock)."""

    job: str
    ref: str
    state: SessionState
    submitted_at: dt.datetime | None = None
    started_at: dt.datetime | None = None
    ended_at: dt.datetime | None = None
    reason: str | None = None  # why it ended: the exit record, else the failure message or the exit code
    record: SessionRecord | None = None  # what the session's own log recorded (ended sessions; None: unread)
    version: int | None = None
    kernel_id: str | None = None

    @property
    def corrupt(self) -> bool:
        """It refused because the checkpoint failed verification: no retry can fix that (seed section 3)."""
        return self.record is not None and self.record.reason == CORRUPT_REASON


@dataclass(frozen=True)
class Observations:
    """Everything one wake saw, read only, store reads pinned to ``store_head``."""

    now: dt.datetime
    store_head: str | None  # None: the store could not be read (unknown)
    pointer_step: int | None  # None: no pointer yet (a fresh store), or unreadable (see findings)
    findings: tuple[Finding, ...] = ()
    history_rewritten: bool = False
    last_session: SessionView | None = None  # the last recorded launch
    previous_session: SessionView | None = None  # the one before it (crash-loop check)
    claimed: SessionView | None = None  # the backend's view of an unrecorded claim (GONE: never seen)
    quota: Quota | None = None  # None: unreadable (unknown)
    plan_steps: int | None = None  # the planner's steps to run from the pointer
    plan_problems: tuple[str, ...] = ()  # the planner's own cross-check
    immutable_edits: tuple[str, ...] = ()  # immutable pages changed since the trusted commit
    store_error: str | None = None
    quota_error: str | None = None
    pointer_moved_at: dt.datetime | None = None  # the store's time of the current pointer commit
    save_interval_s: float | None = None  # the median gap between pointer commits (the store's clock)


@dataclass(frozen=True)
class Memory:
    """The parts of memory/STATE.md that decide reads."""

    status: str
    session: int
    last_seen_step: int
    high_water_step: int
    blocker: str | None = None
    claim_job: str | None = None
    claimed_at: dt.datetime | None = None
    store_head: str | None = None
    reset_at: str | None = None
    unblocked_session: int = 0  # launches up to this one were judged before a person cleared a blocker


# ---------------------------------------------------------------- output


@dataclass(frozen=True)
class Emergency:
    """A relay emergency: what kind, one line for ERRORS.md, and the values behind it."""

    kind: str
    summary: str  # one line for the ERRORS.md heading and the blocker
    evidence: str  # the values, both sides


@dataclass(frozen=True)
class Decision:
    """What a relay wake decided, and why."""

    kind: str  # running | launch | adopt | finish | complete | park | blocked | wait
    reasons: tuple[str, ...]
    step: int | None  # the pointer step this decision stands on
    job: str | None = None  # the launch's job id (launch/adopt)
    steps_to_run: int | None = None
    needed_hours: float | None = None
    release_claim: bool = False  # close an unrecorded claim as unspent before acting
    emergencies: tuple[Emergency, ...] = ()
    next_check_at: dt.datetime | None = None
    reset_at: dt.datetime | None = None
    job_released: str | None = None  # the claim closed as unspent
    cancel: SessionView | None = None  # a live session a block stops through the backend (seed section 5)

    @property
    def actions(self) -> list[str]:
        """What act will do, in order (empty: nothing)."""
        planned = [f"close the claim of {self.job_released} as unspent"] if self.release_claim else []
        if self.kind == "launch":
            planned += [f"book ledger row for {self.job}", f"launch {self.job} ({self.steps_to_run} steps)",
                        f"record {self.job} in ASSETS.md"]
        elif self.kind == "adopt":
            planned += [f"record the in-flight {self.job} in ASSETS.md"]
        elif self.kind == "finish":
            planned += ["verify every kept checkpoint and final/", "publish in a clean room", "run the eval plan",
                        "fill the report", "set STATE.md complete"]
        elif self.kind == "park":
            planned += ["write the resume step, the reset instant and the next command into STATE.md"]
        elif self.kind == "blocked" and self.emergencies:
            planned += [f"write {e.kind} to ERRORS.md and STATE.md" for e in self.emergencies]
        if self.cancel is not None:
            planned += [f"cancel the live {self.cancel.job} ({self.cancel.ref}) through the backend"]
        return planned


# ---------------------------------------------------------------- the emergencies of seed section 5

Predicate = Callable[[Observations, Memory, Settings], "Emergency | None"]


def _pointer_backwards(obs: Observations, mem: Memory, settings: Settings) -> Emergency | None:
    """Below the high-water mark, or below what the store's history or a session's exit record shows."""
    lines = [f"{f.check}: {f.detail}" for f in obs.findings if f.emergency == "pointer_backwards"]
    if obs.pointer_step is not None and obs.pointer_step < mem.high_water_step:
        summary = f"latest -> {obs.pointer_step} is below the high-water mark {mem.high_water_step}"
        lines.insert(0, f"pointer step {obs.pointer_step}; high-water step {mem.high_water_step} (memory/STATE.md); "
                        f"store head {obs.store_head}")
    elif lines:
        summary = lines[0]
    else:
        return None
    return Emergency("pointer_backwards", summary, "\n".join(lines))


def _history_rewritten(obs: Observations, mem: Memory, settings: Settings) -> Emergency | None:
    if obs.history_rewritten:
        return Emergency("history_rewritten", "the store's history was rewritten: the last seen commit is gone",
                         f"last seen store commit {mem.store_head} is not an ancestor of head {obs.store_head}")
    return None


def _from_findings(kind: str) -> Predicate:
    def predicate(obs: Observations, mem: Memory, settings: Settings) -> Emergency | None:
        found = [f for f in obs.findings if f.emergency == kind]
        if not found:
            return None
        return Emergency(kind, f"{found[0].check}: {found[0].detail}",
                         "\n".join(f"{f.check}: {f.detail}" for f in found))

    return predicate


def _exited_fast(view: SessionView | None, settings: Settings) -> bool:
    # A session that completed (exit 0) ran its steps: only a failed exit can be a refusal to start;
    # and one that committed a checkpoint really ran, however soon it was killed after.
    if view is None or view.state not in (SessionState.ERROR, SessionState.CANCELLED):
        return False
    if view.record is not None and view.record.progressed:
        return False
    start = view.started_at or view.submitted_at
    if start is None or view.ended_at is None:
        return False
    # Both times come from the backend: agent clock skew cannot move this window (row 32).
    return (view.ended_at - start).total_seconds() <= settings.crash_window_s + settings.clock_slack_s


def _crash_loop(obs: Observations, mem: Memory, settings: Settings) -> Emergency | None:
    last, previous = obs.last_session, obs.previous_session
    if not (_exited_fast(last, settings) and _exited_fast(previous, settings)):
        return None
    if _session_number(previous.job) <= mem.unblocked_session:
        return None  # a person cleared this loop: only launches after that count
    if (last.reason or "") != (previous.reason or ""):
        return None
    return Emergency("crash_loop", f"{previous.job} and {last.job} both exited within "
                     f"{settings.crash_window_s:.0f} s: {last.reason}",
                     f"{previous.job} ({previous.ref}): {previous.started_at} -> {previous.ended_at}, {previous.reason}\n"
                     f"{last.job} ({last.ref}): {last.started_at} -> {last.ended_at}, {last.reason}")


def _checkpoint_corrupt(obs: Observations, mem: Memory, settings: Settings) -> Emergency | None:
    """The last session refused because its checkpoint failed verification: corruption, not a transient
    refusal (seed section 3), so it blocks at once instead of after a second launch."""
    last = obs.last_session
    if last is None or not last.corrupt or _session_number(last.job) <= mem.unblocked_session:
        return None
    return Emergency("checkpoint_corrupt", f"{last.job} refused to start: {last.record.detail}",
                     f"{last.job} ({last.ref}) ended {last.state.value} at {last.ended_at}: exit record "
                     f"{last.record.describe()}")


def _session_number(job: str) -> int:
    tail = job.rsplit("-", 1)[-1]
    return int(tail) if tail.isdigit() else 0


def _planner_disagrees(obs: Observations, mem: Memory, settings: Settings) -> Emergency | None:
    if obs.pointer_step is None and obs.plan_steps is None:
        return None
    pointer = obs.pointer_step or 0
    if pointer >= settings.max_steps:
        return None
    expected = remaining_steps(pointer, settings)
    problems = list(obs.plan_problems)
    if obs.plan_steps is not None and obs.plan_steps != expected:
        problems.append(f"the planner would run {obs.plan_steps} steps from {pointer}; the session grid says "
                        f"{expected}")
    if not problems:
        return None
    return Emergency("planner_disagrees", problems[0], "\n".join(problems))


def _immutable_edit(obs: Observations, mem: Memory, settings: Settings) -> Emergency | None:
    if not obs.immutable_edits:
        return None
    return Emergency("immutable_page_edited", f"an immutable record was edited: {obs.immutable_edits[0]}",
                     "\n".join(obs.immutable_edits))


# The emergencies, in the order of seed section 5 and then the integrity checks behind it.
EMERGENCIES: tuple[tuple[str, str, Predicate], ...] = (
    ("pointer_backwards", "The pointer moved backwards", _pointer_backwards),
    ("cursor_hash_changed", "a cursor hash changed", _from_findings("cursor_hash_changed")),
    ("token_arithmetic", "tokens != step x tokens_per_step (or samples, or global_step)",
     _from_findings("token_arithmetic")),
    ("checkpoint_corrupt", "A session refused to start because its checkpoint failed verification",
     _checkpoint_corrupt),
    ("crash_loop", "Two consecutive launches that exit inside ~2 min for the same reason", _crash_loop),
    ("loss_discontinuity", "Loss discontinuity beyond noise at a checkpoint boundary, or grad-norm moving with it",
     _from_findings("loss_discontinuity")),
    ("loss_not_finite", "The loss is NaN, Inf or missing: 'lower than before' fails closed",
     _from_findings("loss_not_finite")),
    ("planner_disagrees", "The planner's own arithmetic disagrees with the session grid", _planner_disagrees),
    ("history_rewritten", "The store's history was rewritten", _history_rewritten),
    ("checkpoint_incomplete", "The pointer names a missing, partial or altered checkpoint",
     _from_findings("checkpoint_incomplete")),
    ("checkpoint_altered", "A checkpoint's manifest differs from the digest the run recorded",
     _from_findings("checkpoint_altered")),
    ("trainer_state_mismatch", "trainer_state.json disagrees with the run", _from_findings("trainer_state_mismatch")),
    ("store_format", "latest.json, cursor.json or trainer_state.json is malformed", _from_findings("store_format")),
    ("immutable_page_edited", "An immutable page changed without the hooks", _immutable_edit),
)


def emergencies(obs: Observations, mem: Memory, settings: Settings) -> tuple[Emergency, ...]:
    """Every emergency the observations show, in table order."""
    found = (predicate(obs, mem, settings) for _, _, predicate in EMERGENCIES)
    return tuple(e for e in found if e is not None)


# ---------------------------------------------------------------- arithmetic


def session_boundaries(settings: Settings) -> list[int]:
    """The session grid: ``session_steps * k``, the last session absorbing a short remainder."""
    count = max(1, settings.max_steps // settings.session_steps)
    return [settings.session_steps * k for k in range(1, count)] + [settings.max_steps]


def remaining_steps(pointer_step: int, settings: Settings) -> int:
    """Steps from the pointer to the next session boundary (what the next session runs)."""
    return min(b for b in session_boundaries(settings) if b > pointer_step) - pointer_step


def needed_hours(steps: int, settings: Settings) -> float:
    """Hours the next session may spend (pro rata of a full session) plus the reserve."""
    return settings.session_hours * min(1.0, steps / settings.session_steps) + settings.reserve_hours


def next_reset(now: dt.datetime, quota: Quota | None) -> dt.datetime:
    """When the quota refills: the backend's answer while it is ahead, else the next Saturday 00:00 UTC
    (the seed's reset). A reset instant that has passed is never kept: the quota was read again at this
    wake and still cannot fund the session, so the park moves to the next reset."""
    if quota is not None and quota.refresh_at is not None and quota.refresh_at > now:
        return quota.refresh_at
    days = (5 - now.weekday()) % 7 or 7
    return (now + dt.timedelta(days=days)).replace(hour=0, minute=0, second=0, microsecond=0)


def _overdue(view: SessionView, obs: Observations, settings: Settings) -> bool:
    """Alive longer than the platform's timeout (with the allowance for clock skew, row 32).

    Reported, never acted on as "ended": a session the backend still calls alive may be
    running, and launching over it would make two (seed section 3). The backend enforces
    the timeout itself (the local one kills the session and records why).
    """
    start = view.started_at or view.submitted_at
    if start is None:
        return False
    age = (obs.now - start).total_seconds()
    return age > settings.session_timeout_s + settings.max_clock_skew_s + settings.clock_slack_s


def stalled_for(view: SessionView, obs: Observations, settings: Settings) -> float | None:
    """Seconds without pointer progress when that exceeds ``stall_after_saves`` save intervals, else None.

    Progress is the store's time of the current pointer commit (or the session's start, if
    later); the save interval is the median gap between pointer commits, both on the
    store's clock except ``now`` (so the skew allowance applies).
    """
    if obs.save_interval_s is None:
        return None
    since = max((t for t in (obs.pointer_moved_at, view.started_at or view.submitted_at) if t is not None),
                default=None)
    if since is None:
        return None
    idle = (obs.now - since).total_seconds()
    limit = settings.stall_after_saves * obs.save_interval_s + settings.max_clock_skew_s + settings.clock_slack_s
    return idle if idle > limit else None


# ---------------------------------------------------------------- decide


UNBLOCK_HINT = 'a person clears the blocker with `wiki unblock --reason "..."` (see memory/ERRORS.md)'


def _while_blocked(obs: Observations) -> tuple[tuple[str, ...], SessionView | None]:
    """What a blocked wake says about the last session, and the live one it stops (seed section 5)."""
    last = obs.last_session
    if last is None:
        return (), None
    if last.state.alive:
        return (f"session {last.job} ({last.ref}) is still {last.state.value}: cancel it",), last
    if last.state == SessionState.UNKNOWN:
        return (f"session {last.job} ({last.ref}): status unknown, it may still be running",), None
    return (f"session {last.job} has ended ({last.state.value})",), None


def decide(obs: Observations, mem: Memory, settings: Settings) -> Decision:
    """The decision of one wake, in the order of the module docstring: stopped (complete, blocked,
    the store unread, an emergency), a claimed launch, the last session, the next session. Each
    step answers with a Decision, or with one more reason for the steps after it."""
    check_at = obs.now + dt.timedelta(seconds=settings.check_every_s)
    stopped = _stopped(obs, mem, settings, check_at)
    if stopped is not None:
        return stopped
    reasons = _pointer_reasons(obs)
    # A launch claimed by an earlier wake but never recorded: find it before anything else (rows 22, 23).
    release = mem.claim_job is not None
    if release:
        found = _claimed_launch(obs, mem, settings, reasons, check_at)
        if isinstance(found, Decision):
            return found
        reasons += (found,)
    if obs.last_session is not None:
        found = _last_session(obs.last_session, obs, settings, reasons, check_at)
        if isinstance(found, Decision):
            return found
        reasons += (found,)
    return _next_session(obs, mem, settings, reasons, release, check_at)


def _stopped(obs: Observations, mem: Memory, settings: Settings, check_at: dt.datetime) -> Decision | None:
    """Before anything is read as the run's state: complete, blocked, an unreadable store, an emergency."""
    step = obs.pointer_step
    if mem.status == "complete":
        return Decision("complete", ("the run is complete; nothing to do",), step)
    if mem.status == "blocked":
        reasons, cancel = _while_blocked(obs)
        return Decision("blocked", (f"blocked: {mem.blocker}",) + reasons + (UNBLOCK_HINT,), step, cancel=cancel)
    if obs.store_head is None:
        return Decision("wait", (f"the store could not be read ({obs.store_error or 'unknown'}); retry next wake",),
                        step, next_check_at=check_at)
    found = emergencies(obs, mem, settings)
    if found:
        reasons, cancel = _while_blocked(obs)
        return Decision("blocked", tuple(f"emergency {e.kind}: {e.summary}" for e in found) + reasons
                        + (UNBLOCK_HINT,), step, emergencies=found, cancel=cancel)
    return None


def _pointer_reasons(obs: Observations) -> tuple[str, ...]:
    """Where the pointer stands, and the warnings that do not block."""
    where = f"latest -> {obs.pointer_step}" if obs.pointer_step is not None else "no pointer yet (a fresh store)"
    return (where,) + tuple(f"warning: {f.check}: {f.detail}" for f in obs.findings if f.emergency is None)


def _claimed_launch(obs: Observations, mem: Memory, settings: Settings, reasons: tuple[str, ...],
                    check_at: dt.datetime) -> Decision | str:
    """An unrecorded claim is an expectation (``model/journal.py``), settled by what the backend
    says of its job: wait while it is unknown or young, adopt it when it launched, else the
    reason to close it as unspent (rows 22, 23)."""
    claimed, step = obs.claimed, obs.pointer_step
    claim = Expectation("launch", mem.claim_job, mem.claimed_at.timestamp() if mem.claimed_at else None,
                        settings.claim_ttl_s)
    sighting = (UNKNOWN if claimed is None or claimed.state == SessionState.UNKNOWN
                else UNSEEN if claimed.state == SessionState.GONE else SEEN)
    now = obs.now.timestamp()
    settled = claim.settle(sighting, now)
    if settled == MET:
        return Decision("adopt", reasons + (f"{mem.claim_job} was launched by an earlier wake "
                        f"({claimed.ref}, {claimed.state.value}): record it, launch nothing",), step,
                        job=mem.claim_job, next_check_at=check_at)
    if settled == PENDING and sighting == UNKNOWN:
        return Decision("wait", reasons + (f"the claimed launch {mem.claim_job} cannot be looked up "
                        "(unknown is not gone); retry next wake",), step, next_check_at=check_at)
    if settled == PENDING:
        return Decision("wait", reasons + (f"{mem.claim_job} is claimed but not visible yet "
                        f"({claim.age(now):.0f} s < {settings.claim_ttl_s:.0f} s); launch nothing",), step,
                        next_check_at=check_at)
    return f"{mem.claim_job} was claimed {claim.age(now):.0f} s ago and never launched: close it as unspent"


def _last_session(last: SessionView, obs: Observations, settings: Settings, reasons: tuple[str, ...],
                  check_at: dt.datetime) -> Decision | str:
    """The last launch: wait while its state is unknown, report it while it is alive (seed section 3:
    never launch over a live session), else the reason saying how it ended."""
    step = obs.pointer_step
    if last.state == SessionState.UNKNOWN:
        return Decision("wait", reasons + (f"{last.job} status unknown (never read as gone); "
                        "launch nothing", ), step, next_check_at=check_at)
    if last.state.alive:
        warnings = []
        if _overdue(last, obs, settings):
            warnings.append(f"warning: {last.job} is still {last.state.value} at the backend past the session "
                            f"timeout ({settings.session_timeout_s} s): no launch while it is alive")
        idle = stalled_for(last, obs, settings)
        if idle is not None:
            warnings.append(f"warning: {last.job} is stalled: no pointer progress for {idle:.0f} s (more than "
                            f"{settings.stall_after_saves:g} save intervals of {obs.save_interval_s:.0f} s)")
        return Decision("running", reasons + tuple(warnings) + (f"session {last.job} is {last.state.value}; "
                        "nothing to do",), step, next_check_at=check_at)
    if _exited_fast(last, settings):
        return f"{last.job} exited fast ({last.reason}); one more launch, a second is a crash loop"
    if last.record is not None and last.record.describe():
        return f"{last.job} ended ({last.state.value}; {last.record.describe()})"
    return f"{last.job} ended ({last.state.value})"


def _next_session(obs: Observations, mem: Memory, settings: Settings, reasons: tuple[str, ...], release: bool,
                  check_at: dt.datetime) -> Decision:
    """No session is alive: finish at max_steps, else launch the next session if the quota funds it
    (wait while the quota is unknown, park when it cannot fund it)."""
    step, pointer = obs.pointer_step, obs.pointer_step or 0
    claim = {"release_claim": release, "job_released": mem.claim_job if release else None}
    if pointer >= settings.max_steps:
        return Decision("finish", reasons + (f"latest -> {settings.max_steps}: the run is finished",), step, **claim)
    steps_to_run = remaining_steps(pointer, settings)
    job = f"session-{mem.session + 1}"
    if obs.quota is None:
        return Decision("wait", reasons + (f"the quota could not be read ({obs.quota_error or 'unknown'}): "
                        "neither exhausted nor funded; retry next wake",), step, next_check_at=check_at, **claim)
    need = needed_hours(steps_to_run, settings)
    if obs.quota.left_hours < need:
        reset = next_reset(obs.now, obs.quota)
        return Decision("park", reasons + (f"quota {obs.quota.left_hours:.2f} h left cannot fund {job} "
                        f"({need:.2f} h with the reserve): park until {reset.isoformat()}",), step,
                        job=job, steps_to_run=steps_to_run, needed_hours=need, reset_at=reset, next_check_at=reset,
                        **claim)
    boundary = pointer + steps_to_run
    # Seed section 3: confirm within ~3 minutes that the session did not exit fast.
    confirm_at = obs.now + dt.timedelta(seconds=min(settings.check_every_s, settings.crash_window_s + 60))
    return Decision("launch", reasons + (f"launch {job}: {pointer} -> {boundary} ({steps_to_run} steps), "
                    f"quota {obs.quota.left_hours:.2f} h >= {need:.2f} h",), step, job=job,
                    steps_to_run=steps_to_run, needed_hours=need, next_check_at=confirm_at, **claim)
