"""`wiki loop start|status`: begin an autoresearch lane session; show it."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from wikiengine._cli._verbs import add_verb_parser, verb_root
from wikiengine.core.errors import ExitCode
from wikiengine.model.targets import ROOT_HELP

HELP = "start, show or stop a lane session"
DESCRIPTION = """\
  wiki loop start MODEL LANE [--parallelism N|all] [--backend local|gke|slurm]
                  [--tpu GEN --topology T] [--partition P [--account A] [--gres gpu:N]]
                  [--first TEXT] [--yes] [--json]
      select the pool (local: N slots; gke: free clusters of .env/ by occupancy;
      slurm: N tracks on partition P, or the lane Config's slurm_partition),
      record the session constants (USER_PREFIX, MODEL_NAME, LANE, the tracks) in
      the lane journal, delete a leftover .stop-authorized, write the start marker at
      the top of the lane log, point memory/STATE.md at the session, commit.
      Zero free clusters: exit 7 with each candidate's attribution, nothing written;
      a start declined at the prompt: exit 3.
  wiki loop status [--json]
      the picture a wake sees (tracks, decisions, what is owed, the per-track and
      lane queues of stubs waiting for a track, what the budgets of the program have
      burnt: `budgets`), read only.
  wiki loop stop [--pause] [--yes] [--json]
      the gated stop: refused (exit 3, with the reasons) unless the closing audit
      passes now and .stop-authorized records this session's clean closing audit by
      the watcher (`wiki watch --closing`), not older than the closing retrospective.
      Then reap the lane's workloads (listed, unless --yes), file pages for finished
      dispatches, resolve open stubs, lint, and write the stop marker quoting the
      ALL-CLEAR as its **Final audit**. --pause writes a pause marker instead and
      needs no authorization.

Then run `wiki step` at each wake: it drives the session memory/STATE.md names.

The run command and what it gets: `wiki loop start --help`, docs/run-contract.md.
"""


RUN_CONTRACT = """\
Start a session on a lane: the pool, the session constants, the start marker (see
`wiki loop --help`).

The run command (launch_cmd; docs/run-contract.md has the whole contract) is split like a
shell would, filled in word by word and run WITHOUT a shell (no $VAR, no pipes), in the
repository root, with credentials removed from its environment:
  {python}     the engine's interpreter; a bare `python` is the caller's PATH's
               (from cron or an MCP client often not the one with torch)
  {config}     a JSON file of the experiment's knobs (its Setup's yaml block)
  {frontier}   a JSON file of the frontier's knobs (Current best, else baseline_config)
  {artifacts}  the folder it writes into (= $ARTIFACT_DIR)
  {smoke}      1 in a smoke run (`wiki lane check`), else 0
  env: METRICS_PATH (metrics.json: the target metric, parity, frontier_<metric>,
  op digests; schema/run-metrics.schema.json), ARTIFACT_DIR (profile.md, hlo.md with
  the \"Hypothesis-firing audit: ...\" line), XPROF_PATH, HLO_PATH, PROGRESS_PATH (touch
  it on progress), WORKLOAD_NAME, TRACK, WIKI_VID, WIKI_CONFIG, WIKI_FRONTIER,
  WIKI_SMOKE. A Python script writes all of it with `from wikiengine import run`.
Run `wiki lane check MODEL LANE` first: it runs the command once and says what is missing.
"""


def add_parser(subparsers) -> None:
    parser, verbs = add_verb_parser(subparsers, "loop", HELP, DESCRIPTION)
    start = verbs.add_parser("start", help="start a session on a lane", description=RUN_CONTRACT,
                             formatter_class=argparse.RawDescriptionHelpFormatter)
    start.add_argument("names", nargs="*", metavar="MODEL LANE", help="the lane (default: from the current directory)")
    start.add_argument("--parallelism", "-n", default="1", metavar="N|all", help="tracks (default 1)")
    start.add_argument("--backend", default="local",
                       help="local (processes here), gke (JobSets on free clusters) or slurm (batch jobs; docs/slurm.md)")
    start.add_argument("--partition", metavar="P", help="the Slurm partition (slurm; default: slurm_partition of ## Config)")
    start.add_argument("--account", metavar="A", help="the Slurm account jobs are charged to (slurm)")
    start.add_argument("--gres", metavar="gpu:N", help="generic resources each job asks for (slurm)")
    start.add_argument("--tpu", metavar="GEN", help="TPU generation (gke)")
    start.add_argument("--topology", metavar="T", help="slice topology (gke)")
    start.add_argument("--first", metavar="TEXT", help="the first-pick hypothesis, for the start marker")
    start.add_argument("--launch-cmd", metavar="CMD", help="the run command when the resolved ## Config has no "
                       "launch_cmd ({python}, {config}, {frontier}, {artifacts}, {smoke} are filled in: see above); "
                       "kept for the session")
    start.add_argument("--yes", action="store_true", help="start without asking (agents, scripts)")
    status = verbs.add_parser("status", help="the session as a wake sees it; writes nothing")
    stop = verbs.add_parser("stop", help="the gated stop (or --pause)")
    stop.add_argument("--pause", action="store_true", help="pause: leave the lane open; no authorization needed")
    stop.add_argument("--yes", action="store_true", help="reap the lane's workloads still on the backend")
    stop.add_argument("--dry-run", action="store_true", help="check the gate; write and kill nothing")
    for sub in (start, status, stop):
        sub.add_argument("--json", action="store_true", help="print one JSON object")
        sub.add_argument("--root", type=Path, help=ROOT_HELP)
    start.add_argument("--dry-run", action="store_true", help="say what would be written; write nothing")
    parser.set_defaults(handler=run, parser=parser)


def run(args) -> int:
    from wikiengine.core.errors import WikiError
    from wikiengine.step import lane_read

    root = verb_root(args)
    if root is None:
        return 2
    if args.verb == "status":
        from wikiengine.model.state import state_mode
        from wikiengine.step.lane.wake import wake

        if state_mode(root) != "lane":
            raise WikiError("memory/STATE.md does not point at a lane session: wiki loop start MODEL LANE")
        result = wake(root, dry_run=True)
        print(json.dumps(result.as_json(), indent=2) if args.json else result.text())
        return 0
    if args.verb == "stop":
        from wikiengine.step.lane import close as lane_close

        result = (lane_close.pause(root, dry_run=args.dry_run) if args.pause
                  else lane_close.stop(root, yes=args.yes, dry_run=args.dry_run))
        print(json.dumps(result, indent=2) if args.json else
              ("paused" if args.pause else f"stopped: {result.get('final_audit')}"))
        return 0
    from wikiengine.step.lane.start import start_session

    lane = lane_read.lane_for(root, args.names)
    if not args.yes and not args.dry_run:
        if not sys.stdin.isatty():
            raise WikiError("wiki loop start asks before it starts a session: pass --yes (or run it in a terminal)")
        answer = input(f"Start a session on {lane.model_prefix}/{lane.name} with --parallelism {args.parallelism} "
                       f"on {args.backend}? [y/N] ")
        if answer.strip().lower() not in ("y", "yes"):
            print("not started")
            return ExitCode.REFUSED
    result = start_session(root, lane, parallelism=args.parallelism, backend=args.backend, tpu=args.tpu,
                           topology=args.topology, first=args.first, launch_cmd=args.launch_cmd,
                           partition=args.partition, account=args.account, gres=args.gres, dry_run=args.dry_run)
    if args.json:
        print(json.dumps(result, indent=2, sort_keys=True))
    else:
        print(f"session {result['session']} on {result['lane']}: {len(result['pool'])} track(s): "
              + ", ".join(s["name"] for s in result["pool"]))
        for variant, how in result["empty_baselines"].items():
            print(f"Baseline of {variant}: empty; {how}")
        print("run `wiki step` at each wake")
    return 0
