"""The test suite's own Slurm cluster (tests/slurm_cluster.py) starts clean where a killed run
left one behind at the same path: its daemons would read and write the new cluster's state."""

from __future__ import annotations

import os
import shutil
import subprocess
import time

import pytest

from tests.slurm_cluster import DAEMONS, SlurmCluster, missing

pytestmark = pytest.mark.skipif(missing() is not None, reason=missing() or "")


@pytest.mark.waits
def test_a_cluster_left_running_at_the_same_path_is_stopped_and_the_new_one_runs_jobs(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("stale")  # short: munge's socket path must fit a sockaddr
    folder = tmp_path / "slurm"
    old = SlurmCluster(folder).start()
    try:
        left = {daemon: old._pid(daemon) for daemon in DAEMONS}
        assert all(left.values())
        shutil.rmtree(folder)  # a killed run's temporary folder removed, its daemons still running
        assert all(old._stale(daemon) == [left[daemon]] for daemon in DAEMONS)
        with SlurmCluster(folder) as new:
            assert all(new._stale(daemon) == [] for daemon in DAEMONS)  # every daemon is the new one's
            assert {daemon: new._pid(daemon) for daemon in DAEMONS}.keys() == left.keys()
            assert not set(left.values()) & {new._pid(daemon) for daemon in DAEMONS}
            job = subprocess.run([shutil.which("sbatch"), "--parsable", "--wrap", "true", "-o", str(tmp_path / "out.txt")],
                                 env={**os.environ, **new.env}, capture_output=True, text=True, timeout=30,
                                 check=True).stdout.strip()
            end = time.monotonic() + 60
            state = ""
            while time.monotonic() < end:
                state = new.scontrol("show", "job", job)
                if "JobState=COMPLETED" in state:
                    break
                time.sleep(0.2)
            assert "JobState=COMPLETED" in state, state
    finally:
        SlurmCluster(folder).stop()
