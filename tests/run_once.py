"""Build an expensive test resource once per pytest run, whatever the number of xdist workers.

A session fixture runs once per worker; a demo or a 4,600-page corpus built twice is minutes
of a run. :func:`once` builds it under the run's own temporary folder (the parent of every
worker's basetemp, the pattern of pytest-xdist's docs) behind a file lock: the first worker
to ask builds it, the others wait and read it. A folder is complete once its marker is
written; a build that failed leaves none, so the next asker tries again (and fails alike).

Readers that change what they are given work on a copy (:func:`copy_of`). A helper with no
fixture at hand builds its template once a process instead (:func:`built_in_process`).
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from wikiengine.core.locks import FileLock

DONE = ".built.json"
BUILD_LIMIT_S = 1800.0  # the slowest build (a demo on a loaded machine) takes minutes, never this


def run_folder(tmp_path_factory) -> Path:
    """The folder every worker of this run shares (the basetemp itself without xdist)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def once(tmp_path_factory, name: str, build: Callable[[Path], dict]) -> tuple[Path, dict]:
    """The folder ``name`` built by ``build(folder)`` once for the run, and what ``build`` returned
    (a JSON object: it crosses process boundaries)."""
    return build_once(run_folder(tmp_path_factory) / f"once-{name}", build)


def build_once(folder: Path, build: Callable[[Path], dict]) -> tuple[Path, dict]:
    """``folder`` as ``build(folder)`` made it, built by the first caller of any process."""
    with FileLock(f"{folder}.lock", timeout=BUILD_LIMIT_S, poll=0.2, busy=f"{folder}: another build hung"):
        marker = folder / DONE
        if not marker.exists():
            shutil.rmtree(folder, ignore_errors=True)  # what a failed build left
            folder.mkdir(parents=True)
            result = build(folder)
            marker.write_text(json.dumps(result))
        return folder, json.loads(marker.read_text())


def copy_of(source: Path, target: Path) -> Path:
    """A private copy of a built tree (symlinks kept as links, as git wrote them). A git worktree
    inside it is linked to the copy's repository, both ways, never to the source's (whose links
    are left as they are)."""
    shutil.copytree(source, target, symlinks=True, ignore=shutil.ignore_patterns(DONE))
    for link in sorted((target / ".git" / "worktrees").glob("*/gitdir")):
        dot_git = Path(link.read_text().strip())  # the worktree's `.git` file, in the source
        if dot_git.is_relative_to(source):
            moved = target / dot_git.relative_to(source)
            link.write_text(f"{moved}\n")
            moved.write_text(f"gitdir: {link.parent}\n")
    return target


_IN_PROCESS: dict[str, Path] = {}  # name -> the folder built_in_process made


def built_in_process(name: str, build: Callable[[Path], object]) -> Path:
    """The folder ``build(folder)`` filled, made once in this process under a temporary folder
    removed at its exit: a template a helper without a fixture copies. Never change it."""
    folder = _IN_PROCESS.get(name)
    if folder is None:
        scratch = Path(tempfile.mkdtemp(prefix="test-template-"))
        atexit.register(shutil.rmtree, scratch, True)
        folder = scratch / "tree"
        folder.mkdir()
        build(folder)
        _IN_PROCESS[name] = folder
    return folder
