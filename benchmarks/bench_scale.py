"""A lane at scale on a real Slurm: many tracks, many queued stubs, simulated dispatch.

Starts a one-node cluster (tests/slurm_cluster.py; the node declares ``--cpus`` CPUs so
that every track can hold a job at once) unless ``SLURM_CONF`` names one, then drives
the Slurm lane backend the way the lane wake does, without the wiki around it: at each
"wake" it lists the lane's workloads once, counts every finished run as a completion
(exactly once), and launches the next stub on every free track. Every ``--lost``-th
launch is asked again right away, as after a lost answer. Each stub is a job that sleeps
``--sleep`` seconds. Prints, as markdown:

- dispatch latency per stub (``launch``: the lock, a listing, ``sbatch``, a re-read), median
  and p90, against the bare ``sbatch --wrap true`` of the same cluster (the floor);
- wake cost (one ``list_workloads``) by how many of the lane's jobs the controller
  holds, against the bare ``scontrol show job -o`` at the same moment;
- duplicates (a stub with more than one job) and lost completions (a stub whose
  completion was never seen): both must be 0.

    python benchmarks/bench_scale.py [--tracks 16] [--stubs 100] [--sleep 1] [--cpus 16]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.slurm_cluster import SlurmCluster, missing  # noqa: E402
from wikiengine.core.identity import workload_name  # noqa: E402
from wikiengine.executors.lane_backend import LaunchSpec  # noqa: E402
from wikiengine.executors.lane_slurm import SlurmLaneBackend  # noqa: E402

USER, MODEL, LANE = "scale", "bench", "slurm"
PREFIX = f"{USER}-{MODEL}-{LANE}"


def timed(call):
    start = time.perf_counter()
    value = call()
    return time.perf_counter() - start, value


def p90(values: list[float]) -> float:
    return sorted(values)[max(0, int(round(0.9 * len(values))) - 1)]


def drive(backend: SlurmLaneBackend, env: dict, args) -> dict:
    """Dispatch every stub over the tracks; what it measured."""
    stubs = [LaunchSpec(workload_name(USER, MODEL, LANE, n, f"s{n}"), f"v{n:03d}", f"s{n}", 0,
                        ["sleep", str(args.sleep)], {}, None, 600.0) for n in range(1, args.stubs + 1)]
    queue, on_track, completed = list(stubs), {}, {}
    launch_s, wake_rows = [], []
    wakes = 0
    while queue or on_track:
        wakes += 1
        wake_s, listed = timed(lambda: backend.list_workloads(PREFIX))
        raw_s, _ = timed(lambda: subprocess.run(["scontrol", "show", "job", "-o"], env=env, capture_output=True,
                                                check=True))
        wake_rows.append((len(listed), wake_s, raw_s))
        by_name = {w.name: w for w in listed}
        for track, spec in list(on_track.items()):
            workload = by_name.get(spec.name)
            if workload is not None and workload.is_finished:
                completed[spec.name] = completed.get(spec.name, 0) + 1
                del on_track[track]
        for track in range(1, args.tracks + 1):
            if track in on_track or not queue:
                continue
            spec = queue.pop(0)
            spec = LaunchSpec(**{**spec.__dict__, "track": track})
            seconds, _ = timed(lambda spec=spec: backend.launch(spec))
            launch_s.append(seconds)
            if len(launch_s) % args.lost == 0:
                backend.launch(spec)  # the answer was "lost": asked again, adopted
            on_track[track] = spec
        time.sleep(0.2)
    jobs: dict[str, int] = {}
    for job in backend.jobs():
        if job.name.startswith(PREFIX + "-"):
            jobs[job.name] = jobs.get(job.name, 0) + 1
    floor = [timed(lambda: subprocess.run(["sbatch", "--parsable", "--output=/dev/null", "--wrap", "true"], env=env,
                                          capture_output=True, check=True))[0] for _ in range(10)]
    return {"launch_s": launch_s, "floor_s": floor, "wakes": wake_rows, "wake_count": wakes,
            "duplicates": sum(1 for n in jobs.values() if n > 1), "jobs": len(jobs),
            "lost": sum(1 for spec in stubs if completed.get(spec.name) != 1)}


def report(result: dict, args, seconds: float) -> None:
    launch, floor = result["launch_s"], result["floor_s"]
    print(f"\n{args.stubs} stubs of `sleep {args.sleep}` over {args.tracks} tracks on one Slurm node "
          f"({args.cpus} CPUs declared): {seconds:.0f} s, {result['wake_count']} wakes\n")
    print("| measure | median | p90 | bare Slurm median | ratio |")
    print("|---|---|---|---|---|")
    print(f"| dispatch latency per stub (launch) | {statistics.median(launch) * 1000:.0f} ms | "
          f"{p90(launch) * 1000:.0f} ms | {statistics.median(floor) * 1000:.0f} ms (sbatch --wrap true) | "
          f"{statistics.median(launch) / statistics.median(floor):.1f}x |")
    buckets: dict[int, list] = {}
    for held, wake_s, raw_s in result["wakes"]:
        bucket = max((b for b in (0, 1, 10, 50, 100, 500, 1000) if held >= b), default=0)
        buckets.setdefault(bucket, []).append((wake_s, raw_s))
    for bucket in sorted(buckets):
        rows = buckets[bucket]
        wake, raw = statistics.median(r[0] for r in rows), statistics.median(r[1] for r in rows)
        print(f"| wake listing, {bucket}+ of the lane's jobs held ({len(rows)} wakes) | {wake * 1000:.0f} ms | "
              f"{p90([r[0] for r in rows]) * 1000:.0f} ms | {raw * 1000:.0f} ms (scontrol show job -o) | "
              f"{wake / raw:.1f}x |")
    print(f"\nduplicate dispatches: {result['duplicates']} (of {result['jobs']} jobs); lost completions: "
          f"{result['lost']} (of {args.stubs} stubs)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tracks", type=int, default=16)
    parser.add_argument("--stubs", type=int, default=100)
    parser.add_argument("--sleep", type=float, default=1.0)
    parser.add_argument("--cpus", type=int, default=16)
    parser.add_argument("--lost", type=int, default=10, help="every Nth launch is asked again")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-scale-") as tmp:
        cluster = None
        if not os.environ.get("SLURM_CONF"):
            why = missing()
            if why:
                print(f"bench_scale: {why}", file=sys.stderr)
                return 2
            cluster = SlurmCluster(Path(tmp) / "slurm", cpus=args.cpus).start()
        env = {**os.environ, **(cluster.env if cluster else {})}
        try:
            backend = SlurmLaneBackend(Path(tmp) / "wiki", "bench_autoresearch_optimization", LANE,
                                       env=cluster.env if cluster else {})
            start = time.perf_counter()
            result = drive(backend, env, args)
            report(result, args, time.perf_counter() - start)
        finally:
            if cluster:
                cluster.stop()
    return 0 if result["duplicates"] == 0 and result["lost"] == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
