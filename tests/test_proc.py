"""RELIABILITY row 129: a supervisor read while still inside exec is alive; a reused pid is not it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from wikiengine.executors import proc
from wikiengine.executors.proc import identity_of, still_running

SLEEPER = "import time; time.sleep(30)"


def _launch(folder: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", SLEEPER, str(folder)], stdin=subprocess.DEVNULL, start_new_session=True)


def _end(child: subprocess.Popen) -> None:
    child.kill()
    child.wait()


def test_row129_a_supervisor_read_the_moment_launch_returns_is_alive(tmp_path):
    """Read at once, the child is often still inside exec (its command line empty): with its
    identity kept, and with a record that has none (matched by command line), it is alive."""
    empty_seen = 0
    for _ in range(30):
        child = _launch(tmp_path)
        try:
            empty_seen += not Path(f"/proc/{child.pid}/cmdline").read_bytes()
            record = {"pid": child.pid, **identity_of(child.pid)}
            assert still_running(child.pid, record, tmp_path)
            assert still_running(child.pid, {}, tmp_path)
        finally:
            _end(child)
    print(f"{empty_seen} of 30 children read with an empty command line")


def test_row129_a_pid_that_names_another_process_is_not_the_supervisor(tmp_path):
    child = _launch(tmp_path)
    try:
        record = identity_of(child.pid)
        assert isinstance(record["start_ticks"], int) and record["boot_id"]
        assert still_running(child.pid, record, tmp_path)
        assert not still_running(child.pid, {**record, "start_ticks": record["start_ticks"] + 1}, tmp_path)  # reused
        assert not still_running(child.pid, {**record, "boot_id": "another-boot"}, tmp_path)  # after a reboot
        assert not still_running(os.getpid(), {}, tmp_path)  # an old record: a command line naming another folder
    finally:
        _end(child)
    assert not still_running(child.pid, record, tmp_path)  # gone


def test_row129_a_zombie_and_odd_pids_are_not_alive(tmp_path):
    child = subprocess.Popen([sys.executable, "-c", "pass", str(tmp_path)])
    record = identity_of(child.pid)
    os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)  # exited, not reaped: a zombie
    assert Path(f"/proc/{child.pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    assert not still_running(child.pid, record, tmp_path)
    assert not still_running(child.pid, {}, tmp_path)
    child.wait()
    for pid in (None, 0, -1, True, "self", str(os.getpid()), 2.0):
        assert not still_running(pid, {}, Path("/"))  # "self" would name the reader itself


def test_row129_a_kernel_thread_is_never_a_supervisor_between_programs():
    kernel_threads = [int(entry.name) for entry in Path("/proc").iterdir() if entry.name.isdigit()
                      and (fields := proc._stat(int(entry.name))) and int(fields[6]) & proc._KERNEL_THREAD]
    if not kernel_threads:
        pytest.skip("no kernel thread is visible in this pid namespace")
    assert not still_running(kernel_threads[0], {}, Path("/"))  # its command line is empty too
