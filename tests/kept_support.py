"""The per-user cache's kept maps (core/usercache.py's KeptMap), seen from fresh processes."""

from __future__ import annotations

import json
import marshal
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def run_in_a_process(script: str, *arguments: str, cache: Path) -> dict:
    """The JSON ``script`` prints, run with ``arguments`` in a fresh interpreter whose per-user
    cache is ``cache`` (``XDG_CACHE_HOME``)."""
    env = {**os.environ, "XDG_CACHE_HOME": str(cache), "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", script, *arguments], env=env, capture_output=True, text=True,
                          check=True)
    return json.loads(done.stdout)


def kept_file(cache: Path, kind: str, name: str) -> Path:
    """Where a KeptMap of ``kind`` keeps its file ``name`` under ``cache``."""
    return cache / "wikiengine" / kind / name


def read_map(path: Path) -> tuple:
    """A kept map's file: ``(stamp, entries, checksums of the keys met once)``."""
    return marshal.loads(path.read_bytes())


def write_map(path: Path, stamp: str, entries: dict, seen: dict | None = None) -> None:
    """Plant a kept map's file."""
    path.write_bytes(marshal.dumps((stamp, entries, seen or {})))
