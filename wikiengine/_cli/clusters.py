"""`wiki clusters`: discover the lane's candidate GKE clusters, check occupancy, select up to N free ones."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from wikiengine.core.errors import ExitCode
from wikiengine.model.targets import ROOT_HELP

HELP = "discover GKE clusters in .env/, check their occupancy and select free ones"
DESCRIPTION = """\
Read the cluster files in .env/, list the JobSets on every candidate with
the chosen TPU generation and topology, attribute each active workload (mine in this
lane, mine in another lane, mine for another model, foreign), and select up to N free
clusters in file order (Step 6). A cluster that cannot be asked is "unknown", never free.

  wiki clusters MODEL LANE                       one shape in .env/, one track
  wiki clusters MODEL LANE --tpu v5p --topology 2x2x2 --parallelism 3
  wiki clusters --list                           the cluster files and their shapes

Exit status: 0 at least one cluster selected; 7 none free (stop: never pick a busy
cluster); 2 bad input (an unreadable cluster file, no matching cluster, bad options).
"""


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "clusters", help=HELP, description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("model", nargs="?", help="the model (gemma4 or gemma4_autoresearch_optimization)")
    parser.add_argument("lane", nargs="?", help="the lane (e.g. tpu, jax)")
    parser.add_argument("--tpu", metavar="GEN", help="TPU generation (v5p, v6e, ...); needed when .env/ has several")
    parser.add_argument(
        "--topology", metavar="AxBxC", help="slice topology (2x2x2, 2x4, ...); needed when .env/ has several"
    )
    parser.add_argument(
        "--parallelism", "-n", default="1", metavar="N|all", help="how many free clusters to select (default 1)"
    )
    parser.add_argument("--env-dir", type=Path, help="the cluster files' directory (default: <root>/.env)")
    parser.add_argument(
        "--user-prefix", help="USER_PREFIX (default: the seed's chain from the model program, $USER, git)"
    )
    parser.add_argument("--kubeconfig", type=Path, help="kubeconfig file (default: $KUBECONFIG or ~/.kube/config)")
    parser.add_argument(
        "--timeout", type=float, default=20.0, metavar="S", help="deadline of each API call in seconds (default 20)"
    )
    parser.add_argument("--root", type=Path, help=ROOT_HELP)
    parser.add_argument("--list", action="store_true", help="only list the cluster files and their TPU shapes")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.set_defaults(handler=run)


def _root(args) -> Path | None:
    from wikiengine.core.errors import WikiError
    from wikiengine.model import targets

    try:
        return targets.repository_root(args.root)
    except WikiError:
        if args.root:
            raise
        return None


def _list(env_dir: Path, as_json: bool) -> int:
    from wikiengine.executors.gke.clusters import discover_clusters, shapes

    clusters = discover_clusters(env_dir)
    if as_json:
        print(
            json.dumps(
                {"clusters": [_cluster_dict(c) for c in clusters], "shapes": [s.label() for s in shapes(clusters)]},
                indent=2,
            )
        )
        return 0
    for shape in shapes(clusters):
        print(f"{shape.generation}, {shape.topology} ({shape.chips} chips per slice):")
        for c in (c for c in clusters if c.tpu == shape):
            assumed = " (gcloud's default name: no context comment)" if c.context_derived else ""
            where = f"({c.location}, {c.project})"
            print(f"  - {c.name:<24} {where} {c.tpu.xpk_type}  context {c.context}{assumed}  [{c.path.name}]")
    return 0


def _cluster_dict(c) -> dict:
    return {
        "cluster": c.name,
        "file": str(c.path),
        "tpu": c.tpu.generation,
        "topology": c.tpu.topology,
        "chips": c.tpu.chips,
        "tpu_type": c.tpu.xpk_type,
        "region": c.region,
        "zone": c.zone,
        "project": c.project,
        "context": c.context,
        "context_derived": c.context_derived,
    }


def run(args) -> int:
    from wikiengine.core.errors import WikiError
    from wikiengine.executors.compute import ComputeUnavailableError
    from wikiengine.executors.gke.kube import require_client
    from wikiengine.executors.gke.occupancy import check_all, format_pool, parse_parallelism, select_clusters

    if args.timeout <= 0:
        raise WikiError("--timeout must be positive")
    root = _root(args)
    env_dir = args.env_dir or (root or Path.cwd()) / ".env"
    if args.list:
        return _list(env_dir, args.json)
    parallelism = parse_parallelism(args.parallelism)
    try:
        require_client()
    except ComputeUnavailableError as exc:
        raise WikiError(str(exc)) from None
    from wikiengine.step.clusters import candidate_clusters, lane_owner

    me, prefix_source = lane_owner(root, args.model, args.lane, args.user_prefix)
    candidates = candidate_clusters(env_dir, args.tpu, args.topology)
    shape = candidates[0].tpu
    occupancies = check_all(candidates, me, kubeconfig=args.kubeconfig, deadline_s=args.timeout)
    selection = select_clusters(occupancies, parallelism)
    if args.json:
        doc = {
            "user_prefix": me.user_prefix,
            "user_prefix_source": prefix_source,
            "model_name": me.model,
            "lane": me.lane,
            "tpu": shape.generation,
            "topology": shape.topology,
            "chips": shape.chips,
            "tpu_type": shape.xpk_type,
            **selection.to_dict(),
        }
        print(json.dumps(doc, indent=2, ensure_ascii=False))
    else:
        print(f"USER_PREFIX = {me.user_prefix}  (from {prefix_source})")
        print(f"MODEL_NAME  = {me.model}")
        print(f"LANE        = {me.lane}")
        print()
        print(f"{shape.generation}, {shape.topology} ({shape.chips} chips per slice) candidates from {env_dir}:")
        for c in candidates:
            print(f"  - {c.name:<24} ({c.location}, {c.project})")
        print()
        print(format_pool(selection, f"{shape.generation} ({shape.topology})"))
    return ExitCode.BUSY if selection.stop else ExitCode.OK
