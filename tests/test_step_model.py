"""RELIABILITY row 50: a model-based run. Hypothesis interleaves wakes, training, session
ends and kills, wakes killed mid-act, an unknown status (a 429 read as unknown), a lagging
clock and skew, against the real `wiki step` on a real git wiki and store with a fake
compute backend; after every rule the invariants hold:

- D: at most one live session (the fake platform kills a session at its timeout, as a real
  one does; the agent's clock is skewed against the platform's);
- Q: every launch had its ledger row booked and committed before the backend was asked;
- L: memory parses and stays consistent (rows consecutive, every launch booked), the
  high-water mark never drops, and memory is committed after every completed wake;
- the store's pointer never moves backwards.
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule
from test_relay_support import CONFIG, Clock, FakeCompute, git, make_wiki, save_checkpoint

from wikiengine.executors.compute import SessionState
from wikiengine.model import memory
from wikiengine.model.state import RelayState
from wikiengine.step.relay import act
from wikiengine.step.relay.wake import run_step

SAVE, SESSION, MAX = 4, 8, 24


class Killed(BaseException):
    pass


class RelayModel(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self.tmp = Path(tempfile.mkdtemp(prefix="relay-model-"))
        self.root = self.tmp / "repo"
        self.root.mkdir()
        self.store = make_wiki(self.root)
        self.server = Clock()  # the platform's clock: session start and end times
        self.skew_hours = 0
        self.clock = lambda: self.server.now + dt.timedelta(hours=self.skew_hours)  # the agent's clock (row 32)
        self.compute = FakeCompute(clock=self.server, timeout_s=CONFIG["session_timeout_s"])
        self.compute.on_launch = self._on_launch
        self.boundary: dict[str, int] = {}
        self.violations: list[str] = []
        self.pointers = [0]
        self.high_water = [0]
        self.kill_launch = False

    def teardown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    # ---------------------------------------------------------------- the fake world

    def _pointer(self) -> int:
        pointer = self.store.read_pointer(self.store.head())
        return pointer.step if pointer else 0

    def _on_launch(self, request):
        committed = git(self.root, "show", "HEAD:memory/QUOTA.md")
        job = "session-" + request.slug.rsplit("session", 1)[1]
        if f"| {job} |" not in committed or "booked" not in committed.split(f"| {job} |")[-1].split("\n")[0]:
            self.violations.append(f"Q: {job} launched without a committed booked row")
        alive = self._alive()
        if alive:
            self.violations.append(f"D: {request.slug} launched while {alive} alive")
        if request.slug in self.compute.sessions:
            self.violations.append(f"D: {request.slug} launched twice")
        if self.kill_launch:
            raise Killed()
        pointer = self._pointer()
        self.boundary[request.slug] = min(b for b in (8, 16, 24) if b > pointer)

    def _alive(self):
        self.compute._enforce_timeouts()
        return [r for r, s in self.compute.sessions.items() if s.state.alive]

    # ---------------------------------------------------------------- rules

    @rule(minutes=st.integers(min_value=1, max_value=90))
    def time_passes(self, minutes):
        self.server.advance(minutes=minutes)

    @rule(hours=st.sampled_from([-1, 0, 1]))
    def clock_skew(self, hours):
        self.skew_hours = hours

    @rule(unknown=st.booleans())
    def status_lag(self, unknown):
        self.compute.status_fails = unknown

    @rule(kill=st.sampled_from([None, "at_launch", "before_record"]))
    def wake(self, kill):
        self.kill_launch = kill == "at_launch"
        real_record = act.record
        if kill == "before_record":
            def killed(*args, **kwargs):
                raise Killed()
            act.record = killed
        try:
            result = run_step(self.root, clock=self.clock, store=self.store, compute=self.compute)
        except Killed:
            return
        finally:
            act.record = real_record
            self.kill_launch = False
        if result.decision != "locked" and git(self.root, "status", "--porcelain", "memory"):
            self.violations.append(f"L: memory left uncommitted after a {result.decision} wake")

    @precondition(lambda self: bool(self._alive()))
    @rule()
    def train_to_next_save(self):
        ref = self._alive()[0]
        pointer = self._pointer()
        if pointer < self.boundary.get(ref, 0):
            save_checkpoint(self.store, pointer + SAVE, tmp=self.tmp)

    @precondition(lambda self: bool(self._alive()))
    @rule(how=st.sampled_from([SessionState.COMPLETE, SessionState.ERROR, SessionState.CANCELLED]),
          seconds=st.sampled_from([40, 3600]))
    def session_ends(self, how, seconds):
        ref = self._alive()[0]
        if how == SessionState.COMPLETE and self._pointer() != self.boundary.get(ref):
            how = SessionState.CANCELLED  # a session that stops short of its boundary was killed
        started = self.compute.sessions[ref].started_at
        self.compute.end(ref, how, at=min(started + dt.timedelta(seconds=seconds), self.server.now),
                         failure=None if how == SessionState.COMPLETE else "refused: same reason")

    # ---------------------------------------------------------------- invariants

    @invariant()
    def no_violation(self):
        assert not self.violations, self.violations

    @invariant()
    def at_most_one_live_session(self):
        assert len(self._alive()) <= 1

    @invariant()
    def pointer_never_backwards(self):
        pointer = self._pointer()
        assert pointer >= self.pointers[-1]
        self.pointers.append(pointer)

    @invariant()
    def memory_is_consistent(self):
        state = RelayState.read(self.root)
        assert state.high_water_step >= self.high_water[-1]
        self.high_water.append(state.high_water_step)
        ledger = memory.read_ledger(self.root)
        assert [r.row for r in ledger] == list(range(1, len(ledger) + 1))
        booked = {r.job for r in ledger if r.outcome == "booked"}
        for asset in memory.read_assets(self.root):
            assert asset.job in booked
        launched = {r.slug for r in self.compute.launches}
        assert len(launched) == len(self.compute.launches)
        if state.status == "complete":
            assert state.last_seen_step == MAX


TestRow50RelayModel = RelayModel.TestCase
TestRow50RelayModel.settings = settings(max_examples=int(os.environ.get("WIKI_MODEL_EXAMPLES", "12")), stateful_step_count=14, deadline=None,
                                   suppress_health_check=list(HealthCheck))
