"""`wiki watch`: the lane's supervisor: check, brake, revive."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from wikiengine.core.errors import ExitCode
from wikiengine.model.targets import ROOT_HELP

HELP = "audit the lane since .audit-cursor; authorize a stop after a clean closing audit; revive an idle session"
DESCRIPTION = """\
  wiki watch [--once] [--interval S] [--closing] [--json]

Audits the lane memory/STATE.md names (or MODEL LANE) since <lane>/.audit-cursor: wiki
lint on what changed, plus the lane checks (an in-flight workload with no stub committed
before it, stubs idle past the configured age (24 h), thrashing, a stop or at-ceiling
claim with no retrospective since the session began). Each finding carries the
correction to apply. Then it moves the cursor.

--closing   the closing audit: also requires the closing retrospective; when clean it
            writes <lane>/.stop-authorized (the ALL-CLEAR line, the cursor shas, a
            signature), the record `wiki loop stop` checks. Nothing else ever writes it.
Revive: when the session is running and its last wake is older than twice the interval,
it says so and runs the deterministic part of a wake (`wiki step`).

It writes only the cursor and .stop-authorized (and what a revived wake commits).
Without --once it audits every --interval seconds until interrupted. Units to run it
from a timer, with no agent: contrib/watch/ (systemd, cron, Kubernetes CronJob).

Exit status: 0 clean (a first or otherwise full audit says so in a note, not a finding);
1 findings; 4 clean but the session was idle and was revived; 2 bad input.
"""


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("watch", help=HELP, description=DESCRIPTION,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("names", nargs="*", metavar="MODEL LANE", help="the lane (default: the session in memory/STATE.md)")
    parser.add_argument("--once", action="store_true", help="audit once and exit")
    parser.add_argument("--interval", type=float, default=600.0, metavar="S", help="seconds between audits (default 600)")
    parser.add_argument("--closing", action="store_true", help="the closing audit; authorizes a stop when clean")
    parser.add_argument("--json", action="store_true", help="print one JSON object per audit")
    parser.add_argument("--root", type=Path, help=ROOT_HELP)
    parser.set_defaults(handler=run)


def watch_once(root: Path, names: list[str], *, closing: bool, interval: float) -> tuple[dict, int]:
    from wikiengine.core.clock import utcnow
    from wikiengine.model.state import LaneState, state_mode
    from wikiengine.step import lane_read
    from wikiengine.step.audit import run_audit, write_authorization, write_cursor
    from wikiengine.step.lane.session import lane_config, last_wake, make_backend, session_tracks

    state = LaneState.read(root) if state_mode(root) == "lane" else None
    if names:
        lane = lane_read.lane_for(root, names)
    elif state is not None:
        lane = state.lane_ref
    else:
        from wikiengine.core.errors import WikiError

        raise WikiError("no lane session in memory/STATE.md: name MODEL LANE")
    config = lane_config(root, lane)
    live = state is not None and state.lane_ref == lane and state.status == "running"
    backend = make_backend(state.backend, root, lane, config, session_tracks(root, lane)) if live else None
    audit = run_audit(root, lane, closing=closing, backend=backend, config=config)
    doc = audit.as_json()
    now = utcnow()
    write_cursor(root, lane, audit.wiki_sha, audit.code_sha)
    if closing and audit.clean:
        write_authorization(root, audit, now)
        doc["authorized"] = True
    revived = False
    if live and not closing:
        last = last_wake(root, state)
        if last is not None and now.timestamp() - last > 2 * interval:
            from wikiengine.step.engine import run_step

            woken = run_step(root, mode="lane", backend=backend)  # under the wake lock, like `wiki step`
            doc["revive"] = {"idle_s": int(now.timestamp() - last), "wake": woken.as_json()}
            revived = True
    code = ExitCode.FINDINGS if audit.findings else (ExitCode.REVIVED if revived else ExitCode.OK)
    return doc, code


def run(args) -> int:
    from wikiengine.core.errors import WikiError
    from wikiengine.model.targets import repository_root

    if args.interval <= 0:
        raise WikiError("--interval must be positive")
    root = repository_root(args.root)
    while True:
        doc, code = watch_once(root, args.names, closing=args.closing, interval=args.interval)
        if args.json:
            print(json.dumps(doc, indent=2), flush=True)
        else:
            print(_text(doc), flush=True)
        if args.once or args.closing:
            return code
        time.sleep(args.interval)


def _text(doc: dict) -> str:
    lines = [f"audit of {doc['lane']} ({'full' if doc['full'] else 'since ' + doc['since'][:12]}): "
             + ("clean" if doc["clean"] else f"{len(doc['findings'])} finding(s)")]
    lines += [f"note: {note}" for note in doc.get("notes", [])]
    for f in doc["findings"]:
        lines += [f"{f['path']}:{f['line']}: {f['check']} {f['message']}", f"    fix: {f['correction']}"]
    inherited = doc.get("inherited") or {}
    if inherited.get("count"):
        lines.append(f"{inherited['count']} finding(s) predate this session (start {inherited['since'][:12]}): "
                     "inherited, not counted" + ("; listed once:" if inherited["findings"] else ""))
        lines += [f"  {f['path']}:{f['line']}: {f['check']} {f['message']}" for f in inherited["findings"]]
    if doc["clean"]:
        lines.append(doc["all_clear"] + (" (the session added no finding; the inherited ones remain)"
                                         if inherited.get("count") else ""))
    if doc.get("authorized"):
        lines.append(".stop-authorized written: `wiki loop stop` may close the session")
    if doc.get("revive"):
        lines.append(f"the session was idle {doc['revive']['idle_s']} s: ran a wake")
    return "\n".join(lines)
