"""The demo runs and the templates of `wiki init` and `wiki demo`."""

from __future__ import annotations

from pathlib import Path

DEMO_GIT_CONFIG = {"user.name": "wiki demo", "user.email": "demo@wikiengine.invalid", "init.defaultBranch": "main"}


def demo_git(cwd: Path, *args: str) -> str:
    """``git <args>`` in a demo repository, as the demo's own user; its stdout, or GitError."""
    from wikiengine.core import git

    return git.run(cwd, *args, config=DEMO_GIT_CONFIG).stdout
