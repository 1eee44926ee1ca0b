"""The basetemps of earlier runs are removed from the session's start (tests/old_basetemps.py):
the very folders pytest's exit cleanup would remove, never the current one, a locked one or
a link."""

from __future__ import annotations

import getpass
import os
import subprocess
import sys
from pathlib import Path

from tests.old_basetemps import LOCK, remove_in_background, stale

REPO = Path(__file__).resolve().parents[1]


def numbered(root: Path, *numbers: int) -> list[Path]:
    paths = [root / f"pytest-{n}" for n in numbers]
    for path in paths:
        (path / "popen-gw0" / "a-test0").mkdir(parents=True)
        (path / "popen-gw0" / "a-test0" / "page.md").write_text("# a page\n", encoding="utf-8")
    return paths


def test_the_stale_ones_are_those_past_the_retention_unlocked_and_numbered(tmp_path):
    zero, one, two, three, four, five = numbered(tmp_path, 0, 1, 2, 3, 4, 5)
    (one / LOCK).write_text("", encoding="utf-8")  # a run that holds it
    (tmp_path / "pytest-current").symlink_to(five)
    (tmp_path / "pytest-1x").mkdir()
    (tmp_path / "garbage-0a1b").mkdir()
    assert stale(tmp_path, five, keep=3) == [zero, two]
    assert stale(tmp_path, five, keep=0) == [zero, two, three, four]
    assert stale(tmp_path, tmp_path / "pytest-current", keep=3) == []  # not a numbered basetemp


def test_the_stale_ones_go_in_a_thread_and_the_others_stay(tmp_path):
    zero, one, two = numbered(tmp_path, 0, 1, 2)
    thread = remove_in_background([zero, one])
    assert not zero.exists() and not one.exists()  # renamed before the call returns
    thread.join()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pytest-2"]
    assert (two / "popen-gw0" / "a-test0" / "page.md").read_text(encoding="utf-8") == "# a page\n"
    assert remove_in_background([tmp_path / "pytest-9"]) is None  # gone already: nothing to do


def run_inner_pytest(tmp_path: Path, *options: str, zero_gone: bool) -> Path:
    """A pytest run with the suite's session hooks on a temporary root holding a run of three
    before (0) and a later one (3); its one test asserts whether it finds 0 gone. The runs' folder."""
    runs = tmp_path / "temproot" / f"pytest-of-{getpass.getuser()}"
    zero, _ = numbered(runs, 0, 3)
    project = tmp_path / "project"
    project.mkdir()
    (project / "conftest.py").write_text("from tests.conftest import pytest_sessionfinish, pytest_sessionstart  # noqa: F401\n",
                                         encoding="utf-8")
    (project / "test_inner.py").write_text(
        f"from pathlib import Path\n\ndef test_the_old_run(tmp_path):\n"
        f"    assert Path({str(zero)!r}).exists() is {not zero_gone}\n    assert tmp_path.parent.name == 'pytest-4'\n",
        encoding="utf-8")
    env = {**os.environ, "PYTEST_DEBUG_TEMPROOT": str(tmp_path / "temproot"), "PYTHONPATH": str(REPO)}
    env.pop("PYTEST_XDIST_WORKER", None)
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *options, "test_inner.py"],
                          cwd=project, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return runs


def test_a_run_removes_the_run_of_three_before_while_its_tests_run(tmp_path):
    runs = run_inner_pytest(tmp_path, zero_gone=True)
    assert sorted(p.name for p in runs.iterdir()) == ["pytest-3", "pytest-4", "pytest-current"]
    assert (runs / "pytest-3" / "popen-gw0" / "a-test0" / "page.md").is_file()


def test_a_run_that_keeps_no_run_leaves_the_removal_to_pytest(tmp_path):
    """Keeping no run, pytest locks no basetemp: a run going on beside this one would look stale."""
    run_inner_pytest(tmp_path, "-o", "tmp_path_retention_count=0", zero_gone=False)
