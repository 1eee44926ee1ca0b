"""Reading a run's folder: its JSON state files, its log's tail, its newest sign of life.

Shared by the lane backends that keep one folder per workload (local, Slurm). A state
file that exists but cannot be read is unknown (:class:`ComputeUnavailableError`), never
"absent".
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from wikiengine.core.clock import from_epoch, utc_iso
from wikiengine.executors.compute import ComputeUnavailableError
from wikiengine.executors.lane_runner import MS

TAIL_BYTES = 256 * 1024



def read_state(path: Path) -> dict | None:
    """A state file, None when absent; unreadable or not an object is unknown state."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise ComputeUnavailableError(f"{path.parent.name}/{path.name} is unreadable: {exc}") from None
    if not isinstance(data, dict):
        raise ComputeUnavailableError(f"{path.parent.name}/{path.name} is not a JSON object")
    return data


def tail_lines(path: Path, lines: int) -> str:
    """The last ``lines`` lines of a text file ("" when it does not exist)."""
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - TAIL_BYTES))
            data = handle.read()
    except FileNotFoundError:
        return ""
    except OSError as exc:
        raise ComputeUnavailableError(f"{path.parent.name}/{path.name} is unreadable: {exc}") from None
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
