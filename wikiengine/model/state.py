"""``memory/STATE.md``: the pointer `wiki step` reads first, and the three records it holds.

A repository has one STATE.md. Its frontmatter is what a machine reads, its prose below is
for people. The ``mode`` key says which record it holds, each validated against its own
schema (``schema/<schema>.schema.json``):

- :class:`RelayState` (no ``mode``; schema ``memory-state``): a relay run (seed 000), its
  status, the steps seen, the next check, the blocker and the claim of a launch in
  flight. The other memory files of a relay run (QUOTA, ASSETS, ERRORS) are
  :mod:`wikiengine.model.memory`.
- :class:`LaneState` (``mode: lane``; schema ``memory-lane-state``): a lane session that
  `wiki loop start` records, with its status, backend, number of tracks and the next
  wake. The session constants the seed derives once (USER_PREFIX, MODEL_NAME, LANE, the
  tracks and their slots) are the ``start`` record of the lane's journal, committed with
  the start marker of the lane log.
- :class:`KernelState` (``mode: kernel``; schema ``memory-kernel-state``): a kernel session
  that `wiki kernel start` records (K9), with its status, number, the run target line of
  the start marker, the next wake, and how many wakes in a row found the
  stop-at-first-win stall after the same filed experiment. The family's journal stays
  the record of what happened. A kernel start records its session here unless the file
  names something else that is still live (a running lane or kernel session of another
  family, or a relay run), which it never overwrites.

Every record is a :class:`StateRecord`: read from the frontmatter of STATE.md, validated
against its schema, rendered (the frontmatter as YAML between ``---`` fences, then the
prose) and written atomically. The session records are written with PyYAML's defaults
(ASCII, folded at 80 columns); the relay's is edited in ruamel.yaml round-trip mode, so
the comments a person adds to it survive.
"""

from __future__ import annotations

import copy
import dataclasses
import datetime as dt
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from wikiengine.core.atomic import atomic_write_text
from wikiengine.core.clock import utc_iso
from wikiengine.core.errors import WikiError
from wikiengine.core.git import git_dir
from wikiengine.core.page import parse_page, read_frontmatter
from wikiengine.core.safe_read import read_optional
from wikiengine.model.lanes import Lane
from wikiengine.model.memory_files import MEMORY_DIR, STATE_FILE, MemoryFormatError, memory_path, read_memory_file

if TYPE_CHECKING:
    from wikiengine.model.kernels import KernelFamily

STATE_REL = f"{MEMORY_DIR}/{STATE_FILE}"
_PARSED: dict[tuple, tuple] = {}  # (record class, text, path) -> (record, body): see StateRecord.parse
_PARSED_KEPT = 8
SESSION_MODES = ("lane", "kernel")  # the ``mode`` values of a session's STATE.md; without one it is a relay run's


def state_path(root: Path) -> Path:
    return memory_path(root, STATE_FILE)


class StateRecord:
    """What the three records of STATE.md share: reading, validation, rendering, writing.

    A subclass is a frozen dataclass whose fields are the frontmatter's keys, in the order
    they are written (``mode`` first, when the record has one).
    """

    SCHEMA: ClassVar[str]
    OPTIONAL: ClassVar[tuple[str, ...]] = ()  # keys left out of the frontmatter when unset
    NO_FRONTMATTER: ClassVar[str] = "STATE.md has no frontmatter"

    def to_frontmatter(self) -> dict:
        """The frontmatter mapping: ``mode`` first, then the fields in order (the optional
        keys that are unset are left out)."""
        data: dict[str, Any] = {"mode": self.mode} if hasattr(self, "mode") else {}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "mode" or (value is None and f.name in self.OPTIONAL):
                continue
            data[f.name] = value.to_dict() if isinstance(value, Claim) else value
        return data

    @classmethod
    def from_frontmatter(cls, data: dict, path=None, lines=None):
        """Validate ``data`` against the record's schema (an error names ``path`` and the
        key's line from ``lines``) and build the record."""
        from wikiengine.core import schemas

        schemas.check(data, cls.SCHEMA, path, lines)
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})

    @classmethod
    def parse(cls, text: str, path=None) -> tuple[Any, str]:
        """The record in STATE.md's ``text``, and the prose below its frontmatter.

        A wake reads STATE.md several times (the mode, the recovery, the load); the same
        text is parsed and validated once (the record is frozen: one value serves all)."""
        key = (cls, text, str(path))
        if key not in _PARSED:
            from wikiengine.core.yamlio import key_lines

            page = parse_page(text, path)
            if not page.has_frontmatter:
                raise MemoryFormatError(cls.NO_FRONTMATTER, path, 1)
            record = cls.from_frontmatter(page.frontmatter, path, lambda: key_lines(page.frontmatter_text, 2))
            if len(_PARSED) >= _PARSED_KEPT:
                _PARSED.clear()
            _PARSED[key] = record, page.body
        record, body = _PARSED[key]
        return copy.deepcopy(record), body  # its lists are the caller's own

    @classmethod
    def read(cls, root: Path):
        """The record in ``<root>/memory/STATE.md``."""
        path = state_path(root)
        return cls.parse(read_memory_file(path), path)[0]

    def dump_frontmatter(self, previous: str | None = None) -> str:
        """The frontmatter as YAML, with PyYAML's defaults (ASCII, folded at 80 columns)."""
        import yaml

        return yaml.safe_dump(self.to_frontmatter(), sort_keys=False, default_flow_style=False)

    def render(self, body: str, previous: str | None = None) -> str:
        """STATE.md text for the record and prose ``body`` (``previous``: the current text)."""
        return f"---\n{self.dump_frontmatter(previous)}---\n{body}"

    def text(self, body: str, previous: str | None = None, path=None) -> str:
        """STATE.md text for the record, validated against its schema first."""
        type(self).from_frontmatter(self.to_frontmatter(), path)
        return self.render(body, previous)

    def write(self, root: Path, body: str) -> None:
        """Write STATE.md atomically (validated first)."""
        path = state_path(root)
        previous = read_optional(path, STATE_REL, "state", within=root)
        atomic_write_text(path, self.text(body, previous, path))

    def replace(self, **changes):
        return dataclasses.replace(self, **changes)


def state_mode(root: Path) -> str | None:
    """``lane``, ``kernel`` or ``relay`` for ``memory/STATE.md`` (None when there is no STATE.md)."""
    path = state_path(root)
    text = read_optional(path, STATE_REL, "state", within=root)
    if text is None:
        return None
    for cls in (LaneState, KernelState):  # a text a record was parsed from already: no second YAML parse
        if (cls, text, str(path)) in _PARSED:
            return cls.mode
    mode = read_frontmatter(text, path).get("mode")
    return mode if mode in SESSION_MODES else "relay"


# --- a relay run -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Claim:
    """A launch in flight: written (and committed) before the compute backend is asked."""

    job: str  # e.g. "session-3"
    row: int  # the ledger row booked for it
    claimed_at: str  # ISO UTC

    def to_dict(self) -> dict:
        return {"job": self.job, "row": self.row, "claimed_at": self.claimed_at}


@dataclass(frozen=True)
class RelayState(StateRecord):
    """The frontmatter of a relay run's ``memory/STATE.md``."""

    SCHEMA: ClassVar[str] = "memory-state"
    STATUSES: ClassVar[tuple[str, ...]] = ("running", "parked", "blocked", "complete")
    OPTIONAL: ClassVar[tuple[str, ...]] = ("resume_step", "reset_at", "next_command", "claim", "store_head",
                                           "trusted_commit", "unblocked_session")
    NO_FRONTMATTER: ClassVar[str] = "STATE.md has no frontmatter (run, status, ...)"

    run: str
    status: str
    last_seen_step: int = 0
    high_water_step: int = 0
    session: int = 0
    next_check_at: str | None = None
    blocker: str | None = None
    updated_at: str = "1970-01-01T00:00:00Z"
    resume_step: int | None = None
    reset_at: str | None = None
    next_command: str | None = None
    claim: Claim | None = None
    store_head: str | None = None  # the store commit seen at the last wake (history-rewrite check)
    trusted_commit: str | None = None  # the wiki commit last re-linted clean (RELIABILITY row 38)
    unblocked_session: int | None = None  # the session count when a person last cleared a blocker

    @classmethod
    def from_frontmatter(cls, data: dict, path=None, lines=None) -> RelayState:
        state = super().from_frontmatter(data, path, lines)
        claim = data.get("claim")
        return dataclasses.replace(state, claim=Claim(**claim) if claim else None)

    def dump_frontmatter(self, previous: str | None = None) -> str:
        """The frontmatter as YAML. With ``previous`` (the current text) it is edited in
        ruamel.yaml round-trip mode, so comments and key order survive; optional keys that
        are unset are removed, required ones are written as ``null``."""
        import io

        from ruamel.yaml import YAML
        from ruamel.yaml.comments import CommentedMap

        yaml = YAML(typ="rt")
        yaml.width = 4096
        yaml.representer.add_representer(type(None), lambda rep, _: rep.represent_scalar("tag:yaml.org,2002:null", "null"))
        data = CommentedMap()
        if previous is not None:
            loaded = yaml.load(parse_page(previous, parse_yaml=False).frontmatter_text or "{}")
            if isinstance(loaded, CommentedMap):
                data = loaded
        wanted = self.to_frontmatter()
        for key in list(data):
            if key not in wanted:
                del data[key]
        for key, value in wanted.items():
            data[key] = value
        out = io.StringIO()
        yaml.dump(data, out)
        return out.getvalue()


# --- a lane session --------------------------------------------------------------------------


@dataclass(frozen=True)
class LaneState(StateRecord):
    """The frontmatter of ``memory/STATE.md`` when it points at a lane session."""

    SCHEMA: ClassVar[str] = "memory-lane-state"

    lane: str  # "<model folder>/<lane>"
    status: str  # running | paused | stopped
    session: int
    backend: str
    tracks: int
    started_at: str
    next_check_at: str | None
    updated_at: str
    last_wake_at: str | None = None
    mode: str = "lane"

    @property
    def lane_ref(self) -> Lane:
        model_dir, _, name = self.lane.partition("/")
        return Lane(model_dir, name)


def require_lane(root: Path, state: LaneState) -> Lane:
    lane = state.lane_ref
    if not (root / lane.dir).is_dir():
        raise WikiError(f"memory/STATE.md names lane {state.lane}, which has no folder {lane.dir}")
    return lane


def heartbeat_path(root: Path, lane: Lane) -> Path:
    return git_dir(root) / "wiki-lane" / f"{lane.model_dir}__{lane.name}.wake"


def write_heartbeat(root: Path, lane: Lane, moment: dt.datetime) -> None:
    """This host's record of the last wake (inside .git: never a stray file, never a commit)."""
    path = heartbeat_path(root, lane)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(utc_iso(moment) + "\n", encoding="utf-8")


# --- a kernel session ------------------------------------------------------------------------


@dataclass(frozen=True)
class KernelState(StateRecord):
    """The frontmatter of ``memory/STATE.md`` when it points at a kernel session."""

    SCHEMA: ClassVar[str] = "memory-kernel-state"

    family: str
    status: str  # running | paused | stopped
    session: int
    run_target: str
    started_at: str
    next_check_at: str | None
    updated_at: str
    last_wake_at: str | None = None
    stall_after: str | None = None  # the filed experiment the stall follows
    stall_wakes: int = 0  # consecutive wakes that found it
    mode: str = "kernel"

    @property
    def family_ref(self) -> KernelFamily:
        from wikiengine.model.kernels import KernelFamily

        return KernelFamily(self.family)

    def body(self, lines: list[str] = ()) -> str:
        """The prose of STATE.md: the session line, what the last wake found, the next check."""
        out = ["", f"# kernel family {self.family}: {self.status} (session {self.session}, {self.run_target})", ""]
        if lines:
            out += list(lines) + [""]
        out += [f"Next check at {self.next_check_at or 'none (the session is not running)'}. "
                "`wiki step` reads this file first."]
        return "\n".join(out) + "\n"

    def text(self, body: str | None = None, previous: str | None = None, path=None) -> str:
        """STATE.md text for the session (validated first); the prose is :meth:`body` unless given."""
        return super().text(body if body is not None else self.body(), previous, path)


def replaceable(front: dict, family: str) -> str | None:
    """Why STATE.md (its frontmatter ``front``) must not be overwritten by a kernel session
    of ``family``; None when it may be (absent, this family's, or a session that ended)."""
    if not front:
        return None
    mode = front.get("mode")
    if mode == "kernel":
        if front.get("family") == family or front.get("status") != "running":
            return None
        return f"memory/STATE.md drives the running kernel session of {front.get('family')}"
    if mode == "lane":
        return None if front.get("status") != "running" else f"memory/STATE.md drives the running lane session {front.get('lane')}"
    if front.get("run"):
        return None if front.get("status") == "complete" else f"memory/STATE.md drives the relay run {front.get('run')}"
    return None


def current_front(text: str) -> dict:
    """The frontmatter of STATE.md's text ({} when there is none); an unreadable one reads
    as a live relay run, so a kernel start never clobbers it (lint shows what is wrong)."""
    if not text.strip():
        return {}
    try:
        return read_frontmatter(text, STATE_REL) or {}
    except WikiError:
        return {"run": "?", "status": "unreadable"}


def stage_start(txn, family: KernelFamily, *, session: int, run_target: str, at: str) -> str | None:
    """Stage STATE.md for a new session of ``family`` in ``txn``; why it was left alone, if it was."""
    why = replaceable(current_front(txn.read(STATE_REL)), family.slug)
    if why:
        return why
    state = KernelState(family=family.slug, status="running", session=session, run_target=run_target, started_at=at,
                        next_check_at=at, updated_at=at)
    txn.write(STATE_REL, state.text())
    return None


def stage_end(txn, family: KernelFamily, *, status: str, at: str, lines: list[str] = ()) -> bool:
    """Stage STATE.md as ``paused`` or ``stopped`` when it points at ``family``'s session (True when it did)."""
    front = current_front(txn.read(STATE_REL))
    if front.get("mode") != "kernel" or front.get("family") != family.slug:
        return False
    state = KernelState.from_frontmatter(front).replace(status=status, next_check_at=None, updated_at=at,
                                                        stall_after=None, stall_wakes=0)
    txn.write(STATE_REL, state.text(state.body(lines)))
    return True
