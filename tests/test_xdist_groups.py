"""How the suite runs (tests/conftest.py): tests marked ``xdist_group`` run on one
worker, and so do the tests marked ``waits``. pytest-xdist 3.8 names a group where pytest 9.2 no longer reads it, so the groups were
once ignored without a word (each worker started a Slurm cluster of its own). The workers and
what they start write byte code, whatever ``PYTHONDONTWRITEBYTECODE`` says, and they freeze
what collection made."""

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


BYTE_CODE = """
import os, subprocess, sys

def test_this_worker_and_its_children_write_byte_code():
    assert "PYTHONDONTWRITEBYTECODE" not in os.environ and not sys.dont_write_bytecode
    child = subprocess.run([sys.executable, "-c", "import sys; print(sys.flags.dont_write_bytecode)"],
                           capture_output=True, text=True, check=True)
    assert child.stdout.strip() == "0"
"""


def test_the_workers_write_byte_code_whatever_pythondontwritebytecode_says(tmp_path):
    """Each worker and each process a test starts reads the engine's byte code rather than compiling it
    again (tests/conftest.py, ``pytest_configure``)."""
    (tmp_path / "test_byte_code.py").write_text(BYTE_CODE)
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "tests.conftest", "-n", "2", "-p", "no:cacheprovider",
                           f"--basetemp={tmp_path / 'inner'}", str(tmp_path)], cwd=REPO, capture_output=True, text=True,
                          timeout=300, env={**os.environ, "PYTHONPATH": str(REPO), "PYTHONDONTWRITEBYTECODE": "1"})
    assert done.returncode == 0 and "1 passed" in done.stdout, done.stdout[-2000:] + done.stderr[-2000:]


def test_this_process_froze_what_collection_made_and_collects_fully_less_often():
    """The process running this test walks less in a full garbage collection, and makes fewer of
    them (tests/conftest.py, ``pytest_collection_finish``)."""
    import gc

    from tests.conftest import FULL_COLLECTION_AFTER

    assert gc.get_freeze_count() > 10_000  # the test modules alone are tens of thousands of objects
    assert gc.get_threshold()[2] == FULL_COLLECTION_AFTER > 10
