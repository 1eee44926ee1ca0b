"""Reading a run's folder: its JSON state files, its log's tail, its newest sign of life.

Shared by the lane backends that keep one folder per workload (local, Slurm). A state
file that exists but cannot be read is unknown (:class:`ComputeUnavailableError`), never
"absent".
"""

from __future__ import annotations

from pathlib import Path

from wikiengine.core.clock import from_epoch, utc_iso
from wikiengine.core.errors import PageError
from wikiengine.core.safe_read import load_json, read_optional, read_tail
from wikiengine.executors.compute_errors import ComputeUnavailableError
from wikiengine.executors.lane_runner import MS

TAIL_BYTES = 256 * 1024



def read_state(path: Path) -> dict | None:
    """A state file, None when absent; anything but a regular file of the run's folder holding
    a JSON object (a pipe, a link out, /dev/zero, not JSON) is unknown state, never "gone"."""
    try:
        text = read_optional(path, f"{path.parent.name}/{path.name}", "metrics", within=path.parent)
        if text is None:
            return None
        data = load_json(text, path)
    except (PageError, ValueError) as exc:
        raise ComputeUnavailableError(f"{path.parent.name}/{path.name} is unreadable: {exc}") from None
    if not isinstance(data, dict):
        raise ComputeUnavailableError(f"{path.parent.name}/{path.name} is not a JSON object")
    return data


def tail_lines(path: Path, lines: int) -> str:
    """The last ``lines`` lines of the run's log ("" when it does not exist): a regular file
    inside the run's folder, never a link out of it or a pipe (one line, exit 2: it is never
    quoted into a page)."""
    data = read_tail(path, TAIL_BYTES, f"{path.parent.name}/{path.name}", within=path.parent)
    text = data.decode("utf-8", errors="replace")
    return "\n".join(text.splitlines()[-lines:]) if lines > 0 else ""


def newest_mtime_iso(*paths: Path) -> str | None:
    times = []
    for path in paths:
        try:
            times.append(path.stat().st_mtime)
        except OSError:
            continue
    return utc_iso(from_epoch(max(times)), MS) if times else None
