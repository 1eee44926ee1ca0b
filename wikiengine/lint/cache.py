"""The lint cache under ``.wiki_cache/``, like ruff's, split so that a run reads only
what it needs.

- **The head** (``lint.marshal``): when the cache was written and, per cross-file rule,
  its findings keyed by what it read.
- **The index** (``index/NN.marshal``, 64 shards by a hash of the path): per file, the
  content hash and stat key, the read error, the suppression comments, the page rules'
  findings and the *rule set* they were computed with (each rule's code and :func:`rule
  fingerprint <wikiengine.lint.config.LintConfig.rule_fingerprint>`: the configuration it
  reads). A shard is read when a file of it is first looked up: a warm run over an
  unchanged wiki reads every one (and the memos), a PATH run those of its targets and of
  the pages its rules look up.
- **The memos** (``memos.marshal``): what whole-wiki runs keep between them (the link
  verdicts, the kind index), read on first use: a PATH run needs none of them.
- **The run snapshot** (``run.marshal``): a whole-wiki run's per-file results, for the next
  run in which git vouches for every page (:mod:`~wikiengine.lint.snapshot`).
- **Record shards** (``lint/NN.marshal``: 64 shards by a hash of the lane folder for the
  pages of a lane, 64 more by a hash of the path for the other files): per file, the
  frontmatter and the facts that cross-file rules collect, each fact keyed by its rule's
  fingerprint. Read only when a rule asks about a page: a pre-commit run over five pages
  opens at most five shards, never the whole cache, and a lane rule the shard of its lane.

Entries are kept per rule, so a ``--select`` run, an ``--ignore`` or one rule's changed
options recompute only the rules concerned and keep the others' entries: a rule
missing from a file's rule set is run on that file alone. Only a change of the engine
(its source and schemas) or of an experiments program drops everything.

A file is fresh when its ``(mtime_ns, size, inode)`` matches and it was last modified
well before its index shard was written (git's "racy" rule: a file changed within the
same clock tick as the cache write is re-hashed); otherwise its bytes are hashed and
compared. A shard record is used only when its content hash is the index's, and each
index shard holds its own rule sets and write time: two runs writing at once (each write
is atomic) can only lose work, never mix one file's results with another's. ``marshal``
holds plain dicts, lists and strings and loads about ten times faster than pickle or JSON.

Every file of the cache is signed with a key kept outside the repository (in the
user's cache directory): ``marshal`` data must never come from a commit, so a
``.wiki_cache/`` that someone committed (or an agent was talked into writing) is
ignored rather than loaded, file by file. A key inside the repository or any git work
tree is never used (a commit could plant it with the cache), nor one that is not a
private file of the user: then nothing is cached. The cache holds data only; no code
is ever loaded from it.
"""

from __future__ import annotations

import bisect
import contextlib
import functools
import hashlib
import hmac
import marshal
import os
import stat
import time
import zlib
from collections import Counter
from pathlib import Path

from wikiengine.core.atomic import atomic_write_bytes
from wikiengine.core.collector import collector_paused
from wikiengine.core.errors import PageError
from wikiengine.core.safe_read import LIMITS, MAX_PAGE_BYTES, read_regular
from wikiengine.core.usercache import KeptMap, base_dir, read_private, work_tree_holding
from wikiengine.lint.lane_parts import REST, part_of

TYPE_CHECKING = False  # typing's constant, without importing typing
if TYPE_CHECKING:
    from wikiengine.lint.changefeed import Vouched

CACHE_DIR = ".wiki_cache"
CACHE_FILE = "lint.marshal"  # the head
MEMO_FILE = "memos.marshal"
RUN_FILE = "run.marshal"  # the last whole-wiki run's per-file results (lint/snapshot.py)
SHAS_FILE = "run-shas.marshal"  # every file's content hash, as that run knew them
FILES_FILE = "run-files.marshal"  # the files of that run, written when they are not the last such run's
TABLE_DIR = "tables"  # tables/<hash of the name>.marshal: one table of page facts each, read when asked
INDEX_DIR = "index"  # the index: index/NN.marshal
SHARD_DIR = "lint"  # the record shards: lint/NN.marshal
SHARDS = 64
RACY_NS = 2_000_000_000
_FORMAT = 8  # 8: record shards by lane; 7: content hashes are SHA-256 (128 bits), not BLAKE2b
_MAX_HASHED = 16 * 1024 * 1024  # as MAX_PAGE_BYTES: larger files are never pages


_KEY: bytes | None = None
_TRUSTED: dict[tuple[str, str], bool] = {}
_UNSEEN = object()  # (key path, root) -> may that key be used there?
KEY_BYTES = 32


def key_path() -> Path:
    """Where the per-user signing key lives: ``$XDG_CACHE_HOME/wikiengine/cache.key``."""
    return base_dir() / "cache.key"


def untrusted_place(path: Path, root: Path | None = None) -> str | None:
    """Why a key at ``path`` cannot be trusted, or None: inside the repository or any git
    work tree (CI often points ``XDG_CACHE_HOME`` into the checkout, where a commit can
    plant both a key and a cache signed with it)."""
    resolved = Path(os.path.realpath(path))
    if root is not None:
        repo = Path(os.path.realpath(root))
        if resolved == repo or repo in resolved.parents:
            return f"{path} is inside the repository"
    tree = work_tree_holding(resolved.parent)
    return None if tree is None else f"{path} is inside the git work tree {tree}"


def _usable_key(path: Path) -> bytes | None:
    """The key at ``path`` if it is a private regular file of ours holding a whole key."""
    data = read_private(path, secret=True, limit=KEY_BYTES + 1)
    return data if data is not None and len(data) == KEY_BYTES else None


def signing_key(root: Path | None = None) -> bytes | None:
    """The per-user key that signs caches (created on first use); None when unavailable
    or in a place a commit could write (:func:`untrusted_place`)."""
    global _KEY
    path = key_path()
    place = (str(path), str(root))
    if place not in _TRUSTED:
        _TRUSTED[place] = untrusted_place(path, root) is None
    if not _TRUSTED[place]:
        return None
    if _KEY is None:
        _KEY = _usable_key(path)
        if _KEY is None and not os.path.lexists(path):
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                with os.fdopen(fd, "wb") as handle:
                    handle.write(os.urandom(KEY_BYTES))
            except OSError:
                pass
            _KEY = _usable_key(path)
        _KEY = _KEY or b""
    return _KEY or None


def tag(data: bytes | memoryview, key: bytes) -> bytes:
    """The 32-byte keyed tag of ``data`` (HMAC-SHA256: here three times as fast as keyed
    BLAKE2b, 4.4 against 12.4 ms for 6 MB, with the CPU's SHA instructions)."""
    return hmac.digest(key, data, "sha256")


def sign(data: bytes, root: Path | None = None) -> bytes | None:
    """``data`` prefixed with its keyed tag, or None when there is no trusted key."""
    key = signing_key(root)
    if key is None:
        return None
    return tag(data, key) + data


def verified(blob: bytes | memoryview, root: Path | None = None) -> bytes | memoryview | None:
    """The data of a signed blob, or None when the tag does not match (or no trusted key)."""
    key = signing_key(root)
    if key is None or len(blob) < 32:
        return None
    data = blob[32:]
    if not hmac.compare_digest(blob[:32], tag(data, key)):
        return None
    return data


def content_hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:32]  # 2x BLAKE2b here (the CPU's SHA instructions), 128 bits kept


def stat_key(st: os.stat_result) -> tuple[int, int, int]:
    return (st.st_mtime_ns, st.st_size, st.st_ino)


class LintCache:
    """The head in memory, the index and record shards read on demand; ``persist=False`` keeps
    it in memory only.

    ``rule_fps`` (code -> fingerprint, set by the runner) keys each rule's findings and
    facts; ``stats`` counts what the run had to do (files analysed, shards read, cross-file
    rules reused), so that tests and benchmarks can tell reuse from recomputation.
    """

    def __init__(self, root: Path, fingerprint: str, persist: bool = True):
        self.root = root
        self.fingerprint = fingerprint
        self.persist = persist
        self._index: dict[int, tuple[dict[str, dict], int]] = {}  # shard -> (rel -> entry, written_ns)
        self._dirty_index: set[int] = set()
        self.wiki: dict[str, list] = {}  # cross-file rule code -> [key, rows]
        self._memos: dict[str, list] | None = None  # name -> [key, value], read on first use
        self._memos_changed = False
        self._tables: dict[str, tuple] = {}  # name -> (key, rel -> (stat key, value)), read on first use
        self._tables_changed: set[str] = set()
        self.rule_fps: dict[str, str] = {}
        self.written_ns = 0
        self.dirty = False
        self.stats: Counter = Counter()
        self._fresh: dict[str, dict | None] = {}
        # path -> the blob git vouches its work-tree bytes are (a changefeed.Vouched, read by
        # ``get``; empty when git is not asked or not trusted), and when git looked
        self.vouched: Vouched | dict[str, str] = {}
        self.vouched_since_ns = 0
        self._shards: dict[int, dict[str, list]] = {}  # record shards read
        self._new_records: dict[int, dict[str, list]] = {}  # shard -> records made this run
        self._dirty_shards: set[int] = set()
        self._missing: dict[frozenset, frozenset] = {}
        self._known: tuple[list[str], list[str], set[str]] | None = None  # (files, their hashes, unreadable): know_shas
        self._root_str = str(root)
        self._root_slash = os.path.join(self._root_str, "")

    @property
    def directory(self) -> Path:
        return self.root / CACHE_DIR

    @property
    def stored(self) -> int:
        """Files analysed anew (wholly or for some rules), first parsed for a cross-file rule, or
        found unchanged under a new stat key (a checkout, a copy: their bytes hashed again), this run."""
        return self.stats["analysed"] + self.stats["reanalysed"] + self.stats["recorded"] + self.stats["rekeyed"]

    @classmethod
    def open(cls, root: Path, fingerprint: str, persist: bool = True) -> LintCache:
        """Load the head of ``root`` if this engine wrote it (the shards wait until asked for)."""
        cache = cls(root, fingerprint, persist)
        data = cache._load(cache.directory / CACHE_FILE) if persist else None
        if data is not None and isinstance(data.get("wiki"), dict) and isinstance(data.get("written_ns"), int):
            cache.wiki = data["wiki"]
            cache.written_ns = data["written_ns"]
        return cache

    def read_index(self) -> None:
        """Read every index shard now (a whole-wiki run needs them all), the cycle collector
        paused across them: paused for each load alone, its collections scanned the shards
        read before again and again."""
        with collector_paused():
            for number in range(SHARDS):
                self._entries(number)

    def _entries(self, number: int) -> tuple[dict[str, dict], int]:
        """Index shard ``number``: its entries and when it was written (read on first use)."""
        held = self._index.get(number)
        if held is None:
            held = self._index[number] = self._read_index(number)
        return held

    def _read_index(self, number: int) -> tuple[dict[str, dict], int]:
        data = self._load(self._index_path(number)) if self.persist and self.written_ns else None
        if data is None:
            return {}, 0
        try:
            rulesets = [frozenset(codes) for codes in data["rulesets"]]
            entries = data["files"]
            for entry in entries.values():
                entry["rules"] = rulesets[entry["rules"]]
            written_ns = int(data["written_ns"])
        except (IndexError, KeyError, TypeError, AttributeError, ValueError):  # not this engine's shape: cold
            return {}, 0
        self.stats["index_read"] += 1
        return entries, written_ns

    def _index_path(self, number: int) -> Path:
        return self.directory / INDEX_DIR / f"{number:02d}.marshal"

    def _load(self, path: Path) -> dict | None:
        """The payload of a cache file this engine signed, else None (never trusted unsigned)."""
        data = read_signed(path, self.root)
        if isinstance(data, dict) and data.get("format") == _FORMAT and data.get("fingerprint") == self.fingerprint:
            return data
        return None

    def fresh_all(self, rels: list[str]) -> list[dict | None]:
        """:meth:`fresh` of each of ``rels``, in a whole-wiki run that read the index at once: an
        entry made from the very blob git vouches for is taken in one pass (no shard looked up
        per file), the others as :meth:`fresh` takes them."""
        blobs = self.vouched if isinstance(self.vouched, dict) else self.vouched.table()
        entries: dict[str, dict] = {}
        for number in range(SHARDS):
            entries.update(self._entries(number)[0])
        seen, found = self._fresh, []
        for rel in rels:
            entry = entries.get(rel)
            if entry is not None and rel not in seen and (blob := blobs.get(rel)) is not None and entry.get("blob") == blob:
                seen[rel] = entry
                found.append(entry)
            else:
                found.append(self.fresh(rel))
        return found

    def fresh(self, rel: str) -> dict | None:
        """The entry of ``rel`` if it still describes the file on disk, else None."""
        result = self._fresh.get(rel, _UNSEEN)
        if result is not _UNSEEN:
            return result
        number = shard_of(rel)
        entries, written_ns = self._entries(number)
        entry = entries.get(rel)
        result = None
        blob = self.vouched.get(rel)
        if entry is not None and blob is not None and entry.get("blob") == blob:
            result = entry  # git compared the file with its index blob, the bytes this entry was made from
        elif entry is not None:
            path = self._root_slash + rel
            try:
                st = os.lstat(path)  # a page replaced by a symlink is never fresh: read again, and judged
            except OSError:
                st = None
            if st is not None and entry.get("key") and stat.S_ISREG(st.st_mode) and st.st_size <= MAX_PAGE_BYTES:
                key = stat_key(st)
                if entry["key"] == key and key[0] < written_ns - RACY_NS:
                    result = entry
                    if blob is not None and key[0] < self.vouched_since_ns - RACY_NS:
                        # unchanged since well before git compared it with its blob: the entry's bytes are that blob
                        entry["blob"] = blob
                        self._touch(number)
                else:
                    try:
                        data = read_regular(path, rel, within=self._root_str)[0]
                    except PageError:
                        data = None
                    if data is not None and content_hash(data) == entry["sha"]:
                        if blob is not None and entry.get("blob") != blob and blob_id(data, blob) == blob:
                            entry["blob"] = blob  # read just now: a commit of an edited page needs no run more to say so
                        if entry["key"] != key:
                            entry["key"] = key
                            self.stats["rekeyed"] += 1
                        self._touch(number)  # rewritten with a new time: no longer racy
                        result = entry
        self._fresh[rel] = result
        return result

    @property
    def looked_up(self) -> dict[str, dict | None]:
        """Path -> its entry (None: stale or unknown) for every file :meth:`fresh` was asked of
        or stored this run."""
        return self._fresh

    def sha(self, rel: str) -> str | None:
        """The content hash of ``rel`` (from a fresh entry, else by reading the file)."""
        entry = self.fresh(rel)
        if entry is not None:
            return entry["sha"]
        from wikiengine.core.errors import WikiError
        from wikiengine.lint.context import read_page_bytes

        try:
            return content_hash(read_page_bytes(os.path.join(self._root_str, rel), rel)[0])
        except WikiError:
            return None

    def shas(self, files: list[str]) -> list[str]:
        """:meth:`sha` of each of ``files``, ``"-"`` for one that cannot be read; the entries of the
        files already looked up are taken as they are (a whole-wiki run: every file, 50,000 calls less)."""
        looked_up, sha = self._fresh, self.sha
        return [(entry["sha"] if (entry := looked_up.get(rel)) is not None else sha(rel)) or "-" for rel in files]

    def wanted(self, codes) -> frozenset:
        """The rule set (``CODE:fingerprint`` strings) of the rules ``codes``."""
        return frozenset(f"{code}:{self.rule_fps.get(code, '')}" for code in codes)

    def missing(self, entry: dict, wanted: frozenset) -> frozenset:
        """The codes of ``wanted`` that the entry's findings were not computed with."""
        have = entry["rules"]
        gone = self._missing.get(have)
        if gone is None:
            gone = self._missing[have] = frozenset(item.split(":", 1)[0] for item in wanted - have)
        return gone

    def store(self, rel: str, entry: dict, record: list) -> None:
        """Record a newly analysed file: its index ``entry`` (with ``rules``, the rule set its
        findings come from) and its shard ``record`` ``[sha, frontmatter blob, facts]``."""
        self._put_entry(rel, entry, record)
        self.stats["analysed"] += 1

    def _put_entry(self, rel: str, entry: dict, record: list) -> None:
        number = shard_of(rel)
        self._entries(number)[0][rel] = entry
        self._fresh[rel] = entry
        self._put_record(rel, record)
        self._touch(number)

    def _touch(self, number: int) -> None:
        """Mark index shard ``number`` for writing."""
        self._dirty_index.add(number)
        self.dirty = True

    def merge(self, rel: str, entry: dict, record: list) -> dict:
        """Add the findings and facts of rules run anew on an unchanged file to what it holds."""
        number = shard_of(rel)
        old = self._entries(number)[0][rel]
        redone = {item.split(":", 1)[0] for item in entry["rules"]}
        keep = frozenset(item for item in old["rules"] if item.split(":", 1)[0] not in redone)
        kept = {item.split(":", 1)[0] for item in keep}
        old["findings"] = [row for row in old["findings"] if row[2] in kept] + entry["findings"]
        old["rules"] = keep | entry["rules"]
        for name in ("error", "supp", "date"):  # the same bytes, read anew (a page first parsed for a cross-file rule had none)
            old[name] = entry[name]
        prior = self.record(rel)
        if prior is not None:
            record[2] = {**_record_facts(prior), **record[2]}
        self._put_record(rel, record)
        self._touch(number)
        self.stats["reanalysed"] += 1
        return old

    def record_page(self, info) -> None:
        """Remember the frontmatter (or read error) of a page parsed outside the per-file pass
        (no rule has run on it: the next run that lints it runs every rule on it)."""
        from wikiengine.core.errors import WikiError
        from wikiengine.lint.context import read_page_bytes

        try:
            data, st = read_page_bytes(info.path, info.rel)
        except WikiError:
            return
        error = info.error
        page = info.page
        sha = content_hash(data)
        entry = {"key": stat_key(st), "sha": sha, "error": (error.message, error.line or 1) if error is not None else None,
                 "findings": [], "supp": None, "rules": frozenset()}
        self._put_entry(info.rel, entry, [sha, marshal_or_none(page.frontmatter) if page is not None else None, {}])
        self.stats["recorded"] += 1

    # --- shards ------------------------------------------------------------------------

    def _shard(self, number: int) -> dict[str, list]:
        shard = self._shards.get(number)
        if shard is None:
            data = self._load(self._shard_path(number)) if self.persist else None
            shard = self._shards[number] = data.get("records", {}) if data is not None else {}
            self.stats["shards_read"] += data is not None
        return shard

    def _shard_path(self, number: int) -> Path:
        return self.directory / SHARD_DIR / f"{number:02d}.marshal"

    def _put_record(self, rel: str, record: list) -> None:
        """Hold a new record apart from its shard, which is read only when asked or saved (a
        PATH run, which saves nothing, never reads the shards of the pages it analyses)."""
        number = record_shard_of(rel)
        self._new_records.setdefault(number, {})[rel] = record
        self._dirty_shards.add(number)

    def know_shas(self, files: list[str], shas: list[str], unreadable: set[str]) -> None:
        """Take each of the sorted ``files``' content hash as ``shas`` says, and the files that
        could not be read or parsed, as a run that took the run snapshot knows them
        (lint/snapshot.py): a record is then checked against that hash, with no index entry
        looked up (a lane rule that reads the 2,500 pages of an edited lane read every index
        shard, and git's listing, to check theirs)."""
        self._known = (files, shas, unreadable)

    def _known_sha(self, rel: str) -> str | None:
        if self._known is None:
            return None
        files, shas, _unreadable = self._known
        at = bisect.bisect_left(files, rel)
        return shas[at] if at < len(files) and files[at] == rel and shas[at] != "-" else None

    def known_readable(self, rel: str) -> bool:
        """Is ``rel`` known (:meth:`know_shas`) by its content hash, read and parsed without error?"""
        return self._known is not None and rel not in self._known[2] and self._known_sha(rel) is not None

    def record(self, rel: str) -> list | None:
        """The shard record ``[sha, frontmatter blob, facts]`` of a fresh file, else None."""
        sha = self._known_sha(rel)
        if sha is None:
            entry = self.fresh(rel)
            if entry is None:
                return None
            sha = entry["sha"]
        number = record_shard_of(rel)
        record = self._new_records.get(number, {}).get(rel) or self._shard(number).get(rel)
        return record if record is not None and record[0] == sha else None

    def frontmatter_blob(self, rel: str) -> bytes | None:
        record = self.record(rel)
        return record[1] if record is not None else None

    def facts(self, code: str, rel: str):
        """``(known, value)``: what rule ``code`` collected from ``rel``, if the cache knows."""
        record = self.record(rel)
        held = _record_facts(record).get(code) if record is not None else None
        if held is None or held[0] != self.rule_fps.get(code, ""):
            return (False, None)
        return (True, held[1])

    def record_facts(self, code: str, rel: str, value) -> None:
        record = self.record(rel)
        if record is not None:
            _record_facts(record)[code] = [self.rule_fps.get(code, ""), value]
            self._dirty_shards.add(record_shard_of(rel))
            self.dirty = True

    # --- per-page and cross-file results -----------------------------------------------

    def page_memo(self, rel: str, name: str):
        """What a cross-file rule kept about the fresh file ``rel`` (dropped with the entry when it changes)."""
        entry = self.fresh(rel)
        return entry.get(name) if entry is not None else None

    def store_page_memo(self, rel: str, name: str, value) -> None:
        entry = self.fresh(rel)
        if entry is not None:
            entry[name] = value
            self._touch(shard_of(rel))

    def wiki_findings(self, code: str, key: str) -> list | None:
        """The cached findings of the cross-file rule ``code`` when they were computed from ``key``."""
        held = self.wiki.get(code)
        return held[1] if held is not None and held[0] == key else None

    def store_wiki_findings(self, code: str, key: str, rows: list) -> None:
        self.wiki[code] = [key, rows]
        self.dirty = True

    @property
    def memos(self) -> dict[str, list]:
        if self._memos is None:
            data = self._load(self.directory / MEMO_FILE) if self.persist else None
            self._memos = data.get("memos", {}) if data is not None else {}
            self.stats["memos_read"] += data is not None
        return self._memos

    def memo(self, name: str, key: str):
        held = self.memos.get(name)
        return held[1] if held is not None and held[0] == key else None

    def memo_entry(self, name: str) -> tuple[str | None, object]:
        """The memo ``name`` and the key it was kept under, whatever it is (``(None, None)``: none)."""
        held = self.memos.get(name)
        return (held[0], held[1]) if held is not None else (None, None)

    def store_memo(self, name: str, key: str, value) -> None:
        self.memos[name] = [key, value]
        self._memos_changed = self.dirty = True

    def table(self, name: str, key: str) -> dict:
        """The table of page facts ``name`` when it was made under ``key`` (else empty; see
        :meth:`~wikiengine.lint.context.LintContext.pages_fact`): a file of its own, so that a
        run that does not ask for it never reads it (IDX001's holds every page: a warm run at
        50,000 pages carried it, 30 MiB, inside the memos)."""
        held = self._tables.get(name)
        if held is None:
            data = self._load(self._table_path(name)) if self.persist else None
            held = self._tables[name] = (data.get("key"), data.get("rows")) if data is not None else (None, None)
            self.stats["tables_read"] += data is not None
        return held[1] if held[0] == key and isinstance(held[1], dict) else {}

    def store_table(self, name: str, key: str, rows: dict) -> None:
        self._tables[name] = (key, rows)
        self._tables_changed.add(name)
        self.dirty = True

    def keep(self, name: str, key: str, rows: dict, added: int) -> None:
        """Store the table ``name`` with ``added`` new rows a rule keeps for later runs (EXP007's
        base verdicts, a lane's page conventions): counted as ``kept``, which makes even a run
        over a few pages save the cache."""
        self.store_table(name, key, rows)
        self.stats["kept"] += added

    def parts(self, name: str) -> dict:
        """``{part: [key, value]}``: what ``name`` keeps lane by lane (lint/lane_parts.py), in a
        table of its own: only a run in which a lane changed reads it (at 50,000 pages MOD002's
        was 1.5 MB, which every warm run read with the memos)."""
        return self.table(f"parts:{name}", "parts")

    def store_parts(self, name: str, held: dict) -> None:
        self.store_table(f"parts:{name}", "parts", held)

    def run_snapshot(self) -> dict | None:
        """The run snapshot, under whatever key it was made (its ``key``: lint/snapshot.py)."""
        return self._load(self.directory / RUN_FILE) if self.persist and self.written_ns else None

    def store_run_snapshot(self, key: str, taken: dict, shas: str) -> None:
        """Write the run snapshot, after :meth:`save` (a file of its own: the head stays small for
        PATH runs), and every file's content hash (``shas``) in a file of their own, first: only a
        run after an edit reads them (:meth:`run_snapshot_shas`; 1.6 MB at 50,000 pages)."""
        if self.persist and self.directory.is_dir():
            with contextlib.suppress(OSError, ValueError):  # a snapshot that cannot be written only costs speed
                made = hashlib.sha256(f"{key}\0{shas}".encode()).hexdigest()
                if (self._write(self.directory / SHAS_FILE, {"made": made, "shas": shas})
                        and self._write(self.directory / RUN_FILE, {"key": key, "shas_made": made, **taken})):
                    self.stats["snapshot_saved"] += 1

    def store_run_files(self, digest: str, files: list[str]) -> None:
        """Keep the run's ``files`` (their :func:`~wikiengine.lint.context.list_digest` is ``digest``)
        beside its snapshot: a run over other files reads them to carry the snapshot over
        (lint/snapshot.py). Written only when a snapshot is made over another list of files."""
        if self.persist and self.directory.is_dir():
            with contextlib.suppress(OSError, ValueError):  # a list that cannot be written only costs speed
                self._write(self.directory / FILES_FILE, {"digest": digest, "files": files})

    def run_files(self, digest: str) -> list[str] | None:
        """The files kept by :meth:`store_run_files` when their digest is ``digest``, else None."""
        data = self._load(self.directory / FILES_FILE) if self.persist else None
        if data is None or data.get("digest") != digest or not isinstance(data.get("files"), list):
            return None
        return data["files"]

    def run_snapshot_shas(self, held: dict) -> str | None:
        """The content hashes written with the run snapshot ``held`` (None: not those, or none)."""
        data = self._load(self.directory / SHAS_FILE) if self.persist else None
        if data is None or data.get("made") != held.get("shas_made") or not isinstance(data.get("shas"), str):
            return None
        return data["shas"]

    def _table_path(self, name: str) -> Path:
        return self.directory / TABLE_DIR / f"{hashlib.blake2b(name.encode(), digest_size=8).hexdigest()}.marshal"

    def save(self, files: list[str]) -> None:
        """Write what this run changed, atomically: the record shards, then the index shards
        (keeping the files that still exist), the memos and last the head."""
        if not self.persist or not self.dirty:
            return
        live = set(files)
        for number, (entries, _written) in self._index.items():
            if not live.issuperset(entries):
                for rel in [rel for rel in entries if rel not in live]:
                    del entries[rel]
                self._dirty_index.add(number)
        try:
            for folder in (SHARD_DIR, INDEX_DIR, *((TABLE_DIR,) if self._tables_changed else ())):
                (self.directory / folder).mkdir(parents=True, exist_ok=True)
            ignore = self.directory / ".gitignore"
            if not ignore.exists():
                ignore.write_text("# written by wiki lint\n*\n")
            for number in sorted(self._dirty_shards):
                merged = {**self._shard(number), **self._new_records.get(number, {})}
                records = {rel: _with_facts_blob(record) for rel, record in merged.items() if self._current(rel, record, live)}
                if not self._write(self._shard_path(number), {"records": records}):
                    return
            now = time.time_ns()
            for number in sorted(self._dirty_index):
                if not self._write(self._index_path(number), _index_payload(self._index[number][0], now)):
                    return
            if self._memos_changed and not self._write(self.directory / MEMO_FILE, {"memos": self._memos}):
                return
            for name in sorted(self._tables_changed):
                key, rows = self._tables[name]
                if not self._write(self._table_path(name), {"key": key, "rows": rows}):
                    return
            # last: the head says the index is there to read
            self._write(self.directory / CACHE_FILE, {"written_ns": now, "wiki": self.wiki})
        except (OSError, ValueError):
            pass  # a cache that cannot be written only costs speed

    def _current(self, rel: str, record: list, live: set[str]) -> bool:
        """Is ``record`` still that of the file ``rel``, as far as this run can tell without
        reading more of the index? A record whose entry it did not read is kept: a record is
        only ever taken against its entry's content hash (or a known one), and a whole-wiki
        run, which reads every entry, drops the stale ones."""
        if rel not in live:
            return False
        sha = self._known_sha(rel)
        if sha is None:
            held = self._index.get(shard_of(rel))
            if held is None:
                return True
            entry = held[0].get(rel)
            if entry is None:
                return False
            sha = entry["sha"]
        return record[0] == sha

    def _write(self, path: Path, payload: dict) -> bool:
        return write_signed(path, {"format": _FORMAT, "fingerprint": self.fingerprint, **payload}, self.root)


def blob_id(data: bytes, like: str) -> str:
    """The id git gives a blob of ``data``, in the object format of the id ``like`` (40 hex
    digits: SHA-1; 64: SHA-256). Bytes that a clean filter or line-ending conversion would
    change have another id than their index blob: such a file is simply not taken as it."""
    digest = hashlib.sha1(usedforsecurity=False) if len(like) == 40 else hashlib.sha256()
    digest.update(b"blob %d\0" % len(data))
    digest.update(data)
    return digest.hexdigest()


def read_signed(path: Path, root: Path):
    """The payload of a cache file signed with the user's key; None when it is absent, forged or
    unreadable. A committed cache may be a pipe, /dev/zero or a link out: it is read the one safe
    way, never trusted."""
    try:
        blob = read_regular(path, limit=LIMITS["cache"], within=root)[0]
        raw = verified(memoryview(blob), root)  # a view: no second copy of a 10 MB index
        return _loads(raw) if raw is not None else None
    except (PageError, OSError, EOFError, ValueError, TypeError):
        return None


def write_signed(path: Path, payload: dict, root: Path) -> bool:
    """Write ``payload`` signed with the user's key, atomically; False when there is no trusted key."""
    blob = sign(marshal.dumps(payload), root)
    if blob is None:
        return False
    atomic_write_bytes(path, blob, durable=False)  # a lost cache only costs speed
    return True


def _loads(raw: bytes):
    """``marshal.loads`` with the cycle collector paused: the cache holds no cycles, and a
    collection every few thousand containers made loading a 50,000-page index twice as slow."""
    with collector_paused():
        return marshal.loads(raw)


def _index_payload(entries: dict[str, dict], written_ns: int) -> dict:
    """An index shard as it is saved: its rule sets listed once, each entry naming its own by number."""
    rulesets: dict[frozenset, int] = {}
    files = {rel: {**entry, "rules": rulesets.setdefault(entry["rules"], len(rulesets))} for rel, entry in entries.items()}
    return {"written_ns": written_ns, "rulesets": [sorted(codes) for codes in rulesets], "files": files}


def shard_of(rel: str) -> int:
    """The index shard of ``rel`` (a CRC of its path)."""
    return zlib.crc32(rel.encode()) % SHARDS


def record_shard_of(rel: str) -> int:
    """The record shard of ``rel``: the pages of one lane folder (``wiki/experiments/<model>/<lane>/``)
    share one of the 64 lane shards, the other files (a lane's ``program.md`` too: rules read every
    lane's) are spread over 64 more by their path. A lane rule reading the pages of an edited lane
    then loads that lane's shard, not every shard of the wiki."""
    lane = part_of(rel)
    if lane != REST and not rel.endswith("/program.md"):
        return SHARDS + _lane_shard(lane)
    return zlib.crc32(rel.encode()) % SHARDS


@functools.lru_cache(maxsize=4096)
def _lane_shard(lane: str) -> int:
    """A lane folder's shard, by a cryptographic hash: CRC-32's low bits put 200 lane folders
    that differ in a model's number in 22 of the 64 shards."""
    return int.from_bytes(hashlib.blake2b(lane.encode(), digest_size=4).digest(), "big") % SHARDS


def _record_facts(record: list) -> dict:
    """The facts of a shard record, decoded from their blob on first use."""
    facts = record[2]
    if isinstance(facts, bytes):
        facts = record[2] = marshal.loads(facts)
    elif facts is None:
        facts = record[2] = {}
    return facts


def _with_facts_blob(record: list) -> list:
    """The record as it is saved: its facts marshalled (left as they are when never decoded)."""
    facts = record[2]
    return [record[0], record[1], marshal.dumps(facts)] if isinstance(facts, dict) else record


def marshal_or_none(value) -> bytes | None:
    try:
        return marshal.dumps(value)
    except ValueError:
        return None


def engine_fingerprint(extra: str = "") -> str:
    """A hash of the engine's source and schemas (and ``extra``: what every rule reads)."""
    return hashlib.blake2b(f"{_engine_digest()}:{extra}".encode(), digest_size=16).hexdigest()


@functools.cache
def _engine_digest() -> str:
    """The hash of the engine's source and schemas, taken once per process (the code that runs
    was loaded when it started; a watcher and a writer that lint twice read it once). Kept per
    user by the files' names, sizes and modification times, as the interpreter keeps their
    bytecode: a process whose files stat as the last one's reads none of them."""
    from wikiengine.core.schemas import schema_dir
    from wikiengine.core.version import __version__

    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    folders = [(os.path.join(package, folder), ".py") for folder in ("core", "model", "lint", "lint/rules")]
    files = []
    for folder, suffix in [*folders, (str(schema_dir()), ".json")]:  # every run reads these: os, not pathlib
        try:
            entries = sorted((entry.name, entry.path) for entry in os.scandir(folder) if entry.name.endswith(suffix))
        except OSError:
            continue
        for name, path in entries:
            try:
                st = os.stat(path)
            except OSError:
                continue
            files.append((name, path, st.st_size, st.st_mtime_ns))
    stamp = repr((__version__, [(path, size, mtime) for _name, path, size, mtime in files]))
    kept = _ENGINE_DIGESTS.get(stamp)
    if kept is not None:
        return kept.decode()
    digest = hashlib.blake2b(digest_size=16)
    digest.update(__version__.encode())
    for name, path, _size, _mtime in files:
        try:
            with open(path, "rb") as handle:
                data = handle.read()
        except OSError:
            continue
        digest.update(name.encode())
        digest.update(data)
    _ENGINE_DIGESTS.put(stamp, digest.hexdigest().encode())
    return digest.hexdigest()


# what the engine's files hashed to, by their stat: one entry per installed engine
_ENGINE_DIGESTS = KeptMap("lint", "engine-digests.marshal", stamp=lambda: "blake2b-16", limit=8)
