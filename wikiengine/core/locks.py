"""The one lock: an exclusive ``flock`` of a file, tried once or waited for up to a deadline.

Every lock of the project is one of these: the wake lock (``.git/wiki-step.lock``), a
lane's write lock, a chip's, a pod's, a compile slot, a local backend's lane. ``flock``
belongs to the open file, so a killed holder releases it with its process (RELIABILITY
row 20) and git's and the workloads' processes never inherit it (the descriptor is not
inheritable). The lock file stays in place after release: waiters share its inode.

A second take of a lock that this thread already holds fails at once, instead of waiting
out its own deadline (another thread, or another process, waits). A file system without ``flock`` is one line of error, never a silent
soft lock (which a ``kill -9`` would leave behind).

Stdlib only.
"""

from __future__ import annotations

import contextlib
import errno
import os
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

from wikiengine.core.errors import LockBusy, WikiError

POLL_S = 0.01
_UNSUPPORTED = {errno.ENOSYS, errno.ENOLCK, errno.EOPNOTSUPP, errno.EINVAL}
_held: dict[tuple[int, int], tuple[int, int]] = {}  # (st_dev, st_ino) of a held lock -> (pid, thread)


class FileLock:
    """An exclusive lock on ``path`` (created if missing), as a context manager.

    ``timeout``: how long :meth:`acquire` waits for another holder (0: one try). ``busy``:
    the message of the :class:`LockBusy` (or ``error``) raised when it stays held.
    """

    def __init__(self, path: str | Path, *, timeout: float = 0.0, poll: float = POLL_S, busy: str | None = None,
                 error: type[WikiError] = LockBusy):
        self.path, self.timeout, self.poll = Path(path), timeout, poll
        self.busy = busy or f"{self.path} is held by another process"
        self.error = error
        self._fd: int | None = None
        self._key: tuple[int, int] | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def try_acquire(self) -> bool:
        """Take the lock if it is free now; whether it was taken."""
        if self._fd is not None:
            return True
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as exc:
            raise WikiError(f"cannot open the lock file: {exc.strerror}", self.path) from None
        try:
            info = os.fstat(fd)
            key = (info.st_dev, info.st_ino)
            if _held.get(key) == _me():  # this thread holds it: waiting would wait for itself
                os.close(fd)
                return False
            if not _flock(fd, self.path):
                os.close(fd)
                return False
        except BaseException:
            with contextlib.suppress(OSError):
                os.close(fd)
            raise
        self._fd, self._key = fd, key
        _held[key] = _me()
        return True

    def acquire(self) -> FileLock:
        """Take the lock, waiting up to ``timeout``; ``error(busy)`` when it stays held."""
        deadline = time.monotonic() + self.timeout
        while not self.try_acquire():
            if self._mine_already() or time.monotonic() >= deadline:
                raise self.error(self.busy)
            time.sleep(self.poll)
        return self

    def release(self) -> None:
        """Let the lock go (closing the descriptor releases the flock)."""
        if self._fd is None:
            return
        _held.pop(self._key, None)
        fd, self._fd, self._key = self._fd, None, None
        os.close(fd)

    def _mine_already(self) -> bool:
        try:
            info = os.stat(self.path)
        except OSError:
            return False
        return _held.get((info.st_dev, info.st_ino)) == _me()

    def __enter__(self) -> FileLock:
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()


def _me() -> tuple[int, int]:
    return os.getpid(), threading.get_ident()


def _flock(fd: int, path: Path) -> bool:
    """One non-blocking ``flock``: taken, or held by another."""
    import fcntl

    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            return False
        if exc.errno in _UNSUPPORTED:
            raise WikiError(f"the file system of this lock file supports no flock ({exc.strerror}): keep the "
                            "repository on a local disk", path) from None
        raise
    return True


def try_hold(path: str | Path) -> FileLock | None:
    """The lock on ``path`` if it is free now (release it, or use it as a context manager); else None."""
    lock = FileLock(path)
    return lock if lock.try_acquire() else None


@contextlib.contextmanager
def hold_any(paths: Sequence[str | Path], *, timeout: float, poll: float = 0.2, busy: str) -> Iterator[int]:
    """Hold the first free lock of ``paths`` (trying each in turn, up to ``timeout``); yield its index."""
    deadline = time.monotonic() + timeout
    while True:
        for index, path in enumerate(paths):
            lock = try_hold(path)
            if lock is not None:
                with lock:
                    yield index
                return
        if time.monotonic() > deadline:
            raise LockBusy(busy)
        time.sleep(poll)
