"""Fixtures shared across test modules."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def slurm_cluster(tmp_path_factory):
    """One real one-node Slurm cluster for the test session (tests/slurm_cluster.py); a test
    that needs it is skipped, saying why, where slurm-wlm and munge are not installed."""
    from tests.slurm_cluster import SlurmCluster, missing

    why = missing()
    if why:
        pytest.skip(why)
    with SlurmCluster(tmp_path_factory.mktemp("slurm")) as cluster:
        yield cluster
