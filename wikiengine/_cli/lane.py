"""`wiki lane check`: a preflight of a lane's run command against the run contract."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from wikiengine._cli._verbs import add_verb_parser, verb_root
from wikiengine.model.targets import ROOT_HELP

HELP = "check a lane's run command against the run contract (a smoke run here)"
DESCRIPTION = """\
  wiki lane check [MODEL LANE] [--seconds N] [--json]
      run the lane's launch_cmd once, here (the local backend), as a smoke run: its
      placeholders filled as a wake fills them, the frontier's config (the lane's
      baseline_config) against itself, WIKI_SMOKE=1 in its environment and {smoke}
      = 1 in its command, killed after --seconds (default 120). Then read what it
      wrote through the reader a wake uses and say, one line each, what is missing:
      the command (none, not found, a bare `python`, a non-zero exit, too slow for a
      smoke run), the file (metrics.json, the profile, the HLO dump) or the key (the
      lane's target_metric, parity, the firing-audit line). Notes (no progress
      signal, no co-measured frontier_<metric>) do not fail the check.

Exit status: 0 all there; 1 something is missing; 2 bad input (no such lane, a
program that does not resolve). docs/run-contract.md is the contract: the
placeholders and environment a run gets and what it must write
(schema/run-metrics.schema.json; wikiengine.run writes it for a Python script).
"""


def add_parser(subparsers) -> None:
    parser, verbs = add_verb_parser(subparsers, "lane", HELP, DESCRIPTION)
    check = verbs.add_parser("check", help="run the launch command once as a smoke run and say what it left out",
                             description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    check.add_argument("names", nargs="*", metavar="MODEL LANE", help="the lane (default: from the current directory)")
    check.add_argument("--seconds", type=float, default=120.0, help="kill the smoke run after this long (default 120)")
    check.add_argument("--json", action="store_true", help="print one JSON object (on refusal too)")
    check.add_argument("--root", type=Path, help=ROOT_HELP)
    parser.set_defaults(handler=run, parser=parser)


def run(args) -> int:
    from wikiengine.core.errors import WikiError, exit_code_of
    from wikiengine.step import lane_read
    from wikiengine.step.lane.check import lane_check

    try:
        root = verb_root(args)
        if root is None:
            return 2
        report = lane_check(root, lane_read.lane_for(root, args.names), seconds=args.seconds)
    except WikiError as err:
        if not args.json:
            raise
        print(json.dumps({"ok": False, "error": str(err)}, indent=2))
        return exit_code_of(err)
    print(json.dumps(report.as_json(), indent=2, sort_keys=True) if args.json else report.text(), end="\n" if args.json else "")
    return 0 if report.ok else 1
