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

The listing keeps the walk's outcome whole: its sorted pages, and what the run derived from
that list (its hash, the experiments programs). A walk that takes every kept folder as it
was, and lists none, finds exactly those pages, so it takes the list and what was derived
from it as they are: at 50,000 pages that spared 40 ms of joining names to their folders and
sorting, 12 ms of hashing the list and 18 ms of looking for programs in it, every warm run.
After a change, the pages of the folders taken as kept are found in that list again.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from wikiengine.lint.cache import CACHE_DIR, RACY_NS, read_signed, write_signed

TYPE_CHECKING = False  # typing's constant, without importing typing
if TYPE_CHECKING:
    from typing import Any

FOLDERS_FILE = "folders.marshal"
_FORMAT = 3  # 3: the list's hash joins paths with "\0"


class FolderListing:
    """The kept listing of each folder (its posix path from the root -> its ``lstat`` key and
    the subfolders the walk goes into), the pages the walk found in them, and the new listing
    this run makes."""

    def __init__(self, root: Path, payload: dict | None = None):
        payload = payload or {}
        self.root = root
        self._kept: dict[str, list] = payload.get("folders", {})
        self._kept_pages: list[str] = payload.get("pages", [])  # sorted: the last walk's outcome
        self._kept_derived = payload.get("derived")
        self._seen: dict[str, list] = {}  # what this run found, kept or listed anew
        self._taken: list[str] = []  # the folders this run took as kept
        self._by_folder: dict[str, list[str]] | None = None  # the kept pages by folder, made on first need
        self.pages: list[str] = []  # what this run's walk found (set by :meth:`found`)
        self._derived = None
        self.listed = self.taken = 0  # folders this run listed, and those it took as kept

    @classmethod
    def open(cls, root: Path) -> FolderListing:
        """The listing the last run kept under ``root`` (empty when absent, forged or of another format)."""
        payload = read_signed(Path(root) / CACHE_DIR / FOLDERS_FILE, root)
        ok = (isinstance(payload, dict) and payload.get("format") == _FORMAT and isinstance(payload.get("folders"), dict)
              and isinstance(payload.get("pages"), list))
        return cls(root, payload if ok else None)

    def get(self, rel: str, st: os.stat_result) -> list[str] | None:
        """The subfolders of the folder ``rel`` as kept, while ``st`` (its ``lstat`` now) says it
        has not changed since; else None. Its pages come with :meth:`found`."""
        held = self._kept.get(rel)
        if held is None or held[0] != _key(st):
            return None
        self._seen[rel] = held
        self._taken.append(rel)
        self.taken += 1
        return held[1]

    def put(self, rel: str, st: os.stat_result, listed_ns: int, subfolders: list[str], linked: bool) -> None:
        """Keep what the walk just listed of ``rel`` (``st`` taken before the listing, at
        ``listed_ns``), unless it may change unseen: a symbolic link in it, or a time too recent."""
        self.listed += 1
        if not linked and max(st.st_mtime_ns, st.st_ctime_ns) < listed_ns - RACY_NS:
            self._seen[rel] = [_key(st), subfolders]

    def found(self, listed: list[str]) -> list[str]:
        """Every page of this run's walk, sorted: ``listed`` (those of the folders it listed)
        and those of the folders it took as kept. A walk that took every kept folder and listed
        none finds the kept list itself."""
        if self._unchanged():
            self.pages = self._kept_pages
            return self.pages
        if self._by_folder is None:
            self._by_folder = {}
            for page in self._kept_pages:
                self._by_folder.setdefault(page.rpartition("/")[0], []).append(page)
        pages = list(listed)
        for rel in self._taken:
            pages += self._by_folder.get(rel, ())
        self.pages = sorted(pages)
        return self.pages

    def derived(self, derive: Callable[[list[str]], Any]) -> Any:
        """``derive(pages)`` of this run's pages, taken as kept while the walk found the kept list.
        Only one ``derive`` is kept: what it gives is marshalled with the listing, and a change
        to what it computes needs a new ``_FORMAT``."""
        if self._derived is None:
            held = self._kept_derived if self._unchanged() else None
            self._derived = held if held is not None else derive(self.pages)
        return self._derived

    def save(self) -> None:
        """Write the folders this run walked, when that is not what was kept and the cache folder is there."""
        folder = Path(self.root) / CACHE_DIR
        pages, derived = self.pages, self._derived
        if len(self._seen) < self.taken + self.listed:  # a folder not kept: its pages are not either
            pages, derived = [page for page in pages if page.rpartition("/")[0] in self._seen], None
        if self._seen == self._kept and pages == self._kept_pages and derived == self._kept_derived or not folder.is_dir():
            return  # the lint cache makes it (with its .gitignore) at its first save
        try:
            write_signed(folder / FOLDERS_FILE, {"format": _FORMAT, "folders": self._seen, "pages": pages,
                                                 "derived": derived}, self.root)
        except (OSError, ValueError):
            pass  # a lost listing only costs speed

    def _unchanged(self) -> bool:
        """Did this run take every kept folder as it was, and list none? Then it walked the
        very folders of the run that kept them (each kept with its pages), and found the same pages."""
        return self.listed == 0 and self.taken == len(self._kept)


def _key(st: os.stat_result) -> list[int]:
    return [st.st_dev, st.st_ino, st.st_mtime_ns, st.st_ctime_ns]
