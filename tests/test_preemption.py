"""Preemption is not failure, on every backend (executors/preemption.py; RELIABILITY rows 117-119).

The classifiers are pure and table-tested; the local backend is driven for real (a SIGTERM
from outside the lane, then a relaunch as attempt 2); the GKE backend against the loopback
API server; and a lane wake against a backend that preempts a run twice before it
completes: the run is re-dispatched under the same v-id, each attempt counted in the
journal, and filed once, from its completed attempt, with the attempts in Results.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import os
import signal

import pytest

from tests.lane_runs import seed_band
from tests.test_lane_backend_contract import LocalHarness, program, wait_for
from tests.test_lane_step import LANE, LIMITS, NOW, SENT, MemoryBackend, lane_wiki  # noqa: F401 - the fixture
from tests.test_lane_writers import V046, git, proposal, wiki  # noqa: F401 - the fixture
from wikiengine.executors import preemption
from wikiengine.executors.compute import ComputeUnavailableError
from wikiengine.executors.lane_backend import LaneWorkload
from wikiengine.model.evidence import run_evidence
from wikiengine.step import writers as lw
from wikiengine.step.lane.decide import TrackView, decide_track
from wikiengine.step.lane.start import start_session
from wikiengine.step.lane.wake import wake

R, P = preemption.RETRYING, preemption.PREEMPTED


@pytest.mark.parametrize("state, restarts, expected", [
    ("PENDING", 0, None), ("PENDING", 2, R), ("CONFIGURING", 1, R), ("REQUEUED", 0, R), ("REQUEUE_HOLD", 1, R),
    ("REQUEUE_FED", 0, R), ("SUSPENDED", 0, R), ("STOPPED", 0, R), ("RUNNING", 0, None), ("RUNNING", 3, None),
    ("COMPLETED", 1, None), ("FAILED", 0, None), ("TIMEOUT", 0, None), ("CANCELLED", 0, None),
    ("CANCELLED by 0", 0, None), ("OUT_OF_MEMORY", 0, None), ("PREEMPTED", 0, P), ("NODE_FAIL", 0, P),
    ("BOOT_FAIL", 0, P), ("", 0, None),
])
def test_row117_slurm_classifier(state, restarts, expected):
    assert preemption.slurm(state, restarts) == expected


EVICTED = {"EvictionByEvictionAPI"}
PREEMPTED_BY_SCHEDULER = {"PreemptionByScheduler"}


@pytest.mark.parametrize("terminal, restarts, restarting, exit_code, reasons, expected", [
    (None, 0, False, None, set(), None),  # running, never restarted
    (None, 1, True, None, set(), R),  # RestartingJobSet condition
    (None, 2, False, 143, PREEMPTED_BY_SCHEDULER, R),  # restarted after a disruption, active again
    (None, 2, False, 1, set(), None),  # restarted after its own failure: not a preemption
    ("Failed", 0, False, 143, PREEMPTED_BY_SCHEDULER, P),
    ("Failed", 0, False, 42, EVICTED, P),  # the checkpoint-on-SIGTERM exit code
    ("Failed", 0, False, None, {"TerminationByKubelet"}, P),
    ("Failed", 0, False, 1, PREEMPTED_BY_SCHEDULER, None),  # it crashed on its own before the eviction
    ("Failed", 0, False, 143, set(), None),  # SIGTERM without a disruption condition: the run's own
    ("Failed", 0, False, 143, {"SomethingElse"}, None),
    ("Completed", 0, False, 0, EVICTED, None),
])
def test_row117_jobset_classifier(terminal, restarts, restarting, exit_code, reasons, expected):
    assert preemption.jobset(terminal, restarts, restarting, exit_code, reasons) == expected


@pytest.mark.parametrize("exit_code, reason, expected", [
    (143, "the runner got SIGTERM: process group killed", P),
    (143, None, P),  # the run itself got SIGTERM from outside; the runner sent none
    (143, "timed out after 60s: process group killed", None),
    (None, "deleted by the lane: process group killed", None),
    (137, None, None), (1, None, None), (0, None, None),
])
def test_row117_local_classifier(exit_code, reason, expected):
    assert preemption.local(exit_code, reason) == expected


def test_row118_decide_waits_on_retrying_and_redispatches_preempted_never_processes_them():
    base = TrackView(1, vid="v048", page_state="open", expected=SENT, started_at=NOW - 60, progress_at=NOW - 30)
    retrying = decide_track(dataclasses.replace(base, backend_state=R, attempt=2, started_at=NOW - 99_999), NOW, LIMITS)
    assert retrying.kind == "wait" and "restarts it itself" in retrying.reason  # not killed past the ceiling either
    again = decide_track(dataclasses.replace(base, backend_state=P, attempt=2), NOW, LIMITS)
    assert again.kind == "redispatch" and "attempt 3" in again.reason and "not a crash" in again.reason


def test_row118_evidence_counts_the_preempted_attempts_of_the_newest_dispatch_only():
    records = [{"op": "dispatch", "vid": "v048", "workload": "w"}, {"op": "preempted", "vid": "v048", "attempt": 1},
               {"op": "dispatch", "vid": "v048", "workload": "w"}, {"op": "preempted", "vid": "v048", "attempt": 1},
               {"op": "preempted", "vid": "v048", "attempt": 2},
               {"op": "complete", "vid": "v048", "workload": "w", "state": "succeeded", "exit_code": 0}]
    evidence = run_evidence(records, "v048")
    assert (evidence.attempts, evidence.preempted, evidence.crash) == (3, 2, None)
    requeued = run_evidence(records[2:3] + [{**records[-1], "attempt": 2}], "v048")  # Slurm requeued it itself
    assert (requeued.attempts, requeued.preempted) == (2, 1)


# -- the local backend, for real -------------------------------------------------------------------


def test_row119_local_sigterm_from_outside_is_preempted_and_the_relaunch_is_attempt_2(tmp_path):
    local = LocalHarness(tmp_path)
    spec = local.spec(50, "evicted", program("attempt", sleep_s=120))
    local.backend.launch(spec)
    local.make_running(spec)
    runner = json.loads((local.backend.folder / spec.name / "runner.json").read_text())["pid"]
    os.kill(runner, signal.SIGTERM)  # what a host shutting down, or another tool, does
    preempted = wait_for(lambda: (w := local.backend.status(spec.name)).state == P and w, "the run to be preempted")
    assert preempted.state == P and not preempted.crashed and preempted.attempt == 1
    assert local.backend.launch(spec).state == P  # the same attempt: adopted, nothing started
    again = dataclasses.replace(spec, attempt=2)
    relaunched = local.backend.launch(again)
    assert relaunched.attempt == 2 and relaunched.state in ("queued", "running")
    assert local.backend.launch(again).attempt == 2  # a lost answer: adopted
    wait_for(lambda: local.backend.logs(spec.name).splitlines().count("attempt") == 2, "the second attempt to run")
    local.backend.delete(spec.name)
    assert (local.backend.folder / spec.name / "attempt-1" / "status.json").is_file()


def test_row119_a_run_that_exits_143_on_its_own_timeout_is_failed_not_preempted(tmp_path):
    local = LocalHarness(tmp_path)
    spec = local.spec(51, "slow", program("started", sleep_s=120), timeout_s=0.5)
    local.backend.launch(spec)
    done = local.finished(spec.name)
    assert done.state == "failed" and done.crashed and done.exit_code == 143


# -- GKE, against the loopback API server ------------------------------------------------------------


@pytest.fixture
def gke(monkeypatch):
    from tests.test_lane_backend_contract import gke_harness

    with gke_harness(monkeypatch) as harness:
        yield harness


def _disrupt(api, pod_name: str, reason: str) -> None:
    pod = next(p for key, p in api.pods.items() if key[1] == pod_name)
    pod.setdefault("status", {}).setdefault("conditions", []).append(
        {"type": "DisruptionTarget", "status": "True", "reason": reason})


def test_row117_gke_a_jobset_failed_by_eviction_is_preempted_and_a_restarting_one_retrying(gke):
    spec = gke.spec(52, "evict", program("x"))
    gke.backend.launch(spec)
    gke.api.add_pod(f"{spec.name}-slice-job-0-0-abcde", spec.name, "step 3\n", exit_code=143)
    _disrupt(gke.api, f"{spec.name}-slice-job-0-0-abcde", "PreemptionByScheduler")
    gke.api.set_state(spec.name, active=1)
    gke.api.jobsets[("default", spec.name)]["status"]["restarts"] = 1
    restarting = gke.backend.status(spec.name)
    assert (restarting.state, restarting.attempt, restarting.crashed) == (R, 2, False)
    gke.api.set_state(spec.name, terminal_state="Failed")
    gke.api.jobsets[("default", spec.name)]["status"]["restarts"] = 1
    preempted = gke.backend.status(spec.name)
    assert preempted.state == P and preempted.exit_code == 143 and not preempted.crashed
    assert "not the run's failure" in preempted.reason and "step 3" in preempted.log_tail


# -- a lane wake: preempted twice, then completed, filed once ----------------------------------------


class PreemptingBackend(MemoryBackend):
    """The in-memory backend, with preemption: ``preempt`` ends the current attempt as
    ``preempted``; a launch with a higher attempt starts the next one (else it adopts)."""

    def __init__(self, artifacts_dir):
        super().__init__(artifacts_dir)
        self.attempts: list[tuple[str, int]] = []

    def launch(self, spec):
        current = self.runs.get(spec.name)
        if current is None or (current.state == P and spec.attempt > current.attempt):
            self.attempts.append((spec.name, spec.attempt))
            now = dt.datetime.now(dt.UTC).isoformat()
            self.runs[spec.name] = LaneWorkload(spec.name, spec.vid, spec.slug, "running", None, now, None, "", now,
                                                attempt=spec.attempt)
        if self.lose_answer:
            raise ComputeUnavailableError("answer lost")
        return self.runs[spec.name]

    def preempt(self, name):
        self.runs[name] = dataclasses.replace(self.runs[name], state=P, exit_code=143, reason="PREEMPTED")


def test_row118_a_run_preempted_twice_then_completed_is_filed_once_with_its_attempts(lane_wiki, tmp_path):
    root = lane_wiki
    backend = PreemptingBackend(tmp_path / "art")
    start_session(root, LANE, parallelism="1")
    seed_band(root, LANE.dir, variant="2B/v5p-16", frontier=V046)
    lw.new_experiment(root, LANE, slug="pre", variant="2B/v5p-16", proposal_path=proposal(root, "pre"), track=1)
    name = "demo-gemma4-tpu-v048-pre"
    assert [d["decision"] for d in wake(root, backend=backend).decisions] == ["dispatch"]
    for attempt in (1, 2):
        backend.preempt(name)
        result = wake(root, backend=backend)
        assert [d["decision"] for d in result.decisions] == ["redispatch"]
        assert any(f"attempt {attempt + 1}" in a for a in result.actions)
        assert not result.needs or all(n["kind"] != "verdict" for n in result.needs)  # never processed as a crash
    backend.lose_answer = True  # a wake whose relaunch answer is lost changes nothing: the next adopts
    backend.preempt(name)
    wake(root, backend=backend)
    backend.lose_answer = False
    assert [d["decision"] for d in wake(root, backend=backend).decisions] == ["skip"]
    assert backend.attempts == [(name, 1), (name, 2), (name, 3), (name, 4)]
    backend.finish(name)
    processed = wake(root, backend=backend)
    assert [d["decision"] for d in processed.decisions] == ["process"]
    journal = [json.loads(line) for line in (root / LANE.journal).read_text().splitlines()]
    assert [r["attempt"] for r in journal if r["op"] == "preempted"] == [1, 2, 3]
    assert len([r for r in journal if r["op"] == "dispatch"]) == 1
    [complete] = [r for r in journal if r["op"] == "complete"]
    assert complete["attempt"] == 4 and complete["state"] == "succeeded"
    page = (root / lw.find_page(root, LANE, "v048").rel).read_text()
    assert "attempt 4 (3 preempted before it: not failures)" in page
    lw.file_experiment(root, LANE, "v048", verdict="supported", reason="signal seen")
    filed = (root / lw.find_page(root, LANE, "v048").rel).read_text()
    assert "attempt 4 of 4: the 3 before it were preempted" in filed and "verdict: supported" in filed
    assert [d["decision"] for d in wake(root, backend=backend).decisions] == ["need_hypothesis"]
