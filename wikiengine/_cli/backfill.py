"""`wiki backfill`: a page for every finished workload of a lane that has none."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from wikiengine.model.targets import ROOT_HELP

HELP = "file pages for finished workloads of a lane that have none (never supported or refuted)"
DESCRIPTION = """\
  wiki backfill [MODEL LANE] [--backend local|gke|slurm] [--context CTX --namespace NS]

Lists the lane's finished workloads on its backend (local processes by default; GKE
JobSets with --backend gke; Slurm jobs with --backend slurm) and files a page for each v-id that has none, by the seed's
policy: backfilled: true, "Hypothesis not recovered", verdict invalid when the run
crashed (with a one-line summary of its log) and inconclusive otherwise, plus a lane
log entry. A backend that cannot be listed is an error (exit 2): unknown is not "none".
"""


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("backfill", help=HELP, description=DESCRIPTION,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("names", nargs="*", metavar="MODEL LANE", help="the lane (default: from the current directory)")
    parser.add_argument("--backend", choices=("local", "gke", "slurm"), default="local", help="where the lane's workloads run")
    parser.add_argument("--context", help="kubeconfig context of the cluster (gke)")
    parser.add_argument("--namespace", default="default", help="namespace of the JobSets (gke)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--dry-run", action="store_true", help="say what would be filed; write nothing")
    parser.add_argument("--root", type=Path, help=ROOT_HELP)
    parser.set_defaults(handler=run)


def backend_for(args, root, lane):
    from wikiengine.executors.gke.lane import GkeLaneBackend
    from wikiengine.executors.lane_local import LocalLaneBackend

    if args.backend == "local":
        return LocalLaneBackend(root, lane.model_dir, lane.name)
    if args.backend == "slurm":
        from wikiengine.executors.lane_slurm import SlurmLaneBackend

        return SlurmLaneBackend(root, lane.model_dir, lane.name)
    from wikiengine.executors.gke.kube import Kube

    return GkeLaneBackend(Kube.from_context(args.context, cluster=args.context or "default"), args.namespace)


def run(args) -> int:
    from wikiengine.core.errors import WikiError
    from wikiengine.executors.compute_errors import ComputeError
    from wikiengine.model.targets import repository_root
    from wikiengine.step import lane_read
    from wikiengine.step import writers as lane_writers

    root = repository_root(args.root)
    lane = lane_read.lane_for(root, args.names)
    try:
        result = lane_writers.backfill(root, lane, backend_for(args, root, lane), dry_run=args.dry_run)
    except ComputeError as exc:
        raise WikiError(f"cannot list the lane's workloads: {exc}") from None
    if args.json:
        print(json.dumps(result, indent=2, sort_keys=True))
    else:
        print(f"Backfilled {len(result['backfilled'])} missing page(s) of {result['finished_workloads']} finished workload(s)"
              + (" (all marked invalid or inconclusive)" if result["backfilled"] else ""))
        for item in result["backfilled"]:
            print(f"  {item['vid']}: {item['verdict']}  {item['page']}")
    return 0
