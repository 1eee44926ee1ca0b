"""Benchmark `wiki report` on a generated 10,000-page wiki, in one run, as whole processes.

    python benchmarks/bench_report.py [--pages 10000] [--rounds 5] [--work DIR] [--json FILE]

The corpus is ``bench_lint.py``'s (``gen_wiki.py``: N experiment pages over 4 models x 5
lanes, committed to a git repository once). Cases, run round-robin so that machine noise
spreads over all of them:

- ``floor``: read every experiment page and load its frontmatter with the engine's own
  reader (what any report built from the pages pays before it draws anything);
- ``lane``: ``wiki report MODEL LANE --no-cache`` for one lane (about N/20 pages), its page and JSON;
- ``all-serial``: ``wiki report --all -j 1 --no-cache``: every lane (20 pages, 40 figures), one process;
- ``all``: ``wiki report --all --no-cache`` with the default workers (the CPU count);
- ``all-warm``: ``wiki report --all -j 1`` again on the unchanged wiki: every figure comes
  from ``DIR/.figures/`` (what a report regenerated on a schedule pays for unchanged lanes).

Each figure is the median wall time (and CPU, user + system, children included); the table
gives each case as a multiple of the floor measured in the same rounds.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
FLOOR_SCRIPT = """
import glob
from wikiengine.core.page import read_frontmatter
n = 0
for path in glob.glob("wiki/experiments/*/*/experiments/*.md"):
    with open(path, encoding="utf-8") as handle:
        n += len(read_frontmatter(handle.read(), path))
print(n)
"""


def _bench_lint():
    spec = importlib.util.spec_from_file_location("bench_lint", HERE / "bench_lint.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=10000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "wiki-report-bench")
    parser.add_argument("--json", type=Path, metavar="FILE", help="also write the figures as JSON")
    args = parser.parse_args(argv)
    lint = _bench_lint()
    corpus = args.work / f"corpus-{args.pages}"
    lint.make_corpus(corpus, args.pages)
    out = args.work / "report"
    wiki = [sys.executable, "-m", "wikiengine"]
    cases = {
        "floor": [sys.executable, "-c", FLOOR_SCRIPT],
        "lane": [*wiki, "report", "gemma4", "tpu", "--no-cache", "-o", str(out)],
        "all-serial": [*wiki, "report", "--all", "-j", "1", "--no-cache", "-o", str(out)],
        "all": [*wiki, "report", "--all", "--no-cache", "-o", str(out)],
        "all-warm": [*wiki, "report", "--all", "-j", "1", "-o", str(args.work / "warm")],
    }
    env = {**os.environ, "PYTHONPATH": str(HERE.parent)}
    lint.run_measured(cases["all-warm"], corpus, env)  # draw the figures the warm case keeps
    results: dict[str, list[dict]] = {name: [] for name in cases}
    for number in range(args.rounds):
        for name, command in cases.items():
            results[name].append(lint.run_measured(command, corpus, env))
        print(f"round {number + 1}/{args.rounds}: " + ", ".join(f"{n} {results[n][-1]['wall']:.2f}s" for n in cases),
              file=sys.stderr)
    floor = statistics.median(r["wall"] for r in results["floor"])
    summary = {name: {"wall": statistics.median(r["wall"] for r in runs), "cpu": statistics.median(r["cpu"] for r in runs),
                      "rss_mib": statistics.median(r["rss_mib"] for r in runs), "rounds": len(runs)}
               for name, runs in results.items()}
    for figures in summary.values():
        figures["x_floor"] = figures["wall"] / floor
    report = {"pages": args.pages, "cpus": os.cpu_count(), "load_1m": os.getloadavg()[0], "cases": summary}
    print(f"{args.pages} pages, {os.cpu_count()} CPUs, load {report['load_1m']:.1f}; medians of {args.rounds} rounds")
    print(f"{'case':<12} {'wall s':>8} {'cpu s':>8} {'RSS MiB':>8} {'x floor':>8}")
    for name, figures in summary.items():
        print(f"{name:<12} {figures['wall']:>8.2f} {figures['cpu']:>8.2f} {figures['rss_mib']:>8.0f} {figures['x_floor']:>8.2f}")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
