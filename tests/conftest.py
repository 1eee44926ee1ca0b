"""Fixtures shared across test modules, and how the suite spreads over xdist workers."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests import old_basetemps
from tests.run_once import once

REPO = Path(__file__).resolve().parents[1]


# session fixtures whose tests run on one xdist worker (--dist loadgroup), by group name:
# - the one-node Slurm cluster is one per machine (its node is this host), and its tests stop
#   its controller and drain its node;
# - a built resource (tests/run_once.py) is built once per run whatever the worker, but a second
#   worker that asks for it while the first builds would sit idle for minutes.
GROUPS = {"slurm_cluster": "slurm", "autoresearch_demo": "autoresearch-demo"}
# the groups whose tests spend most of their time waiting, each on a worker of its own: Slurm's
# (its scheduler, its stopped controller) and the tests marked ``waits``, grouped under that name
WAITS = "waits"
WAITING_GROUPS = (GROUPS["slurm_cluster"], WAITS)
# a full garbage collection after this many collections of the middle generation (Python: 10)
FULL_COLLECTION_AFTER = 100


def pytest_configure(config):
    """The run writes byte code whatever ``PYTHONDONTWRITEBYTECODE`` says (it is set on the machines
    this project is built on). With it, each xdist worker rewrote every test module's asserts again
    (collection 8.3-8.6 s of CPU a worker instead of 3.7-4.0 s), and each of the suite's 1,400 Python
    processes compiled the engine modules no earlier process had written. Dropped here, in the
    process that starts the workers, before it starts them (benchmarks/README.md, "Byte code
    whatever PYTHONDONTWRITEBYTECODE says")."""
    if os.environ.pop("PYTHONDONTWRITEBYTECODE", None) is not None:
        sys.dont_write_bytecode = False


_REMOVAL = pytest.StashKey()


@pytest.hookimpl(trylast=True)
def pytest_sessionstart(session):
    """The basetemps of earlier runs that pytest removes at a run's end, removed beside the tests
    instead (tests/old_basetemps.py)."""
    session.config.stash[_REMOVAL] = old_basetemps.start(session.config)


@pytest.hookimpl(tryfirst=True)  # before pytest's own cleanup of the numbered basetemps
def pytest_sessionfinish(session):
    old_basetemps.finish(session.config.stash.get(_REMOVAL, None))


def pytest_collection_finish(session):
    """Fewer full garbage collections in the processes that run tests. A worker's heap is the
    test modules, torch, Hypothesis and the clients after collection (358,000 objects), and
    grows to 640,000-850,000 as tests import more; each full collection walks all of it (0.13-0.22
    s), and a worker made 10-17 of them: 11.4 s of the suite's CPU. The objects alive now live as
    long as the process (frozen: no collection walks them again), and a full collection waits
    for 100 collections of the middle generation instead of 10 (a cycle a test leaves is still
    collected young, or by the next full collection; benchmarks/README.md, "Fewer full garbage collections")."""
    gc.freeze()
    young, middle, _ = gc.get_threshold()
    gc.set_threshold(young, middle, FULL_COLLECTION_AFTER)


def pytest_xdist_auto_num_workers(config):
    """``-n auto``: one worker a core for the tests that compute, and one more for each group of
    tests that mostly wait (:data:`WAITING_GROUPS`). Spread over the same workers as the rest, the
    waiting tests met: every worker waited at once for 10-40 s at a time, and an idle 2-core
    machine kept its cores 82-84% busy (3 workers); on workers of their own they wait while the
    others compute (4 workers, 96-97% busy): 365.6 -> 324.2 s and 375.9 -> 314.2 s back to back
    for the same CPU (benchmarks/README.md, "The waiting tests on a worker of their own").
    ``PYTEST_XDIST_AUTO_NUM_WORKERS`` still decides when it is set."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None  # xdist's own hook reads it
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return cores + len(WAITING_GROUPS)


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the xdist_group marks
def pytest_collection_modifyitems(config, items):
    for item in items:
        for name in GROUPS.keys() & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.xdist_group(GROUPS[name]))
        if item.get_closest_marker(WAITS) and not item.get_closest_marker("xdist_group"):
            item.add_marker(pytest.mark.xdist_group(WAITS))
        if getattr(config.option, "loadgroup", False):
            _name_the_group(item)
    # the slow tests (a minute or more each on a loaded machine) start first, so that no worker
    # is left running one alone at the end; the rest keep their order (a stable sort)
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


def _name_the_group(item) -> None:
    """Put the item's xdist group in its node id, as pytest-xdist's loadgroup does: xdist 3.8
    rewrites ``item._nodeid``, which pytest 9.2 no longer reads (the id is ``item._id``), so
    its groups are silently ignored there and each worker would start a Slurm cluster."""
    try:
        from _pytest.nodeid import NodeId
    except ImportError:  # an older pytest: xdist's own hook names the group
        return
    names = sorted({mark.args[0] if mark.args else mark.kwargs.get("name", "default")
                    for mark in item.iter_markers("xdist_group")})
    if names and isinstance(getattr(item, "_id", None), NodeId) and "@" not in item.nodeid.rsplit("]", 1)[-1]:
        item._id = NodeId.parse(f"{item.nodeid}@{'_'.join(names)}")


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


@pytest.fixture(scope="session")
def autoresearch_demo(tmp_path_factory) -> tuple[subprocess.CompletedProcess, Path]:
    """`wiki demo autoresearch` run once for the whole run, from a fresh clone of this repository
    (what its commits hold, nothing else): its process (exit status, output) and its folder.
    Shared by every test that reads it (tests/run_once.py): read it, never change it."""
    def build(folder: Path) -> dict:
        clone = folder / "clone"
        subprocess.run(["git", "clone", "--quiet", "--local", str(REPO), str(clone)], check=True)
        done = subprocess.run([sys.executable, "-m", "wikiengine", "demo", str(folder / "demo"), "--no-progress"],
                              cwd=folder, env=dict(os.environ, PYTHONPATH=str(clone)), capture_output=True, text=True,
                              timeout=900)
        return {"args": done.args, "returncode": done.returncode, "stdout": done.stdout, "stderr": done.stderr}

    folder, done = once(tmp_path_factory, "autoresearch-demo", build)
    return subprocess.CompletedProcess(**done), folder / "demo"


@pytest.fixture(scope="session")
def real_shape_corpus(tmp_path_factory) -> tuple[Path, list[dict]]:
    """The real-shape corpus (`benchmarks/gen_wiki.py --real-shape`, seed 0, committed), generated
    once for the whole run: its root and the violations it plants. Read it; a test that writes
    works on ``run_once.copy_of`` it."""
    from tests.lint_support import gen_wiki

    folder, planted = once(tmp_path_factory, "real-shape",
                           lambda folder: {"planted": gen_wiki().generate_real(folder / "wiki", seed=0)})
    return folder / "wiki", planted["planted"]
