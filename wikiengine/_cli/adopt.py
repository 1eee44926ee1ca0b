"""`wiki adopt`: read a wiki that grew by hand as it is, configure its own conventions, baseline today's findings."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from wikiengine.model.targets import ROOT_HELP

HELP = "take a hand-grown wiki as it is: what the engine reads there, its conventions configured, a lint baseline"
DESCRIPTION = """\
Adopt an existing wiki without a clean-up first:

  1. report, per lane and kernel family, what the engine can and cannot read: the program
     cascade, log.md (entries, ops, out of order), the RESULTS.tsv header, the model page's
     variant matrix (each row's Baseline and Current best figure of the lane's target
     metric; unreadable cells named by file:line), experiment ids (without an id, hyphen
     reruns such as v057-e, duplicates), the journal; and wiki-wide the submodules, the
     untracked local checkouts and the artifact folders;
  2. write the configuration keys that make the wiki's own conventions win, only for what
     it finds (checkout-paths, artifact-paths, [rules.LOG003] split-date), each with why:
     a new wiki.toml when the wiki has no configuration; an existing wiki.toml or
     [tool.wiki] is never edited, the keys to add are printed instead;
  3. write .wiki-lint-baseline.json with today's findings (what wiki lint --write-baseline
     writes), so that wiki lint and the writers' re-lint judge only what is new.

Idempotent: a second run changes nothing and says so. --dry-run writes nothing.
Exit status: 0; 2 when DIR is not a wiki or its configuration cannot be read.
"""


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("adopt", help=HELP, description=DESCRIPTION,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", type=Path, help=ROOT_HELP)
    parser.add_argument("--dry-run", action="store_true", help="report and say what would be written; write nothing")
    parser.add_argument("--json", action="store_true",
                        help='print {"root", "lanes", "wiki", "keys", "config", "baseline", "changed"}')
    parser.set_defaults(handler=run)


def run(args) -> int:
    from wikiengine.lint.adopt import adopt
    from wikiengine.lint.config import load_config
    from wikiengine.lint.registry import REGISTRY
    from wikiengine.model.targets import repository_root

    root = repository_root(args.root)
    config = load_config(root)
    config.check_codes(sorted(REGISTRY))
    adoption = adopt(root, config, dry_run=args.dry_run)
    if args.json:
        print(json.dumps(adoption.as_json(), indent=2))
    else:
        print("\n".join(report(adoption)))
    return 0


def report(adoption) -> list[str]:
    """The human report: one block per lane, the wiki-wide facts, then what was written."""
    lines = [f"wiki adopt: {adoption.root} ({len(adoption.lanes)} lanes and kernel families)"]
    for lane in adoption.lanes:
        lines += ["", f"{lane.kind} {lane.dir}", *(f"  {line}" for line in lane_lines(lane))]
    lines += ["", "wiki", *(f"  {line}" for line in wide_lines(adoption.wide))]
    return lines + ["", *written_lines(adoption)]


def lane_lines(lane) -> list[str]:
    program, log, results, page, ids = lane.program, lane.log, lane.results, lane.model_page, lane.ids
    own = "own program.md" if program["own"] else "no program.md (inherited)"
    lines = [f"program   {own}, " + ("resolves" if program["resolves"] else f"does not resolve: {program['error']}")
             + f" (target metric {program['target_metric']})"]
    if not log["present"] or log["error"]:
        lines.append("log       " + (f"log.md does not parse: {log['error']}" if log["error"] else "no log.md"))
    else:
        ops = ", ".join(f"{op} {n}" for op, n in log["ops"].items()) or "no ops"
        lines.append(f"log       log.md: {log['entries']} entries ({ops}); {log['out_of_order']} out of order, "
                     f"{log['malformed']} malformed headings")
    lines.append("results   " + ("no RESULTS.tsv" if not results["present"] else
                                 f"RESULTS.tsv unreadable: {results['error']}" if results["error"] else
                                 f"RESULTS.tsv: {' '.join(results['columns'])}"))
    lines += matrix_lines(page)
    lines.append(f"ids       {ids['pages']} pages: {ids['with_id']} with an id, {len(ids['without_id'])} without")
    lines += [f"          without an id: {rel}" for rel in ids["without_id"]]
    lines += [f"          hyphen rerun: {rel}" for rel in ids["hyphen_reruns"]]
    lines += [f"          duplicate {exp_id}: {', '.join(rels)}" for exp_id, rels in ids["duplicates"].items()]
    lines.append("journal   " + ("present" if lane.journal else "none"))
    return lines


def matrix_lines(page: dict) -> list[str]:
    if page["rel"] is None:
        return ["model     no model page"]
    if not page["matrix"]:
        return [f"model     {page['rel']}: no variant matrix read"]
    read = sum(row["Current best"] is not None for row in page["rows"])
    lines = [f"model     {page['rel']}: | {' | '.join(page['header'])} |",
             f"          {len(page['rows'])} rows; Current best {page['metric']} read in {read}"]
    return lines + [f"          unreadable: {where}" for where in page["unreadable"]]


def wide_lines(wide) -> list[str]:
    lines = [f"submodules       {', '.join(wide.submodules) or 'none'}",
             f"local checkouts  {', '.join(wide.local_checkouts) or 'none'} "
             f"(checkout-paths: {', '.join(wide.checkout_paths)})"]
    for folder in wide.artifacts:
        state = ("present" if folder["present"] else "absent") + (", ignored" if folder["ignored"] else ", not ignored")
        lines.append(f"artifacts        {folder['path']}: {state}" + ("" if folder["configured"] else " (not configured)"))
    lines.append(f"global log       {wide.early_lane_ops} entries with lane ops before the first lane-log entry "
                 f"({wide.first_lane_entry or 'none'}); split-date {wide.split_date or 'not configured'}")
    return lines


def written_lines(adoption) -> list[str]:
    config, base = adoption.config, adoption.baseline
    lines = [f"configuration: {key.name} = {json.dumps(key.value)}  ({key.why})" for key in adoption.keys]
    verb = {"written": "wrote", "would-write": "would write", "add-by-hand": "add by hand to", "none": ""}[config["action"]]
    if verb:
        lines.append(f"{verb} {config['file']}:")
        lines += [f"  {line}" for line in config["text"].splitlines()]
    if config["note"]:
        lines.append(f"note: {config['note']}")
    if not adoption.keys:
        lines.append("configuration: nothing to add (the configuration already says what adopt detects)")
    verb = {"written": "wrote", "would-write": "would write", "unchanged": "unchanged"}[base["action"]]
    lines.append(f"baseline: {verb} {base['file']}: {base['entries']} entries ({base['findings']} findings)")
    lines += [f"notice: {notice}" for notice in base["notices"]]
    if not adoption.changed:
        lines.append("Nothing changed." if base["action"] == "unchanged" and config["action"] != "would-write"
                     else "Dry run: nothing written.")
    return lines
