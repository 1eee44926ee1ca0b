"""What each linted folder held when a run last listed it, kept for the next run's walk.

A warm run at 50,000 pages spent 70-110 ms of its CPU in ``os.walk``: a ``DirEntry`` and a
type test for each of 50,000 files, every run. A folder's listing changes only with its own
modification time (an entry added, removed or renamed) and its change time (that, or its
permissions), so the listing kept here (``.wiki_cache/folders.marshal``, signed like the
rest of the cache) is taken again while the folder's ``lstat`` (device, inode, mtime, ctime)
is what it was, and only when both times were older than the listing by git's "racy" margin
(a folder changed in the same clock tick as its listing is listed again). A folder that holds
a symbolic link is never kept: its target can turn from a file into a folder, or back,
without the folder changing. Each folder of the walk costs one ``lstat`` then, which the walk
made anyway to step over linked folders.
"""

from __future__ import annotations

import os
from pathlib import Path

from wikiengine.lint.cache import CACHE_DIR, RACY_NS, read_signed, write_signed

FOLDERS_FILE = "folders.marshal"
_FORMAT = 1


class FolderListing:
    """The kept listing of each folder (its posix path from the root -> its ``lstat`` key, the
    names of its ``.md`` files, the subfolders the walk goes into), and the new one this run makes."""

    def __init__(self, root: Path, kept: dict[str, list]):
        self.root = root
        self._kept = kept
        self._seen: dict[str, list] = {}  # what this run found, kept or listed anew
        self.listed = self.taken = 0  # folders this run listed, and those it took as kept

    @classmethod
    def open(cls, root: Path) -> FolderListing:
        """The listing the last run kept under ``root`` (empty when absent, forged or of another format)."""
        payload = read_signed(Path(root) / CACHE_DIR / FOLDERS_FILE, root)
        ok = isinstance(payload, dict) and payload.get("format") == _FORMAT and isinstance(payload.get("folders"), dict)
        return cls(root, payload["folders"] if ok else {})

    def get(self, rel: str, st: os.stat_result) -> tuple[list[str], list[str]] | None:
        """``(md files, subfolders)`` of the folder ``rel`` as kept, while ``st`` (its ``lstat``
        now) says it has not changed since; else None."""
        held = self._kept.get(rel)
        if held is None or held[0] != _key(st):
            return None
        self._seen[rel] = held
        self.taken += 1
        return held[1], held[2]

    def put(self, rel: str, st: os.stat_result, listed_ns: int, pages: list[str], subfolders: list[str],
            linked: bool) -> None:
        """Keep what the walk just listed of ``rel`` (``st`` taken before the listing, at
        ``listed_ns``), unless it may change unseen: a symbolic link in it, or a time too recent."""
        self.listed += 1
        if not linked and max(st.st_mtime_ns, st.st_ctime_ns) < listed_ns - RACY_NS:
            self._seen[rel] = [_key(st), pages, subfolders]

    def save(self) -> None:
        """Write the folders this run walked, when that is not what was kept and the cache folder is there."""
        folder = Path(self.root) / CACHE_DIR
        if self._seen == self._kept or not folder.is_dir():
            return  # the lint cache makes it (with its .gitignore) at its first save
        try:
            write_signed(folder / FOLDERS_FILE, {"format": _FORMAT, "folders": self._seen}, self.root)
        except (OSError, ValueError):
            pass  # a lost listing only costs speed


def _key(st: os.stat_result) -> list[int]:
    return [st.st_dev, st.st_ino, st.st_mtime_ns, st.st_ctime_ns]
