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

``wiki`` measures, for docs/scale.md, what many lanes on one wiki contend for, on a
generated corpus (benchmarks/gen_wiki.py) committed to git: the lane lock (one per lane:
acquire + release, uncontended), git (W writer processes, each on a lane of its own
holding its lane lock, committing ``--commits`` times at once: commit latency and how many
commits git refused because another writer held ``index.lock``), and the lint cache
(``wiki lint`` with ``--no-cache``, then cold and warm with the cache)::

    python benchmarks/bench_scale.py wiki [--pages 1000] [--writers 1,4,16] [--commits 5]
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


def _writer(root: str, index: int, commits: int, queue) -> None:
    """One lane's writer: under its own lane lock, commit a file of its own ``commits`` times."""
    from wikiengine.core.git import GitCommitError, commit_paths
    from wikiengine.model.lanes import Lane
    from wikiengine.step.txn import LaneLock

    lane = Lane("bench_autoresearch_optimization", f"lane{index}")
    rel = f"bench/lane{index}/note.md"
    (Path(root) / rel).parent.mkdir(parents=True, exist_ok=True)
    for n in range(commits):
        (Path(root) / rel).write_text(f"note {n} of lane {index}\n")
        start = time.perf_counter()
        try:
            with LaneLock(Path(root), lane):
                commit_paths(Path(root), [rel], f"bench: lane {index} note {n}")
            queue.put(("ok", time.perf_counter() - start))
        except GitCommitError as exc:
            locked = "index.lock" in str(exc) or "remove the file manually" in str(exc)
            queue.put(("refused" if locked else f"error: {exc}", time.perf_counter() - start))


def wiki_contention(argv: list[str]) -> int:
    """The ``wiki`` mode (see the module docstring)."""
    import multiprocessing

    from benchmarks.gen_wiki import generate
    from wikiengine.model.lanes import Lane
    from wikiengine.step.txn import LaneLock

    parser = argparse.ArgumentParser(prog="bench_scale.py wiki")
    parser.add_argument("--pages", type=int, default=1000)
    parser.add_argument("--writers", default="1,4,16")
    parser.add_argument("--commits", type=int, default=5)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-lanes-") as tmp:
        root = Path(tmp) / "wiki"
        generate(root, args.pages)
        for command in (["init", "-q"], ["add", "-A"], ["-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm",
                                                         "corpus"]):
            subprocess.run(["git", *command], cwd=root, check=True, capture_output=True)
        subprocess.run(["git", "config", "user.name", "bench"], cwd=root, check=True)
        subprocess.run(["git", "config", "user.email", "bench@example.invalid"], cwd=root, check=True)
        lane = Lane("gemma4_autoresearch_optimization", "tpu")
        locks = []
        for _ in range(200):
            start = time.perf_counter()
            with LaneLock(root, lane):
                pass
            locks.append(time.perf_counter() - start)
        print(f"\n{args.pages} generated pages; lane lock acquire + release (uncontended, 200 times): median "
              f"{statistics.median(locks) * 1000:.2f} ms, p90 {p90(locks) * 1000:.2f} ms\n")
        print("| writers at once (one lane each) | commits | refused (index.lock) | commit median | p90 |")
        print("|---|---|---|---|---|")
        for writers in (int(w) for w in args.writers.split(",")):
            queue = multiprocessing.Queue()
            procs = [multiprocessing.Process(target=_writer, args=(str(root), i, args.commits, queue))
                     for i in range(writers)]
            for proc in procs:
                proc.start()
            results = [queue.get() for _ in range(writers * args.commits)]
            for proc in procs:
                proc.join()
            done = [t for kind, t in results if kind == "ok"]
            refused = sum(1 for kind, _ in results if kind == "refused")
            errors = [kind for kind, _ in results if kind.startswith("error")]
            print(f"| {writers} | {len(results)} | {refused} | {statistics.median(done) * 1000:.0f} ms | "
                  f"{p90(done) * 1000:.0f} ms |" + (f" other errors: {errors[:2]}" if errors else ""))
        lint = [sys.executable, "-m", "wikiengine", "lint", "--format", "json"]
        env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
        rows = []
        for label, extra in (("--no-cache", ["--no-cache"]), ("cache cold", []), ("cache warm", [])):
            seconds, _ = timed(lambda extra=extra: subprocess.run([*lint, *extra], cwd=root, env=env,
                                                                  capture_output=True))
            rows.append((label, seconds))
        print("\n| wiki lint | wall s |\n|---|---|")
        for label, seconds in rows:
            print(f"| {label} | {seconds:.2f} |")
    return 0


def main() -> int:
    if sys.argv[1:2] == ["wiki"]:
        return wiki_contention(sys.argv[2:])
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
