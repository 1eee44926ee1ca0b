"""The per-user cache: ``$XDG_CACHE_HOME/wikiengine/`` (default ``~/.cache/wikiengine/``).

What is kept here may run as code (compiled schema validators), so the place is trusted
only outside every git work tree: CI often points ``XDG_CACHE_HOME`` into the checkout,
where a commit could plant a file (the rule the lint cache's signing key follows, in
``lint/cache.py``). A file is read back only when it is a regular file of this user that
no one else may write; everything is best effort: a cache that cannot be used is skipped.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path


def base_dir() -> Path:
    """``$XDG_CACHE_HOME/wikiengine`` (default ``~/.cache/wikiengine``)."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "wikiengine"


def cache_dir(kind: str) -> Path | None:
    """``<cache>/wikiengine/<kind>``, or None when it lies inside a git work tree."""
    folder = base_dir() / kind
    return None if work_tree_holding(folder) is not None else folder


def work_tree_holding(path: Path) -> Path | None:
    """The git work tree that ``path`` (its links resolved) lies in, or None."""
    resolved = Path(os.path.realpath(path))
    return next((parent for parent in (resolved, *resolved.parents) if os.path.lexists(parent / ".git")), None)


def read_private(path: Path, *, secret: bool = False, limit: int = -1) -> bytes | None:
    """The bytes of ``path`` (at most ``limit``) when it is a regular file of this user that
    no one else may write (``secret``: nor read), not a link; else None."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & (0o077 if secret else 0o022):
            return None
        return handle.read(limit)


def write_private(path: Path, data: bytes) -> None:
    """Keep ``data`` at ``path`` (its folder private to this user); a failure is ignored."""
    from wikiengine.core.atomic import atomic_write_bytes  # a reader need not load the writer

    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        atomic_write_bytes(path, data, durable=False)
        os.chmod(path, 0o600)  # whatever the umask: read_private takes no file others may write
    except OSError:
        pass
