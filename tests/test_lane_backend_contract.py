"""One contract for every lane backend (executors/lane_backend.py), run on all three.

- ``local``: real processes (``bash -c "python -c ..."``) supervised by executors.lane_runner;
- ``gke``: the real ``kubernetes`` client against the loopback API server
  (tests/fakes/fake_k8s.py). The fake has no kubelet: :meth:`GkeHarness.settle` plays it,
  marking the JobSet Completed or Failed and giving it a pod with the log the command prints;
- ``slurm``: real ``munged``, ``slurmctld`` and ``slurmd`` on localhost (tests/slurm_cluster.py,
  one cluster per test session; skipped, saying why, where slurm-wlm and munge are absent).
  The controller keeps every job for an hour, so each Slurm test runs as its own user prefix.

RELIABILITY rows 17 and 24 (unknown is never free and never gone), 22 (a launch re-called
after a crash adopts the run, never starts a second), 31 (a run past its ceiling is
ended), 46 (no credential reaches a run). Local-only and GKE-only behaviour follows the
shared contract at the end of the file.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import signal
import socket
import sys
import threading
import time
from pathlib import Path

import pytest

from wikiengine.core.identity import workload_name
from wikiengine.executors.compute import CapacityError, ComputeError, ComputeUnavailableError
from wikiengine.executors.lane_backend import ARTIFACT_KEYS, LaneBackend, LaunchConflict, LaunchSpec, WorkloadNotFound
from wikiengine.executors.lane_local import LocalLaneBackend
from wikiengine.executors.lane_runner import group_members

ENV_DIR = Path(__file__).parent / "data" / "env"
USER, MODEL, LANE = "alice", "gemma4", "tpu"
PREFIX = f"{USER}-{MODEL}-{LANE}"
MODEL_DIR = "gemma4_autoresearch_optimization"
DEADLINE_S = 30.0


def wait_for(predicate, what: str, deadline_s: float = DEADLINE_S):
    """Poll ``predicate`` until it returns something truthy; fail after the deadline."""
    end = time.monotonic() + deadline_s
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def program(line: str, exit_code: int = 0, sleep_s: float = 0.0) -> str:
    """Python that prints ``line``, optionally sleeps, and exits with ``exit_code``."""
    return f"import sys, time; print({line!r}, flush=True); time.sleep({sleep_s}); sys.exit({exit_code})"


class Harness:
    kind: str
    python: str
    backend: LaneBackend

    def spec(self, vid: int, slug: str, code: str, *, retry: str = "", timeout_s: float = 60.0,
             env: dict | None = None) -> LaunchSpec:
        """A launch spec whose command also names $XPROF_PATH and $HLO_PATH (dispatch's rule)."""
        command = f'{self.python} -c {shlex.quote(code)} "$XPROF_PATH" "$HLO_PATH"'
        return LaunchSpec(workload_name(USER, MODEL, LANE, vid, slug, retry), f"v{vid:03d}{retry}", slug, 1,
                          ["bash", "-c", command], env or {}, None, timeout_s)

    def finished(self, name: str):
        return wait_for(lambda: (w := self.backend.status(name)) is not None and w.is_finished and w, f"{name} to end")


class LocalHarness(Harness):
    kind = "local"

    def __init__(self, root: Path):
        self.root = root
        self.python = shlex.quote(sys.executable)
        self.backend = LocalLaneBackend(root, MODEL_DIR, LANE, kill_grace_s=1.0)

    def settle(self, spec: LaunchSpec, line: str, exit_code: int):
        return self.finished(spec.name)

    def make_running(self, spec: LaunchSpec):
        return wait_for(lambda: (w := self.backend.status(spec.name)).state == "running" and w.pid and w,
                        "the run to start")

    def runs_of(self, spec: LaunchSpec, line: str) -> int:
        return self.backend.logs(spec.name).splitlines().count(line)

    def nothing_running(self, spec: LaunchSpec) -> bool:
        """No process of the run's group is alive: run, children, runner (it exits right after its last write)."""
        record = json.loads((self.backend.folder / spec.name / "status.json").read_text())
        assert record["pgid"] == record["runner_pid"]
        return wait_for(lambda: not group_members(record["pgid"]), "the run's process group to be empty", 5.0)

    def faults(self, spec: LaunchSpec):
        folder = self.backend.folder
        status = folder / spec.name / "status.json"
        good = status.read_text()
        status.write_text('{"state": "runn')  # what a torn write would leave (the runner never does it)
        yield "a torn status.json"
        status.write_text(good)
        aside = folder.with_name("aside")
        folder.rename(aside)
        folder.write_text("not a folder\n")
        yield "the lane's state folder is a file"
        folder.unlink()
        aside.rename(folder)


class GkeHarness(Harness):
    kind = "gke"
    python = "python3"

    def __init__(self, api, kube, cluster):
        from wikiengine.executors.gke.lane import GkeLaneBackend
        from wikiengine.executors.gke.occupancy import Me

        self.api, self.kube = api, kube
        self.backend = GkeLaneBackend(kube, cluster.namespace, cluster=cluster, me=Me(USER, MODEL, LANE),
                                      image="example-registry/app:main", storage_root="gs://example-bucket")

    def settle(self, spec: LaunchSpec, line: str, exit_code: int):
        """Play the kubelet: the pod ran, printed ``line`` and exited with ``exit_code``."""
        self.api.add_pod(f"{spec.name}-slice-job-0-0-abcde", spec.name, f"{line}\n", exit_code=exit_code)
        self.api.set_state(spec.name, terminal_state="Completed" if exit_code == 0 else "Failed")
        return self.finished(spec.name)

    def make_running(self, spec: LaunchSpec):
        self.api.set_state(spec.name, active=1)
        self.api.add_pod(f"{spec.name}-slice-job-0-0-abcde", spec.name, "step 1\n")
        return self.backend.status(spec.name)

    def runs_of(self, spec: LaunchSpec, line: str) -> int:
        return len([r for r in self.api.requests if r.method == "POST" and r.body["metadata"]["name"] == spec.name])

    def nothing_running(self, spec: LaunchSpec) -> bool:
        return ("default", spec.name) not in self.api.jobsets and not any(
            key[1].startswith(spec.name) for key in self.api.pods)

    def faults(self, spec: LaunchSpec):
        self.api.fail("GET", r"/jobsets", "500", times=10)
        yield "HTTP 500"
        self.api.faults.clear()
        real = self.backend.kube
        self.backend.kube = _kube(f"http://127.0.0.1:{_closed_port()}", "closed-port")
        yield "a closed port"
        self.api.fail("GET", r"/jobsets", "stall", times=10)
        self.backend.kube = _kube(self.api.url, "stalled", deadline_s=0.3)
        yield "a stall past the deadline"
        self.api.faults.clear()
        self.backend.kube = real


class SlurmHarness(Harness):
    kind = "slurm"

    def __init__(self, root: Path, cluster):
        from wikiengine.executors.lane_slurm import SlurmLaneBackend

        self.root, self.cluster = root, cluster
        self.python = shlex.quote(sys.executable)
        self.backend = SlurmLaneBackend(root, MODEL_DIR, LANE, env=cluster.env, command_timeout_s=10.0)

    def settle(self, spec: LaunchSpec, line: str, exit_code: int):
        return self.finished(spec.name)

    def make_running(self, spec: LaunchSpec):
        return wait_for(lambda: (w := self.backend.status(spec.name)).state == "running" and w, "the job to start")

    def runs_of(self, spec: LaunchSpec, line: str) -> int:
        return self.backend.logs(spec.name).splitlines().count(line)

    def nothing_running(self, spec: LaunchSpec) -> bool:
        """Slurm holds no job of the name in flight (slurmd killed every process of a job before it ends)."""
        jobs = [job for job in self.backend.jobs() if job.name == spec.name]
        return bool(jobs) and all(job.state.split()[0] not in ("PENDING", "RUNNING", "COMPLETING") for job in jobs)

    def faults(self, spec: LaunchSpec):
        self.cluster.stop_daemon("slurmctld")
        yield "the controller is stopped"
        self.cluster.restart_controller()
        slow = self.root / "slow-bin"
        slow.mkdir(exist_ok=True)
        (slow / "scontrol").write_text("#!/bin/sh\nsleep 30\n")
        (slow / "scontrol").chmod(0o755)
        real_env, real_timeout = dict(self.backend.env), self.backend.command_timeout_s
        self.backend.env["PATH"] = f"{slow}:{os.environ['PATH']}"
        self.backend.command_timeout_s = 0.5
        yield "scontrol past its timeout"
        self.backend.env, self.backend.command_timeout_s = real_env, real_timeout


def _alive(pid) -> bool:
    if not pid:
        return False
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _kube(url: str, cluster: str, deadline_s: float = 2.0):
    from kubernetes import client

    from wikiengine.executors.gke.kube import Kube

    return Kube.from_configuration(client.Configuration(host=url), cluster=cluster, deadline_s=deadline_s)


_SLURM_USERS = iter(range(1, 10_000))


def slurm_harness(request, tmp_path, monkeypatch) -> SlurmHarness:
    """A Slurm harness whose workloads carry a user prefix of their own (the module's USER)."""
    cluster = request.getfixturevalue("slurm_cluster")
    user = f"s{next(_SLURM_USERS):04d}"
    monkeypatch.setattr(sys.modules[__name__], "USER", user)
    monkeypatch.setattr(sys.modules[__name__], "PREFIX", f"{user}-{MODEL}-{LANE}")
    harness = SlurmHarness(tmp_path, cluster)
    request.addfinalizer(lambda: [harness.backend.delete(w.name) for w in harness.backend.list_workloads(PREFIX)
                                  if w.in_flight])
    return harness


# the slurm harness asks for the session's cluster at run time: its group is named here (tests/conftest.py)
@pytest.fixture(params=["local", "gke", pytest.param("slurm", marks=pytest.mark.xdist_group("slurm"))])
def harness(request, tmp_path, monkeypatch):
    if request.param == "local":
        yield LocalHarness(tmp_path)
        return
    if request.param == "slurm":
        yield slurm_harness(request, tmp_path, monkeypatch)
        return
    with gke_harness(monkeypatch) as gke:
        yield gke


@contextlib.contextmanager
def gke_harness(monkeypatch):
    """The GKE lane backend on a loopback API server (one cluster, ``dave-v5p-16``)."""
    pytest.importorskip("kubernetes")
    from tests.fakes.fake_k8s import FakeKubeApi
    from wikiengine.executors.gke.clusters import parse_cluster_file

    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    with FakeKubeApi(stall_s=5.0) as api:
        kube = _kube(api.url, "dave-v5p-16")
        try:
            yield GkeHarness(api, kube, parse_cluster_file(ENV_DIR / "gke-v5p-2x2x2-dave.md"))
        finally:
            kube.close()


# -- the contract ------------------------------------------------------------------------------


def test_both_backends_satisfy_the_protocol(harness):
    assert isinstance(harness.backend, LaneBackend)


def test_nothing_launched_lists_empty_and_a_missing_name_is_gone(harness):
    assert harness.backend.list_workloads(PREFIX) == []
    assert harness.backend.status(workload_name(USER, MODEL, LANE, 1, "never")) is None
    with pytest.raises(WorkloadNotFound):
        harness.backend.logs(workload_name(USER, MODEL, LANE, 1, "never"))
    with pytest.raises(WorkloadNotFound):
        harness.backend.artifacts(workload_name(USER, MODEL, LANE, 1, "never"))


def test_a_run_is_launched_listed_and_reported_succeeded_with_its_log(harness):
    spec = harness.spec(7, "remat", program("step 100 tokens_per_s 4123.5"))
    launched = harness.backend.launch(spec)
    assert (launched.name, launched.vid, launched.slug) == (spec.name, "v007", "remat")
    assert launched.state in ("queued", "running", "succeeded")
    done = harness.settle(spec, "step 100 tokens_per_s 4123.5", 0)
    assert (done.state, done.exit_code, done.crashed) == ("succeeded", 0, False)
    assert done.started and done.finished and done.progress_at
    # what max_chip_hours burns: a slot (local; Slurm without --gres), a v5p 2x2x2 slice
    assert done.chips == (8 if harness.kind == "gke" else 1)
    assert harness.backend.logs(spec.name) == "step 100 tokens_per_s 4123.5"
    assert done.command == shlex.join(spec.argv)  # what the page's Setup quotes
    assert "step 100 tokens_per_s 4123.5" in done.log_tail
    [listed] = harness.backend.list_workloads(PREFIX)
    assert (listed.name, listed.vid, listed.state) == (spec.name, "v007", "succeeded")
    assert harness.backend.list_workloads("bob-gemma4-tpu") == []  # another user's lane sees nothing


def test_a_track_holds_one_run_at_a_time(harness):
    first = harness.spec(14, "first", program("step 1", sleep_s=120))
    harness.backend.launch(first)
    harness.make_running(first)
    second = harness.spec(15, "second", program("x"))
    with pytest.raises(CapacityError, match=first.name):
        harness.backend.launch(second)
    assert harness.backend.status(second.name) is None
    harness.backend.delete(first.name)
    assert harness.backend.launch(second).name == second.name  # the slot is free again


def test_artifact_locations_name_metrics_profile_and_hlo(harness):
    spec = harness.spec(8, "art", program("x"))
    harness.backend.launch(spec)
    paths = harness.backend.artifacts(spec.name)
    assert set(paths) == set(ARTIFACT_KEYS)
    assert paths["metrics"] == paths["artifact_dir"] + "/metrics.json"
    assert (paths["xprof"], paths["hlo"]) == (paths["artifact_dir"] + "/xprof", paths["artifact_dir"] + "/hlo")


def test_row22_launch_twice_is_one_run_adopted(harness):
    spec = harness.spec(9, "twice", program("ran once"))
    first = harness.backend.launch(spec)
    again = harness.backend.launch(spec)  # the lane mode re-calls launch after a crash
    assert again.name == first.name
    harness.settle(spec, "ran once", 0)
    after_end = harness.backend.launch(spec)  # a finished run is adopted too, never re-run
    assert after_end.state == "succeeded"
    assert harness.runs_of(spec, "ran once") == 1
    assert len(harness.backend.list_workloads(PREFIX)) == 1


def test_the_same_name_with_another_command_is_a_conflict(harness):
    spec = harness.spec(10, "clash", program("a"))
    harness.backend.launch(spec)
    other = harness.spec(10, "clash", program("b"))
    with pytest.raises(LaunchConflict, match="retry suffix"):
        harness.backend.launch(other)


def test_a_failed_run_is_failed_with_a_non_zero_exit_code_and_a_readable_log(harness):
    spec = harness.spec(11, "oom", program("RuntimeError: RESOURCE_EXHAUSTED: HBM OOM", exit_code=3))
    harness.backend.launch(spec)
    done = harness.settle(spec, "RuntimeError: RESOURCE_EXHAUSTED: HBM OOM", 3)
    assert done.state == "failed" and done.crashed and done.exit_code not in (None, 0)
    assert "RESOURCE_EXHAUSTED" in harness.backend.logs(spec.name, tail=5)
    [listed] = harness.backend.list_workloads(PREFIX)
    assert listed.is_finished and listed.crashed and "RESOURCE_EXHAUSTED" in listed.log_tail


def test_delete_is_idempotent_and_leaves_nothing_running(harness):
    spec = harness.spec(12, "hang", program("step 1", sleep_s=120))
    harness.backend.launch(spec)
    harness.make_running(spec)
    harness.backend.delete(spec.name)
    after = harness.backend.status(spec.name)
    assert after is None or (after.is_finished and after.state == "failed")
    assert harness.nothing_running(spec)
    harness.backend.delete(spec.name)  # twice
    harness.backend.delete(workload_name(USER, MODEL, LANE, 99, "never-was"))  # never existed
    assert harness.backend.status(spec.name) == after


def test_row46_a_credential_in_the_spec_env_is_refused_before_anything_starts(harness):
    spec = harness.spec(24, "leak", program("x"), env={"WANDB_API_KEY": "canary-wb-91f3"})
    with pytest.raises(ComputeError, match="WANDB_API_KEY"):
        harness.backend.launch(spec)
    assert harness.backend.status(spec.name) is None and harness.backend.list_workloads(PREFIX) == []


@pytest.mark.parametrize("env, problem", [({"METRICS_PATH": "/tmp/elsewhere"}, "set by the backend"),
                                          ({"BATCH": 16}, "must be a string")])
def test_a_spec_cannot_redirect_the_backend_variables_or_pass_non_strings(harness, env, problem):
    spec = harness.spec(25, "bad-env", program("x"), env=env)
    with pytest.raises(ComputeError, match=problem):
        harness.backend.launch(spec)
    assert harness.backend.status(spec.name) is None


@pytest.mark.parametrize("call", ["list_workloads", "status"])
def test_row17_an_unreachable_backend_is_unknown_never_empty_or_gone(harness, call):
    spec = harness.spec(13, "seen", program("x"))
    harness.backend.launch(spec)
    harness.settle(spec, "x", 0)
    for fault in harness.faults(spec):
        with pytest.raises(ComputeUnavailableError):
            if call == "list_workloads":
                harness.backend.list_workloads(PREFIX)
            else:
                harness.backend.status(spec.name)
        print("unknown under", fault)
    assert harness.backend.status(spec.name).state == "succeeded"  # and readable again once repaired


# -- local processes ----------------------------------------------------------------------------


@pytest.fixture
def local(tmp_path):
    return LocalHarness(tmp_path)


def test_row31_local_a_run_past_its_timeout_is_killed_and_reported(local):
    spec = local.spec(20, "slow", program("started", sleep_s=120), timeout_s=0.5)
    local.backend.launch(spec)
    done = local.finished(spec.name)
    assert done.state == "failed" and "timed out after 0.5s" in done.reason
    assert done.exit_code == 128 + signal.SIGTERM
    assert local.backend.logs(spec.name).splitlines() == ["started", "[lane-runner] timed out after 0.5s: process group killed"]
    assert local.nothing_running(spec)


def _left_behind(local, number: int, slug: str, popen_options: str = "") -> tuple:
    """Launch a run that starts ``sleep 120`` (with ``popen_options``) and exits 0; once it
    finished, the sleeper's pid is waited on until it is gone."""
    code = (f"import subprocess, sys; child = subprocess.Popen(['sleep', '120']{popen_options}); "
            "print('child', child.pid, flush=True); sys.exit(0)")
    spec = local.spec(number, slug, code)
    local.backend.launch(spec)
    assert local.finished(spec.name).state == "succeeded"
    child = int(local.backend.logs(spec.name).split()[-1])
    wait_for(lambda: not _alive(child), "the left-behind process to be killed", 5.0)
    return spec


def test_local_nothing_a_run_started_outlives_it(local):
    assert local.nothing_running(_left_behind(local, 31, "leaky"))


def test_row77_local_a_setsid_child_of_the_run_does_not_outlive_it(local):
    """A grandchild in its own session (``start_new_session``: setsid) leaves the run's
    process group; the runner, a child subreaper, still finds and kills it."""
    _left_behind(local, 32, "escapee", ", start_new_session=True")


def test_local_a_runner_killed_with_sigkill_is_failed_with_a_reason(local):
    spec = local.spec(21, "orphan", program("step 1", sleep_s=120))
    local.backend.launch(spec)
    running = local.make_running(spec)
    runner = json.loads((local.backend.folder / spec.name / "runner.json").read_text())["pid"]
    os.kill(runner, signal.SIGKILL)
    wait_for(lambda: not _alive(runner), "the runner to die")
    orphan = local.backend.status(spec.name)  # the run itself still goes on, unsupervised
    assert orphan.state == "running" and "unsupervised" in orphan.reason
    os.kill(running.pid, signal.SIGKILL)
    wait_for(lambda: not _alive(running.pid), "the run to die")
    dead = local.backend.status(spec.name)
    assert dead.state == "failed" and dead.exit_code is None and "runner died" in dead.reason
    assert dead.finished is not None
    local.backend.delete(spec.name)
    assert local.backend.status(spec.name).state == "failed"


def test_row128_local_a_run_that_starts_and_ends_while_its_status_is_read_is_not_called_dead(local, monkeypatch):
    """A reader that finds no status.json, then a runner no longer alive, reads the status
    again before it calls the runner dead: under load the whole run can start and end
    between the two looks (a launch's own read once reported such a run failed, no exit code)."""
    from wikiengine.executors import lane_local

    spec = local.spec(24, "brief", program("step 1 loss 0.5"))
    status = local.backend.folder / spec.name / "status.json"
    real_alive = lane_local.still_running

    def asked_after_the_run_ended(pid, recorded, folder):
        wait_for(lambda: status.exists() and json.loads(status.read_text())["state"] == "succeeded"
                 and not real_alive(pid, recorded, folder), "the run to end and its runner to exit")
        return real_alive(pid, recorded, folder)

    monkeypatch.setattr(lane_local, "still_running", asked_after_the_run_ended)
    launched = local.backend.launch(spec)  # its own read finds no status, then a runner gone
    assert (launched.state, launched.exit_code) == ("succeeded", 0)
    assert launched.log_tail == "step 1 loss 0.5"


def test_local_delete_keeps_the_log_for_backfill(local):
    spec = local.spec(22, "killed", program("step 7 loss 2.1", sleep_s=120))
    local.backend.launch(spec)
    local.make_running(spec)
    wait_for(lambda: "step 7" in local.backend.logs(spec.name), "the first log line")
    local.backend.delete(spec.name)
    gone = local.backend.status(spec.name)
    assert gone.state == "failed" and gone.reason.startswith("deleted by the lane")
    assert local.backend.logs(spec.name).splitlines()[0] == "step 7 loss 2.1"


def test_row46_local_runs_get_the_clean_room_and_the_artifact_paths(local, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", "canary-hf-6c1d")
    monkeypatch.setenv("KAGGLE_KEY", "canary-kg-77ab")
    code = ("import json, os, sys; json.dump({k: os.environ.get(k) for k in ('HF_TOKEN', 'KAGGLE_KEY', 'HOME', "
            "'ARTIFACT_DIR', 'METRICS_PATH', 'XPROF_PATH', 'HLO_PATH', 'BATCH')}, sys.stdout); print(); "
            "print(sys.argv[1:]); open(os.environ['METRICS_PATH'], 'w').write('{\"tokens_per_s\": 1.0}')")
    spec = local.spec(23, "env", code, env={"BATCH": "16"})
    local.backend.launch(spec)
    done = local.finished(spec.name)
    assert done.state == "succeeded", done.log_tail
    seen = json.loads(local.backend.logs(spec.name).splitlines()[0])
    paths = local.backend.artifacts(spec.name)
    assert seen["HF_TOKEN"] is None and seen["KAGGLE_KEY"] is None and seen["BATCH"] == "16"
    assert seen["HOME"] == str(local.backend.folder / spec.name / "home")
    assert [seen["ARTIFACT_DIR"], seen["METRICS_PATH"], seen["XPROF_PATH"], seen["HLO_PATH"]] == [
        paths["artifact_dir"], paths["metrics"], paths["xprof"], paths["hlo"]]
    assert json.loads(Path(paths["metrics"]).read_text()) == {"tokens_per_s": 1.0}
    for path in (local.backend.folder / spec.name).rglob("*"):
        if path.is_file():
            text = path.read_text(errors="replace")
            assert "canary-hf-6c1d" not in text and "canary-kg-77ab" not in text, path


def test_local_the_spec_may_name_the_artifact_dir(local):
    spec = local.spec(25, "dir", "import os; open(os.environ['METRICS_PATH'], 'w').write('{}')")
    spec = LaunchSpec(**{**spec.__dict__, "artifact_dir": "out/v025"})
    local.backend.launch(spec)
    assert local.finished(spec.name).state == "succeeded"
    assert (local.root / "out" / "v025" / "metrics.json").read_text() == "{}"


def test_local_concurrent_launches_of_one_name_start_one_run(local):
    spec = local.spec(26, "race", program("ran"))
    barrier = threading.Barrier(4)
    results = []

    def go():
        barrier.wait()
        results.append(local.backend.launch(spec).name)

    threads = [threading.Thread(target=go) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == [spec.name] * 4
    local.finished(spec.name)
    assert local.runs_of(spec, "ran") == 1


def test_local_a_launch_interrupted_before_the_runner_is_finished_by_the_next(local):
    spec = local.spec(27, "resume", program("ran"))
    folder = local.backend.folder / spec.name
    folder.mkdir(parents=True)  # what a launch killed right after claiming the name leaves
    interrupted = local.backend.status(spec.name)
    assert interrupted.state == "queued" and "launch it again" in interrupted.reason
    local.backend.launch(spec)
    assert local.finished(spec.name).state == "succeeded" and local.runs_of(spec, "ran") == 1


def test_local_a_command_that_cannot_start_is_failed_127(local):
    spec = LaunchSpec(workload_name(USER, MODEL, LANE, 28, "nope"), "v028", "nope", 1, ["/nonexistent/bin/x"])
    local.backend.launch(spec)
    done = local.finished(spec.name)
    assert done.state == "failed" and done.exit_code == 127 and "cannot start" in done.reason


def test_local_progress_is_the_newest_of_the_progress_file_and_the_log(local):
    code = "import os, time; print('a', flush=True); time.sleep(0.3); open(os.environ['PROGRESS_PATH'], 'w').close()"
    spec = local.spec(29, "prog", code)
    local.backend.launch(spec)
    done = local.finished(spec.name)
    progress_file = local.backend.folder / spec.name / "progress"
    assert progress_file.exists() and done.progress_at >= done.started


def test_local_backfill_records_written_by_another_tool_read_as_they_say(local):
    folder = local.backend.folder / f"{PREFIX}-v030-old"
    folder.mkdir(parents=True)
    (folder / "status.json").write_text(json.dumps({"state": "running", "exit_code": None}))
    assert local.backend.status(folder.name).state == "running"


# -- GKE ---------------------------------------------------------------------------------------


@pytest.fixture
def gke(harness):
    if harness.kind != "gke":
        pytest.skip("GKE only")
    return harness


@pytest.mark.parametrize("harness", ["gke"], indirect=True)
def test_gke_launch_dispatches_the_xpk_jobset_with_paths_env_and_deadline(gke):
    spec = gke.spec(40, "remat-policy-selective", program("x"), timeout_s=1800, env={"BATCH": "16"})
    launched = gke.backend.launch(spec)
    assert (launched.name, launched.slug) == ("alice-gemma4-tpu-v040-remat-policy-sel", "remat-policy-sel")
    assert gke.backend.launch(spec).slug == "remat-policy-sel"  # adopted, read the same way
    [post] = [r for r in gke.api.requests if r.method == "POST"]
    job = post.body["spec"]["replicatedJobs"][0]["template"]["spec"]
    container = job["template"]["spec"]["containers"][0]
    env = {e["name"]: e["value"] for e in container["env"]}
    root = "gs://example-bucket/autoresearch/gemma4-tpu-v040-remat-policy-selective"  # the full slug in storage
    assert env["XPROF_PATH"] == root + "/xprof" and env["METRICS_PATH"] == root + "/metrics.json"
    assert env["BATCH"] == "16" and env["WORKLOAD_NAME"] == spec.name
    assert job["activeDeadlineSeconds"] == 1800
    assert container["command"] == ["bash", "-c", shlex.join(spec.argv)]
    assert gke.backend.artifacts(spec.name)["artifact_dir"] == root


@pytest.mark.parametrize("harness", ["gke"], indirect=True)
def test_gke_a_busy_cluster_refuses_and_submits_nothing(gke):
    gke.api.add_jobset("bob-llama3-tpu-v003-tp")
    with pytest.raises(CapacityError, match="occupied by .*bob-llama3-tpu-v003-tp"):
        gke.backend.launch(gke.spec(41, "x", program("x")))
    assert not [r for r in gke.api.requests if r.method == "POST"]


@pytest.mark.parametrize("harness", ["gke"], indirect=True)
def test_row17_gke_a_create_whose_answer_was_lost_is_adopted(gke):
    gke.api.fail("POST", r"/jobsets$", "lost")
    spec = gke.spec(42, "lost", program("x"))
    workload = gke.backend.launch(spec)
    assert workload.name == spec.name and workload.state == "queued"
    assert gke.runs_of(spec, "x") == 1 and gke.backend.launch(spec).name == spec.name


@pytest.mark.parametrize("harness", ["gke"], indirect=True)
def test_row24_gke_a_failed_delete_is_unknown_not_done(gke):
    spec = gke.spec(43, "del", program("x"))
    gke.backend.launch(spec)
    gke.api.fail("DELETE", r"/jobsets/", "500")
    with pytest.raises(ComputeUnavailableError):
        gke.backend.delete(spec.name)
    assert gke.backend.status(spec.name) is not None
    gke.backend.delete(spec.name)
    assert gke.backend.status(spec.name) is None
    assert [r.path for r in gke.api.requests if r.method == "DELETE"][-1].endswith(f"/jobsets/{spec.name}")


@pytest.mark.parametrize("harness", ["gke"], indirect=True)
def test_gke_a_command_that_ignores_the_paths_is_refused(gke):
    spec = LaunchSpec(workload_name(USER, MODEL, LANE, 44, "np"), "v044", "np", 1, ["python3", "train.py"])
    with pytest.raises(ComputeError, match="does not write to"):
        gke.backend.launch(spec)
    assert not [r for r in gke.api.requests if r.method == "POST"]


@pytest.mark.parametrize("harness", ["gke"], indirect=True)
def test_gke_a_listing_reads_the_log_of_a_crashed_run_only(gke):
    """A lane keeps its finished JobSets: a wake's listing reads no log of a run that
    succeeded (one request each, every wake); a crashed one's tail is what backfill files."""
    ok, oom = gke.spec(47, "ok", program("fine")), gke.spec(48, "oom", program("x", exit_code=3))
    gke.backend.launch(ok)
    gke.settle(ok, "step 100 fine", 0)  # one slice: the next launches once this one ended
    gke.backend.launch(oom)
    gke.settle(oom, "RESOURCE_EXHAUSTED", 3)
    before = len(gke.api.requests)
    listed = {w.name: w for w in gke.backend.list_workloads(PREFIX)}
    logs = [r.path for r in gke.api.requests[before:] if r.path.endswith("/log")]
    assert listed[ok.name].state == "succeeded" and listed[ok.name].log_tail == ""
    assert listed[oom.name].crashed and "RESOURCE_EXHAUSTED" in listed[oom.name].log_tail
    assert logs == [f"/api/v1/namespaces/default/pods/{oom.name}-slice-job-0-0-abcde/log"]
    assert "step 100 fine" in gke.backend.status(ok.name).log_tail  # asked for one, it reads it


@pytest.mark.parametrize("harness", ["gke"], indirect=True)
def test_gke_a_jobset_failed_before_any_pod_ran_has_no_exit_code_but_a_reason(gke):
    spec = gke.spec(45, "deadline", program("x"))
    gke.backend.launch(spec)
    gke.api.set_state(spec.name, terminal_state="Failed")
    done = gke.backend.status(spec.name)
    assert (done.state, done.exit_code, done.crashed) == ("failed", None, True)
    assert done.reason == "jobset failed" and done.log_tail == "" and gke.backend.logs(spec.name) == ""


@pytest.mark.parametrize("harness", ["gke"], indirect=True)
def test_gke_connect_reaches_the_cluster_through_its_kubeconfig_context(gke, tmp_path):
    from wikiengine.executors.gke.clusters import parse_cluster_file
    from wikiengine.executors.gke.lane import GkeLaneBackend
    from wikiengine.executors.gke.occupancy import Me

    cluster = parse_cluster_file(ENV_DIR / "gke-v5p-2x2x2-dave.md")
    kubeconfig = gke.api.write_kubeconfig(tmp_path / "kubeconfig", [cluster.context])
    backend = GkeLaneBackend.connect(cluster, Me(USER, MODEL, LANE), "example-registry/app:main",
                                     "gs://example-bucket", kubeconfig=kubeconfig, deadline_s=2.0)
    spec = gke.spec(46, "ctx", program("x"))
    assert backend.launch(spec).name == spec.name and ("default", spec.name) in gke.api.jobsets
    assert gke.api.requests[-1].headers["authorization"] == "Bearer fake-test-token"

