"""The processes that import torch, with the cycle collector paused across the import and
torch's objects frozen after it (wikiengine/core/collector.py), against the same programs as
they were at an earlier revision.

    python benchmarks/bench_torch_start.py [--rounds 7] [--baseline REV] [--json]

Each round runs, interleaved: ``python -c "import torch"`` with the collector on and with it
paused and frozen; the kernel verifier (``wikiengine/step/kernel/verify.py``, the kernel demo's
``fused`` candidate, ``--mode quick``) as it is and as it was at ``REV``; the autoresearch target
(``training/autoresearch_target.py``, the demo's baseline config against itself, 2 rounds of
0.5 s) as it is and as it was at ``REV``. The copies of ``REV`` run as files beside the others and
import the rest of the engine as it is now, so only their own file differs. Medians of CPU (user +
system, from ``wait4``) and wall. ``REV`` defaults to ``79a6ccb^``, the commit before the change.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
PAUSED = "from wikiengine.core.collector import collector_paused\nwith collector_paused(keep=True):\n    import torch\n"
FILES = {"verifier": "wikiengine/step/kernel/verify.py", "autoresearch target": "training/autoresearch_target.py"}


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, HERE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


run_measured = _load("bench_lint").run_measured


def _cases(work: Path, baseline: str) -> dict[str, list[str]]:
    """name -> argv, each run in ``work``."""
    from wikiengine.demos.kernel import OP_POINT, REFERENCE, candidate_source
    from wikiengine.training.autoresearch_knobs import TargetConfig

    (work / "reference.py").write_text(REFERENCE, encoding="utf-8")
    (work / "fused.py").write_text(candidate_source("fused"), encoding="utf-8")
    (work / "config.json").write_text(json.dumps(TargetConfig().as_dict()), encoding="utf-8")
    args = {"verifier": ["--reference", "reference.py", "--candidate", "fused.py", "--op-point", OP_POINT,
                         "--mode", "quick"],
            "autoresearch target": ["--config", "config.json", "--frontier", "config.json", "--out", "out",
                                    "--rounds", "2", "--seconds", "0.5"]}
    cases = {"import torch, collector on": [sys.executable, "-c", "import torch"],
             "import torch, paused and frozen": [sys.executable, "-c", PAUSED]}
    for label, rel in FILES.items():
        old = subprocess.run(["git", "show", f"{baseline}:{rel}"], cwd=REPO, capture_output=True, text=True, check=True)
        copy = work / f"at-{Path(rel).name}"
        copy.write_text(old.stdout, encoding="utf-8")
        cases[f"{label} at {baseline}"] = [sys.executable, str(copy), *args[label]]
        cases[f"{label} now"] = [sys.executable, str(REPO / rel), *args[label]]
    return cases


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--baseline", default="79a6ccb^", help="the revision to compare with (default 79a6ccb^)")
    parser.add_argument("--json", action="store_true", help="print the medians as JSON")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-torch-start-") as tmp:
        work = Path(tmp)
        cases = _cases(work, args.baseline)
        results: dict[str, list[dict]] = {name: [] for name in cases}
        for number in range(args.rounds):
            for name, argv in cases.items():
                results[name].append(run_measured(argv, work))
            print(f"round {number + 1}/{args.rounds}", file=sys.stderr)
    medians = {name: {key: statistics.median(r[key] for r in runs) for key in ("cpu", "wall")}
               for name, runs in results.items()}
    if args.json:
        print(json.dumps(medians, indent=2))
        return 0
    print(f"torch's processes, medians of {args.rounds} interleaved rounds")
    print("| case | CPU s | wall s |\n|---|---:|---:|")
    for name, figures in medians.items():
        print(f"| {name} | {figures['cpu']:.3f} | {figures['wall']:.3f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
