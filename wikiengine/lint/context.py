"""What a rule sees: the wiki's files, parsed pages (each parsed at most once), the
configuration and, for git-aware rules, the base revision.

A :class:`PageInfo` is lazy. When the content-hash cache (:mod:`wikiengine.lint.cache`)
already knows a file, its frontmatter and read error come from the cache and the
markdown body is split into sections only if a rule asks for ``info.page``; the YAML is
never loaded twice. Cross-file rules that read only ``info.frontmatter`` therefore cost
no parsing at all on a warm run.
"""

from __future__ import annotations

import bisect
import hashlib
import marshal
import os
import stat
import time
from collections import OrderedDict
from collections.abc import Callable
from functools import partial
from pathlib import Path

from wikiengine.core.errors import PageError, WikiError
from wikiengine.core.page import Page, decode, parse_page, read_regular
from wikiengine.lint.config import LintConfig
from wikiengine.lint.kinds import KIND_MARKS, kind_of

TYPE_CHECKING = False  # typing's constant, without importing typing
if TYPE_CHECKING:
    from typing import Any

    from wikiengine.lint.cache import LintCache
    from wikiengine.lint.folders import FolderListing
    from wikiengine.lint.gitview import GitView

LINTED_DIRS = ("wiki", "memory", ".env")
# the cache memo of the kind index: kind -> the runs of positions its files hold in the file list
KIND_RUNS = "kind-runs"


def read_page_bytes(path: Path | str, rel: str) -> tuple[bytes, os.stat_result]:
    """The bytes of the page ``rel`` at ``path`` (``<root>/<rel>``) and its stat; PageError
    for anything but a regular file of at most :data:`~wikiengine.core.page.MAX_PAGE_BYTES`
    inside the root (:func:`wikiengine.core.page.read_regular`)."""
    path = str(path)
    root = path[: -len(rel) - 1] if path.endswith(rel) else os.path.dirname(path)
    return read_regular(path, rel, within=root)


class PageInfo:
    """One markdown file of the wiki: its kind and its parsed page (or why it cannot be read)."""

    __slots__ = ("rel", "_path", "_root", "kind", "_page", "_error", "_frontmatter", "_fm_blob", "_loaded", "_on_load")

    def __init__(
        self,
        rel: str,
        path: Path,
        kind: str,
        page: Page | None = None,
        error: WikiError | None = None,
        *,
        frontmatter: dict | None = None,
        on_load: Callable[[PageInfo], None] | None = None,
    ):
        self.rel = rel  # posix path relative to the root
        self._path = path
        self._root: str | None = None  # set instead of path by the context (pathlib joins are slow)
        self._fm_blob: bytes | None = None  # marshalled frontmatter from the cache, decoded on first use
        self.kind = kind
        self._page = page
        self._error = error
        self._frontmatter = frontmatter
        # Loaded: constructed with a page or an error, or known from the cache (frontmatter or error).
        self._loaded = page is not None or error is not None
        self._on_load = on_load

    @property
    def path(self) -> Path:
        if self._path is None:
            self._path = Path(self._root, self.rel)
        return self._path

    @classmethod
    def from_cache(
        cls, rel: str, root: str, kind: str, frontmatter: bytes | Callable[[], bytes | None] | None,
        error: tuple | None, on_load: Callable[[PageInfo], None] | None = None,
    ) -> PageInfo:
        """A page known from the cache: the read error now, the frontmatter when first asked
        for (``frontmatter``: its blob, or what reads it from the cache), the body on demand."""
        info = cls(rel, None, kind, on_load=on_load)
        info._root = root
        info._fm_blob = frontmatter
        if error is not None:
            info._error = PageError(error[0], rel, error[1])
            info._loaded = True
        return info

    def _known_frontmatter(self) -> dict | None:
        if self._frontmatter is None and self._fm_blob is not None:
            blob = self._fm_blob() if callable(self._fm_blob) else self._fm_blob
            self._fm_blob = None
            self._frontmatter = marshal.loads(blob) if blob is not None else None
        return self._frontmatter

    def _load(self) -> None:
        if self._loaded:
            return
        self._loaded = True
        self._error = None
        try:
            data, _st = read_page_bytes(self.path, self.rel)
            text = decode(data, self.rel)
            if self._known_frontmatter() is not None:
                # The YAML is known (from the cache): split the body only.
                self._page = parse_page(text, self.path, parse_yaml=False)
                self._page.frontmatter = self._frontmatter
            else:
                self._page = parse_page(text, self.path)
        except WikiError as err:
            self._error = err
        if self._on_load is not None:
            self._on_load(self)

    @property
    def page(self) -> Page | None:
        if self._page is None:
            self._load()
        return self._page

    @property
    def error(self) -> WikiError | None:
        if self._error is None and self._frontmatter is None and self._fm_blob is None:
            self._load()
        return self._error

    @property
    def frontmatter(self) -> dict:
        known = self._known_frontmatter()
        if known is not None:
            return known
        page = self.page
        return page.frontmatter if page else {}

    def unload(self) -> None:
        """Forget the parsed body (it is parsed again if asked for); frontmatter stays."""
        if self._frontmatter is not None and self._page is not None:
            self._page = None
            self._loaded = False

    def __repr__(self) -> str:
        return f"PageInfo({self.rel!r}, kind={self.kind!r})"


class LintContext:
    """The wiki as rules see it. ``info(rel)`` parses (or fetches from the cache) once.

    Bodies that cross-file rules parse on demand are kept for the :data:`KEPT_BODIES`
    most recently parsed pages only (their frontmatter always), so that a rule looping
    over ten thousand pages does not hold them all in memory at once.
    """

    KEPT_BODIES = 2000

    def __init__(
        self,
        root: Path,
        config: LintConfig,
        files: list[str],
        targets: list[str],
        git: GitView | None = None,
        cache: LintCache | None = None,
        files_digest: str | None = None,
    ):
        self.root = root
        self.config = config
        self.files = files  # every markdown file of the wiki, sorted (posix, relative)
        self.targets = targets  # the files whose findings are reported
        self.git = git
        self.cache = cache
        self._infos: dict[str, PageInfo] = {}
        self._facts: dict[tuple[str, str], Any] = {}
        self._file_set: set[str] | None = None
        self._rules: dict[str, Any] = {}
        self._by_kind: dict[str, list[str]] | None = None
        self._bodies: OrderedDict[str, PageInfo] = OrderedDict()
        self._root_str = str(root)
        self._tree: Any = False  # the TrackedTree, read on first use (None outside git)
        self._wiki_fp: str | None = None
        self._files_digest = files_digest  # list_digest(files), when the caller knows it
        self._file_shas: list[str] | None = None
        self._shas_before: list[str] | None = None  # a run snapshot's, "-" for the files changed since
        # (their list digest, the files) a run snapshot saw, carried over to other files (lint/snapshot.py)
        self.files_before: tuple[str, list[str]] | None = None
        self._lane_parts: list | None = None
        self._lane_logs: list[str] | None = None
        self._lane_logs_digest: str | None = None
        self._part_keys: dict[str, str] | None = None  # part name -> its key
        self.page_dates: dict[str, str] = {}  # page -> its frontmatter date, as a run snapshot holds it
        # (the wiki fingerprint of the run snapshot taken, the files analysed anew or gone since):
        # a run after an edit (lint/snapshot.py); None otherwise
        self.changed_since: tuple[str, frozenset[str]] | None = None
        self.linked_folders: set[str] | None = None  # the folders holding a symbolic link (None: not known)
        # git's index lists every one of ``files``, as the last run with the same listing and files found it
        self.all_files_tracked: bool | None = None
        # (table name, key) -> {page: value}: what :meth:`pages_fact` answered in this run, and
        # what another run of the same moment answered of pages unchanged since, taken as it is
        self.asked_facts: dict[tuple[str, str], dict[str, Any]] = {}
        self.carried_facts: dict[tuple[str, str], dict[str, Any]] = {}
        self.committing: frozenset[str] = frozenset()  # what the caller (a writer) commits next: git tracks it then

    def close(self) -> None:
        """Let go of everything the run held. Pages point back at the context (their
        ``on_load``) and rules' memos hold it, so without this the whole run (the cache's
        entries, every page's facts: about 250,000 objects on the real-shape corpus) waits
        for the cycle collector, whose full pass over it cost about 0.2 s at a cold run's end."""
        self.__dict__.clear()

    def prefetch_tracked(self, listed_as: str | None = None) -> None:
        """Start reading :meth:`tracked` now, in a git process that runs alongside the lint;
        ``listed_as``: the hash of git's listing, known (git lists it only if a rule needs more)."""
        if self._tree is False:
            from wikiengine.lint.gitview import TrackedTree

            self._tree = TrackedTree.listed_as(self.root, listed_as) if listed_as else TrackedTree.start(self.root)

    def tracked(self):
        """The files and submodules git tracks (:class:`~wikiengine.lint.gitview.TrackedTree`,
        one ``git ls-files`` per run), or None outside a git work tree."""
        from wikiengine.lint.gitview import TrackedTree

        if self._tree is False:
            self._tree = TrackedTree.start(self.root)
        if self._tree is not None and not isinstance(self._tree, TrackedTree):
            self._tree = TrackedTree.finish(self._tree)
        return self._tree

    def submodules(self) -> dict[str, str | None]:
        """Submodule path -> pinned commit (None when only ``.gitmodules`` names it)."""
        tree = self.tracked()
        if tree is not None:
            return tree.gitlinks
        from wikiengine.lint.gitview import declared_submodules

        return dict.fromkeys(declared_submodules(self.root))

    def info(self, rel: str) -> PageInfo:
        """The page at ``rel``, parsed once and cached."""
        cached = self._infos.get(rel)
        if cached is None:
            cache = self.cache
            known = cache is not None and cache.known_readable(rel)  # (a run on a snapshot: no entry looked up)
            entry = cache.fresh(rel) if cache is not None and not known else None
            if known or (entry is not None and entry.get("sha") is not None):
                cached = PageInfo.from_cache(rel, self._root_str, kind_of(rel), partial(cache.frontmatter_blob, rel),
                                             None if known else entry.get("error"), on_load=self._keep_body)
            else:
                on_load = self.cache.record_page if self.cache is not None else None
                cached = PageInfo(rel, self.root / rel, kind_of(rel), on_load=on_load)
            self._infos[rel] = cached
        return cached

    def _keep_body(self, info: PageInfo) -> None:
        self._bodies[info.rel] = info
        self._bodies.move_to_end(info.rel)
        while len(self._bodies) > self.KEPT_BODIES:
            _rel, oldest = self._bodies.popitem(last=False)
            oldest.unload()

    def remember(self, info: PageInfo) -> None:
        """Keep an already parsed page (the per-file phase parsed it)."""
        self._infos[info.rel] = info

    def pages(self, kind: str | None = None) -> list[PageInfo]:
        """Every page of ``kind`` (every page when None) in the whole wiki."""
        if kind is None:
            return [self.info(rel) for rel in self.files]
        return [self.info(rel) for rel in self._files_of(kind)]

    def _files_of(self, kind: str) -> list[str]:
        """The files of ``kind``: from the kind index when this run has it, else classifying only
        the files that hold the kind's mark (RUN001 asks a writer's re-lint for the wiki's
        retrospectives: 4,600 paths classified for two, each time the list of files changed)."""
        mark = KIND_MARKS.get(kind)
        if self._by_kind is not None or mark is None:
            return self._kind_index().get(kind, [])
        return [rel for rel in self.files if mark in rel and kind_of(rel) == kind]

    def _kind_index(self) -> dict[str, list[str]]:
        """Kind -> its files, kept in the cache while the list of files is the same, as the
        runs of consecutive positions each kind holds in the sorted list: a lane's pages lie
        together, so its files are a few slices (50,000 positions looked up one by one cost
        5 ms a warm run)."""
        if self._by_kind is None:
            key, files = None, self.files
            if self.cache is not None and self.cache.persist:
                key = self.files_digest()
                held = self.cache.memo(KIND_RUNS, key)
                if held is not None:
                    self._by_kind = {kind: _in_runs(files, runs) for kind, runs in held.items()}
            if self._by_kind is None:
                known = self._kinds_before() if key is not None else {}
                runs: dict[str, list[int]] = {}  # kind -> [start, stop, start, stop, ...]
                classified = 0
                for i, rel in enumerate(files):
                    kind = known.get(rel)
                    if kind is None:
                        kind, classified = kind_of(rel), classified + 1
                    kind_runs = runs.setdefault(kind, [])
                    if kind_runs and kind_runs[-1] == i:  # the file after the kind's last run: it grows
                        kind_runs[-1] = i + 1
                    else:
                        kind_runs += (i, i + 1)
                if self.cache is not None:
                    self.cache.stats["kinds_classified"] += classified
                self._by_kind = {kind: _in_runs(files, found) for kind, found in runs.items()}
                if key is not None:
                    self.cache.store_memo(KIND_RUNS, key, runs)
        return self._by_kind

    def _kinds_before(self) -> dict[str, str]:
        """Path -> kind of the files a carried run snapshot saw (:attr:`files_before`), from the
        kind index kept for them: a page added or gone classifies the files added alone, not
        50,000 paths (0.4 s of CPU)."""
        if self.files_before is None:
            return {}
        digest, before = self.files_before
        held = self.cache.memo(KIND_RUNS, digest)
        if not isinstance(held, dict):
            return {}
        return {rel: kind for kind, runs in held.items() for rel in _in_runs(before, runs)}

    def target_pages(self, kind: str | None = None) -> list[PageInfo]:
        """The pages of ``kind`` whose findings are reported this run.

        A cross-file rule whose findings land on the page it examines should loop over
        these rather than over :meth:`pages`: ``wiki lint PATH...`` (pre-commit) then
        parses five pages, not the whole wiki.
        """
        return [self.info(rel) for rel in self.target_files(kind)]

    def target_files(self, kind: str | None = None) -> list[str]:
        """The paths of :meth:`target_pages` (no page is read)."""
        if kind is None:
            return self.targets
        if self.targets is self.files:
            return self._kind_index().get(kind, [])
        return [rel for rel in self.targets if kind_of(rel) == kind]

    def files_under(self, prefix: str) -> list[str]:
        """The files whose path starts with ``prefix`` (``"wiki/models/"``), found by
        bisecting the sorted file list: a lane's pages without classifying the wiki."""
        files = self.files
        start = bisect.bisect_left(files, prefix)
        # the paths that start with ``prefix`` sort before ``prefix + U+10FFFF`` (the largest code
        # point), but for those that go on with that very code point: walked past one by one
        end = bisect.bisect_left(files, prefix + "\U0010ffff", start)
        while end < len(files) and files[end].startswith(prefix):
            end += 1
        return files[start:end]

    def targets_under(self, prefix: str) -> list[str]:
        """The targets whose path starts with ``prefix`` (bisected in a whole-wiki run)."""
        if self.targets is self.files:
            return self.files_under(prefix)
        return [rel for rel in self.targets if rel.startswith(prefix)]

    def exists(self, rel: str) -> bool:
        """Does the file or directory ``rel`` (relative to the root) exist? (A page is found by
        bisecting the sorted file list: a set of 50,000 paths cost 5 ms to make.)"""
        return in_sorted(self.files, rel) or (self.root / rel).exists()

    def file_set(self) -> set[str]:
        """The paths of ``files``, as a set."""
        if self._file_set is None:
            self._file_set = set(self.files)
        return self._file_set

    def page_fact(self, rel: str, name: str, compute: Callable[[], Any], key: str = "") -> Any:
        """``compute()``, a value that a cross-file rule derives from the page ``rel`` (and
        from what ``key`` fingerprints: the git refs, say), kept with the page's cache entry
        while the page and ``key`` are unchanged. ``name`` must hold whatever configuration
        the value depends on; the value must be marshallable."""
        held = self.cache.page_memo(rel, name) if self.cache is not None else None
        if held is not None and held[0] == key:
            self.cache.stats["page_facts_reused"] += 1
            return held[1]
        value = compute()
        if self.cache is not None:
            self.cache.store_page_memo(rel, name, [key, value])
        return value

    def pages_fact(self, rels: list[str], name: str, compute: Callable[[str], Any], key: str = "") -> dict[str, Any]:
        """``rel -> compute(rel)`` for every page of ``rels``: :meth:`page_fact` asked of many
        pages at once, through one table (``name``) checked by one ``lstat`` a page.
        A PATH run that asks it of the whole wiki (IDX001's page types, at every write to the
        index) then opens no cache shard: 18 us a page through the entries, 2 through the
        table. A settled page whose stat key moved is asked again and tabled; one too recent to
        vouch for (the racy window) goes through :meth:`page_fact`; ``name``, ``key`` (what
        else the values depend on: the asking rule's configuration, say; another key empties
        the table) and the values as there. The table is a file of its own, read only by a run
        that asks (:meth:`~wikiengine.lint.cache.LintCache.table`). A page that a run of the same
        moment answered for (:attr:`carried_facts`: a writer's lint of the old texts is handed
        what its lint of the new ones found of every page it did not write) is not asked again."""
        carried = self.carried_facts.get((name, key), {})
        values = {rel: carried[rel] for rel in rels if rel in carried}
        if values and self.cache is not None:
            self.cache.stats["page_facts_carried"] += len(values)
        values.update(self._pages_fact([rel for rel in rels if rel not in values], name, compute, key))
        self.asked_facts.setdefault((name, key), {}).update(values)
        return values

    def _pages_fact(self, rels: list[str], name: str, compute: Callable[[str], Any], key: str) -> dict[str, Any]:
        """:meth:`pages_fact` of the pages no other run answered, through one table per lane and
        one for the rest (lint/lane_parts.py): a rule that asks of one lane reads that lane's
        rows, not the whole wiki's (MOD002's and MOD004's tables were 22 and 27 MiB loaded, at
        50,000 pages, by a run after one edit)."""
        cache = self.cache
        if cache is None or not cache.persist:
            return {rel: compute(rel) for rel in rels}
        from wikiengine.lint.lane_parts import part_of

        by_part: dict[str, list[str]] = {}
        for rel in rels:
            by_part.setdefault(part_of(rel), []).append(rel)
        found: dict[str, Any] = {}
        for part, members in by_part.items():
            found.update(self._part_fact(members, f"{name}@{part}", compute, key))
        return found if len(by_part) < 2 else {rel: found[rel] for rel in rels}

    def _part_fact(self, rels: list[str], name: str, compute: Callable[[str], Any], key: str) -> dict[str, Any]:
        """:meth:`_pages_fact` of the pages of one part, through its table ``name``."""
        from wikiengine.lint.cache import RACY_NS, stat_key

        cache = self.cache
        held = cache.table(name, key)
        root = self._root_str.rstrip("/") + "/"
        settled_before = time.time_ns() - RACY_NS  # before any lstat below: a key older than this vouches
        table, values, tabled, dropped, reused = {}, {}, 0, 0, 0
        lstat, is_file, held_row = os.lstat, stat.S_ISREG, held.get  # 2,400 pages a writer's re-lint of the index
        for rel in rels:
            try:
                st = lstat(root + rel)
            except OSError:
                st = None
            on_disk = stat_key(st) if st is not None and is_file(st.st_mode) else None
            row = held_row(rel)
            if row is not None and row[0] == on_disk and on_disk is not None:
                reused += 1
                values[rel], table[rel] = row[1], row
                continue
            dropped += row is not None
            if on_disk is not None and on_disk[0] < settled_before:
                values[rel] = compute(rel)  # kept in the table alone: an entry's memo would double it
                table[rel] = (on_disk, values[rel])
                tabled += 1
            else:
                values[rel] = self.page_fact(rel, name, lambda rel=rel: compute(rel), key)
        cache.stats["page_facts_reused"] += reused
        if tabled or dropped:
            # One table serves every caller: the rows of pages not asked now stay while the page
            # is in the wiki, or a caller that asks of some pages would empty the others'.
            asked, present = set(rels), self.file_set()
            cache.store_table(name, key, {**{rel: row for rel, row in held.items() if rel in present and rel not in asked},
                                          **table})
            cache.stats["tabled"] += tabled
        return values

    def files_digest(self) -> str:
        """A hash of the list of files (:func:`list_digest`; the runner may know it already)."""
        if self._files_digest is None:
            self._files_digest = list_digest(self.files)
        return self._files_digest

    def wiki_fingerprint(self) -> str:
        """A hash of every file's path and content hash (from the cache where fresh)."""
        if self._wiki_fp is None:
            digest = hashlib.sha256(self.files_digest().encode())
            # each hash is 32 hex digits, or "-" for an unreadable file: the run of them reads back one way
            digest.update("".join(self.file_shas()).encode())
            self._wiki_fp = digest.hexdigest()
        return self._wiki_fp

    def file_shas(self) -> list[str]:
        """Each file's content hash (from the cache where fresh), in the order of ``files``."""
        if self._file_shas is None:
            self._file_shas = self.cache.shas(self.files)
        return self._file_shas

    def lane_memo(self, name: str, lane: tuple[str, str], compute: Callable[[], Any]) -> Any:
        """``compute()``, a value made from the files of one ``lane`` (``(model folder, lane)``),
        those outside every lane and the list of lanes, kept in the cache while that lane's
        part's key is the same (:mod:`~wikiengine.lint.lane_parts`); whole-wiki runs only. For a
        rule that reports outside the lanes (on a model page) from what one lane holds."""
        if self.cache is None or not self.cache.persist or self.targets is not self.files:
            return compute()
        if self._part_keys is None:
            self._part_keys = {part.name: part.key for part in self.lane_parts()}
        keys, folder = self._part_keys, f"wiki/experiments/{lane[0]}/{lane[1]}/"
        if folder not in keys:
            return compute()  # no file of the wiki is in that folder
        held = self.cache.parts(name)  # {lane folder: [key, value]}
        if folder in held and held[folder][0] == keys[folder]:
            return held[folder][1]
        value = compute()
        kept = {other: row for other, row in held.items() if other in keys}  # lanes gone are dropped
        self.cache.store_parts(name, {**kept, folder: [keys[folder], value]})
        return value

    def lane_logs(self) -> list[str]:
        """The lane logs among the files: their oldest entry dates the wiki's log split."""
        if self._lane_logs is None:
            from wikiengine.model.logbook import log_tier

            self._lane_logs = [rel for rel in self.files if rel.endswith("/log.md") and log_tier(rel) == "lane"]
        return self._lane_logs

    def lane_logs_digest(self) -> str:
        """A hash of the lane logs' paths and content hashes: what the log-split date is made from."""
        if self._lane_logs_digest is None:
            from wikiengine.lint.lane_parts import paths_and_hashes

            logs, known = self.lane_logs(), self._shas_known()
            shas = [known[bisect.bisect_left(self.files, rel)] if known is not None else "-" for rel in logs]
            self._lane_logs_digest = paths_and_hashes(logs, [sha if sha != "-" else self.cache.sha(rel) or "-"
                                                             for rel, sha in zip(logs, shas)]).hex()
        return self._lane_logs_digest

    def lane_parts(self) -> list:
        """The wiki cut into lanes and the rest, each keyed (:mod:`~wikiengine.lint.lane_parts`)."""
        if self._lane_parts is None:
            from wikiengine.lint.lane_parts import parts

            self._lane_parts = parts(self.files, self.file_shas())
        return self._lane_parts

    def assume_wiki_fingerprint(self, fingerprint: str) -> None:
        """Take :meth:`wiki_fingerprint` as known (a run snapshot holds it: lint/snapshot.py)."""
        self._wiki_fp = fingerprint

    def _shas_known(self) -> list[str] | None:
        """Each file's content hash as the run knows it (:meth:`know_file_shas`), or before the pass
        over the changed files as the run snapshot does (:meth:`know_unchanged_shas`); None: neither."""
        return self._file_shas if self._file_shas is not None else self._shas_before

    def know_unchanged_shas(self, shas: list[str]) -> None:
        """Take the content hashes of the files a run snapshot saw as ``shas`` says (``"-"`` for
        those changed since), before the pass over the changed files: the global log, judged
        again after a lane log's edit, reads the lane logs' hashes from them, not from 18 index
        shards (:meth:`lane_logs_digest`, :meth:`files_facts`)."""
        self._shas_before = shas

    def know_file_shas(self, shas: list[str], unreadable: set[str]) -> None:
        """Take :meth:`file_shas` as known, and the files that could not be read or parsed (a run
        snapshot and the files analysed since): the cache then checks records against them."""
        self._file_shas = shas
        self.cache.know_shas(self.files, shas, unreadable)

    def wiki_memo(self, name: str, compute: Callable[[], Any], inputs: str = "", by_lane: bool = False) -> Any:
        """``compute()``, kept in the cache while no page of the wiki and nothing of ``inputs``
        changes (whole-wiki runs only: a PATH run computes it from its targets). For a
        cross-file rule whose findings depend on more than the pages (the clock, say) but
        whose work over the pages does not. ``by_lane``: ``compute()`` is a list made from the
        targets, whose rows on a lane's files depend on what a ``by_lane`` rule's findings may
        (lint/lane_parts.py): after an edit, it is made again for the edited lane alone."""
        if self.cache is None or not self.cache.persist or self.targets is not self.files:
            return compute()
        key = f"{self.wiki_fingerprint()}:{inputs}"
        value = self.cache.memo(name, key)
        if value is None:
            if by_lane:
                from wikiengine.lint.lane_parts import by_part

                value, kept = by_part(self, self.cache.parts(name), inputs, compute)
                self.cache.store_parts(name, kept)  # {part: [key, rows]}
            else:
                value = compute()
            self.cache.store_memo(name, key, value)
        return value

    def files_facts(self, name: str, rels: list[str], compute: Callable[[str], Any]) -> dict[str, Any]:
        """``rel -> compute(rel)`` for the files ``rels`` (each of ``self.files``), kept in the cache by
        each file's path and content hash, in a whole-wiki run that knows every file's content hash
        (a run after an edit knows them from its snapshot): only the files changed since are asked
        again, and no index entry is read for the others (the lane logs' oldest entries read 17 of
        64 index shards at 50,000 pages, 14% of such a run). Elsewhere each is asked. ``compute``'s
        values must be marshallable and depend on the file's bytes alone. Before the pass over a
        run's changed files (:meth:`know_unchanged_shas`) those are asked, and kept by no hash."""
        shas = self._shas_known()
        if self.cache is None or not self.cache.persist or self.targets is not self.files or shas is None:
            return {rel: compute(rel) for rel in rels}
        held = self.cache.memo(name, "")
        held = held if isinstance(held, dict) else {}
        values, kept = {}, {}
        for rel in rels:
            sha = shas[bisect.bisect_left(self.files, rel)]
            row = held.get(rel)
            values[rel] = row[1] if row is not None and row[0] == sha and sha != "-" else compute(rel)
            kept[rel] = [sha, values[rel]]
        if kept != held:
            self.cache.store_memo(name, "", kept)  # the files gone are dropped
        return values

    def revision_facts(self, name: str, rels: list[str], compute: Callable[[list[str]], dict[str, Any]],
                       advance: Callable[[str, dict], dict | None] | None = None) -> dict[str, Any]:
        """``rel -> value`` for ``rels``, values that depend on a file's path and the base revision
        alone (its first commit time, say), kept in the cache while the base is the same: only
        the files not asked under it are asked (``compute(missing)``, one call). An edit asks the
        files it added. After a commit, ``advance(commit, values)`` carries the values kept under
        the earlier base ``commit`` to this one (None where it cannot: each is asked again).
        Whole-wiki runs only, as :meth:`wiki_memo`."""
        if self.cache is None or not self.cache.persist or self.targets is not self.files:
            return compute(rels)
        base = self.git.base
        key, held = self.cache.memo_entry(name)
        if not isinstance(held, dict):
            held = {}
        elif key != base:
            held = (advance(key, held) if advance is not None and isinstance(key, str) else None) or {}
        missing = [rel for rel in rels if rel not in held]
        asked = compute(missing) if missing else {}
        values = {rel: held[rel] if rel in held else asked[rel] for rel in rels}
        if key != base or values != held:
            self.cache.store_memo(name, base, values)  # the files no longer asked are dropped
        return values

    def facts(self, code: str, rel: str) -> Any:
        """What rule ``code``'s ``collect`` found in the page ``rel`` (cached with the file)."""
        key = (code, rel)
        if key not in self._facts:
            known, value = self.cache.facts(code, rel) if self.cache is not None else (False, None)
            if not known:
                rule = self._rules.get(code)
                info = self.info(rel)
                value = rule.collect(info, self) if rule is not None and info.page is not None else None
                if self.cache is not None:
                    self.cache.record_facts(code, rel, value)
            self._facts[key] = value
        return self._facts[key]


def _in_runs(files: list[str], runs: list[int]) -> list[str]:
    """The files at the positions ``runs`` holds as ``[start, stop, start, stop, ...]``."""
    if len(runs) == 2:
        return files[runs[0]:runs[1]]
    taken: list[str] = []
    for at in range(0, len(runs), 2):
        taken += files[runs[at]:runs[at + 1]]
    return taken


def in_sorted(ordered: list[str], item: str) -> bool:
    """Is ``item`` in the sorted list ``ordered``? (A bisection, not a set of every item.)"""
    at = bisect.bisect_left(ordered, item)
    return at < len(ordered) and ordered[at] == item


def list_digest(files: list[str]) -> str:
    """A hash of a list of paths (SHA-256: here 2.3 times as fast as BLAKE2b on 5 MB of paths
    at 50,000 pages, with the CPU's SHA instructions)."""
    return hashlib.sha256("\0".join(files).encode()).hexdigest()  # "\0": no path holds one (a name may hold "\n")


def discover(root: Path, listing: FolderListing | None = None, linked: set[str] | None = None) -> list[str]:
    """Every ``.md`` file under the linted directories, as sorted posix paths, found as
    ``os.walk`` finds them (folders whose names start with "." left out, linked folders not
    entered). ``listing``: the folders the last run listed (:mod:`~wikiengine.lint.folders`),
    taken where unchanged and kept anew. ``linked``: filled with the folders that hold a
    symbolic link (a kept folder holds none: the listing keeps no such folder).

    A directory that cannot be listed or a name that is not valid UTF-8 is a
    :class:`WikiError` (exit 2): silently linting part of the wiki would pass it.
    """
    found: list[str] = []
    root_str = str(root)
    for top in LINTED_DIRS:
        base = os.path.join(root_str, top)
        try:
            st = os.stat(base)  # a linked top folder is followed, as os.walk follows it
        except OSError:
            continue
        if not stat.S_ISDIR(st.st_mode):
            continue
        folders = [(base, top, st)]  # depth first, in name order, as os.walk goes
        while folders:
            path, rel, st = folders.pop()
            subfolders = listing.get(rel, st) if listing is not None else None
            prefix = rel + "/"
            if subfolders is None:
                listed_ns = time.time_ns()
                pages, subfolders, has_link = _list_folder(path, rel)
                found += [prefix + name for name in pages]
                if listing is not None:
                    listing.put(rel, st, listed_ns, subfolders, has_link)
                if has_link and linked is not None:
                    linked.add(rel)
            for name in reversed(subfolders):
                sub = os.path.join(path, name)
                try:
                    sub_st = os.lstat(sub)
                except OSError as exc:  # gone since it was listed
                    raise WikiError(f"cannot list directory: {exc.strerror or exc}", _shown(prefix + name)) from None
                if not stat.S_ISLNK(sub_st.st_mode):
                    folders.append((sub, prefix + name, sub_st))
    return listing.found(found) if listing is not None else sorted(found)


def _list_folder(path: str, rel: str) -> tuple[list[str], list[str], bool]:
    """``(md files, subfolders, holds a link)`` of the folder ``rel``: its ``.md`` names, the
    names of its folders (links to folders too) that do not start with ".", sorted, and
    whether any entry is a symbolic link."""
    try:
        with os.scandir(path) as scan:
            entries = list(scan)
    except OSError as exc:
        raise WikiError(f"cannot list directory: {exc.strerror or exc}", _shown(rel)) from None
    files, folders = [], []
    for entry in entries:
        try:
            is_dir = entry.is_dir()
        except OSError:
            is_dir = False
        (folders if is_dir else files).append(entry.name)
    folders = sorted(name for name in folders if not name.startswith("."))
    if not ("".join(files) + "".join(folders)).isascii():  # one test for the folder's usual case
        for name in files + folders:
            if not name.isascii() and not _utf8(name):
                raise WikiError("file name is not valid UTF-8: rename it", _shown(f"{rel}/{name}"))
    return [name for name in files if name.endswith(".md")], folders, any(map(_linked, entries))


def _linked(entry: os.DirEntry) -> bool:
    """Is the entry a symbolic link (or one whose kind cannot be told: it went since the listing)?"""
    try:
        return entry.is_symlink()
    except OSError:
        return True


def _utf8(name: str) -> bool:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:  # os.walk decoded a bad byte as a lone surrogate
        return False
    return True


def _shown(path: str) -> str:
    """``path`` printable on one line: bad bytes as ``\\xff``, control characters escaped."""
    text = os.fsencode(path).decode("utf-8", "backslashreplace")
    return text.encode("unicode_escape").decode("ascii") if not text.isprintable() else text
