"""The Slurm lane backend's own answers, on a real one-node cluster (tests/slurm_cluster.py).

The shared contract runs in tests/test_lane_backend_contract.py; here are the answers only
Slurm gives: a controller stopped mid-wake, a job cancelled behind the engine, a drained
node, ``PREEMPTED`` and ``REQUEUED`` jobs (preemption is not failure), a job past its time
limit, a job the controller forgot. RELIABILITY rows 110-117. The parsing and the state
table are pure and tested without a cluster.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.test_lane_backend_contract import wait_for as contract_wait_for
from tests.test_lane_step import lane_wiki  # noqa: F401 - the fixture
from tests.test_lane_writers import wiki  # noqa: F401 - the fixture
from wikiengine.core.identity import workload_name
from wikiengine.executors import preemption
from wikiengine.executors.compute import ComputeError, ComputeUnavailableError
from wikiengine.executors.lane_backend import LaunchSpec
from wikiengine.executors.lane_slurm import SlurmJob, SlurmLaneBackend, job_state, parse_show_job

MODEL, LANE, MODEL_DIR = "gemma4", "tpu", "gemma4_autoresearch_optimization"
DEADLINE_S = 60.0
_USERS = iter(range(1, 10_000))

SHOW_JOB = (
    "JobId=41 JobName=alice-gemma4-tpu-v007-remat UserId=root(0) GroupId=root(0) MCS_label=N/A Priority=1 "
    "Nice=0 Account=(null) QOS=(null) JobState=PREEMPTED Reason=None Dependency=(null) Requeue=1 Restarts=2 "
    "BatchFlag=1 Reboot=0 ExitCode=0:15 RunTime=00:00:03 TimeLimit=00:02:00 TimeMin=N/A "
    "SubmitTime=2026-12-02T05:13:09 EligibleTime=2026-12-02T05:13:09 StartTime=2026-12-02T05:13:12 "
    "EndTime=2026-12-02T05:13:15 Deadline=N/A Partition=low AllocNode:Sid=localhost:1908 "
    "Comment=wikiengine:track=3 Command=/w/job.sh WorkDir=/w StdOut=/w/log.txt Power=\n"
)


def wait_for(predicate, what: str, deadline_s: float = DEADLINE_S):
    """The contract suite's wait, with Slurm's longer deadline (a loaded slurmctld answers slowly)."""
    return contract_wait_for(predicate, what, deadline_s)


# -- pure: parsing and the state table -----------------------------------------------------------


def test_show_job_lines_are_parsed_with_signals_as_shell_codes():
    [job] = parse_show_job("No jobs in the system\n" + SHOW_JOB)
    assert (job.job_id, job.name, job.state, job.restarts, job.track, job.partition) == (
        41, "alice-gemma4-tpu-v007-remat", "PREEMPTED", 2, 3, "low")
    assert job.exit_code == 143 and job.started.startswith("2026-12-02T") and job.ended.endswith("Z")
    assert parse_show_job("No jobs in the system\n") == []


def _job(state: str, restarts: int = 0, exit_code: int | None = 0, reason: str = "None") -> SlurmJob:
    return SlurmJob(1, "n", state, reason, restarts, exit_code, None, None, None, 1, "debug")


@pytest.mark.parametrize("state, restarts, exit_code, expected", [
    ("PENDING", 0, 0, "queued"),
    ("PENDING", 1, 0, "retrying"),  # requeued: Slurm runs it again
    ("REQUEUED", 1, 0, "retrying"),
    ("REQUEUE_HOLD", 1, 0, "retrying"),
    ("SUSPENDED", 0, 0, "retrying"),  # PreemptMode=SUSPEND: it resumes
    ("RUNNING", 0, 0, "running"),
    ("COMPLETING", 0, 0, "running"),
    ("COMPLETED", 0, 0, "succeeded"),
    ("FAILED", 0, 3, "failed"),
    ("TIMEOUT", 0, 143, "failed"),
    ("CANCELLED", 0, 143, "failed"),
    ("OUT_OF_MEMORY", 0, 137, "failed"),
    ("PREEMPTED", 0, 143, "preempted"),
    ("NODE_FAIL", 0, None, "preempted"),
    ("BOOT_FAIL", 0, None, "preempted"),
])
def test_row117_the_slurm_state_table(state, restarts, exit_code, expected):
    got, code, reason = job_state(_job(state, restarts, exit_code), None, False)
    assert got == expected
    if expected == "failed":
        assert code == exit_code and reason
    if expected in preemption.DISRUPTED:
        assert "not the run's failure" in reason or "restarts it" in reason


def test_a_cancel_says_whether_the_lane_asked_for_it():
    assert "behind its back" in job_state(_job("CANCELLED", exit_code=143), None, False)[2]
    assert job_state(_job("CANCELLED", exit_code=143), None, True)[2] == "deleted by the lane"


def test_the_exit_record_the_job_wrote_wins_over_slurms_code():
    assert job_state(_job("FAILED", exit_code=1), {"exit_code": 3}, False)[:2] == ("failed", 3)


@pytest.mark.parametrize("gres, chips", [(None, 1), ("gpu:4", 4), ("gpu:a100:2", 2), ("gpu", 1), ("shard:8", 1)])
def test_chips_are_the_gpus_of_the_gres_else_the_one_slot(tmp_path, gres, chips):
    assert SlurmLaneBackend(tmp_path, MODEL_DIR, LANE, gres=gres).chips == chips


@pytest.mark.parametrize("setting", [{"partition": "a b"}, {"account": "x;rm"}, {"gres": "gpu:2 --wrap"}])
def test_a_setting_that_is_not_a_slurm_name_is_refused(tmp_path, setting):
    with pytest.raises(ComputeError, match="not a plain Slurm name"):
        SlurmLaneBackend(tmp_path, MODEL_DIR, LANE, **setting)


# -- on the real cluster ---------------------------------------------------------------------------


class Lane:
    """A fresh lane (its own user prefix: the controller keeps every earlier test's jobs)."""

    def __init__(self, root: Path, cluster, **settings):
        self.user = f"t{next(_USERS):04d}"
        self.prefix = f"{self.user}-{MODEL}-{LANE}"
        self.cluster = cluster
        self.backend = SlurmLaneBackend(root, MODEL_DIR, LANE, env=cluster.env, command_timeout_s=10.0, **settings)

    def spec(self, vid: int, slug: str, code: str, *, timeout_s: float = 120.0, attempt: int = 1,
             track: int = 1) -> LaunchSpec:
        argv = ["bash", "-c", f"{shlex.quote(sys.executable)} -c {shlex.quote(code)}"]
        return LaunchSpec(workload_name(self.user, MODEL, LANE, vid, slug), f"v{vid:03d}", slug, track, argv,
                          {}, None, timeout_s, attempt)

    def state(self, name: str, *states: str, deadline_s: float = DEADLINE_S):
        return wait_for(lambda: (w := self.backend.status(name)) is not None and w.state in states and w,
                        f"{name} to be {' or '.join(states)}", deadline_s)

    def job_id(self, name: str) -> int:
        return max(job.job_id for job in self.backend.jobs() if job.name == name)

    def slurm(self, *argv: str) -> str:
        done = subprocess.run(argv, env={**os.environ, **self.cluster.env}, capture_output=True,
                              text=True, timeout=30)
        assert done.returncode == 0, done.stderr
        return done.stdout

    def cleanup(self) -> None:
        for workload in self.backend.list_workloads(self.prefix):
            if workload.in_flight:
                self.backend.delete(workload.name)


@pytest.fixture
def lane(request, tmp_path, slurm_cluster):
    made = []

    def make(**settings) -> Lane:
        made.append(Lane(tmp_path, slurm_cluster, **settings))
        return made[-1]

    yield make
    for each in made:
        each.cleanup()


SLEEPER = "import time; print('step 1', flush=True); time.sleep(120)"


def test_row110_controller_stopped_mid_wake_is_unknown_never_gone_and_launch_submits_nothing(lane, slurm_cluster):
    lane = lane()
    running = lane.spec(1, "held", SLEEPER)
    lane.backend.launch(running)
    lane.state(running.name, "running")
    slurm_cluster.stop_daemon("slurmctld")
    try:
        with pytest.raises(ComputeUnavailableError):
            lane.backend.list_workloads(lane.prefix)
        with pytest.raises(ComputeUnavailableError):
            lane.backend.status(running.name)
        with pytest.raises(ComputeUnavailableError):
            lane.backend.launch(lane.spec(2, "blind", "print(1)", track=2))
        with pytest.raises(ComputeUnavailableError):
            lane.backend.delete(running.name)
    finally:
        slurm_cluster.restart_controller()
    assert lane.backend.status(running.name).state == "running"  # the job went on; nothing was lost
    assert lane.backend.status(lane.spec(2, "blind", "print(1)").name) is None  # asked while unknown: never submitted
    assert not [job for job in lane.backend.jobs() if job.name.endswith("v002-blind")]


def test_row128_a_job_submitted_after_the_controllers_listing_is_asked_for_again_not_called_forgotten(lane):
    """A reader (the watcher) takes the controller's listing, a wake submits a job and records
    its id, the reader then finds the id in the folder: the controller is asked again before the
    job is taken for one it forgot ('failed: Slurm no longer knows'); a listing of the lane is
    asked again once, whatever the number of names."""
    lane = lane()
    spec = lane.spec(12, "late", SLEEPER)
    lane.backend.launch(spec)
    real, listings = lane.backend.jobs, []

    def listed_before_the_submission():
        listings.append(1)
        return [] if len(listings) == 1 else real()

    lane.backend.jobs = listed_before_the_submission
    seen = lane.backend.status(spec.name)
    assert seen.state in ("queued", "running") and "no longer knows" not in (seen.reason or ""), seen
    listings.clear()
    [listed] = lane.backend.list_workloads(lane.prefix)
    assert listed.state in ("queued", "running") and len(listings) == 2
    del lane.backend.jobs  # the class's own again


def test_row111_a_job_cancelled_behind_the_engine_is_failed_and_says_so(lane):
    lane = lane()
    spec = lane.spec(3, "scancel", SLEEPER)
    lane.backend.launch(spec)
    lane.state(spec.name, "running")
    lane.slurm("scancel", str(lane.job_id(spec.name)))
    done = lane.state(spec.name, "failed")
    assert "behind its back" in done.reason and done.crashed


def test_row113_a_drained_node_leaves_the_job_queued_with_the_reason_not_failed(lane, slurm_cluster):
    lane = lane()
    node = slurm_cluster.node
    slurm_cluster.scontrol("update", f"NodeName={node}", "State=DRAIN", "Reason=wikiengine-test")
    try:
        spec = lane.spec(4, "drained", "print('ran', flush=True)")
        lane.backend.launch(spec)
        # the scheduler has looked at the job once it gives a reason for holding it (a loaded
        # slurmctld takes seconds): never a fixed pause that stands for that
        queued = wait_for(lambda: (status := lane.backend.status(spec.name)).reason and status,
                          "the scheduler's reason for holding the job")
        assert queued.state == "queued" and not queued.crashed
        assert "ReqNodeNotAvail" in queued.reason or "Resources" in queued.reason or "Priority" in queued.reason
    finally:
        slurm_cluster.scontrol("update", f"NodeName={node}", "State=RESUME")
    done = lane.state(spec.name, "succeeded")
    assert lane.backend.logs(spec.name) == "ran" and done.attempt == 1


def test_row114_a_preempted_job_is_preempted_not_failed_and_its_relaunch_is_the_next_attempt(lane):
    lane = lane(partition="low")
    victim = lane.spec(5, "victim", "import time; print('attempt', flush=True); time.sleep(60)")
    lane.backend.launch(victim)
    lane.state(victim.name, "running")
    lane.slurm("sbatch", "--partition=high", "--exclusive", "--job-name=preemptor", "--output=/dev/null",
               "--wrap", "sleep 1")
    preempted = lane.state(victim.name, "preempted")
    assert not preempted.crashed and not preempted.is_finished and not preempted.in_flight
    assert preempted.attempt == 1 and "not the run's failure" in preempted.reason
    lane.backend.jobs = list  # the controller forgot it (MinJobAge): still preempted, never a crash
    assert lane.backend.status(victim.name).state == "preempted"
    del lane.backend.jobs
    assert lane.backend.launch(victim).attempt == 1  # the same attempt again: adopted, nothing submitted
    relaunched = lane.backend.launch(LaunchSpec(**{**victim.__dict__, "attempt": 2}))
    assert relaunched.attempt == 2
    assert lane.backend.launch(LaunchSpec(**{**victim.__dict__, "attempt": 2})).attempt == 2  # a lost answer: adopted
    assert len([job for job in lane.backend.jobs() if job.name == victim.name]) == 2
    wait_for(lambda: lane.backend.logs(victim.name).splitlines().count("attempt") == 2, "the second attempt to run")
    assert "DUE TO PREEMPTION" in lane.backend.logs(victim.name)  # Slurm's own line, between the attempts


def test_row115_a_requeued_job_is_retrying_then_completes_as_its_second_attempt(lane):
    lane = lane()
    spec = lane.spec(6, "requeue", "import time; print('go', flush=True); time.sleep(3)")
    lane.backend.launch(spec)
    lane.state(spec.name, "running")
    lane.slurm("scontrol", "requeue", str(lane.job_id(spec.name)))
    retrying = lane.state(spec.name, "retrying")
    assert retrying.in_flight and not retrying.crashed and "restarts it" in retrying.reason
    wait_for(lambda: lane.slurm("scontrol", "update", f"JobId={lane.job_id(spec.name)}", "StartTime=now") is not None,
             "the begin time Slurm gives a requeued job to be moved forward")
    done = lane.state(spec.name, "succeeded")
    assert done.attempt == 2 and done.exit_code == 0
    log = lane.backend.logs(spec.name)
    assert "DUE TO JOB REQUEUE" in log and log.splitlines()[-1] == "go"  # the attempts append to one log
    assert len([job for job in lane.backend.jobs() if job.name == spec.name]) == 1  # Slurm's requeue: one job id


def test_row31_slurm_a_job_past_its_time_limit_is_failed_timed_out(lane):
    lane = lane()
    spec = lane.spec(7, "slow", SLEEPER, timeout_s=90)
    lane.backend.launch(spec)
    lane.state(spec.name, "running")
    assert "TimeLimit=00:02:00" in lane.slurm("scontrol", "show", "job", "-o", str(lane.job_id(spec.name)))
    # bring the limit forward (Slurm checks limits every 30 s or so) to a few seconds from now:
    # slurmctld refuses an end time already past when it reads the request, which on a loaded
    # machine can be a second or more after the test wrote it; a refusal is asked again, anew
    deadline = time.monotonic() + 60.0
    while True:
        soon = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(time.time() + 3))
        asked = subprocess.run(["scontrol", "update", f"JobId={lane.job_id(spec.name)}", f"EndTime={soon}"],
                               env={**os.environ, **lane.cluster.env}, capture_output=True, text=True, timeout=30)
        if asked.returncode == 0:
            break
        assert "Invalid time" in asked.stderr and time.monotonic() < deadline, asked.stderr
    done = lane.state(spec.name, "failed", deadline_s=180.0)  # slurmctld's periodic limit check, on a loaded machine
    assert "time limit" in done.reason and done.exit_code == 143 and done.crashed


def test_row116_a_job_the_controller_forgot_is_read_from_its_folder(lane):
    lane = lane()
    spec = lane.spec(8, "forgot", "import sys; print('x'); sys.exit(3)")
    lane.backend.launch(spec)
    done = lane.state(spec.name, "failed")
    assert done.exit_code == 3
    lane.backend.jobs = list  # what the controller says after MinJobAge: nothing of it
    forgotten = lane.backend.status(spec.name)
    assert (forgotten.state, forgotten.exit_code) == ("failed", 3)  # the final state the backend saw
    [final] = (lane.backend.folder / spec.name).glob("final-*.json")
    final.unlink()
    assert (lane.backend.status(spec.name).state, lane.backend.status(spec.name).exit_code) == ("failed", 3)
    exit_records = list((lane.backend.folder / spec.name).glob("exit-*.json"))
    exit_records[0].unlink()
    lost = lane.backend.status(spec.name)
    assert lost.state == "failed" and lost.exit_code is None and "no longer knows" in lost.reason


# -- a session on the real cluster ---------------------------------------------------------------------


@pytest.fixture
def slurm_wiki(lane_wiki, slurm_cluster, monkeypatch):  # noqa: F811 - the fixture imported below
    for key, value in slurm_cluster.env.items():
        monkeypatch.setenv(key, value)
    return lane_wiki


def _wiki(root: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "wikiengine", *args], cwd=root, capture_output=True, text=True,
                          timeout=120, env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])})


def test_loop_start_on_slurm_checks_the_partition_and_a_wake_runs_the_stub_as_a_job(slurm_wiki):
    from tests.lane_runs import seed_band
    from tests.test_lane_step import LANE as STEP_LANE
    from tests.test_lane_writers import V046, git, proposal
    from wikiengine.step import writers as lw
    from wikiengine.step.lane.wake import wake

    root = slurm_wiki
    head = git(root, "rev-parse", "HEAD")
    refused = _wiki(root, "loop", "start", "gemma4", "tpu", "--backend", "slurm", "--partition", "nope", "--yes", "--json")
    assert refused.returncode == 2 and "no partition 'nope'" in refused.stderr + refused.stdout
    assert len((refused.stderr + refused.stdout).strip().splitlines()) <= 2  # one line (JSON or text), no traceback
    assert git(root, "rev-parse", "HEAD") == head
    started = _wiki(root, "loop", "start", "gemma4", "tpu", "--backend", "slurm", "--partition", "low", "-n", "2",
                    "--yes", "--json")
    assert started.returncode == 0, started.stderr
    pool = json.loads(started.stdout)["pool"]
    assert [(s["track"], s["partition"]) for s in pool] == [(1, "low"), (2, "low")]
    seed_band(root, STEP_LANE.dir, variant="2B/v5p-16", frontier=V046)
    lw.new_experiment(root, STEP_LANE, slug="onslurm", variant="2B/v5p-16", proposal_path=proposal(root, "onslurm"),
                      track=1)
    first = wake(root)
    assert [d["decision"] for d in first.decisions][0] == "dispatch"
    backend = SlurmLaneBackend(root, STEP_LANE.model_dir, STEP_LANE.name)
    [job] = [j for j in backend.jobs() if j.name.endswith("v048-onslurm")]
    assert job.partition == "low" and job.track == 1
    processed = wait_for(lambda: (r := wake(root)).decisions[0]["decision"] == "process" and r, "the job to end")
    assert any("processed v048" in a for a in processed.actions)  # `python -m bench` is no program here: a crash
    journal = [json.loads(line) for line in (root / STEP_LANE.journal).read_text().splitlines()]
    [complete] = [r for r in journal if r["op"] == "complete"]
    assert complete["state"] == "failed" and complete["exit_code"] not in (None, 0)


@pytest.mark.slow
def test_wiki_demo_autoresearch_on_slurm_ends_with_the_embedded_demos_checks(tmp_path, slurm_cluster):
    """`wiki demo autoresearch --backend slurm`: the demo's queue as batch jobs on the real cluster."""
    from tests.test_demo import check_autoresearch_demo

    demo_dir = tmp_path / "demo"
    env = {**os.environ, **slurm_cluster.env, "PYTHONPATH": str(Path(__file__).parents[1])}
    done = subprocess.run([sys.executable, "-m", "wikiengine", "demo", "autoresearch", str(demo_dir), "--no-progress",
                           "--backend", "slurm"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=1200)
    check_autoresearch_demo(done, demo_dir)
    backend = SlurmLaneBackend(demo_dir, "mlp_autoresearch_optimization", "cpu", env=slurm_cluster.env)
    ran = {job.name for job in backend.jobs() if job.name.startswith("demo-mlp-cpu-v0")}
    assert {"demo-mlp-cpu-v001-batch256", "demo-mlp-cpu-v002-microbatch16"} <= ran  # the runs were Slurm jobs


def test_the_account_reaches_slurm_and_a_gres_slurm_refuses_is_one_clear_error(lane):
    charged = lane(account="proj42")
    spec = charged.spec(9, "acct", "print('ok')")
    charged.backend.launch(spec)
    assert "Account=proj42" in charged.slurm("scontrol", "show", "job", "-o", str(charged.job_id(spec.name)))
    assert charged.state(spec.name, "succeeded").exit_code == 0
    greedy = lane(gres="gpu:1")  # this node has no GPU: sbatch refuses
    refused = greedy.spec(10, "gres", "print('never')")
    with pytest.raises(ComputeError, match="sbatch refused .*gres"):
        greedy.backend.launch(refused)
    assert not [job for job in greedy.backend.jobs() if job.name == refused.name]
    again = greedy.backend.status(refused.name)  # recorded, never submitted: the next wake asks again
    assert again.state == "queued" and again.attempt == 0 and "launch it again" in again.reason


def test_row110_an_sbatch_whose_answer_is_lost_is_found_by_name_and_adopted_never_submitted_twice(lane, tmp_path):
    lane = lane()
    slow = tmp_path / "lossy-bin"
    slow.mkdir()
    (slow / "sbatch").write_text(f"#!/bin/sh\n{shutil.which('sbatch')} \"$@\" >/dev/null\nsleep 30\n")  # submits, answers late
    (slow / "sbatch").chmod(0o755)
    lane.backend.env["PATH"] = f"{slow}:{os.environ['PATH']}"
    lane.backend.command_timeout_s = 3.0
    spec = lane.spec(11, "lost", "import time; print('once', flush=True); time.sleep(2)")
    launched = lane.backend.launch(spec)  # sbatch timed out; the job is found by its name
    assert launched.attempt == 1 and launched.state in ("queued", "running", "succeeded")
    del lane.backend.env["PATH"]
    lane.backend.command_timeout_s = 10.0
    assert lane.backend.launch(spec).attempt == 1  # asked again: adopted
    assert len([job for job in lane.backend.jobs() if job.name == spec.name]) == 1
    assert lane.state(spec.name, "succeeded") and lane.backend.logs(spec.name) == "once"


def test_the_lane_config_names_the_partition_and_the_flag_wins(slurm_wiki):
    from tests.test_lane_step import LANE as STEP_LANE
    from tests.test_lane_writers import git
    from wikiengine.step.lane.start import start_session

    root = slurm_wiki
    program = root / STEP_LANE.program
    program.write_text(program.read_text().replace("wake_interval_s: 600\n", "wake_interval_s: 600\n"
                                                   "slurm_partition: lowrq\nslurm_account: proj42\n"))
    git(root, "commit", "-qam", "the lane runs on Slurm")
    from_config = start_session(root, STEP_LANE, backend="slurm", dry_run=True)
    assert {(s["partition"], s["account"]) for s in from_config["pool"]} == {("lowrq", "proj42")}
    flagged = start_session(root, STEP_LANE, backend="slurm", partition="high", dry_run=True)
    assert {s["partition"] for s in flagged["pool"]} == {"high"}
