"""Benchmark the no-op wakes: `wiki step` on a lane session with nothing to do, and on a
relay run with nothing to do, as whole processes, interleaved with `python -c pass` and
`wiki --version` in the same run.

    python benchmarks/bench_wake.py [--rounds 7] [--work DIR] [--json]

The lane: `wiki init lab --model mlp --lane cpu` (a program whose launch command is
`python -c pass`), committed, a session started (`wiki loop start mlp cpu --yes`) and
woken once; every later wake finds the one track idle and owes a hypothesis: it reads
STATE.md, the lane's program, journal, pages and model page, lists the backend, decides
and commits nothing. The relay: `wiki demo relay` run to the end once (about a minute of
real CPU training, kept under ``WORK``); every later wake observes the store and memory,
decides "complete" and commits nothing. Each round runs the four cases in turn; figures
are medians: wall, CPU (user + system of the process and the git it waits for, from
``wait4``), peak RSS, and each wake as a multiple of both baselines. Issue 28's targets:
0.12 s for the lane's no-op wake, 0.15 s for the relay's. The package is byte-compiled
first, as a wheel install leaves it.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
TARGETS = {"wiki step (lane, no-op)": 0.12, "wiki step (relay, no-op)": 0.15}
PROGRAM = """\
# mlp / cpu lane

## Config

```yaml
launch_cmd: "{python} -c pass {{config}}"
target_metric: loss
higher_is_better: false
baseline_config: {{lr: 0.01}}
```
"""
ENV = {"USER": "bench", "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.com",
       "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.com"}


def _load(name: str):
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, HERE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _run(argv: list[str], cwd: Path, env: dict) -> str:
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({done.returncode}): {done.stdout[-1000:]}{done.stderr[-1000:]}")
    return done.stdout


def make_lane(work: Path, wiki: list[str], env: dict) -> Path:
    """A lane session woken once (made once; later runs reuse it)."""
    root = work / "lane" / "lab"
    if (root / "memory" / "STATE.md").is_file():
        return root
    import shutil

    shutil.rmtree(work / "lane", ignore_errors=True)
    (work / "lane").mkdir(parents=True)
    _run([*wiki, "init", "lab", "--model", "mlp", "--lane", "cpu", "--variant", "1M/cpu"], work / "lane", env)
    _run(["git", "init", "-q"], root, env)
    (root / "wiki/experiments/mlp_autoresearch_optimization/cpu/program.md").write_text(
        PROGRAM.format(python=sys.executable), encoding="utf-8")
    _run(["git", "add", "-A"], root, env)
    _run(["git", "commit", "-qm", "lane"], root, env)
    _run([*wiki, "loop", "start", "mlp", "cpu", "--yes"], root, env)
    _run([*wiki, "step"], root, env)  # the first wake: what follows are no-op wakes
    return root


def make_relay(work: Path, wiki: list[str], env: dict) -> Path:
    """`wiki demo relay` run to the end (made once; later runs reuse it)."""
    root = work / "relay"
    if (root / ".bench-complete").is_file():
        return root
    import shutil

    shutil.rmtree(root, ignore_errors=True)
    print(f"running `wiki demo relay` into {root} (about a minute) ...", file=sys.stderr)
    _run([*wiki, "demo", "relay", str(root), "--no-progress"], work, env)
    (root / ".bench-complete").write_text("")
    return root


def head(root: Path) -> str:
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, check=True).stdout


def parse_bench_args(argv: list[str] | None, doc: str, work_name: str) -> argparse.Namespace:
    """The options of a whole-process benchmark on the lane: --rounds, --work, --json."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7, help="interleaved rounds; figures are medians (default 7)")
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / work_name)
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_bench_args(argv, __doc__, "wiki-wake-bench")
    writers = _load("bench_writers")
    run_measured = writers.bench_lint.run_measured
    wiki = writers.bench_lint.wiki_command()
    env = {**os.environ, **ENV}
    args.work.mkdir(parents=True, exist_ok=True)
    lane, relay = make_lane(args.work, wiki, env), make_relay(args.work, wiki, env)
    writers.compile_package()
    before = {lane: head(lane), relay: head(relay)}
    cases = {
        "python -c pass": ([sys.executable, "-c", "pass"], lane),
        "wiki --version": ([*wiki, "--version"], lane),
        "wiki step (lane, no-op)": ([*wiki, "step"], lane),
        "wiki step (relay, no-op)": ([*wiki, "step"], relay),
    }
    run_measured([*wiki, "--version"], lane, env)  # warm the interpreter's files
    results: dict[str, list[dict]] = {name: [] for name in cases}
    for number in range(args.rounds):
        for name, (command, cwd) in cases.items():
            results[name].append(run_measured(command, cwd, env))
        print(f"round {number + 1}/{args.rounds}: " + ", ".join(f"{n} {results[n][-1]['wall']:.3f}s" for n in cases),
              file=sys.stderr)
    for name, runs in results.items():
        if any(r["status"] != 0 for r in runs):
            raise SystemExit(f"{name} exited non-zero")
    for root, sha in before.items():
        if head(root) != sha:
            raise SystemExit(f"a wake in {root} committed: not a no-op wake")
    summary = {name: {key: statistics.median(r[key] for r in runs) for key in ("wall", "cpu", "rss_mib")}
               | {"min_wall": min(r["wall"] for r in runs), "runs": len(runs)} for name, runs in results.items()}
    python_s, version_s = summary["python -c pass"]["wall"], summary["wiki --version"]["wall"]
    for row in summary.values():
        row["x_python"], row["x_version"] = row["wall"] / python_s, row["wall"] / version_s
    load = os.getloadavg()
    if args.json:
        print(json.dumps({"rounds": args.rounds, "targets_s": TARGETS, "cores": os.cpu_count(), "load_average": load,
                          "summary": summary, "runs": results}, indent=2))
        return 0
    print(f"\nno-op wakes, {os.cpu_count()} cores, medians of {args.rounds} interleaved rounds")
    writers.print_cases(summary, min_wall=True)
    print("targets (issue 28): " + "; ".join(
        f"{name}: {'under' if summary[name]['wall'] <= target else 'OVER'} {target} s" for name, target in TARGETS.items()))
    print(f"load average during the run: {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
