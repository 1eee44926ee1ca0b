"""core.locks: the one lock (flock): a second holder fails fast or waits up to its timeout."""

from __future__ import annotations

import errno
import fcntl
import subprocess
import sys
import time
from pathlib import Path

import pytest

from wikiengine.core import locks
from wikiengine.core.errors import ExitCode, LockBusy, WikiError, exit_code_of

HOLD = """
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)
fcntl.flock(fd, fcntl.LOCK_EX)
print("held", flush=True)
time.sleep(float(sys.argv[2]))
"""


def holder(path: Path, seconds: float) -> subprocess.Popen:
    """Another process holding ``path``'s flock for ``seconds`` (a raw flock: the two interoperate)."""
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(path), str(seconds)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "held"
    return proc


def test_take_release_take_again(tmp_path):
    path = tmp_path / "wiki-step.lock"
    with locks.FileLock(path) as lock:
        assert lock.held and path.exists()
    assert not lock.held and path.exists()  # the file stays: waiters share its inode
    assert locks.try_hold(path) is not None


def test_a_second_holder_fails_fast_without_a_timeout(tmp_path):
    path = tmp_path / "wiki-step.lock"
    proc = holder(path, 30)
    try:
        assert locks.try_hold(path) is None
        started = time.monotonic()
        with pytest.raises(LockBusy, match="the lane is busy"):
            locks.FileLock(path, busy="the lane is busy").acquire()
        assert time.monotonic() - started < 1
    finally:
        proc.kill()
        proc.wait()
    assert locks.try_hold(path) is not None  # a killed holder releases it with its process


@pytest.mark.waits
def test_a_waiter_waits_up_to_its_timeout_and_takes_the_lock_when_freed(tmp_path):
    path = tmp_path / "chip-0.lock"
    proc = holder(path, 0.5)
    try:
        started = time.monotonic()
        with locks.FileLock(path, timeout=20):
            assert time.monotonic() - started < 15
    finally:
        proc.kill()
        proc.wait()
    proc = holder(path, 30)
    try:
        started = time.monotonic()
        with pytest.raises(LockBusy):
            locks.FileLock(path, timeout=0.3).acquire()
        assert 0.3 <= time.monotonic() - started < 5
    finally:
        proc.kill()
        proc.wait()


def test_taking_a_lock_this_process_holds_fails_at_once_not_at_its_deadline(tmp_path):
    path = tmp_path / "lane.lock"
    with locks.FileLock(path):
        started = time.monotonic()
        with pytest.raises(LockBusy):
            locks.FileLock(path, timeout=60).acquire()
        assert time.monotonic() - started < 1
    with locks.FileLock(path, timeout=60):
        pass


def test_the_error_class_and_the_exit_status(tmp_path):
    class Unavailable(WikiError):
        pass

    path = tmp_path / ".lane.lock"
    with locks.FileLock(path):
        with pytest.raises(Unavailable, match="held"):
            locks.FileLock(path, error=Unavailable, busy="held").acquire()
        try:
            locks.FileLock(path).acquire()
        except LockBusy as exc:
            assert exit_code_of(exc) == ExitCode.BUSY


def test_one_of_several_slots(tmp_path):
    paths = [tmp_path / f"compile-{i}.lock" for i in range(2)]
    with locks.hold_any(paths, timeout=1, busy="busy") as first, locks.hold_any(paths, timeout=1, busy="busy") as second:
        assert (first, second) == (0, 1)
        with pytest.raises(LockBusy, match="busy"):
            with locks.hold_any(paths, timeout=0.2, busy="busy"):
                pass


def test_a_file_system_without_flock_is_one_clear_line(tmp_path, monkeypatch):
    def no_locks(fd, operation):
        raise OSError(errno.ENOLCK, "No locks available")

    monkeypatch.setattr(fcntl, "flock", no_locks)
    with pytest.raises(WikiError, match="supports no flock") as caught:
        locks.FileLock(tmp_path / "x.lock").acquire()
    assert not isinstance(caught.value, LockBusy) and "\n" not in str(caught.value)


def test_an_unwritable_lock_folder_is_one_clear_line(tmp_path):
    with pytest.raises(WikiError, match="cannot open the lock file"):
        locks.FileLock(tmp_path / "missing" / "x.lock").acquire()


def test_another_thread_waits_for_the_lock_rather_than_failing(tmp_path, monkeypatch):
    import threading

    path = tmp_path / ".lane.lock"
    order = []
    first = locks.FileLock(path).acquire()
    refused = threading.Event()  # the second thread found the lock held at least once: it is waiting

    def flock(fd, where):
        taken = real_flock(fd, where)
        if not taken:
            refused.set()
        return taken

    real_flock = locks._flock
    monkeypatch.setattr(locks, "_flock", flock)

    def second():
        with locks.FileLock(path, timeout=20):
            order.append("second")

    thread = threading.Thread(target=second)
    thread.start()
    assert refused.wait(30), "the second thread never tried the lock"
    order.append("first released")
    first.release()
    thread.join(30)
    assert order == ["first released", "second"]
