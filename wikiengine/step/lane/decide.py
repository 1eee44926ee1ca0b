"""What one lane wake does for each track: a pure function of journal, backend and pages.

Seed 001 iteration step 2 as a table (seed 003 keeps it): for every track of the
session, from what the journal recorded (claims, dispatches, completions, kills), what
the backend says of the track's workload, and what the page says:

==============================================  ===================  =====================
page / journal                                   backend              decision
==============================================  ===================  =====================
(any)                                            cannot be read       ``wait`` (unknown)
no experiment, or the last one is filed          —                    ``need_hypothesis``
stub open, not dispatched                        —                    ``dispatch``
stub open, dispatched                            not found            ``dispatch`` (re-ask:
                                                                      the launch is adopted
                                                                      by name, never doubled)
stub open, dispatched                            running, progress    ``skip``
stub open, dispatched                            running, no progress ``kill`` (hung)
                                                 for ``hung_after_s``
stub open, dispatched                            running past         ``kill`` (ceiling)
                                                 ``ceiling_s``
stub open, dispatched, not yet processed         finished, or killed  ``process``
stub open, processed                             (any)                ``need_verdict``
==============================================  ===================  =====================

:func:`next_wake_s` clamps the next wake to 120..600 s, as the seed says.
"""

from __future__ import annotations

from dataclasses import dataclass, field

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
    backend_state: str | None = None  # running | succeeded | failed | None (not found) | "unknown"
    started_at: float | None = None
    progress_at: float | None = None

    @property
    def sighting(self) -> str:
        """What the backend says of the expected workload."""
        return UNKNOWN if self.backend_state == "unknown" else UNSEEN if self.backend_state is None else SEEN


@dataclass(frozen=True)
class LaneLimits:
    hung_after_s: float = 1800.0  # no progress signal for this long: hung
    ceiling_s: float = 6 * 3600.0  # a run past this is killed
    wake_interval_s: int = 600


@dataclass(frozen=True)
class TrackDecision:
    track: int
    kind: str  # wait | need_hypothesis | dispatch | skip | kill | process | need_verdict
    vid: str | None
    reason: str

    def as_json(self) -> dict:
        return {"track": self.track, "decision": self.kind, "vid": self.vid, "reason": self.reason}


@dataclass(frozen=True)
class LaneDecision:
    tracks: tuple[TrackDecision, ...]
    next_wake_s: int
    disagreements: tuple[str, ...] = field(default_factory=tuple)


def decide_track(view: TrackView, now: float, limits: LaneLimits) -> TrackDecision:
    """The decision for one track (the table in the module docstring)."""

    def said(kind: str, reason: str) -> TrackDecision:
        return TrackDecision(view.track, kind, view.vid, reason)

    if view.backend_state == "unknown":
        return said("wait", "the backend cannot be read: unknown is never free and never gone")
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
    if view.expected.settle(view.sighting, now) == REASK:
        return said("dispatch", f"{view.vid} was dispatched but the backend has no {view.workload}: ask again "
                                "(a launch that landed is adopted by name)")
    if state in ("succeeded", "failed"):
        return said("process", f"{view.workload} {state}: fill Setup and Results")
    if view.started_at is not None and now - view.started_at > limits.ceiling_s:
        return said("kill", f"{view.workload} ran {int(now - view.started_at)} s, past the ceiling of "
                            f"{int(limits.ceiling_s)} s")
    last = view.progress_at if view.progress_at is not None else view.started_at
    if last is not None and now - last > limits.hung_after_s:
        return said("kill", f"{view.workload} shows no progress for {int(now - last)} s (hung after "
                            f"{int(limits.hung_after_s)} s)")
    return said("skip", f"{view.workload} is in flight")


def next_wake_s(decisions: list[TrackDecision], limits: LaneLimits) -> int:
    """The next wake: the configured interval, sooner (but not under 120 s) when a track
    waits on something that moves fast; always within 120..600 s."""
    wanted = limits.wake_interval_s
    if any(d.kind in ("dispatch", "process", "wait") for d in decisions):
        wanted = MIN_WAKE_S
    return max(MIN_WAKE_S, min(MAX_WAKE_S, int(wanted)))


def decide(views: list[TrackView], now: float, limits: LaneLimits, disagreements: list[str] = ()) -> LaneDecision:
    """Every track's decision and the next wake."""
    decisions = [decide_track(v, now, limits) for v in views]
    return LaneDecision(tuple(decisions), next_wake_s(decisions, limits), tuple(disagreements))
