"""What a walk of a clone's git history found, and how far it went, kept beside the clone.

A writer that allocates ids and a watcher that dates stubs walk the history of a lane; on a
lane of thousands of commits each walk cost a second or so. The clone keeps what it found in
``<git dir>/wiki-lane/<kind>-<crc32 of key>.json`` (never committed, shared by the clone's
worktrees) with the commits it walked, so that the next walk covers only the commits since.
A record that does not read back, names another key or fails its caller's check is None:
the caller walks everything again. It is an optimisation; losing it costs one whole walk.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from pathlib import Path

from wikiengine.core.errors import WikiError
from wikiengine.core.git import common_dir
from wikiengine.core.safe_read import load_json, read_optional

FORMAT = 1


def record_path(root: Path, kind: str, key: str) -> Path | None:
    """Where the record ``kind`` of ``key`` lives; None without a ``.git`` at ``root`` (a wiki
    in a subdirectory of its repository keeps no record)."""
    try:
        return common_dir(root) / "wiki-lane" / f"{kind}-{zlib.crc32(key.encode()):08x}.json"
    except WikiError:
        return None


def read_record(root: Path, kind: str, key: str, readable: Callable[[dict], bool]) -> dict | None:
    """The record ``kind`` of ``key`` when it reads back and ``readable`` accepts it, else None."""
    path = record_path(root, kind, key)
    if path is None:
        return None
    try:
        held = load_json(read_optional(path, path.name, "cache") or "null", path)
    except (WikiError, ValueError):
        return None
    ok = isinstance(held, dict) and held.get("format") == FORMAT and held.get("key") == key and readable(held)
    return held if ok else None


def write_record(root: Path, kind: str, key: str, fields: dict) -> None:
    """Keep ``fields`` as the record ``kind`` of ``key``; a failure is ignored."""
    from wikiengine.core.atomic import atomic_write_json

    path = record_path(root, kind, key)
    if path is None:
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_json(path, {"format": FORMAT, "key": key, **fields}, durable=False)
    except OSError:
        pass  # a lost record only costs the next walk a whole one
