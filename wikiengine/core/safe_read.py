"""The one reading path for a file a command takes from a user or from the repository.

A proposal, metrics, a profile or HLO dump, the journal, STATE.md, a log, the lint cache,
the audit cursor, ``.stop-authorized``: every such file is read here, and only here, as

- a **regular file**: opened without blocking (``O_NONBLOCK``), then ``fstat`` before a byte
  is read, so a named pipe is refused at once and ``/dev/zero`` is never read;
- **inside the repository** when it is a repository file (``within``): symbolic links are
  resolved and a path that leaves the root is refused unread (a file the user names on the
  command line, such as ``--proposal /tmp/x.md``, may live anywhere, if regular);
- **at most a size cap per kind** (:data:`LIMITS`), checked on the stat and on the bytes;
- **strict UTF-8**: the error names the file, the line and the byte offset.

JSON from a file goes through :func:`load_json`, which bounds integer digits and nesting.
Every refusal is a :class:`~wikiengine.core.errors.PageError`: one line naming the file,
exit 2. Writers check with :func:`confined` that a path they are about to write does not
leave the repository through a symbolic link.
"""

from __future__ import annotations

import errno
import functools
import json
import os
import re
import stat
from pathlib import Path

from wikiengine.core.errors import PageError

TYPE_CHECKING = False  # typing's constant, without importing typing
if TYPE_CHECKING:
    from typing import Any

MiB = 1024 * 1024
MAX_PAGE_BYTES = 16 * MiB
# The cap of each kind of file: well above any real one, low enough that reading it is cheap.
LIMITS = {
    "page": MAX_PAGE_BYTES,  # a wiki page, a program, a log page
    "proposal": 1 * MiB,  # four labelled paragraphs and a Setup
    "metrics": 1 * MiB,  # a JSON object of figures
    "profile": 4 * MiB,  # the analyzer's Profile section
    "hlo": MAX_PAGE_BYTES,  # an HLO dump
    "source": 4 * MiB,  # a candidate kernel module, a reference
    "journal": 64 * MiB,  # a lane's or family's append-only records
    "state": 1 * MiB,  # memory/STATE.md and the other memory files
    "config": 1 * MiB,  # wiki.toml, pyproject.toml
    "run log": 64 * MiB,  # a run's log.txt (only its tail is quoted)
    "cache": 256 * MiB,  # .wiki_cache/lint.marshal
    "record": 256 * MiB,  # a write's redo or undo record (whole texts of pages)
    "cursor": 4096,  # .audit-cursor
    "authorization": 4096,  # .stop-authorized
}
MAX_INT_DIGITS = 64  # a JSON integer of a figure, a step or a pid never needs more
MAX_JSON_DEPTH = 64  # nesting of arrays and objects


def _inside(path: str | Path, within: str | Path) -> bool:
    return _under(os.path.realpath(path), os.path.realpath(within))


def _under(real: str, base: str) -> bool:
    """Is the canonical absolute path ``real`` the folder ``base`` (canonical too) or below it?
    ``os.path.commonpath([real, base]) == base`` for such paths, by one string comparison
    (commonpath splits both into parts: a third of a lint's confined read)."""
    return real == base or real.startswith(base if base.endswith(os.sep) else base + os.sep)


def confined(path: str | Path, within: str | Path, label=None) -> None:
    """Refuse ``path`` (a PageError naming ``label``) when, its symbolic links resolved, it
    lies outside the directory ``within``: a write must never land outside the repository."""
    if not _inside(path, within):
        raise PageError("symbolic link to a file outside the repository: refused", path if label is None else label)


_OUTSIDE = "symbolic link to a file outside the repository: not read"
_PROC_FD = "/proc/self/fd"


@functools.cache
def _proc_names_descriptors() -> bool:
    """Does ``/proc/self/fd`` exist here (asked once per process, not per file read)?"""
    return os.path.isdir(_PROC_FD)


@functools.lru_cache(maxsize=64)
def _real_folder(folder: str) -> str:
    """The real path of a repository root, resolved once per process and root."""
    return os.path.realpath(folder)


def _open_confined(path: str | Path, flags: int, label, within: str | Path):
    """``os.open`` of ``path`` refused (unopened where it can be) when its symbolic links
    resolve outside ``within``. Where ``/proc`` names an open file's real path (Linux),
    a file that is not itself a link is opened without following one and judged by the
    path the kernel gives its descriptor: one call, not a ``realpath`` of every folder
    on the way (a lint opens thousands); a link, or no ``/proc``, is judged first."""
    nofollow = getattr(os, "O_NOFOLLOW", 0)
    if nofollow and _proc_names_descriptors():
        try:
            fd = os.open(path, flags | nofollow)
        except OSError as exc:
            if exc.errno != errno.ELOOP:
                raise
        else:
            base = _real_folder(os.fspath(within))
            real = os.readlink(f"{_PROC_FD}/{fd}")
            if not _under(real, base):
                os.close(fd)
                raise PageError(_OUTSIDE, label)
            return fd
    if not _inside(path, within):
        raise PageError(_OUTSIDE, label)
    return os.open(path, flags)


def _open_regular(path: str | Path, label, limit: int | None, within: str | Path | None) -> tuple[int, os.stat_result]:
    """An open descriptor of the regular file at ``path`` and its stat (see :func:`read_regular`)."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags) if within is None else _open_confined(path, flags, label, within)
    except FileNotFoundError:
        raise PageError("no such file", label) from None
    except OSError as exc:
        raise PageError(f"cannot read: {exc.strerror or exc}", label) from None
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise PageError("is a directory, not a file", label)
        if not stat.S_ISREG(st.st_mode):
            raise PageError("not a regular file", label)
        if limit is not None and st.st_size > limit:
            raise PageError(f"too large ({st.st_size} bytes; the limit is {limit})", label)
    except BaseException:
        os.close(fd)
        raise
    return fd, st


def read_regular(
    path: str | Path, label=None, limit: int = MAX_PAGE_BYTES, *, within: str | Path | None = None
) -> tuple[bytes, os.stat_result]:
    """The bytes of the regular file at ``path`` and its stat, at most ``limit`` of them.

    Anything else is a :class:`PageError` naming ``label`` (default: the path): a named
    pipe would block the open forever and a symlink to ``/dev/zero`` would never end, so
    the file is opened without blocking and checked before a byte is read. With
    ``within`` (a directory), a path whose symbolic links resolve outside it is refused
    unread: its text must not reach findings, pages or commits.
    """
    label = path if label is None else label
    fd, st = _open_regular(path, label, limit, within)
    try:
        # the size the stat gave, plus one byte to see growth: never a buffer of ``limit`` for a small file
        data = _read_upto(fd, min(st.st_size, limit) + 1)
        if len(data) > st.st_size:  # it grew since the stat: read on, up to the limit
            data += _read_upto(fd, limit + 1 - len(data))
    except OSError as exc:
        raise PageError(f"cannot read: {exc.strerror or exc}", label) from None
    finally:
        os.close(fd)
    if len(data) > limit:  # it grew while we read
        raise PageError(f"too large (over {limit} bytes)", label)
    return data, st


def _read_upto(fd: int, size: int) -> bytes:
    """Up to ``size`` bytes from ``fd``, fewer only at its end, as a buffered ``read(size)``
    gives them, without the file object (which cost as much as the read of a small page)."""
    parts, got = [], 0
    while got < size and (chunk := os.read(fd, size - got)):
        parts.append(chunk)
        got += len(chunk)
    return parts[0] if len(parts) == 1 else b"".join(parts)


def read_tail(path: str | Path, size: int, label=None, *, within: str | Path | None = None) -> bytes:
    """The last ``size`` bytes of the regular file at ``path`` (a log of any length), b""
    when nothing is there; anything but a regular file is refused as by :func:`read_regular`."""
    if not os.path.lexists(path):
        return b""
    label = path if label is None else label
    fd, st = _open_regular(path, label, None, within)
    try:
        with os.fdopen(fd, "rb") as handle:
            handle.seek(max(0, st.st_size - size))
            return handle.read(size)
    except OSError as exc:
        raise PageError(f"cannot read: {exc.strerror or exc}", label) from None


def decode(data: bytes, path=None) -> str:
    """Decode UTF-8 (with or without BOM); a bad byte is an error naming its line and offset."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise PageError(f"not valid UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start})", path, line) from None


def read_text(path: str | Path, label=None, kind: str = "page", *, within: str | Path | None = None) -> str:
    """The UTF-8 text of the regular file at ``path``, at most ``LIMITS[kind]`` bytes."""
    label = path if label is None else label
    return decode(read_regular(path, label, LIMITS[kind], within=within)[0], label)


def read_optional(path: str | Path, label=None, kind: str = "page", *, within: str | Path | None = None) -> str | None:
    """As :func:`read_text`, but None when nothing is at ``path`` (not even a dangling
    link). Something there that is not a readable regular file is an error, never "absent"."""
    if not os.path.lexists(path):
        return None
    return read_text(path, label, kind, within=within)


def repo_text(root: Path, rel: str, kind: str = "page") -> str | None:
    """The text of the repository file ``rel`` (None when absent), confined to ``root``."""
    return read_optional(root / rel, rel, kind, within=root)


def _bounded_int(label, line):
    """json.loads' ``parse_int``: an integer literal over the digit bound is a PageError
    naming the file (json.loads lets it through as it is)."""
    def parse(digits: str) -> int:
        if len(digits) > MAX_INT_DIGITS + (digits[0] == "-"):
            raise PageError(f"an integer of {len(digits.lstrip('-'))} digits (the limit is {MAX_INT_DIGITS})",
                            label, line)
        return int(digits)
    return parse


_STRING_RE = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)  # unrolled: one step per run of plain characters
_BRACKET_RE = re.compile(r"[\[\]{}]")


def json_depth(text: str) -> int:
    """How deep arrays and objects nest in the JSON ``text`` (strings skipped)."""
    if text.count("[") + text.count("{") <= MAX_JSON_DEPTH:
        return 0  # cannot nest deeper than the brackets it has
    depth = deepest = 0
    for bracket in _BRACKET_RE.findall(_STRING_RE.sub("", text)):
        depth += 1 if bracket in "[{" else -1
        deepest = max(deepest, depth)
    return deepest


def load_json(text: str | bytes, label=None, line: int | None = None, **hooks: Any) -> Any:
    """``json.loads(text)`` for text from a file: integers of at most :data:`MAX_INT_DIGITS`
    digits and nesting at most :data:`MAX_JSON_DEPTH` deep, else a PageError naming
    ``label`` and ``line`` (``hooks``: json.loads' ``object_pairs_hook`` and the like).
    Invalid JSON is a ValueError, as from json.loads, for the caller to word."""
    if isinstance(text, bytes):
        text = decode(text, label)
    if json_depth(text) > MAX_JSON_DEPTH:
        raise PageError(f"JSON nested too deep (more than {MAX_JSON_DEPTH} levels)", label, line)
    try:
        return json.loads(text, parse_int=_bounded_int(label, line), **hooks)
    except RecursionError:
        raise PageError("JSON nested too deep", label, line) from None
