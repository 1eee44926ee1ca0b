"""`wiki report [MODEL LANE | --all] [-o DIR] [--json] [--open]`: a lane's history as static HTML and JSON."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from wikiengine.core.errors import ExitCode, WikiError, exit_code_of
from wikiengine.model.targets import ROOT_HELP

HELP = "write a static report of a lane (or of every lane): the frontier, the deltas, keep-rate, crashes, signals"
DESCRIPTION = """\
Build a report from the wiki and the lane journals alone and write it as static HTML,
readable offline (no script, no server, nothing fetched; the plots are inline SVG), with
the same data as JSON beside each page:

  - the frontier over time per variant row (Current best as a step line, each move a link
    to its page) with the lane's A/A noise band around it;
  - every filed experiment as a point (time x delta against its frontier), coloured by
    verdict, with the band, and the share of deltas inside it;
  - keep-rate, experiments per hour and per track, time from stub to verdict, the verdict
    mix, crashes and their causes; budgets ("no budgets set" when none); the watcher's
    thrash and stall signals; open stubs and their queue state;
  - for a kernel family: the speedup of every verified candidate and what each receipt
    is worth (signed and verified, unsigned, unbound, invalid, missing).

  wiki report mlp cpu                 one lane: DIR/mlp-cpu.html, DIR/mlp-cpu.json, DIR/index.html
  wiki report --all -o /tmp/report    every lane with a program and every kernel family
  wiki report --kernel layernorm      one kernel family: DIR/kernel-layernorm.html
  wiki report mlp cpu --json          write it and print the data as one JSON object
  wiki report mlp cpu --open          write, then open it in the browser

DIR defaults to <root>/.wiki/report. Needs matplotlib (pip install 'wikiengine[report]').
Exit status: 0 written; 2 bad input (no such lane or family, an unreadable journal or program).
"""


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("report", help=HELP, description=DESCRIPTION,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("names", nargs="*", metavar="MODEL LANE", help="the lane (default: the one the current directory is in)")
    parser.add_argument("--all", action="store_true",
                        help="every lane of the wiki that has its own program.md, and every kernel family")
    parser.add_argument("--kernel", metavar="FAMILY", help="a kernel family's report: speedup per candidate, receipts")
    parser.add_argument("-o", "--out", type=Path, metavar="DIR", help="where to write (default: <root>/.wiki/report)")
    parser.add_argument("--json", action="store_true", help="print one JSON object: the lanes' data and the files written")
    parser.add_argument("-j", "--jobs", type=int, metavar="N",
                        help="lanes built at once, in worker processes (default: the CPU count)")
    parser.add_argument("--no-cache", action="store_true",
                        help="draw every figure again (by default DIR/.figures/ keeps each lane's figures until its data changes)")
    parser.add_argument("--open", action="store_true", help="open the report in the web browser once written")
    parser.add_argument("--root", type=Path, help=ROOT_HELP)
    parser.set_defaults(handler=run)


def run(args) -> int:
    try:
        return _run(args)
    except WikiError as err:
        if not args.json:
            raise
        print(json.dumps({"error": str(err), "exit": int(exit_code_of(err))}, indent=2))
        print(f"error: {err}", file=sys.stderr)
        return exit_code_of(err)


def _family(root: Path, name: str):
    from wikiengine.model.kernels import KernelFamily

    family = KernelFamily(name)
    if not (root / family.dir).is_dir():
        raise WikiError(f"no kernel family folder {family.dir}")
    return family


def _run(args) -> int:
    from wikiengine.model.targets import repository_root
    from wikiengine.report.data import all_lanes
    from wikiengine.report.kernels import all_families
    from wikiengine.step.lane_read import lane_for

    root = repository_root(args.root)
    if args.jobs is not None and args.jobs < 1:
        raise WikiError(f"--jobs {args.jobs}: at least 1")
    if sum(map(bool, (args.all, args.names, args.kernel))) > 1:
        raise WikiError("name one lane (MODEL LANE), one --kernel FAMILY, or --all, not both")
    families = all_families(root) if args.all else [_family(root, args.kernel)] if args.kernel else []
    lanes = all_lanes(root) if args.all else [] if args.kernel else [lane_for(root, args.names)]
    if not lanes and not families:
        raise WikiError("no lane with a program.md under wiki/experiments/ and no kernel family: nothing to report")
    try:
        import matplotlib  # noqa: F401  (the report extra)
    except ImportError:
        raise WikiError("wiki report draws with matplotlib: pip install 'wikiengine[report]'") from None
    from wikiengine.report.html import write_report

    out = args.out if args.out is not None else root / ".wiki" / "report"
    lanes_data, families_data, written = write_report(root, out, lanes, families, jobs=args.jobs or os.cpu_count() or 1,
                                                      cache=not args.no_cache)
    single = [f"{d['lane'].replace('/', '-')}.html" for d in lanes_data] + [f"kernel-{d['family']}.html" for d in families_data]
    page = out / (single[0] if len(single) == 1 else "index.html")
    if args.json:
        print(json.dumps({"out": str(out), "page": str(page), "written": [str(p) for p in written],
                          "lanes": lanes_data, "kernel_families": families_data}, indent=2, sort_keys=True))
    else:
        for data in lanes_data:
            s = data["summary"]
            print(f"{data['lane']}: {s['filed']} filed, {s['open']} open, keep-rate "
                  + (f"{s['keep_rate'] * 100:.0f}%" if s["keep_rate"] is not None else "—")
                  + f", {s['crashes']} crash(es), {len(data['signals'])} signal(s)")
        for data in families_data:
            best = data["best"]
            print(f"kernel {data['family']}: {len(data['candidates'])} receipt(s), best verified speedup "
                  + (f"{best['speedup']:.3g}x ({best['vid']} {best['cand']})" if best else "—"))
        print(f"wrote {page}")
    if args.open:
        import webbrowser

        webbrowser.open(page.resolve().as_uri())
    return ExitCode.OK
