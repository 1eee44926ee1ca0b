"""`wiki init`: scaffold a wiki (or add what is missing to one) in the layout real wikis use."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from wikiengine.demos.scaffold import AGENTS

HELP = "scaffold a wiki: programs, model page, logs, RESULTS.tsv, index, wiki.toml, pre-commit (adds only what is missing)"
DESCRIPTION = """\
Scaffold DIR (default: the current directory) in the layout of real autoresearch wikis:
the root program of wiki/experiments, a model program per --model, a lane program, lane
log and RESULTS.tsv per --lane (every lane under every model), a model page
wiki/models/<model>-<lane>.md with the variant matrix, wiki/index.md, wiki/log.md, a
wiki.toml with the lint defaults spelled out, a .pre-commit-config.yaml running the
published wiki-lint hook, .gitignore entries for artifacts and caches, and .env/README.md: the format of the cluster
files (one per GKE TPU cluster) with a filled example.

  wiki init                                   an empty wiki
  wiki init DIR --model gemma4 --lane tpu --lane jax
  wiki init --model qwen3 --lane jax --variant 8B/v6e-8 --variant 3B/v6e-8
  wiki init --kernel flash_attention          a kernel family (kernel_experiments/<K>/pallas)
  wiki init --memory RUN                      a relay run: memory/ files, wiki/runs/<RUN>/program.md, store/
  wiki init --cluster alice-v5p-16 --tpu v5p-2x2x2 --location europe-west4-b --project P
                                              a .env/ cluster file that wiki loop start and wiki clusters read
  wiki init --agent claude                    the agent kit for Claude Code: the wiki-wake skill, a hook that
                                              lints edited pages, a Stop hook that keeps a running lane waking
                                              (.claude/skills, .claude/hooks, .claude/settings.json)
  wiki init --agent codex                     the same wake loop and rules for Codex (AGENTS.md)

Idempotent: in an existing wiki it adds only what is missing and never overwrites a file
(.gitignore only gains the lines it lacks); it prints what it created and skipped. Run it
again to add another model or lane. The result lints clean.
"""


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("init", help=HELP, description=DESCRIPTION,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("directory", nargs="?", type=Path, metavar="DIR",
                        help="the wiki repository, exactly (default: the wiki the current directory lies in, else .)")
    parser.add_argument("--model", action="append", default=[], metavar="M",
                        help="a model folder wiki/experiments/<M>_autoresearch_optimization (repeatable)")
    parser.add_argument("--lane", action="append", default=[], metavar="L",
                        help="a lane under every --model: program, log.md, RESULTS.tsv, model page (repeatable)")
    parser.add_argument("--variant", action="append", default=[], metavar="SIZE/HARDWARE",
                        help="a Variant matrix row of every new model page, e.g. 8B/v6e-8 (repeatable)")
    parser.add_argument("--kernel", action="append", default=[], metavar="K",
                        help="a kernel family wiki/kernel_experiments/<K>/pallas (repeatable)")
    parser.add_argument("--memory", metavar="RUN", help="scaffold memory/ and wiki/runs/<RUN>/program.md for a relay run")
    cluster = parser.add_argument_group("a .env/ cluster file (all four together)")
    cluster.add_argument("--cluster", metavar="NAME", help="the GKE cluster's name, e.g. alice-v5p-16")
    cluster.add_argument("--tpu", metavar="GEN-TOPOLOGY", help="its slice: v5p-2x2x2, v6e-2x4")
    cluster.add_argument("--location", metavar="ZONE|REGION", help="as gcloud's --location: europe-west4-b")
    cluster.add_argument("--project", metavar="PROJECT", help="the Google Cloud project")
    parser.add_argument("--agent", choices=AGENTS, help="write the agent kit of contrib/agents/ for this coding agent")
    parser.add_argument("--json", action="store_true", help='print {"root", "created", "updated", "skipped", "notes"}')
    parser.set_defaults(handler=run)


def _request(args):
    import re

    from wikiengine.core.errors import WikiError
    from wikiengine.core.identity import MODEL_DIR_SUFFIX
    from wikiengine.demos.scaffold import Request
    from wikiengine.model.targets import check_new_name

    if args.lane and not args.model:
        raise WikiError("--lane needs a --model to go under")
    models = tuple(dict.fromkeys(check_new_name(m, "model").removesuffix(MODEL_DIR_SUFFIX) for m in args.model))
    if any(not m for m in models):
        raise WikiError(f"invalid model name: give the model, e.g. gemma4 (not {MODEL_DIR_SUFFIX} alone)")
    lanes = tuple(dict.fromkeys(check_new_name(lane, "lane") for lane in args.lane))
    for lane in lanes:
        if not re.fullmatch(r"[a-z0-9][a-z0-9_-]*", lane):
            raise WikiError(f"invalid lane name {lane!r}: lower-case letters, digits, '_' and '-' (tpu, jax, torchax)")
    variants = []
    for variant in dict.fromkeys(args.variant):
        size, _, hardware = variant.partition("/")
        if not (size.strip() and hardware.strip()) or "/" in hardware or "|" in variant or "\n" in variant:
            raise WikiError(f"invalid variant {variant!r}: give SIZE/HARDWARE, e.g. 8B/v6e-8 (the row key experiments cite)")
        variants.append((size.strip(), hardware.strip()))
    if variants and not lanes:
        raise WikiError("--variant needs a --lane: variants are rows of a lane's model page")
    kernels = tuple(dict.fromkeys(check_new_name(k, "kernel family") for k in args.kernel))
    run_name = check_new_name(args.memory, "run") if args.memory is not None else None
    return Request(models=models, lanes=lanes, variants=tuple(variants), kernels=kernels, run=run_name,
                   cluster=_cluster(args), agent=args.agent)


def _cluster(args):
    """The ``.env/`` cluster file the four flags describe, checked by reading it back as a cluster file."""
    import tempfile

    from wikiengine.core.errors import WikiError
    from wikiengine.core.identity import resolve_user_prefix
    from wikiengine.demos.scaffold import Cluster
    from wikiengine.executors.gke.clusters import parse_cluster_file, parse_tpu

    given = {flag: getattr(args, flag) for flag in ("cluster", "tpu", "location", "project")}
    if not any(given.values()):
        return None
    missing = [f"--{flag}" for flag, value in given.items() if not value]
    if missing:
        raise WikiError(f"a cluster file needs --cluster, --tpu, --location and --project (missing {', '.join(missing)})")
    for flag, value in given.items():  # a line break would end the field and start another (row 97)
        odd = next((c for c in value if not c.isprintable() or c.isspace()), None)
        if odd is not None:
            raise WikiError(f"--{flag} {value!r}: holds U+{ord(odd):04X} (a space, line break or control character); "
                            "give one word, as gcloud prints it")
    tpu = parse_tpu(args.tpu, Path("--tpu"), None)
    owner = resolve_user_prefix(None, cwd=args.directory).value
    cluster = Cluster(args.cluster, tpu.generation, tpu.topology, args.location, args.project, owner)
    with tempfile.TemporaryDirectory() as scratch:
        probe = Path(scratch) / Path(cluster.rel).name
        probe.write_text(cluster.text(), encoding="utf-8")
        try:
            parse_cluster_file(probe)
        except WikiError as error:  # the flags' values, not the scratch file, are what is wrong
            raise WikiError(f"--cluster: {error.message}") from None
    return cluster


def _has_tool_wiki(root: Path) -> bool:
    import tomllib

    pyproject = root / "pyproject.toml"
    try:
        return pyproject.is_file() and "wiki" in tomllib.loads(pyproject.read_text(encoding="utf-8")).get("tool", {})
    except (tomllib.TOMLDecodeError, UnicodeDecodeError):
        return False


def _enclosing_wiki() -> Path:
    """Without DIR: the wiki the current directory lies in (run from wiki/experiments/ it adds to that
    wiki rather than nesting a new one), else the current directory."""
    from wikiengine.core.errors import WikiError
    from wikiengine.model.targets import find_root

    try:
        return find_root()
    except WikiError:
        return Path.cwd().resolve()


def run(args) -> int:
    from wikiengine.core.clock import utcnow
    from wikiengine.core.errors import WikiError
    from wikiengine.demos import scaffold

    request = _request(args)
    root = args.directory.resolve() if args.directory else _enclosing_wiki()
    if root.exists() and not root.is_dir():
        raise WikiError("not a directory", root)
    root.mkdir(parents=True, exist_ok=True)
    existing = {p.relative_to(root).as_posix() for d in ("wiki/models", "wiki/kernels") for p in (root / d).glob("*.md")}
    configured = _has_tool_wiki(root) and not (root / "wiki.toml").exists()
    now = utcnow()
    files = scaffold.plan(request, now.date(), existing, configured=configured)
    scaffold.check_inside(root, [f.rel for f in files] + (scaffold.relay_rels(request.run) if request.run else []))
    outcome = scaffold.apply(root, files)
    if request.run is not None:
        memory = scaffold.scaffold_relay(root, request.run, now)
        outcome.created += memory.created
        outcome.skipped += memory.skipped
    notes = []
    if configured:
        notes.append("pyproject.toml holds [tool.wiki]: no wiki.toml written (it would override that configuration)")
    if ".claude/settings.json" in outcome.skipped:
        notes.append(".claude/settings.json exists and was left as it is: merge the hooks of "
                     "contrib/agents/claude/hooks/hooks.json into it by hand")
    if "wiki/index.md" in outcome.skipped and any(rel.startswith(("wiki/models/", "wiki/kernels/")) for rel in outcome.created):
        notes.append("wiki/index.md exists and was left as it is: list the new model pages under its ## Models (N)")
    if args.json:
        print(json.dumps({"root": str(root), **outcome.as_json(), "notes": notes}, indent=2))
        return 0
    for verb, rels in (("created", outcome.created), ("updated", outcome.updated), ("skipped (exists)", outcome.skipped)):
        for rel in rels:
            print(f"{verb:<17} {rel}")
    for note in notes:
        print(f"note: {note}")
    print(f"\n{root}: {len(outcome.created)} created, {len(outcome.updated)} updated, {len(outcome.skipped)} skipped. "
          "Next: git init (if it is not a repository), pre-commit install, wiki lint.")
    for model, lane in ((m, lane) for m in request.models for lane in request.lanes):
        print(f"Then set launch_cmd in the {model}/{lane} lane program's ## Config and run "
              f"`wiki lane check {model} {lane}`: it runs the command once and says what it does not write.")
    return 0
