"""The lint cache under ``.wiki_cache/``, like ruff's: per file, the content hash, the
page rules' findings, the frontmatter (marshalled again inside the entry, so that only
the pages a rule asks about are decoded), the read error, the suppression comments and
the facts that cross-file rules collect (marshalled inside the entry as well: a
pre-commit run decodes the links of its five pages, not those of thousands of generated
ones); per wiki, the cross-file findings keyed by the hash of every page. A warm run
over an unchanged wiki parses nothing.

A file is fresh when its ``(mtime_ns, size, inode)`` matches and it was last modified
well before the cache was written (git's "racy" rule: a file changed within the same
clock tick as the cache write is re-hashed); otherwise its bytes are hashed and compared.
The whole cache is dropped when the engine (its source and schemas) or the
configuration changes. It is one ``marshal`` file: plain dicts, lists and strings load
about ten times faster than through pickle or JSON.

A cache is signed with a key kept outside the repository (in the user's cache
directory): ``marshal`` data must never come from a commit, so a ``.wiki_cache/`` that
someone committed (or an agent was talked into writing) is ignored rather than loaded.
A key inside the repository or any git work tree is never used (a commit could plant
it with the cache), nor one that is not a private file of the user: then nothing is
cached. The cache holds data only; no code is ever loaded from it.
"""

from __future__ import annotations

import hashlib
import hmac
import marshal
import os
import stat
import time
from pathlib import Path
from typing import Any

from wikiengine.core.atomic import atomic_write_bytes
from wikiengine.core.errors import PageError
from wikiengine.core.safe_read import LIMITS, MAX_PAGE_BYTES, read_regular

CACHE_DIR = ".wiki_cache"
CACHE_FILE = "lint.marshal"
_RACY_NS = 2_000_000_000
_FORMAT = 3
_MAX_HASHED = 16 * 1024 * 1024  # as MAX_PAGE_BYTES: larger files are never pages


_KEY: bytes | None = None
KEY_BYTES = 32


def key_path() -> Path:
    """Where the per-user signing key lives: ``$XDG_CACHE_HOME/wikiengine/cache.key``."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "wikiengine" / "cache.key"


def untrusted_place(path: Path, root: Path | None = None) -> str | None:
    """Why a key at ``path`` cannot be trusted, or None: inside the repository or any git
    work tree (CI often points ``XDG_CACHE_HOME`` into the checkout, where a commit can
    plant both a key and a cache signed with it)."""
    resolved = Path(os.path.realpath(path))
    if root is not None:
        repo = Path(os.path.realpath(root))
        if resolved == repo or repo in resolved.parents:
            return f"{path} is inside the repository"
    for parent in resolved.parents:
        if os.path.lexists(parent / ".git"):
            return f"{path} is inside the git work tree {parent}"
    return None


def _usable_key(path: Path) -> bytes | None:
    """The key at ``path`` if it is a private regular file of ours holding a whole key."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o077:
            return None
        data = handle.read(KEY_BYTES + 1)
    return data if len(data) == KEY_BYTES else None


def signing_key(root: Path | None = None) -> bytes | None:
    """The per-user key that signs caches (created on first use); None when unavailable
    or in a place a commit could write (:func:`untrusted_place`)."""
    global _KEY
    path = key_path()
    if untrusted_place(path, root) is not None:
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


def sign(data: bytes, root: Path | None = None) -> bytes | None:
    """``data`` prefixed with its keyed tag, or None when there is no trusted key."""
    key = signing_key(root)
    if key is None:
        return None
    return hashlib.blake2b(data, key=key, digest_size=32).digest() + data


def verified(blob: bytes, root: Path | None = None) -> bytes | None:
    """The data of a signed blob, or None when the tag does not match (or no trusted key)."""
    key = signing_key(root)
    if key is None or len(blob) < 32:
        return None
    data = blob[32:]
    if not hmac.compare_digest(blob[:32], hashlib.blake2b(data, key=key, digest_size=32).digest()):
        return None
    return data


def content_hash(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def stat_key(st: os.stat_result) -> tuple[int, int, int]:
    return (st.st_mtime_ns, st.st_size, st.st_ino)


class LintCache:
    """Per-file entries (``dict``) keyed by posix path; ``persist=False`` keeps it in memory."""

    def __init__(self, root: Path, fingerprint: str, persist: bool = True):
        self.root = root
        self.fingerprint = fingerprint
        self.persist = persist
        self.entries: dict[str, dict] = {}
        self.wiki: dict[str, Any] = {}
        self.written_ns = 0
        self._fresh: dict[str, dict | None] = {}
        self.dirty = False
        self.stored = 0  # entries analysed anew this run
        self._root_str = str(root)

    @property
    def directory(self) -> Path:
        return self.root / CACHE_DIR

    @classmethod
    def open(cls, root: Path, fingerprint: str, persist: bool = True) -> LintCache:
        """Load the cache of ``root`` if it was written by this engine and configuration."""
        cache = cls(root, fingerprint, persist)
        if not persist:
            return cache
        try:
            # a committed cache may be a pipe, /dev/zero or a link out: read the one safe way, never trusted
            blob = read_regular(cache.directory / CACHE_FILE, limit=LIMITS["cache"], within=root)[0]
            raw = verified(blob, root)
            data = marshal.loads(raw) if raw is not None else None
        except (PageError, OSError, EOFError, ValueError, TypeError):
            return cache
        if isinstance(data, dict) and data.get("format") == _FORMAT and data.get("fingerprint") == fingerprint:
            cache.entries = data.get("files", {})
            cache.wiki = data.get("wiki", {})
            cache.written_ns = data.get("written_ns", 0)
        return cache

    def fresh(self, rel: str) -> dict | None:
        """The entry of ``rel`` if it still describes the file on disk, else None."""
        if rel in self._fresh:
            return self._fresh[rel]
        entry = self.entries.get(rel)
        result = None
        if entry is not None:
            path = os.path.join(self._root_str, rel)
            try:
                st = os.lstat(path)  # a page replaced by a symlink is never fresh: read again, and judged
            except OSError:
                st = None
            if st is not None and entry.get("key") and stat.S_ISREG(st.st_mode) and st.st_size <= MAX_PAGE_BYTES:
                key = stat_key(st)
                if tuple(entry["key"]) == key and key[0] < self.written_ns - _RACY_NS:
                    result = entry
                else:
                    try:
                        data = read_regular(path, rel, within=self._root_str)[0]
                    except PageError:
                        data = None
                    if data is not None and content_hash(data) == entry["sha"]:
                        entry["key"] = key
                        self.dirty = True
                        result = entry
        self._fresh[rel] = result
        return result

    def sha(self, rel: str) -> str | None:
        """The content hash of ``rel`` (from a fresh entry, else by reading the file)."""
        from wikiengine.core.errors import WikiError
        from wikiengine.lint.context import read_page_bytes

        entry = self.fresh(rel)
        if entry is not None:
            return entry["sha"]
        try:
            return content_hash(read_page_bytes(os.path.join(self._root_str, rel), rel)[0])
        except WikiError:
            return None

    def store(self, rel: str, entry: dict) -> None:
        """Record a newly analysed file (the entry is fresh for the rest of this run)."""
        self.entries[rel] = entry
        self._fresh[rel] = entry
        self.dirty = True
        self.stored += 1

    def record_page(self, info) -> None:
        """Remember the frontmatter (or read error) of a page parsed outside the per-file pass."""
        from wikiengine.core.errors import WikiError
        from wikiengine.lint.context import read_page_bytes

        try:
            data, st = read_page_bytes(info.path, info.rel)
        except WikiError:
            return
        error = info.error
        page = info.page
        entry = {
            "key": stat_key(st),
            "sha": content_hash(data),
            "fm": _marshal_or_none(page.frontmatter) if page is not None else None,
            "error": (error.message, error.line or 1) if error is not None else None,
            "findings": None,
            "facts": {},
            "supp": None,
        }
        self.store(info.rel, entry)

    def facts(self, code: str, rel: str):
        """``(known, value)``: what rule ``code`` collected from ``rel``, if the cache knows."""
        entry = self.fresh(rel)
        facts = _entry_facts(entry) if entry is not None else {}
        return (code in facts, facts.get(code))

    def record_facts(self, code: str, rel: str, value) -> None:
        entry = self.fresh(rel)
        if entry is not None:
            _entry_facts(entry)[code] = value
            self.dirty = True

    def wiki_findings(self, wiki_fp: str) -> list | None:
        return self.wiki.get("findings") if self.wiki.get("fingerprint") == wiki_fp else None

    def store_wiki_findings(self, wiki_fp: str, findings: list) -> None:
        self.wiki = {"fingerprint": wiki_fp, "findings": findings}
        self.dirty = True

    def save(self, files: list[str]) -> None:
        """Write the cache atomically, keeping entries of files that still exist."""
        if not self.persist or not self.dirty:
            return
        live = set(files)
        entries = {rel: _with_facts_blob(e) for rel, e in self.entries.items() if rel in live}
        payload = {
            "format": _FORMAT,
            "fingerprint": self.fingerprint,
            "written_ns": time.time_ns(),
            "files": entries,
            "wiki": self.wiki,
        }
        try:
            self.directory.mkdir(exist_ok=True)
            ignore = self.directory / ".gitignore"
            if not ignore.exists():
                ignore.write_text("# written by wiki lint\n*\n")
            blob = sign(marshal.dumps(payload), self.root)
            if blob is None:
                return
            atomic_write_bytes(self.directory / CACHE_FILE, blob, durable=False)  # a lost cache only costs speed
        except (OSError, ValueError):
            pass  # a cache that cannot be written only costs speed


def _entry_facts(entry: dict) -> dict:
    """The facts of a cache entry, decoded from their blob on first use."""
    facts = entry.get("facts")
    if isinstance(facts, bytes):
        facts = entry["facts"] = marshal.loads(facts)
    elif facts is None:
        facts = entry["facts"] = {}
    return facts


def _with_facts_blob(entry: dict) -> dict:
    """The entry as it is saved: its facts marshalled (left as they are when never decoded)."""
    facts = entry.get("facts")
    if isinstance(facts, dict):
        entry = {**entry, "facts": marshal.dumps(facts)}
    return entry


def _marshal_or_none(value) -> bytes | None:
    try:
        return marshal.dumps(value)
    except ValueError:
        return None


def engine_fingerprint(config_repr: str, rule_codes: list[str]) -> str:
    """A hash of the engine's source, the schemas, the selected rules and the configuration."""
    from wikiengine.core.schemas import schema_dir
    from wikiengine.core.version import __version__

    package = Path(__file__).resolve().parent.parent
    digest = hashlib.blake2b(digest_size=16)
    digest.update(__version__.encode())
    digest.update(config_repr.encode())
    digest.update(",".join(rule_codes).encode())
    sources = [path for folder in ("core", "model", "lint", "lint/rules") for path in sorted((package / folder).glob("*.py"))]
    sources += sorted(schema_dir().glob("*.json"))
    for source in sources:
        try:
            digest.update(source.name.encode())
            digest.update(source.read_bytes())
        except OSError:
            continue
    return digest.hexdigest()
