"""`wiki resolve`: print the effective program of a target and where each section came from."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from wikiengine.model.targets import ROOT_HELP

HELP = "print the effective program of a target (program.md cascade) and its audit"
DESCRIPTION = """\
Resolve the program.md cascade of a target and print the effective program, then the
audit (which level each section came from), then USER_PREFIX, MODEL_NAME and LANE.

Targets:
  wiki resolve                 infer from the current directory
  wiki resolve MODEL [LANE]    wiki/experiments/<MODEL>_autoresearch_optimization[/<LANE>]
  wiki resolve --kernel FAM    wiki/kernel_experiments/<FAM>/pallas
  wiki resolve --run RUN       wiki/runs/<RUN>
  wiki resolve PATH            any directory (or program.md) inside an area
  wiki resolve --list          every model and the lanes that have a program.md

Section titles are compared trimmed, with inner whitespace collapsed, case-insensitively.
"""


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "resolve", help=HELP, description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("names", nargs="*", metavar="MODEL [LANE] | PATH", help="the target (default: from the current directory)")
    parser.add_argument("--kernel", metavar="FAMILY", help="a kernel family's pallas program")
    parser.add_argument("--run", dest="run_name", metavar="RUN", help="a training run's program")
    parser.add_argument("--list", action="store_true", help="list models, lanes with a program.md, kernel families and runs")
    parser.add_argument("--audit", action="store_true", help="print only the audit")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--root", type=Path, help=ROOT_HELP)
    parser.add_argument("--additive-marker", metavar="REGEX", help="titles of sections that concatenate instead of replacing")
    parser.set_defaults(handler=run)


def _pick_target(args, root):
    from wikiengine.core.errors import WikiError
    from wikiengine.model import targets

    # `--kernel ''` is a bad name, not a missing one: test for None, not for truth.
    chosen = [bool(args.names), args.kernel is not None, args.run_name is not None]
    if sum(chosen) > 1:
        raise WikiError("name one target: MODEL [LANE], PATH, --kernel or --run")
    if args.kernel is not None:
        return targets.target_for_kernel(root, args.kernel)
    if args.run_name is not None:
        return targets.target_for_run(root, args.run_name)
    if args.names:
        first = args.names[0]
        looks_like_path = "/" in first or first.endswith(".md") or first in (".", "..")
        if looks_like_path:
            if len(args.names) > 1:
                raise WikiError("a PATH target takes no further names")
            return targets.target_for_path(root, Path(first))
        if len(args.names) > 2:
            raise WikiError("expected MODEL [LANE]")
        return targets.target_for_model(root, first, args.names[1] if len(args.names) > 1 else None)
    target = targets.infer_target(root)
    if target is None:
        raise WikiError(
            "cannot infer the target from the current directory; name one: "
            "wiki resolve MODEL [LANE] | --kernel FAMILY | --run RUN | PATH (see wiki resolve --list)"
        )
    return target


def _listing(root) -> dict:
    from wikiengine.model import targets

    models = {
        m.removesuffix(targets.MODEL_DIR_SUFFIX): targets.list_lanes(root, m) for m in targets.list_models(root)
    }
    kernels = targets.list_children(root / targets.area_named("kernels").path)
    runs = targets.list_children(root / targets.area_named("runs").path)
    return {"models": models, "kernel_families": kernels, "runs": runs,
            "ignored_folders": targets.ignored_model_folders(root)}


def identity_of(program) -> dict:
    """USER_PREFIX, MODEL_NAME and LANE of an experiments target (None elsewhere)."""
    from wikiengine.core import identity
    from wikiengine.core.page import read_text

    target = program.target
    if target.area.name != "experiments" or target.model_dir is None:
        return {"user_prefix": None, "user_prefix_source": None, "model_name": None, "lane": target.lane}
    model_program = target.levels[1].program
    text = read_text(model_program) if model_program.is_file() else None
    prefix = identity.resolve_user_prefix(text, cwd=target.root, program_path=target.relative(model_program))
    return {
        "user_prefix": prefix.value,
        "user_prefix_source": prefix.source,
        "model_name": identity.model_name(target.model_dir),
        "lane": target.lane,
    }


def run(args) -> int:
    from wikiengine.model import cascade, targets

    root = targets.repository_root(args.root)
    if args.list:
        listing = _listing(root)
        if args.json:
            print(json.dumps(listing, indent=2))
            return 0
        print("models (lanes with a program.md):")
        for model, lanes in listing["models"].items():
            print(f"  {model}: {', '.join(lanes) if lanes else '(no lane programs)'}")
        print("kernel families: " + (", ".join(listing["kernel_families"]) or "(none)"))
        print("runs: " + (", ".join(listing["runs"]) or "(none)"))
        if listing["ignored_folders"]:
            print(f"ignored under wiki/experiments (not named <model>{targets.MODEL_DIR_SUFFIX}): "
                  + ", ".join(listing["ignored_folders"]))
        return 0
    target = _pick_target(args, root)
    marker = args.additive_marker or cascade.DEFAULT_ADDITIVE_MARKER
    program = cascade.resolve(target, additive_marker=marker)
    ident = identity_of(program)
    if args.json:
        print(json.dumps(_as_json(program, ident), indent=2, ensure_ascii=False))
        return 0
    if not args.audit:
        text = program.text()
        print(text, end="" if text.endswith("\n") else "\n")
        print()
    print(f"Effective program for {target.describe()}:")
    print("\n".join(program.audit_lines()))
    print("Files read: " + ", ".join(target.relative(p) for _, p in program.files))
    if ident["model_name"] is not None:
        print()
        print(f"USER_PREFIX = {ident['user_prefix']}  (from {ident['user_prefix_source']})")
        print(f"MODEL_NAME  = {ident['model_name']}  (auto-derived from folder)")
        print(f"LANE        = {ident['lane'] or '(none: model level)'}")
    return 0


def _as_json(program, ident) -> dict:
    target = program.target
    return {
        "target": target.relative(target.directory),
        "area": target.area.name,
        "files": [target.relative(p) for _, p in program.files],
        "sections": [
            {
                "title": s.title,
                "level": s.level,
                "path": target.relative(s.origin.path),
                "line": s.origin.line,
                "overrides": list(s.overrides),
                "additive": s.additive,
                "contributors": [
                    {"level": c.level, "path": target.relative(c.path), "line": c.line} for c in s.contributors
                ],
            }
            for s in program.sections
        ],
        "preamble_from": (
            {"level": program.layer.preamble_origin.level, "path": target.relative(program.layer.preamble_origin.path)}
            if program.layer.preamble_origin
            else None
        ),
        "text": program.text(),
        "config": program.config,
        **ident,
    }
