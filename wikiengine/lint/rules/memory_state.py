"""MEM003."""

from __future__ import annotations

from wikiengine.core.errors import WikiError
from wikiengine.lint.rule import Rule
from wikiengine.lint.rules._experiments import key_line
from wikiengine.lint.rules._memory import STATE, memory_text


class StateValid(Rule):
    """## What it does
    Checks `memory/STATE.md`: its frontmatter validates against
    `schema/memory-state.schema.json` (run, status, steps, next check, blocker, and the
    park fields when parked), and `run` names a run that exists, `wiki/runs/<run>/`.
    A lane session's state (`mode: lane`, written by `wiki loop start`) validates against
    `schema/memory-lane-state.schema.json` instead, and its `lane` must exist; a kernel
    session's (`mode: kernel`, written by `wiki kernel start`) against
    `schema/memory-kernel-state.schema.json`, and its `family` must exist.

    ## Why is this bad?
    `wiki step` reads STATE.md first at every wake, and it overrides the programs. A
    status it cannot read or a run that does not exist stops the relay at an odd hour,
    with nobody watching.

    ## Example
    ```yaml
    run: ounce100M
    status: parked
    ```
    (no `wiki/runs/ounce100M/`, and a parked state without `resume_step`, `reset_at`
    and `next_command`).

    ## Options
    None.
    """

    code = "MEM003"
    name = "memory-state-valid"
    summary = "memory/STATE.md frontmatter is invalid or names a target that does not exist"
    cache_wiki = False  # checks a directory, which is not a page
    reports_on = ("memory-state",)

    def check_wiki(self, ctx):
        text = memory_text(ctx, STATE)
        if text is None:
            return
        mode = _session_mode(text)
        if mode is not None:
            yield from self._check_session(ctx, text, mode)
            return
        from wikiengine.model.state import RelayState

        try:
            state, _ = RelayState.parse(text, STATE)
        except WikiError as err:
            yield self.finding(STATE, err.line or 1, err.message)
            return
        if not (ctx.root / "wiki" / "runs" / state.run).is_dir():
            yield self.finding(STATE, key_line(ctx.info(STATE), "run"), f"run {state.run!r} does not exist: no wiki/runs/{state.run}/")

    def _check_session(self, ctx, text, mode):
        """A lane or kernel session's state: it validates, and the lane (or family) it names exists."""
        from wikiengine.core.page import parse_page
        from wikiengine.core.yamlio import key_lines

        try:
            page = parse_page(text, STATE)
            key, what, name, folder = _SESSIONS[mode](page.frontmatter, key_lines(page.frontmatter_text, 2))
        except WikiError as err:
            yield self.finding(STATE, err.line or 1, err.message)
            return
        if not (ctx.root / folder).is_dir():
            yield self.finding(STATE, key_line(ctx.info(STATE), key), f"{what} {name!r} does not exist: no {folder}/")


def _lane_session(frontmatter: dict, lines: dict) -> tuple[str, str, str, str]:
    from wikiengine.model.state import LaneState

    state = LaneState.from_frontmatter(frontmatter, STATE, lines)
    return "lane", "lane", state.lane, state.lane_ref.dir


def _kernel_session(frontmatter: dict, lines: dict) -> tuple[str, str, str, str]:
    from wikiengine.model.state import KernelState

    state = KernelState.from_frontmatter(frontmatter, STATE, lines)
    return "family", "kernel family", state.family, state.family_ref.dir


# mode -> the state read from STATE.md: (its key naming the target, what the target is, its name, its folder)
_SESSIONS = {"lane": _lane_session, "kernel": _kernel_session}


def _session_mode(text: str) -> str | None:
    """``lane`` or ``kernel`` when STATE.md points at a session (``mode: ...``), None for a relay run."""
    import re

    head = text.split("\n---", 1)[0]
    match = re.search(r"(?m)^mode:\s*['\"]?(lane|kernel)['\"]?\s*$", head)
    return match.group(1) if match else None
