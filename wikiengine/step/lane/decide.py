"""What one lane wake does for each track: a pure function of journal, backend and pages.

Seed 001 iteration step 2 as a table (seed 003 keeps it): for every track of the
session, from what the journal recorded (claims, dispatches, completions, kills), what
the backend says of the track's workload, and what the page says:

==============================================  ===================  =====================
page / journal                                   backend              decision
==============================================  ===================  =====================
(any)                                            cannot be read       ``wait`` (unknown)
the v-id names two pages (two clones), or       —                    ``wait`` (renumber)
another clone's workload runs under it
no experiment, or the last one is filed          —                    ``need_hypothesis``
stub open, not dispatched                        —                    ``dispatch``
stub open, dispatched, never seen launched       not found            ``dispatch`` (re-ask:
                                                                      the launch is adopted
                                                                      by name, never doubled)
stub open, dispatched                            retrying (the        ``wait`` (not a crash)
                                                 backend restarts it)
stub open, dispatched                            preempted            ``redispatch`` (the
                                                                      same v-id, the next
                                                                      attempt; not a crash)
stub open, dispatched, seen launched             not found            ``wait`` (unknown);
                                                                      ``kill`` once past
                                                                      ``ceiling_s``
stub open, dispatched                            running, progress    ``skip``
stub open, dispatched                            running, no progress ``kill`` (hung)
                                                 for ``hung_after_s``
stub open, dispatched                            running past         ``kill`` (ceiling)
                                                 ``ceiling_s``
stub open, dispatched, not yet processed         finished, or killed  ``process``
stub open, processed                             (any)                ``need_verdict``
==============================================  ===================  =====================

A track's experiment is the one its queue runs (:mod:`wikiengine.model.lane_queue`: one
v-id per track, the others wait, first in, first out).

Budgets come last (:func:`budget_track`): past a budget of the program's ``## Config``
(:mod:`wikiengine.model.budgets`), a new ``dispatch`` or ``aa_dispatch`` becomes ``budget``
(nothing is asked of the backend), and no more new experiments are dispatched in one wake
than ``max_experiments`` leaves. A dispatch already journalled is re-asked all the same:
it was spent when it was first asked.

The lane's A/A noise band comes first (:func:`calibrate_track`): a stub whose frontier has
no measured band in this session is not dispatched; its track runs one of the ``k`` A/A runs
of the unchanged frontier instead (``aa_dispatch``), or waits for the others. An A/A run on
a track is watched like any run: ``aa_process`` when it ended, ``aa_kill`` when it hung or
passed the ceiling, ``aa_dispatch`` again (same name) when the backend lost it.

:func:`next_wake_s` clamps the next wake to 120..600 s, as the seed says.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from wikiengine.executors.preemption import PREEMPTED, RETRYING
from wikiengine.model.journal import REASK, SEEN, UNKNOWN, UNSEEN, Expectation
from wikiengine.step.engine import MAX_WAKE_S, MIN_WAKE_S


@dataclass(frozen=True)
class TrackView:
    """What one wake observed of one track (plain data; times in seconds since the epoch)."""

    track: int
    vid: str | None = None  # the track's newest claimed experiment
    page_state: str | None = None  # "open" | "filed" | "missing" | None (no claim)
    expected: Expectation | None = None  # the dispatch record: the workload asked for, by name
    processed: bool = False
    killed: bool = False
    workload: str | None = None
    backend_state: str | None = None  # running | retrying | preempted | succeeded | failed | None | "unknown"
    attempt: int = 1  # how many times the backend started the workload
    started_at: float | None = None
    progress_at: float | None = None
    elapsed_s: float | None = None  # how long it has run by the backend's own clock (None: judge by the wall clock)
    band_key: tuple | None = None  # (variant, frontier, round): the A/A band this stub waits for
    aa: AaView | None = None  # the A/A run journalled on this track and not yet processed
    launched: bool = False  # the journal recorded the backend holding the dispatched workload
    duplicate: tuple[str, ...] = ()  # the pages (or another clone's workload) the v-id names beside this one

    @property
    def sighting(self) -> str:
        """What the backend says of the expected workload."""
        return UNKNOWN if self.backend_state == "unknown" else UNSEEN if self.backend_state is None else SEEN


@dataclass(frozen=True)
class AaView:
    """One journalled A/A run: its key, index and name, and what the backend says of it."""

    key: tuple  # (variant, frontier, round)
    index: int
    workload: str
    backend_state: str | None = None  # as TrackView.backend_state
    started_at: float | None = None
    progress_at: float | None = None
    killed: bool = False
    elapsed_s: float | None = None  # as TrackView.elapsed_s


@dataclass(frozen=True)
class BandNeed:
    """Where one band's A/A runs stand: k wanted, how many succeeded, failed, are in flight."""

    k: int
    succeeded: int = 0
    failed: int = 0
    in_flight: int = 0
    next_index: int = 1

    @property
    def quota(self) -> int:
        """How many more A/A runs may start now."""
        return 0 if self.failed >= self.k else max(0, self.k - self.succeeded - self.in_flight)


@dataclass(frozen=True)
class BudgetGate:
    """What the budgets leave this wake: the spent ones (``describe`` lines) and how many new
    experiments may still be dispatched (None: no limit)."""

    spent: tuple[str, ...] = ()
    experiments_left: int | None = None


@dataclass(frozen=True)
class LaneLimits:
    """A lane's time limits: when a run counts as hung, when it is killed, how often to wake."""

    hung_after_s: float = 1800.0  # no progress signal for this long: hung
    ceiling_s: float = 6 * 3600.0  # a run past this is killed
    wake_interval_s: int = 600


@dataclass(frozen=True)
class TrackDecision:
    """What a lane wake decided for one track, and why."""

    track: int
    kind: str  # wait | need_hypothesis | dispatch | redispatch | skip | kill | process | need_verdict | budget | aa_*
    vid: str | None
    reason: str
    aa: tuple | None = None  # an A/A decision: (variant, frontier, round, index)

    def as_json(self) -> dict:
        found = {"track": self.track, "decision": self.kind, "vid": self.vid, "reason": self.reason}
        return {**found, "aa_index": self.aa[3]} if self.aa else found


@dataclass(frozen=True)
class LaneDecision:
    """What a lane wake decided for every track, and when to wake next."""

    tracks: tuple[TrackDecision, ...]
    next_wake_s: int
    disagreements: tuple[str, ...] = field(default_factory=tuple)


def decide_track(view: TrackView, now: float, limits: LaneLimits) -> TrackDecision:
    """The decision for one track (the table in the module docstring)."""

    def said(kind: str, reason: str) -> TrackDecision:
        return TrackDecision(view.track, kind, view.vid, reason)

    if view.backend_state == "unknown":
        return said("wait", "the backend cannot be read: unknown is never free and never gone")
    if view.duplicate:
        return said("wait", f"{view.vid} names more than one experiment ({', '.join(view.duplicate)}): never "
                            f"dispatched or processed until `wiki exp renumber {view.vid}` gives the later one the "
                            "next free id")
    if view.vid is None or view.page_state in ("filed", None):
        last = f"{view.vid} is filed" if view.vid else "no experiment yet"
        return said("need_hypothesis", f"track idle ({last}): a hypothesis is owed")
    if view.page_state == "missing":
        return said("need_hypothesis", f"{view.vid} was claimed but its page is gone: reconcile, then a new hypothesis")
    if view.processed:
        return said("need_verdict", f"{view.vid} ran and its results are on the page: a verdict is owed")
    if view.expected is None:
        return said("dispatch", f"{view.vid} is a stub ready to run")
    if view.killed:
        return said("process", f"{view.workload} was killed: file what it left (a crashed run)")
    state = view.backend_state
    if view.expected.settle(view.sighting, now) == REASK and view.launched:
        age = view.expected.age(now)
        if age > limits.ceiling_s:
            return said("kill", f"the backend lost {view.workload} {int(age)} s after its dispatch, past the ceiling "
                                f"of {int(limits.ceiling_s)} s: recorded killed (a crashed run)")
        return said("wait", f"the backend has no record of {view.workload}, which it launched: unknown, never gone; "
                            "never launched again (a second live run)")
    if view.expected.settle(view.sighting, now) == REASK:
        return said("dispatch", f"{view.vid} was dispatched but the backend has no {view.workload}: ask again "
                                "(a launch that landed is adopted by name)")
    if state == PREEMPTED:
        return said("redispatch", f"{view.workload} was preempted (attempt {view.attempt}): run it again as attempt "
                                  f"{view.attempt + 1} under {view.vid}; preemption is not a crash")
    if state == RETRYING:
        return said("wait", f"{view.workload} is retrying (attempt {view.attempt}): the backend restarts it itself")
    if state in ("succeeded", "failed"):
        return said("process", f"{view.workload} {state}: fill Setup and Results")
    overdue = _overdue(view.workload, view.started_at, view.progress_at, now, limits, view.elapsed_s)
    if overdue:
        return said("kill", overdue)
    return said("skip", f"{view.workload} is in flight")


def _overdue(name: str | None, started_at: float | None, progress_at: float | None, now: float,
             limits: LaneLimits, elapsed_s: float | None = None) -> str | None:
    """Why a running workload is killed (past the ceiling, or hung), else None. How long it ran
    is the backend's own measure when it has one (``elapsed_s``: a clock no one sets), and no
    run has been idle longer than it ran: a wall clock that jumped kills nothing (row 125)."""
    ran = elapsed_s if elapsed_s is not None else (now - started_at if started_at is not None else None)
    if ran is not None and ran > limits.ceiling_s:
        return f"{name} ran {int(ran)} s, past the ceiling of {int(limits.ceiling_s)} s"
    last = progress_at if progress_at is not None else started_at
    idle = None if last is None else (now - last if ran is None else min(now - last, ran))
    if idle is not None and idle > limits.hung_after_s:
        return f"{name} shows no progress for {int(idle)} s (hung after {int(limits.hung_after_s)} s)"
    return None


def calibrate_track(view: TrackView, decision: TrackDecision, now: float, limits: LaneLimits,
                    needs: dict[tuple, BandNeed]) -> TrackDecision:
    """The A/A part of a track's decision (the module docstring); ``needs`` is updated as
    this wake hands out A/A runs."""
    aa = view.aa
    if aa is not None and view.backend_state != "unknown":
        key = (*aa.key, aa.index)
        if aa.killed or aa.backend_state in ("succeeded", "failed"):
            return TrackDecision(view.track, "aa_process", view.vid, f"A/A run {aa.workload} ended: record its figure", key)
        if aa.backend_state is None:
            return TrackDecision(view.track, "aa_dispatch", view.vid, f"the backend has no {aa.workload}: ask again "
                                 "(a launch that landed is adopted by name)", key)
        overdue = _overdue(aa.workload, aa.started_at, aa.progress_at, now, limits, aa.elapsed_s)
        if overdue:
            return TrackDecision(view.track, "aa_kill", view.vid, overdue, key)
        return TrackDecision(view.track, "skip", view.vid, f"A/A run {aa.workload} is in flight", key)
    if decision.kind != "dispatch" or view.expected is not None or view.band_key is None:
        return decision
    need = needs.get(view.band_key) or BandNeed(k=0)
    if need.quota > 0:
        needs[view.band_key] = BandNeed(need.k, need.succeeded, need.failed, need.in_flight + 1, need.next_index + 1)
        return TrackDecision(view.track, "aa_dispatch", view.vid, f"{view.vid} waits for the lane's A/A noise band: "
                             f"run {need.next_index} of the unchanged frontier", (*view.band_key, need.next_index))
    return TrackDecision(view.track, "wait", view.vid, f"{view.vid} waits for the lane's A/A noise band "
                         f"({need.succeeded} of {need.k} runs measured)")


def budget_track(view: TrackView, decision: TrackDecision, gate: BudgetGate, left: list) -> TrackDecision:
    """A new dispatch past a budget becomes ``budget`` (``left``: a one-item list, the new
    experiments this wake may still hand out, spent as they are handed out)."""
    new_run = (decision.kind == "dispatch" and view.expected is None) or (decision.kind == "aa_dispatch" and view.aa is None)
    if not new_run:
        return decision
    stopped = list(gate.spent)
    if decision.kind == "dispatch" and not stopped and left[0] is not None:
        if left[0] <= 0:
            stopped.append("max_experiments: the experiments left are handed out this wake")
        else:
            left[0] -= 1
    if not stopped:
        return decision
    what = f"A/A run of {view.vid}'s frontier" if decision.kind == "aa_dispatch" else view.vid
    return TrackDecision(view.track, "budget", view.vid, f"{what} not dispatched: past the budget ({'; '.join(stopped)})")


def next_wake_s(decisions: list[TrackDecision], limits: LaneLimits) -> int:
    """The next wake: the configured interval, sooner (but not under 120 s) when a track
    waits on something that moves fast; always within 120..600 s."""
    wanted = limits.wake_interval_s
    if any(d.kind in ("dispatch", "redispatch", "process", "wait", "aa_dispatch", "aa_process") for d in decisions):
        wanted = MIN_WAKE_S
    return max(MIN_WAKE_S, min(MAX_WAKE_S, int(wanted)))


def decide(views: list[TrackView], now: float, limits: LaneLimits, disagreements: list[str] = (),
           needs: dict[tuple, BandNeed] | None = None, gate: BudgetGate = BudgetGate()) -> LaneDecision:
    """Every track's decision and the next wake (``needs``: the A/A bands stubs wait for;
    ``gate``: what the budgets leave)."""
    needs = dict(needs or {})
    left = [gate.experiments_left]
    decisions = [budget_track(v, calibrate_track(v, decide_track(v, now, limits), now, limits, needs), gate, left)
                 for v in views]
    return LaneDecision(tuple(decisions), next_wake_s(decisions, limits), tuple(disagreements))
