"""Confinement of a run's config (``wiki/runs/<run>/program.md``, ``## Config``): every
directory that ``wiki step`` writes into stays inside the repository.

The schema (``schema/run-config.schema.json``) checks types and name patterns; what it
cannot see is where a path leads once ``..`` and symlinks are followed. A committed
``compute.state_dir: ../x`` or ``publish.dir: ../y``, or a symlink at
``wiki/runs/<run>/eval``, would make a wake write outside the checkout. These are
refused before anything is read from a backend, as bad input (exit 2).
"""

from __future__ import annotations

import os
from pathlib import Path

from wikiengine.core.errors import WikiError
from wikiengine.model.targets import inside

# (section, key, default): the paths a wake writes into, relative to the repository root
WRITTEN_PATHS = (
    ("compute", "state_dir", ".wiki/compute"),  # local-process sessions
    ("compute", "claims_file", ".wiki/kaggle-claims.json"),  # Kaggle claims
    ("publish", "dir", ".wiki/published"),
)


def check_confined(root: Path, run: str, config: dict, where: str | None = None) -> None:
    """Raise :class:`WikiError` naming the key when a path a wake writes leads out of ``root``."""
    for section, key, default in WRITTEN_PATHS:
        block = config.get(section) or {}
        value = block.get(key, default) if isinstance(block, dict) else default
        if not isinstance(value, str) or not value or "\0" in value:
            raise WikiError(f"{section}.{key} must be a path inside the repository", where)
        _inside(root, Path(value) if Path(value).is_absolute() else Path(root) / value, f"{section}.{key}", where)
    eval_dir = Path(root) / "wiki" / "runs" / run / "eval"
    if os.path.islink(eval_dir):
        raise WikiError(f"wiki/runs/{run}/eval is a symbolic link: eval results are written only into the run's directory",
                        where)
    _inside(root, eval_dir, f"wiki/runs/{run}/eval", where)


def _inside(root: Path, path: Path, what: str, where: str | None) -> None:
    try:
        inside(root, path)
    except WikiError:
        raise WikiError(f"{what} leads outside the repository ({path})", where) from None
