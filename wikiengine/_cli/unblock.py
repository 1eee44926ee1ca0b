"""`wiki unblock`: a person clears a blocked run, with a reason that is recorded."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from wikiengine.model.targets import ROOT_HELP

HELP = "clear a blocked relay run (a person's decision, recorded with its reason)"


DESCRIPTION = """\
Clear the blocker of the run in memory/STATE.md, with a reason recorded in ERRORS.md and
in the commit. The next `wiki step` checks everything again: a cause still present in the
store (a pointer below the high-water mark, a changed cursor hash, wrong token arithmetic,
an altered checkpoint) blocks the run again; a loss jump or a crash loop that a person
cleared is not judged again (one new launch is allowed).

Exit status: 0 cleared; 7 a `wiki step` holds the wake lock (retry when it is done); 2 bad
input (the run is not blocked, memory has uncommitted changes).
"""


def add_parser(subparsers) -> None:
    import argparse

    parser = subparsers.add_parser("unblock", help=HELP, description=DESCRIPTION,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reason", required=True, help="why the blocker no longer holds (recorded in ERRORS.md)")
    parser.add_argument("--root", type=Path, help=ROOT_HELP)
    parser.add_argument("--json", action="store_true", help='print {"run", "status", "was", "reason"}')
    parser.set_defaults(handler=run)


def run(args) -> int:
    import sys

    from wikiengine.core.errors import ExitCode, WikiError
    from wikiengine.core.locks import try_hold
    from wikiengine.model import targets
    from wikiengine.step.engine import lock_path

    root = targets.repository_root(args.root)
    reason = " ".join(args.reason.split())
    if not reason:
        raise WikiError("--reason must say why the blocker no longer holds")
    lock = try_hold(lock_path(root))
    if lock is None:
        print("locked: a wiki step is running; retry when it is done", file=sys.stderr)
        return ExitCode.BUSY
    with lock:
        return _unblock(root, reason, as_json=args.json)


def _unblock(root, reason: str, *, as_json: bool = False) -> int:
    from wikiengine.core import clock
    from wikiengine.core.errors import WikiError
    from wikiengine.core.git import check_repository, commit_paths, dirty_paths
    from wikiengine.model import memory
    from wikiengine.model.state import RelayState
    from wikiengine.step.relay.wake import MEMORY_PATHS

    check_repository(root)
    dirty = dirty_paths(root, list(MEMORY_PATHS))
    if dirty:
        raise WikiError(f"{dirty[0]} has uncommitted changes: commit or revert them first")
    state = RelayState.read(root)
    if state.status != "blocked":
        raise WikiError(f"run {state.run} is {state.status}, not blocked: nothing to clear",
                        memory.memory_path(root, memory.STATE_FILE))
    now = clock.utcnow()
    memory.prepend_error(root, clock.utc_date(now), "unblocked", reason, state.run, state.last_seen_step,
                         "unblocked by a person", f"cleared blocker: {state.blocker}\nreason: {reason}")
    cleared = dataclasses.replace(state, status="running", blocker=None, updated_at=clock.utc_iso(now),
                                  unblocked_session=state.session)
    body = (f"\n# {state.run}: running\n\nUnblocked by a person at {clock.utc_iso(now)}: {reason}\n"
            f"(was: {state.blocker}). The next `wiki step` checks the store again.\n")
    cleared.write(root, body)
    commit_paths(root, list(MEMORY_PATHS), f"unblock: {reason[:120]}")
    if as_json:
        import json

        print(json.dumps({"run": state.run, "status": cleared.status, "was": state.blocker, "reason": reason}, indent=2))
    else:
        print(f"unblocked {state.run}: {reason}")
    return 0
