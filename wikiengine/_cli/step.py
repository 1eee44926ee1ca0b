"""`wiki step`: one wake of what memory/STATE.md names: a relay run, a lane session or a kernel session."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from wikiengine.model.targets import ROOT_HELP

HELP = "one wake of what memory/STATE.md names: a relay run, a lane session or a kernel session"
DESCRIPTION = """\
One turn of the loop for what memory/STATE.md names. A lane session (mode: lane,
started by `wiki loop start`): backfill, re-ground, and for each track process a
finished run, skip one in flight, dispatch a ready stub, kill a hung one, or say what
judgement the agent owes (JSON "needs"); then the next wake (120..600 s). Past a
budget of the program (max_experiments, max_wall_hours, max_chip_hours) nothing new is
dispatched and a "budget" need is owed; a "stall" need after stall_after_filings
filings without a frontier move (docs/budgets-and-gates.md).

A kernel session (mode: kernel, started by `wiki kernel start`): verify the newest
candidate that has no receipt (the verifier in a fresh process, the receipt committed),
else say what is owed, with its inputs and command: the first candidate of an open stub,
the verdict (with the strongest verdict the receipt and ledger allow), or, after a filed
verdict, what comes next: the next stub from the rank-1 lead or the close. A verdict followed by
neither is the stop-at-first-win stall (a finding; STATE.md counts the wakes it lasts).
A paused session reports its rank-1 resume action; a stopped one has nothing to do.

A relay run: lock, check (read only),
decide (running, launch session k+1, finish, park, or an emergency that blocks the run),
act through the run's store and compute backends, write memory, commit it, print a
summary. Acts are idempotent: a wake re-run after a crash launches at most once.

Exit status: 0 running / launched / parked / finished / waiting / locked (and every
lane and kernel wake); 5 blocked (an
emergency, or a run a person must clear with `wiki unblock`); 2 bad input.
"""


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("step", help=HELP, description=DESCRIPTION,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dry-run", action="store_true", help="check and decide; act on nothing")
    parser.add_argument("--json", action="store_true",
                        help='print one JSON object, the same shape in every mode: {"mode", "state", "decision", '
                             '"decisions", "actions", "needs" (inputs, command), "next_wake_s", "commits", '
                             '"exit_code"}, plus the mode\'s own facts (relay: "step", "reasons"; lane: "lane", '
                             '"tracks", "disagreements", "reground", "budgets"; kernel: "family", "findings", "disagreements", "k9")')
    parser.add_argument("--root", type=Path, help=ROOT_HELP)
    parser.set_defaults(handler=run)


def run(args) -> int:
    from wikiengine.model import targets
    from wikiengine.step.engine import run_step

    root = targets.repository_root(args.root)
    result = run_step(root, dry_run=args.dry_run)
    if args.json:
        print(json.dumps(result.as_json(), indent=2))
    else:
        print(result.text())
    return result.exit_code
