"""A kernel session: what `wiki kernel start` records and `wiki step` drives (K9).

``memory/STATE.md`` names the mode and the family: ``mode: kernel`` and ``family:
<slug>``, with the session's status (running, paused, stopped), its number, the run
target line of the start marker, the next wake, and how many wakes in a row found the
stop-at-first-win stall after the same filed experiment (schema
``memory-kernel-state``). The family's journal stays the record of what happened; this
file is the pointer a wake reads first.

A repository has one STATE.md: a kernel start records its session there unless the file
names something else that is still live (a running lane or kernel session of another
family, or a relay run), which it never overwrites.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, fields
from pathlib import Path

from wikiengine.model.kernels import KernelFamily
from wikiengine.model.state import STATE_FILE, render_lane_state, state_frontmatter
from wikiengine.core.page import parse_page

SCHEMA = "memory-kernel-state"
STATE_REL = f"memory/{STATE_FILE}"


@dataclass(frozen=True)
class KernelState:
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
        return KernelFamily(self.family)

    def to_frontmatter(self) -> dict:
        data = {"mode": self.mode}
        data.update({f.name: getattr(self, f.name) for f in fields(self) if f.name != "mode"})
        return data

    def replace(self, **changes) -> KernelState:
        return dataclasses.replace(self, **changes)


def kernel_state_from(data: dict, path=None, lines=None) -> KernelState:
    from wikiengine.core import schemas

    schemas.check(data, SCHEMA, path, lines)
    return KernelState(**data)


def read_kernel_state(root: Path) -> KernelState:
    return kernel_state_from(*state_frontmatter(root))


def kernel_state_text(state: KernelState, body: str | None = None) -> str:
    """STATE.md text for a kernel session (validated first)."""
    kernel_state_from(state.to_frontmatter())
    return render_lane_state(state, body if body is not None else state_body(state))


def state_body(state: KernelState, lines: list[str] = ()) -> str:
    """The prose of STATE.md: the session line, what the last wake found, the next check."""
    out = ["", f"# kernel family {state.family}: {state.status} (session {state.session}, {state.run_target})", ""]
    if lines:
        out += list(lines) + [""]
    out += [f"Next check at {state.next_check_at or 'none (the session is not running)'}. "
            "`wiki step` reads this file first."]
    return "\n".join(out) + "\n"


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
    from wikiengine.core.errors import WikiError

    if not text.strip():
        return {}
    try:
        return parse_page(text, STATE_REL).frontmatter or {}
    except WikiError:
        return {"run": "?", "status": "unreadable"}


def stage_start(txn, family: KernelFamily, *, session: int, run_target: str, at: str) -> str | None:
    """Stage STATE.md for a new session of ``family`` in ``txn``; why it was left alone, if it was."""
    why = replaceable(current_front(txn.read(STATE_REL)), family.slug)
    if why:
        return why
    state = KernelState(family=family.slug, status="running", session=session, run_target=run_target, started_at=at,
                        next_check_at=at, updated_at=at)
    txn.write(STATE_REL, kernel_state_text(state))
    return None


def stage_end(txn, family: KernelFamily, *, status: str, at: str, lines: list[str] = ()) -> bool:
    """Stage STATE.md as ``paused`` or ``stopped`` when it points at ``family``'s session (True when it did)."""
    front = current_front(txn.read(STATE_REL))
    if front.get("mode") != "kernel" or front.get("family") != family.slug:
        return False
    state = kernel_state_from(front).replace(status=status, next_check_at=None, updated_at=at, stall_after=None,
                                             stall_wakes=0)
    txn.write(STATE_REL, kernel_state_text(state, state_body(state, lines)))
    return True
