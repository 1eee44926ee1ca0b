"""Model-based test of the local lane backend (RELIABILITY rows 22 and 50, on real processes).

Random interleavings of launch (re-launch, conflicting launch, busy track), delete, SIGKILL
of a runner and SIGKILL of a run keep:

- no run starts twice (each run prints one ``started`` line; its log holds at most one);
- a track never has two runs in flight;
- a launched name is never "gone", and a finished run stays finished with its state;
- after deleting everything nothing of any run is alive.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import tempfile
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test

from tests.test_lane_backend_contract import MODEL_DIR, _alive, wait_for
from wikiengine.core.identity import workload_name
from wikiengine.executors.compute import CapacityError
from wikiengine.executors.lane_backend import LaunchConflict, LaunchSpec
from wikiengine.executors.lane_local import LocalLaneBackend, _group_alive
from wikiengine.executors.proc import still_running

KINDS = {
    "ok": "print('started', flush=True)",
    "fail": "import sys; print('started', flush=True); sys.exit(2)",
    "long": "import time; print('started', flush=True); time.sleep(60)",
}
STATES: set[str] = set()  # every state an invariant check saw
LAUNCHES: list[str] = []  # every first launch of a name, over all examples


class LocalLaneModel(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self.tmp = tempfile.TemporaryDirectory(prefix="lane-model-")
        self.backend = LocalLaneBackend(Path(self.tmp.name), MODEL_DIR, "tpu", kill_grace_s=0.5)
        self.launched: dict[str, tuple[str, int]] = {}  # name -> (kind, track)
        self.finished: dict[str, str] = {}  # name -> the state it finished in

    def name(self, vid: int) -> str:
        return workload_name("alice", "gemma4", "tpu", vid, "m")

    @rule(vid=st.integers(1, 4), kind=st.sampled_from(sorted(KINDS)), track=st.integers(0, 1))
    def launch(self, vid, kind, track):
        name = self.name(vid)
        spec = LaunchSpec(name, f"v{vid:03d}", "m", track, [sys.executable, "-c", KINDS[kind]], timeout_s=30)
        try:
            workload = self.backend.launch(spec)
        except LaunchConflict:
            assert name in self.launched and self.launched[name][0] != kind
            return
        except CapacityError as exc:
            blocker = next(n for n in self.launched if n in str(exc))
            assert blocker != name and self.launched[blocker][1] == track
            return
        assert workload.name == name
        if name in self.launched:
            assert self.launched[name][0] == kind  # adopted: the first launch's command
        else:
            self.launched[name] = (kind, track)
            LAUNCHES.append(name)

    @rule(vid=st.integers(1, 4))
    def delete(self, vid):
        self.backend.delete(self.name(vid))

    @rule(vid=st.integers(1, 4), what=st.sampled_from(["runner", "run"]))
    def sigkill(self, vid, what):
        # Draws never depend on what the runs did so far (which launches a busy track refused
        # depends on timing): Hypothesis replays a history only when its draws are the same.
        name = self.name(vid)
        if name not in self.launched:
            return
        folder = self.backend.folder / name
        status = self.backend.status(name)
        if what == "run" and status.pid and _alive(status.pid):
            os.kill(status.pid, signal.SIGKILL)  # what the OOM killer does
        runner = _runner(folder)
        if what == "runner" and still_running(runner.get("pid"), runner, folder):
            os.kill(runner["pid"], signal.SIGKILL)

    @rule()
    def let_runs_progress(self):
        """Time passes: runners start (a runner takes about 0.2 s to start here), quick runs end."""
        time.sleep(0.4)

    @invariant()
    def each_run_starts_once_and_finished_stays_finished(self):
        in_flight: dict[int, list[str]] = {}
        for name, (_, track) in self.launched.items():
            workload = self.backend.status(name)
            assert workload is not None, f"{name} was launched but reads as gone"
            assert self.backend.logs(name, 1000).splitlines().count("started") <= 1, f"{name} ran twice"
            STATES.add(workload.state)
            if name in self.finished:
                assert workload.state == self.finished[name], f"{name} left {self.finished[name]}"
            elif workload.is_finished:
                self.finished[name] = workload.state
            if workload.in_flight:
                in_flight.setdefault(track, []).append(name)
        assert all(len(names) <= 1 for names in in_flight.values()), in_flight

    def teardown(self):
        try:
            for name in self.launched:
                self.backend.delete(name)
            for name in self.launched:
                assert self.backend.status(name).is_finished
                pgid = _runner(self.backend.folder / name).get("pid")  # the runner leads the run's group
                wait_for(lambda pgid=pgid: not _group_alive(pgid), f"{name} to be dead", deadline_s=5)
        finally:
            self.tmp.cleanup()


def _runner(folder: Path) -> dict:
    path = folder / "runner.json"
    return json.loads(path.read_text()) if path.exists() else {}


@pytest.mark.slow
@pytest.mark.waits
def test_row50_local_lane_backend_model():
    run_state_machine_as_test(LocalLaneModel, settings=settings(
        max_examples=20, stateful_step_count=10, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]))
    assert LAUNCHES and {"running", "failed"} <= STATES, STATES  # the histories did reach runs and kills
