"""Which v-id each track of a lane runs, and what waits: the per-track and lane queues.

A track runs at most one experiment at a time. The journal's claims (``claim``, ``retry``), in
the order they were committed, are the queue:

- a claim that names a track (``wiki exp new --track N``; a retry inherits its original's)
  waits in that track's queue;
- a claim that names none waits in the lane queue, and the first idle track takes it (the
  wake's ``dispatch`` record then names the track it was given);
- an experiment holds its track from its claim until its page is filed (a processed run
  still owes its verdict there); a claim whose page is gone holds it only while a run it
  dispatched was never completed or killed (it may still be alive).

Queues are first in, first out: the track's own queue first, then the lane queue.
"""

from __future__ import annotations

from dataclasses import dataclass

CLAIMS = ("claim", "retry")
OPEN, FILED = "open", "filed"  # a page's state as the queue reads it (absent: the page is gone)


@dataclass(frozen=True)
class TrackQueue:
    """One track: the experiment it runs (or owes a verdict for), those waiting for it, and
    its newest claim (the one to name when the track is idle)."""

    track: int
    active: str | None = None
    queued: tuple[str, ...] = ()
    last: str | None = None

    def as_json(self) -> dict:
        return {"track": self.track, "active": self.active, "queued": list(self.queued)}


@dataclass(frozen=True)
class LaneQueue:
    """The stubs each track of a lane owns, and the lane's stubs no track has taken."""

    tracks: tuple[TrackQueue, ...]
    waiting: tuple[str, ...] = ()  # the lane queue: stubs no track has taken yet

    def track(self, number: int) -> TrackQueue:
        return next(t for t in self.tracks if t.track == number)

    def idle(self) -> list[int]:
        """The tracks that run nothing and have nothing waiting for them."""
        return [t.track for t in self.tracks if t.active is None]

    def as_json(self) -> dict:
        return {"tracks": [t.as_json() for t in self.tracks], "lane": list(self.waiting)}


def placements(records: list[dict]) -> list[tuple[str, int | None]]:
    """``(vid, track)`` of every claim in claim order: the track the claim names, else the
    one its newest dispatch was given. A v-id two clones both claimed keeps both places
    (it names two pages, and each holds its own track until renumbered)."""
    claims: list[tuple[str, int | None]] = []
    dispatched: dict[str, int] = {}
    for record in records:
        vid, track = record.get("vid"), record.get("track")
        if not isinstance(vid, str) or not vid:
            continue
        track = track if isinstance(track, int) and not isinstance(track, bool) else None
        if record.get("op") in CLAIMS:
            claims.append((vid, track))
        elif record.get("op") == "dispatch" and track is not None:
            dispatched[vid] = track
    placed = [(vid, track if track is not None else dispatched.get(vid)) for vid, track in claims]
    return list(dict.fromkeys(placed))


def track_of(records: list[dict]) -> dict[str, int | None]:
    """vid -> the track of its first claim (see :func:`placements`)."""
    found: dict[str, int | None] = {}
    for vid, track in placements(records):
        found.setdefault(vid, track)
    return found


def lane_queue(records: list[dict], page_states: dict[str, str], tracks: int) -> LaneQueue:
    """The queues of a lane of ``tracks`` tracks, from its journal and its pages' states
    (vid -> ``open`` | ``filed``; a vid absent from it has no page)."""
    ops: dict[str, set[str]] = {}
    for record in records:
        if isinstance(record.get("vid"), str):
            ops.setdefault(record["vid"], set()).add(str(record.get("op", "")))

    def holds(vid: str) -> bool:
        state = page_states.get(vid)
        if state is not None:
            return state == OPEN
        done = ops.get(vid, set())
        return "dispatch" in done and not done & {"complete", "kill"}

    placed = placements(records)
    waiting = [vid for vid, track in placed if track is None and holds(vid)]
    queues = []
    for number in range(1, tracks + 1):
        mine = [vid for vid, track in placed if track == number]
        # a dispatched stub holds its track until it is filed, whatever its claim's place: a
        # renumbered stub's claim keeps the place of the claim it was made from, which a merge
        # can have put before the claim of the run in flight
        holding = sorted((vid for vid in mine if holds(vid)), key=lambda vid: "dispatch" not in ops.get(vid, ()))
        if not holding and waiting:
            holding = [waiting.pop(0)]  # an idle track takes the lane queue's oldest stub
        queues.append(TrackQueue(number, holding[0] if holding else None, tuple(holding[1:]),
                                 mine[-1] if mine else None))
    return LaneQueue(tuple(queues), tuple(waiting))


def idle_track(records: list[dict], page_states: dict[str, str], tracks: int) -> int | None:
    """The lowest track that runs nothing and has nothing waiting (None: every track is busy
    or no session has tracks): where `wiki exp new` without ``--track`` puts a stub."""
    idle = lane_queue(records, page_states, tracks).idle()
    return idle[0] if idle else None


def session_track_count(records: list[dict]) -> int:
    """How many tracks the newest session's ``start`` record gave the lane (0 before one)."""
    starts = [r for r in records if r.get("op") == "start"]
    tracks = starts[-1].get("tracks") if starts else None
    return len(tracks) if isinstance(tracks, list) else 0
