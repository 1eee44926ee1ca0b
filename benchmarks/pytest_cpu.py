"""A pytest plugin: the CPU each test costs, its own process's and its waited-for children's.

    PYTHONPATH=benchmarks python -m pytest -p pytest_cpu [--cpu-top 20] [--cpu-dump FILE]

Wall time (``--durations``) on a shared 2-core machine says more about the load than about a
test; CPU says what the test costs. Each phase (setup, call, teardown) of each test is
measured in the process that runs it (an xdist worker, or pytest itself) with
``getrusage``: user + system time of that process, and of the children it waited for during
the phase (a ``wiki`` subprocess, a demo's training processes). Processes started under
another parent (a Slurm daemon's job) are not counted. The figures travel to the controller
with each report, so that a run on several workers is summed in one table at the end: the
tests with the most CPU, and the CPU by test file. ``--cpu-dump`` also gives each phase's
worker and its start (seconds from the session's start): the run's timeline, worker by worker
(with ``vmstat 2`` beside it, the windows where every worker waits at once).
"""

from __future__ import annotations

import resource
import time
from collections import defaultdict

import pytest

_KEY = "cpu_seconds"


def pytest_addoption(parser):
    parser.addoption("--cpu-top", type=int, default=20, help="tests listed by CPU (default 20)")
    parser.addoption("--cpu-dump", metavar="FILE", help="write every phase's row to FILE (tab-separated)")


def _times() -> tuple[float, float]:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    start = item.stash.get(_started, None)
    if start is not None and report.when == call.when:
        own, children = _times()
        report.user_properties.append((_KEY, (own - start[0], children - start[1])))


_started = pytest.StashKey[tuple]()


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    item.stash[_started] = _times()


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_call(item):
    item.stash[_started] = _times()


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_teardown(item):
    item.stash[_started] = _times()


class _Table:
    def __init__(self):
        self.rows: list[tuple[float, float, float, str, str, str, float]] = []
        # cpu, children, wall, phase, test, worker, start (seconds from the session's start)
        self.started = time.time()

    def add(self, report) -> None:
        for key, value in report.user_properties:
            if key == _KEY:
                own, children = value
                start = getattr(report, "start", self.started) - self.started
                self.rows.append((own + children, children, report.duration, report.when, report.nodeid,
                                  getattr(report, "worker_id", "-"), start))


_table = _Table()


def pytest_runtest_logreport(report):
    _table.add(report)


def pytest_terminal_summary(terminalreporter, config):
    rows = _table.rows
    if not rows:
        return
    if dump := config.getoption("cpu_dump"):
        with open(dump, "w", encoding="utf-8") as out:
            out.write("cpu_s\tchildren_s\twall_s\tphase\tworker\tstart_s\ttest\n")
            out.writelines(f"{cpu:.3f}\t{children:.3f}\t{wall:.3f}\t{phase}\t{worker}\t{start:.2f}\t{nodeid}\n"
                           for cpu, children, wall, phase, nodeid, worker, start in sorted(rows, reverse=True))
    write = terminalreporter.write_line
    total = sum(r[0] for r in rows)
    write("")
    write(f"CPU of the tests (their processes and waited-for children): {total:.1f} s over {len(rows)} phases")
    write("| CPU s | of it children | wall s | phase | test |")
    write("| ---: | ---: | ---: | --- | --- |")
    for cpu, children, wall, phase, nodeid, *_ in sorted(rows, reverse=True)[: config.getoption("cpu_top")]:
        write(f"| {cpu:.1f} | {children:.1f} | {wall:.1f} | {phase} | `{nodeid}` |")
    by_file: dict[str, float] = defaultdict(float)
    for cpu, _children, _wall, _phase, nodeid, *_ in rows:
        by_file[nodeid.split("::")[0]] += cpu
    write("")
    write("CPU by test file, s: " + ", ".join(f"{name.removeprefix('tests/')} {cpu:.1f}"
                                            for name, cpu in sorted(by_file.items(), key=lambda kv: -kv[1])[:15]))
    if waited := waiting_outside_groups(rows):
        write("")
        write(f"Tests that mostly waited outside an xdist group ({len(waited)}; mark them `waits`, tests/conftest.py):")
        for wall, cpu, nodeid in waited:
            write(f"  {wall:.1f} s wall, {cpu:.1f} s CPU: {nodeid}")


def waiting_outside_groups(rows) -> list[tuple[float, float, str]]:
    """``(wall, CPU, test)`` of each test, its phases summed, that spent 0.8 s or more at under
    0.4 s of CPU a second and ran in no xdist group (its node id has no ``@group``): it leaves a
    core idle beside the tests that compute, where the ``waits`` mark would put it beside them."""
    per_test: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    for cpu, _children, wall, _phase, nodeid, *_ in rows:
        per_test[nodeid][0] += wall
        per_test[nodeid][1] += cpu
    return sorted(((wall, cpu, nodeid) for nodeid, (wall, cpu) in per_test.items()
                   if wall >= 0.8 and cpu <= 0.4 * wall and "@" not in nodeid.rsplit("]", 1)[-1].rsplit("::", 1)[-1]),
                  reverse=True)
