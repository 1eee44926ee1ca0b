"""A kernel family's branches: the integration branch and one candidate branch per
experiment, each checked out in its own git worktree under ``.wiki/kernel-worktrees/``.

A candidate branch ``kernel/<family>-v<NNN>`` is created lazily (at the first candidate)
from the family's integration branch, never from main. A branch of that name that this
family did not record is never deleted or reset: the next free suffix (``-b``, ``-c``...)
is chosen, and the caller records it. Candidate commits carry the grammar
``cand<N>(<family> v<NNN>): <what> — <p50, speedup, parity>``.
"""

from __future__ import annotations

from pathlib import Path

from wikiengine.core.errors import WikiError
from wikiengine.core.git import is_ancestor
from wikiengine.core.git import out as git_out


def branch_exists(root: Path, branch: str) -> bool:
    return bool(git_out(root, "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}").strip())


def branch_sha(root: Path, branch: str) -> str | None:
    return git_out(root, "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}").strip() or None


def free_branch_name(root: Path, wanted: str) -> str:
    """``wanted``, or ``wanted-b``, ``wanted-c``... when a branch of that name exists."""
    if not branch_exists(root, wanted):
        return wanted
    for letter in "bcdefghijklmnopqrstuvwxyz":
        name = f"{wanted}-{letter}"
        if not branch_exists(root, name):
            return name
    raise WikiError(f"every suffix of branch {wanted} is taken")


def create_branch(root: Path, branch: str, start: str) -> str:
    """Create ``branch`` at ``start`` (refusing to move an existing one); its sha."""
    if branch_exists(root, branch):
        raise WikiError(f"branch {branch} exists: it is never reset")
    git_out(root, "branch", "--no-track", branch, start, check=True)
    return branch_sha(root, branch) or ""


def ensure_worktree(root: Path, branch: str, path: Path) -> Path:
    """The worktree of ``branch`` at ``path`` (added when missing)."""
    if (path / ".git").exists():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    git_out(root, "worktree", "add", "--quiet", str(path), branch, check=True)
    return path


def remove_worktree(root: Path, path: Path) -> bool:
    if not (path / ".git").exists():
        return False
    git_out(root, "worktree", "remove", "--force", str(path), check=True)
    return True


def fast_forward(root: Path, branch: str, to_sha: str) -> bool:
    """Move ``branch`` to ``to_sha`` only when that is a fast-forward; whether it moved."""
    old = branch_sha(root, branch)
    if old is None or old == to_sha:
        return False
    if not is_ancestor(root, old, to_sha):
        return False
    git_out(root, "update-ref", f"refs/heads/{branch}", to_sha, old, check=True)
    return True
