"""Chip discipline (seed 003): one lock per local chip or cluster pod, and a bound on concurrent compiles.

A measurement holds its chip's (or its pod's) lock for its whole length, so two families
(or two sessions) never time on one chip at once; compiles take one of ``MAX_COMPILES`` slots.
Both are ``core.locks`` files (``flock``) in the repository's git directory, so every worktree of the
repository shares them and a killed holder releases them with its process.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from wikiengine.core.git import common_dir
from wikiengine.core.locks import FileLock, hold_any

MAX_COMPILES = 2
CHIP_WAIT_S = 600


def _lock_dir(root: Path) -> Path:
    folder = common_dir(root) / "wiki-lane"  # shared by every worktree of the repository
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _held(root: Path, file_name: str, what: str, timeout: float) -> FileLock:
    return FileLock(_lock_dir(root) / file_name, timeout=timeout, busy=f"{what} is held by another measurement")


def chip_lock(root: Path, chip: int, timeout: float = CHIP_WAIT_S):
    """Hold local chip ``chip`` (WikiError when another measurement keeps it past ``timeout``)."""
    return _held(root, f"chip-{chip}.lock", f"local chip {chip}", timeout)


def pod_lock(root: Path, context: str, namespace: str, pod: str, timeout: float = CHIP_WAIT_S):
    """Hold cluster pod ``pod`` (its chips), as :func:`chip_lock` holds a local chip."""
    key = hashlib.sha256(f"{context}/{namespace}/{pod}".encode()).hexdigest()[:16]
    return _held(root, f"pod-{key}.lock", f"pod {pod}", timeout)


def compile_slot(root: Path, slots: int = MAX_COMPILES, timeout: float = CHIP_WAIT_S):
    """Hold one of ``slots`` compile slots, trying each in turn until one is free."""
    paths = [_lock_dir(root) / f"compile-{index}.lock" for index in range(slots)]
    return hold_any(paths, timeout=timeout, busy=f"all {slots} compile slots stayed busy for {timeout:.0f}s")
