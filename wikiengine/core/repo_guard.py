"""Did anything change a repository while untrusted code ran? (RELIABILITY row 78)

:func:`snapshot` is taken before and after the run; :func:`changed_paths` names what
differs. It looks at:

- the work tree as ``git status`` sees it, without optional locks (it never rewrites the
  index): every modified, staged, deleted and untracked path (``-uall``), and the
  ignored ones as git's patterns match them (an ignored directory counts as one entry,
  not descended into); each listed path with its ``lstat`` key (mode, size, inode, mtime
  and ctime, which no one can set back), so a second edit of an already dirty or untracked
  file is seen too;
- the git directories (the worktree's own and the common one) without their object store:
  hooks, config, info, refs, HEAD, packed-refs, worktrees, submodules' control files;
  every file by its ``lstat`` key (a new file appears, a removed one vanishes). Lock
  files (``*.lock``: ``flock``-held and content-free, or git's own short-lived ones) and
  the index (``git status`` above sees what is staged) are left out, and so are
  directories' own times, which any lock file moves.

Cost: one ``git status`` (which uses the index's stat cache) and a walk of the control
files, tens of milliseconds on a large repository. Nothing is reverted: the caller
reports. Any change fails the run: a change made by another process at the same time
makes the measurement untrustworthy as well.
"""

from __future__ import annotations

import os
from pathlib import Path

from wikiengine.core import git

_SKIP_DIRS = frozenset({"objects", "lfs"})
_SKIP_FILES = frozenset({"index"})


def _key(path: str) -> tuple | None:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return (st.st_mode, st.st_size, st.st_ino, st.st_mtime_ns, st.st_ctime_ns)


def _work_tree(root: Path) -> dict[str, tuple]:
    out = git.run(root, "status", "--porcelain=v1", "-z", "--untracked-files=all", "--ignored=matching",
                  "--no-renames", optional_locks=False).stdout
    found = {}
    for entry in out.split("\0"):
        if len(entry) > 3:
            rel = entry[3:]
            found[f"{rel} [{entry[:2].strip()}]"] = _key(str(root / rel))
    return found


def _control_files(folder: Path, label: str) -> dict[str, tuple]:
    found = {}
    for top, dirs, files in os.walk(folder):
        dirs[:] = [d for d in dirs if d not in _SKIP_DIRS]
        rel_top = os.path.relpath(top, folder)
        for name in files:
            if name in _SKIP_FILES or name.endswith(".lock"):
                continue
            found[f"{label}/{os.path.normpath(os.path.join(rel_top, name))}"] = _key(os.path.join(top, name))
    return found


def snapshot(root: Path) -> dict[str, tuple]:
    """The state of ``root``'s work tree and git directories that :func:`changed_paths` compares."""
    state = _work_tree(root)
    own, common = git.git_dir(root), git.common_dir(root)
    state.update(_control_files(common, ".git"))
    if own.resolve() != common.resolve():
        state.update(_control_files(own, f".git/worktrees/{own.name}"))
    return state


def changed_paths(before: dict[str, tuple], after: dict[str, tuple]) -> list[str]:
    """The entries that appeared, vanished or changed between two snapshots, sorted."""
    return sorted(name for name in before.keys() | after.keys() if before.get(name) != after.get(name))
