"""benchmarks/pytest_cpu.py names the tests that mostly waited outside an xdist group: the
candidates for the ``waits`` mark, whose worker waits beside the ones that compute."""

from __future__ import annotations

import importlib.util
from pathlib import Path

PLUGIN = Path(__file__).resolve().parents[1] / "benchmarks" / "pytest_cpu.py"


def _plugin():
    spec = importlib.util.spec_from_file_location("pytest_cpu", PLUGIN)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def row(nodeid: str, wall: float, cpu: float, phase: str = "call") -> tuple:
    return (cpu, 0.0, wall, phase, nodeid, "gw0", 0.0)  # cpu, children, wall, phase, test, worker, start


def test_tests_that_waited_outside_a_group_are_named_with_their_phases_summed():
    rows = [
        row("tests/a.py::waited", 0.5, 0.1, "setup"), row("tests/a.py::waited", 2.0, 0.1),  # 2.5 s at 0.2 s CPU
        row("tests/a.py::computed", 2.0, 1.5),
        row("tests/a.py::short", 0.5, 0.0),
        row("tests/a.py::grouped@waits", 3.0, 0.1), row("tests/a.py::slurm[x]@slurm", 3.0, 0.1),
        row("tests/a.py::param[user@host]", 3.0, 0.1),  # an @ inside the parameters is no group
    ]
    assert _plugin().waiting_outside_groups(rows) == [(3.0, 0.1, "tests/a.py::param[user@host]"),
                                                     (2.5, 0.2, "tests/a.py::waited")]
