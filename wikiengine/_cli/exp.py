"""`wiki exp new|file|retry`: the experiment page lifecycle, written by code, not by hand."""

from __future__ import annotations

from pathlib import Path

from wikiengine._cli._verbs import add_verb_parser, add_writer_options, print_result, verb_root

HELP = "allocate, stub, file, retry and renumber experiments of a lane"
DESCRIPTION = """\
The lifecycle of an experiment page, so that ids, stubs, verdicts, the model page, the
lane log and RESULTS.tsv cannot drift:

  wiki exp new [MODEL LANE] --slug S --variant KEY --proposal FILE [--track N]
                [--knob KEY=VALUE ... | --knobs FILE] [--rerun-reason TEXT]
                [--reformulated-because TEXT]
      allocate the next v-id (never reused: pages, the lane journal and every branch),
      write the stub (status: in_progress), claim it in the journal, commit.
  wiki exp file VID [MODEL LANE] --verdict V [--reason TEXT] [--profile FILE] [--hlo FILE]
                [--metrics FILE | --metric NAME=VALUE ...] [--external]
      fill Results, Profile, HLO Dump and Verdict, flip the status to filed, move
      Current best when it is beaten, log, RESULTS.tsv: one commit. The evidence is what
      the engine recorded of the run (the journal's completion record: exit code, the
      metrics the run wrote, parity) and the lane's measured A/A noise band: a crash or
      a kill is invalid whatever is asked. A stub never dispatched, or still in flight,
      is refused (exit 2). Figures the agent passes only annotate the page; --external
      files a run the engine did not launch, at most inconclusive.
  wiki exp retry VID [MODEL LANE] [--reformulated-because TEXT]
      a new stub VID+letter with the same mechanism.
  wiki exp renumber VID [MODEL LANE]
      VID names two pages (two clones allocated it offline, then merged): keep the one a
      run was dispatched for, else the one committed first, and give each other page the
      next free id: its file name, frontmatter, journal records, links to it, a log
      entry; one commit. The lane wake dispatches neither page until this ran.

A track runs one experiment at a time. Without --track, `exp new` takes the lowest idle
track of the session, else the stub waits in the lane queue for the first track that
frees up; `exp new --track N` and `exp retry` on a busy track queue the stub behind the
run in flight (which is still processed). The wake dispatches queued stubs first in,
first out; `wiki loop status` shows the queues.

Thrash is a gate: after thrash_k (## Config, default 3) invalid/inconclusive results in
a row on one mechanism, or on the letters of one v-id (v045, v045b, v045c), `exp new` on
that mechanism and `exp retry` of that v-id or mechanism are refused (exit 3) unless
--reformulated-because says what changed (recorded on the stub and in the journal).

MODEL LANE default to the lane of the current directory. The proposal holds the four
labelled paragraphs (**Hypothesis**, **Mechanism**, **Predicted signal**,
**Falsification criterion**) and an optional `## Setup` (the planned setup). Every write
takes the lane lock, re-lints what it wrote and commits; a killed writer is finished by
the next one. Exit 2 on bad input, with nothing written.

Knobs are data: the first ```yaml block of the proposal's `## Setup` is the run's config
(a mapping of knob: value), parsed at `exp new` (bad YAML, or a block that is not a
mapping: exit 2 with the proposal's file:line). Or give them on the command line:
--knob KEY=VALUE (repeatable; VALUE read as YAML: 64, true, bfloat16) and --knobs FILE
(a YAML or JSON mapping; --knob overrides it); they become the stub's Setup yaml block.
A yaml block anywhere else in the proposal (another section, or a second block in the
Setup) is exit 2 naming its line: the run would never get it and would measure the
frontier while the page claims the change. When the lane's program declares
`knobs:` in its `## Config` (name -> type, choices, minimum, maximum), an undeclared
knob, a wrong type or a value out of range is exit 2 naming the knob. The same knob set
(in any order, whatever the prose says) is refused while a stub with it is open on any
track, and after it was filed `refuted` on the same variant unless --rerun-reason says
why (recorded on the stub and in the claim).
"""


REFORMULATED_HELP = ("what changed since the mechanism's (or v-id's) run of invalid/inconclusive results; needed "
                     "once it thrashes (kept on the stub)")


def add_parser(subparsers) -> None:
    parser, verbs = add_verb_parser(subparsers, "exp", HELP, DESCRIPTION)
    new = verbs.add_parser("new", help="allocate the next v-id and commit its stub")
    new.add_argument("names", nargs="*", metavar="MODEL LANE", help="the lane (default: from the current directory)")
    new.add_argument("--slug", required=True, help="the page slug: lower-case words joined by '-'")
    new.add_argument("--variant", required=True, help="a row key of the model page's variant matrix, e.g. 2B/v5p-16")
    new.add_argument("--proposal", required=True, type=Path, help="markdown with the four labelled paragraphs")
    new.add_argument("--track", type=int, help="the track (cluster slot) this experiment runs on; queued while "
                     "that track is busy (default: the lowest idle track, else the lane queue)")
    new.add_argument("--knob", action="append", default=[], metavar="KEY=VALUE",
                     help="a knob of the run's config (repeatable; VALUE as YAML: 64, true, bfloat16)")
    new.add_argument("--knobs", type=Path, metavar="FILE", help="the run's knobs: a YAML or JSON mapping")
    new.add_argument("--rerun-reason", metavar="TEXT",
                     help="why knobs already filed refuted on this variant should run again (kept on the stub)")
    new.add_argument("--reformulated-because", metavar="TEXT", help=REFORMULATED_HELP)
    add_writer_options(new)

    filed = verbs.add_parser("file", help="file a verdict: results, profile, HLO dump, model page, log")
    filed.add_argument("vid", metavar="VID", help="the experiment id, e.g. v012 or v012b")
    filed.add_argument("names", nargs="*", metavar="MODEL LANE", help="the lane (default: from the current directory)")
    filed.add_argument("--verdict", required=True, help="supported | refuted | inconclusive | invalid")
    filed.add_argument("--metrics", type=Path, help="the agent's figures, a JSON object of name -> number: an "
                                                    "annotation, never evidence")
    filed.add_argument("--metric", action="append", default=[], metavar="NAME=VALUE",
                       help="one figure of the agent's (repeatable): an annotation, never evidence")
    filed.add_argument("--profile", type=Path, help="the analyzer's Profile section (default: the run's profile.md)")
    filed.add_argument("--hlo", type=Path, help="the analyzer's HLO Dump section, with the firing-audit line "
                                                "(default: the run's hlo.md)")
    filed.add_argument("--external", action="store_true",
                       help="a run the engine did not launch: the agent's figures, filed at most inconclusive")
    filed.add_argument("--reason", help="why this verdict, in one line")
    filed.add_argument("--exit-code", type=int, help="the exit code the agent saw (non-zero only lowers: invalid)")
    add_writer_options(filed)

    retry = verbs.add_parser("retry", help="a new stub VID+letter with the same mechanism")
    retry.add_argument("vid", metavar="VID")
    retry.add_argument("names", nargs="*", metavar="MODEL LANE", help="the lane (default: from the current directory)")
    retry.add_argument("--reformulated-because", metavar="TEXT", help=REFORMULATED_HELP)
    add_writer_options(retry)

    renumber = verbs.add_parser("renumber", help="give the later of two pages that share VID the next free id")
    renumber.add_argument("vid", metavar="VID")
    renumber.add_argument("names", nargs="*", metavar="MODEL LANE", help="the lane (default: from the current directory)")
    add_writer_options(renumber)
    parser.set_defaults(handler=run, parser=parser)


def placed_line(result: dict) -> str:
    """Where the stub waits: its track (and the v-ids ahead of it there), or the lane queue."""
    where = f"track {result['track']}" if result.get("track") is not None else "the first idle track"
    after = result.get("queued_after") or []
    return f"queued for {where} after {', '.join(after)}\n" if after else f"runs on {where} at the next wake\n"


def run(args) -> int:
    from wikiengine.step import lane_read
    from wikiengine.step import writers as lane_writers

    root = verb_root(args)
    if root is None:
        return 2
    lane = lane_read.lane_for(root, args.names)
    if args.verb == "new":
        from wikiengine.model.knobs import knobs_from_options

        result = lane_writers.new_experiment(root, lane, slug=args.slug, variant=args.variant,
                                             proposal_path=args.proposal, track=args.track,
                                             rerun_reason=args.rerun_reason,
                                             knobs=knobs_from_options(args.knob, args.knobs),
                                             reformulated_because=args.reformulated_because, dry_run=args.dry_run)
        text = f"{result['vid']}: stub {result['page']}\nworkload: {result['workload_name']}\n" + "".join(
            f"{k}: {v}\n" for k, v in result["artifacts"].items()) + placed_line(result)
    elif args.verb == "file":
        import dataclasses

        metrics, outcome = lane_writers.read_metrics(args.metrics, args.metric)
        if args.exit_code is not None:
            outcome = dataclasses.replace(outcome, exit_code=args.exit_code)
        result = lane_writers.file_experiment(root, lane, args.vid, verdict=args.verdict, metrics=metrics,
                                              outcome=outcome, profile_path=args.profile, hlo_path=args.hlo,
                                              reason=args.reason, external=args.external, dry_run=args.dry_run)
        kind = f" ({result['invalid']})" if result.get("invalid") else ""
        text = f"{result['vid']}: filed {result['verdict']}{kind} ({result['page']})\n" + "".join(
            f"  {c}\n" for c in result["capped"]) + ("Current best moved\n" if result["current_best_moved"] else "")
    elif args.verb == "renumber":
        from wikiengine.step.renumber import renumber_experiment

        result = renumber_experiment(root, lane, args.vid, dry_run=args.dry_run)
        text = f"{result['vid']}: kept {result['kept']}\n" + "".join(
            f"  {d['was']} -> {d['vid']}: {d['page']}\n" for d in result["renumbered"])
    else:
        result = lane_writers.retry_experiment(root, lane, args.vid, reformulated_because=args.reformulated_because,
                                               dry_run=args.dry_run)
        text = (f"{result['vid']}: stub {result['page']} (retry of {result['retry_of']})\n"
                f"workload: {result['workload_name']}\n" + placed_line(result))
    print_result(args, result, text, dry_run=args.dry_run)
    return 0
