"""`wiki log add`: one log entry, in the right tier and form, newest first."""

from __future__ import annotations

import json
from pathlib import Path

from wikiengine._cli._verbs import add_verb_parser, verb_root
from wikiengine.model.targets import ROOT_HELP

HELP = "add a log entry in the right tier (global wiki/log.md, or a lane's log.md)"
DESCRIPTION = """\
  wiki log add OP SUBJECT [MODEL LANE] [--field KEY=VALUE ...]

With MODEL LANE (or run inside a lane folder) the entry goes to the lane's log.md,
else to the global wiki/log.md. The op must be one of its tier's vocabulary;
loop-iteration, start, stop and run-experiment never go to the global log, and
ingest-*, lint and loop-pool never to a lane log. Entries are full form: a body of
**Op**: plus one **Key**: value line per --field (loop-iteration alone is one line).
Inserted at the top (newest first), committed.
"""


def add_parser(subparsers) -> None:
    parser, verbs = add_verb_parser(subparsers, "log", HELP, DESCRIPTION)
    add = verbs.add_parser("add", help="add one entry")
    add.add_argument("op", metavar="OP")
    add.add_argument("subject", metavar="SUBJECT")
    add.add_argument("names", nargs="*", metavar="MODEL LANE", help="a lane (default: the global log, or the lane of the current directory)")
    add.add_argument("--field", action="append", default=[], metavar="KEY=VALUE",
                     help="a body line **KEY**: VALUE (e.g. 'Pages created=...', 'Key result=...', 'Notes=...')")
    add.add_argument("--json", action="store_true", help="print one JSON object")
    add.add_argument("--dry-run", action="store_true", help="print the entry; write nothing")
    add.add_argument("--root", type=Path, help=ROOT_HELP)
    parser.set_defaults(handler=run, parser=parser)


def run(args) -> int:
    from wikiengine.core.errors import WikiError
    from wikiengine.model import targets
    from wikiengine.model.lanes import Lane
    from wikiengine.step import lane_read
    from wikiengine.step import writers as lane_writers

    root = verb_root(args)
    if root is None:
        return 2
    if args.names:
        lane = lane_read.lane_for(root, args.names)
    else:
        inferred = targets.infer_target(root)
        lane = Lane(inferred.model_dir, inferred.lane) if inferred is not None and inferred.lane else None
    fields = {}
    for pair in args.field:
        key, eq, value = pair.partition("=")
        if not eq or not key.strip():
            raise WikiError(f"--field {pair!r} is not KEY=VALUE")
        fields[key.strip()] = value.strip()
    result = lane_writers.add_log_entry(root, args.op, args.subject, lane, fields, dry_run=args.dry_run)
    print(json.dumps(result, indent=2, sort_keys=True) if args.json else f"{result['log']}: {result['entry'].splitlines()[0]}")
    return 0
