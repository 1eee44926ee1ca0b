"""Benchmark the watcher: `wiki watch --once` twice on an unchanged wiki (issue 11's bar:
the second run finds nothing new and costs under 0.5 s), on the 10,000-page corpus of
``bench_writers.py`` with a lane session started on the converted gemma4/tpu lane.

    python benchmarks/bench_watch.py [--pages 10000] [--rounds 7] [--work DIR] [--json]

Each round, interleaved: ``python -c pass``, ``wiki --version`` and ``wiki watch --once`` on
the unchanged wiki (its cursor already moved by a first, full audit). Figures are medians:
wall, CPU, peak RSS, and the watch run as a multiple of both baselines.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, HERE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main(argv: list[str] | None = None) -> int:
    writers = _load("bench_writers")
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=10000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "wiki-watch-bench")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    wiki = writers.bench_lint.wiki_command()
    corpus = args.work / f"corpus-{args.pages}"
    writers.make_corpus(corpus, args.pages, wiki)
    env = {**os.environ, "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.com",
           "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.com", "USER": "bench"}
    program = corpus / writers.LANE_DIR / "program.md"
    if "launch_cmd" not in program.read_text(encoding="utf-8"):
        text = program.read_text(encoding="utf-8")
        program.write_text(text.replace("```yaml\n", '```yaml\nlaunch_cmd: "python -m bench --config {config}"\n', 1)
                           if "```yaml\n" in text else text + '\n## Config\n\n```yaml\nlaunch_cmd: "python -m bench"\n```\n',
                           encoding="utf-8")
        subprocess.run(["git", "commit", "-qam", "bench: launch_cmd"], cwd=corpus, env=env, check=True)
    if subprocess.run([*wiki, "loop", "status"], cwd=corpus, capture_output=True).returncode != 0:
        subprocess.run([*wiki, "loop", "start", writers.MODEL, writers.LANE, "--yes"], cwd=corpus, env=env, check=True,
                       capture_output=True)
    first = subprocess.run([*wiki, "watch", "--once", "--json"], cwd=corpus, env=env, capture_output=True, text=True)
    first_doc = json.loads(first.stdout)
    cases = {
        "python -c pass": [sys.executable, "-c", "pass"],
        "wiki --version": [*wiki, "--version"],
        "wiki watch --once (unchanged)": [*wiki, "watch", "--once", "--json"],
    }
    results: dict[str, list[dict]] = {name: [] for name in cases}
    new_findings = []
    for number in range(args.rounds):
        for name, argv_ in cases.items():
            measured = writers.run_measured(argv_, corpus, env)
            results[name].append(measured)
        doc = json.loads(subprocess.run(cases["wiki watch --once (unchanged)"], cwd=corpus, env=env,
                                        capture_output=True, text=True).stdout)
        new_findings.append(len(doc["findings"]))
        print(f"round {number + 1}/{args.rounds}: " + ", ".join(f"{n} {results[n][-1]['wall']:.3f}s" for n in cases),
              file=sys.stderr)
    base = {n: statistics.median(r["wall"] for r in results[n]) for n in cases}
    summary = {name: {"wall": base[name], "cpu": statistics.median(r["cpu"] for r in runs),
                      "rss_mib": statistics.median(r["rss_mib"] for r in runs)} for name, runs in results.items()}
    report = {"pages": args.pages, "first_audit": {"full": first_doc["full"], "findings": len(first_doc["findings"])},
              "findings_on_unchanged_runs": new_findings, "cases": summary}
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(f"wiki watch on {args.pages} generated pages; first (full) audit: {len(first_doc['findings'])} finding(s); "
          f"unchanged reruns found {sorted(set(new_findings))}")
    writers.print_cases(summary, min_wall=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
