"""The suite's xdist groups hold (tests/conftest.py): tests marked ``xdist_group`` run on one
worker, and so do the tests marked ``waits``. pytest-xdist 3.8 names a group where pytest 9.2 no longer reads it, so the groups were
once ignored without a word (each worker started a Slurm cluster of its own)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TESTS = """
import pytest

@pytest.mark.xdist_group("g")
@pytest.mark.parametrize("n", range(6))
def test_grouped(n):
    pass

@pytest.mark.parametrize("n", range(6))
def test_free(n):
    pass

@pytest.mark.waits
@pytest.mark.parametrize("n", range(6))
def test_waiting(n):
    pass
"""


def test_a_group_runs_on_one_worker(tmp_path):
    (tmp_path / "test_grouped.py").write_text(TESTS)
    # a basetemp of its own: by default the inner run numbers a new folder beside the outer run's and
    # deletes the older runs' folders first, which took a minute on a machine that kept a few suites
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "tests.conftest", "-n", "2", "--dist", "loadgroup",
                           "-v", "-p", "no:cacheprovider", f"--basetemp={tmp_path / 'inner'}", str(tmp_path)], cwd=REPO, capture_output=True, text=True,
                          timeout=300, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    ran = re.findall(r"^\[(gw\d)\] .*PASSED .*::(test_\w+)\[(\d)\](@\w+)?", done.stdout, re.M)
    assert len(ran) == 18, done.stdout
    for name, group in (("test_grouped", "@g"), ("test_waiting", "@waits"), ("test_free", "")):
        assert all(found == group for _, test, _, found in ran if test == name), done.stdout
        if group:
            assert len({worker for worker, test, _, _ in ran if test == name}) == 1, done.stdout
