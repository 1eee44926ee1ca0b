"""A lane session: what `wiki loop start` records and `wiki step` drives.

``memory/STATE.md`` names the mode and the target: ``mode: lane`` and ``lane:
<model folder>/<lane>`` (a relay state has no ``mode`` key), with the session's status,
backend, number of tracks and the next wake. The session constants the seed derives
once (USER_PREFIX, MODEL_NAME, LANE, the tracks and their slots) are the ``start``
record of the lane's journal, committed with the start marker of the lane log.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from dataclasses import dataclass, fields
from pathlib import Path

from wikiengine.core.clock import utc_iso
from wikiengine.core.errors import WikiError
from wikiengine.core.git import git_dir
from wikiengine.model.lanes import Lane
from wikiengine.model.memory import MemoryFormatError, memory_path
from wikiengine.core.page import parse_page

STATE_FILE = "STATE.md"
SCHEMA = "memory-lane-state"


@dataclass(frozen=True)
class LaneState:
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

    def to_frontmatter(self) -> dict:
        data = {"mode": self.mode}
        data.update({f.name: getattr(self, f.name) for f in fields(self) if f.name != "mode"})
        return data

    def replace(self, **changes) -> LaneState:
        return dataclasses.replace(self, **changes)


SESSION_MODES = ("lane", "kernel")  # the ``mode`` values of a session's STATE.md; without one it is a relay run's


def state_mode(root: Path) -> str | None:
    """``lane``, ``kernel`` or ``relay`` for ``memory/STATE.md`` (None when there is no STATE.md)."""
    path = memory_path(root, STATE_FILE)
    if not path.is_file():
        return None
    mode = parse_page(path.read_text(encoding="utf-8"), path).frontmatter.get("mode")
    return mode if mode in SESSION_MODES else "relay"


def lane_state_from(data: dict, path=None, lines=None) -> LaneState:
    from wikiengine.core import schemas

    schemas.check(data, SCHEMA, path, lines)
    return LaneState(**{k: v for k, v in data.items()})


def state_frontmatter(root: Path) -> tuple[dict, Path, dict]:
    """``memory/STATE.md``'s frontmatter, its path and its keys' lines (for a schema error's line)."""
    from wikiengine.core.yamlio import key_lines

    path = memory_path(root, STATE_FILE)
    page = parse_page(path.read_text(encoding="utf-8"), path)
    if not page.has_frontmatter:
        raise MemoryFormatError("STATE.md has no frontmatter", path, 1)
    return page.frontmatter, path, key_lines(page.frontmatter_text, 2)


def read_lane_state(root: Path) -> LaneState:
    return lane_state_from(*state_frontmatter(root))


def render_lane_state(state: LaneState, body: str) -> str:
    import yaml

    front = yaml.safe_dump(state.to_frontmatter(), sort_keys=False, default_flow_style=False)
    return f"---\n{front}---\n{body}"


def lane_state_text(state: LaneState, body: str) -> str:
    """STATE.md text for a lane session (validated first)."""
    lane_state_from(state.to_frontmatter())
    return render_lane_state(state, body)


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
