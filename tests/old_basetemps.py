"""The temporary folders of earlier runs removed while this run's tests run, not after them.

At its end a pytest run removes the numbered basetemps past its retention (``pytest-N`` under
``pytest-of-<user>``, ``tmp_path_retention_count``: 3), in the process that started the xdist
workers, after every test has ended. This suite leaves 276,000 files and 1.5 GB a run, so from a
machine's fourth run on, the run of three before was removed then: 28 s of wall (10 s of CPU,
nearly all the kernel's), one core busy, between the last test's end and the run's end (41.6
s, against 2.5 s with nothing to remove). :func:`start` removes the same folders in a thread
from the session's start, beside the tests; :func:`finish` waits for it before pytest's own
cleanup, which then finds nothing to do (benchmarks/README.md, "The last run's folders removed
beside the tests").
"""

from __future__ import annotations

import shutil
import threading
import uuid
from pathlib import Path

PREFIX = "pytest-"
LOCK = ".lock"  # pytest's: a run that holds its basetemp, or one that ended without its cleanup


def stale(root: Path, current: Path, keep: int) -> list[Path]:
    """The numbered basetemps under ``root`` that pytest's exit cleanup removes once ``current``
    is made: numbered at most ``keep`` below it, and not locked. A locked one is left to pytest,
    which removes it once the lock is days old."""
    newest = _number(current.name)
    if newest is None:
        return []
    return sorted(path for path in root.iterdir()
                  if (number := _number(path.name)) is not None and number <= newest - keep and path != current
                  and not path.is_symlink() and not (path / LOCK).exists())


def _number(name: str) -> int | None:
    suffix = name.removeprefix(PREFIX)
    return int(suffix) if suffix != name and suffix.isdigit() else None


def remove_in_background(paths: list[Path]) -> threading.Thread | None:
    """Rename each of ``paths`` to pytest's ``garbage-<uuid>`` (so that an interrupted removal is
    finished by the next run's cleanup, as pytest's own is) and remove them in a thread."""
    renamed = []
    for path in paths:
        target = path.with_name(f"garbage-{uuid.uuid4()}")
        try:
            path.rename(target)
        except OSError:  # another run's cleanup took it first
            continue
        renamed.append(target)
    if not renamed:
        return None
    thread = threading.Thread(target=lambda: [shutil.rmtree(path, ignore_errors=True) for path in renamed],
                              name="old basetemps", daemon=True)
    thread.start()
    return thread


def start(config) -> threading.Thread | None:
    """Start removing what pytest would remove at this run's end; None in an xdist worker (the
    process that started it cleans up), under ``--basetemp`` (pytest removes nothing of its
    neighbours then), when no run is kept (pytest locks no basetemp then, so a run going on beside
    this one would look stale), or on a pytest without the temporary-path factory this reads."""
    factory = getattr(config, "_tmp_path_factory", None)
    keep = int(config.getini("tmp_path_retention_count"))
    if (hasattr(config, "workerinput") or config.option.basetemp or factory is None or keep == 0
            or config.getini("tmp_path_retention_policy") == "none"):
        return None
    current = factory.getbasetemp()  # made now rather than when the first fixture asks
    return remove_in_background(stale(current.parent, current, keep))


def finish(thread: threading.Thread | None) -> None:
    """Wait for :func:`start`'s removal (over long before on a whole run; a short run waits for
    it here, as it would have waited for pytest's)."""
    if thread is not None:
        thread.join()
