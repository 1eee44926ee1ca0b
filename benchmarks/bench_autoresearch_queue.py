"""Where each entry of the scripted autoresearch queue lands on this machine.

Runs ``python -m wikiengine.training.autoresearch_target`` (a fresh process each time, as the lane
runs it) for the frontier against itself (an A/A run) and for every queue entry, each
``--runs`` times, against the baseline and against the baseline with the queue's first
win applied (the frontier most entries meet once that win is filed). Prints one markdown
row per run: speedup (median of the per-round paired ratios), delta of ``tps`` over
``frontier_tps`` against the A/A noise band, parity, whether the op digest equals the
frontier's, and where that puts the run::

    python benchmarks/bench_autoresearch_queue.py [--runs 3] [--rounds 10] [--seconds 3]
                                                  [--entries batch256,adamw-foreach]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from wikiengine.training.autoresearch_queue import QUEUE, Proposal, baseline_config  # noqa: E402


def landing(metrics: dict) -> str:
    """The run's reading, before any lane policy: crash, parity, digest, then delta against the band."""
    if metrics["exit_code"]:
        return "crash"
    if metrics["parity"] != "pass":
        return "numerics-break"
    if metrics["op_digest"] == metrics["frontier_op_digest"]:
        return "silent-no-op"
    delta = metrics["tps"] - metrics["frontier_tps"]
    if abs(delta) <= metrics["noise_band"]:
        return "within-noise"
    return "win" if delta > 0 else "loss"


def run_once(candidate: dict, frontier: dict, work: Path, rounds: int, seconds: float) -> dict:
    work.mkdir(parents=True)
    (work / "cand.json").write_text(json.dumps(candidate))
    (work / "front.json").write_text(json.dumps(frontier))
    subprocess.run([sys.executable, "-m", "wikiengine.training.autoresearch_target", "--config", str(work / "cand.json"),
                    "--frontier", str(work / "front.json"), "--out", str(work / "out"), "--rounds", str(rounds),
                    "--seconds", str(seconds)], capture_output=True, check=False)
    return json.loads((work / "out" / "metrics.json").read_text())


def row(label: str, frontier_name: str, run: int, metrics: dict) -> str:
    if metrics["exit_code"]:
        return f"| {label} | {frontier_name} | {run} | | | | | | exit {metrics['exit_code']} | crash |"
    delta_pct = 100 * (metrics["tps"] / metrics["frontier_tps"] - 1)
    return (f"| {label} | {frontier_name} | {run} | {metrics['frontier_tps']:.0f} | {metrics['tps']:.0f} | "
            f"{metrics['speedup']:.3f} | {delta_pct:+.1f}% | ±{metrics['noise_band_pct']:.1f}% | "
            f"{metrics['parity']}, {'same' if metrics['op_digest'] == metrics['frontier_op_digest'] else 'new'} "
            f"digest | {landing(metrics)} |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--entries", default="", help="comma-separated slugs (default: all, plus the A/A run)")
    args = parser.parse_args(argv)
    chosen = set(filter(None, args.entries.split(",")))
    first_win = next(p for p in QUEUE if p.outcome == "win")
    frontiers = {"baseline": baseline_config(), f"+{first_win.slug}": first_win.config(baseline_config())}
    entries: list[Proposal | None] = [None, *QUEUE]  # None: the frontier against itself
    print("| entry | frontier | run | frontier samples/s | tps | speedup | delta | noise band | checks | lands |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |")
    with tempfile.TemporaryDirectory() as scratch:
        for index, proposal in enumerate(entries):
            label = proposal.slug if proposal else "A/A (frontier)"
            if chosen and (proposal is None or proposal.slug not in chosen):
                continue
            for frontier_name, frontier in frontiers.items():
                if proposal is first_win and frontier_name != "baseline":
                    continue  # the win applied to itself is the A/A run
                candidate = proposal.config(frontier) if proposal else frontier
                for run in range(1, args.runs + 1):
                    metrics = run_once(candidate, frontier, Path(scratch) / f"{index}-{frontier_name}-{run}",
                                       args.rounds, args.seconds)
                    print(row(label, frontier_name, run, metrics), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
