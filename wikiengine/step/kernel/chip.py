"""Chip discipline (seed 003): one lock per local chip or cluster pod, and a bound on concurrent compiles.

A measurement holds its chip's (or its pod's) lock for its whole length, so two families
(or two sessions) never time on one chip at once; compiles take one of ``MAX_COMPILES`` slots.
Both are ``filelock`` files in the repository's git directory, so every worktree of the
repository shares them and a killed holder releases them with its process.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from pathlib import Path

from wikiengine.core.errors import WikiError
from wikiengine.core.git import git_dir

MAX_COMPILES = 2
CHIP_WAIT_S = 600


def _lock_dir(root: Path) -> Path:
    common = git_dir(root)
    # a linked worktree's git dir is .git/worktrees/<name>: the locks live in the common dir
    if common.parent.name == "worktrees":
        common = common.parent.parent
    folder = common / "wiki-lane"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@contextlib.contextmanager
def _held(root: Path, file_name: str, what: str, timeout: float):
    from filelock import FileLock, Timeout

    lock = FileLock(os.fspath(_lock_dir(root) / file_name), timeout=timeout)
    try:
        lock.acquire()
    except Timeout:
        raise WikiError(f"{what} is held by another measurement") from None
    try:
        yield
    finally:
        lock.release()


def chip_lock(root: Path, chip: int, timeout: float = CHIP_WAIT_S):
    """Hold local chip ``chip`` (WikiError when another measurement keeps it past ``timeout``)."""
    return _held(root, f"chip-{chip}.lock", f"local chip {chip}", timeout)


def pod_lock(root: Path, context: str, namespace: str, pod: str, timeout: float = CHIP_WAIT_S):
    """Hold cluster pod ``pod`` (its chips), as :func:`chip_lock` holds a local chip."""
    key = hashlib.sha256(f"{context}/{namespace}/{pod}".encode()).hexdigest()[:16]
    return _held(root, f"pod-{key}.lock", f"pod {pod}", timeout)


@contextlib.contextmanager
def compile_slot(root: Path, slots: int = MAX_COMPILES, timeout: float = CHIP_WAIT_S):
    """Hold one of ``slots`` compile slots, trying each in turn until one is free."""
    import time

    from filelock import FileLock, Timeout

    deadline = time.monotonic() + timeout
    while True:
        for index in range(slots):
            lock = FileLock(os.fspath(_lock_dir(root) / f"compile-{index}.lock"), timeout=0)
            try:
                lock.acquire()
            except Timeout:
                continue
            try:
                yield index
            finally:
                lock.release()
            return
        if time.monotonic() > deadline:
            raise WikiError(f"all {slots} compile slots stayed busy for {timeout:.0f}s")
        time.sleep(0.2)
