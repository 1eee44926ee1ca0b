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

``gke`` does the same against the GKE lane backend: one loopback API server per track
(tests/fakes/fake_k8s.py; a GKE session runs one cluster per track), the tracks pooled as
the wake pools them (executors/lane_pool.py), the real ``kubernetes`` client. The fake has
no kubelet; a thread plays it, polling every 20 ms: a JobSet runs from when it first sees
it and completes (its pod exits 0) ``--sleep`` seconds later. The floors are one bare
JobSet create, and one bare listing of every track's JobSets. It then times one wake's
listing at ``--held`` finished workloads spread over each of ``--growth`` track counts
(wake cost as tracks grow, the number of workloads fixed). Exits 1 on a duplicate, a lost
completion, or a stub created more than once::

    python benchmarks/bench_scale.py gke [--tracks 16] [--stubs 1000] [--sleep 1] [--growth 1,4,16] [--held 240]

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
import contextlib
import dataclasses
import itertools
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.slurm_cluster import SlurmCluster, missing  # noqa: E402
from wikiengine.core.identity import workload_name  # noqa: E402
from wikiengine.executors.lane_backend import LaunchSpec  # noqa: E402
from wikiengine.executors.lane_slurm import SlurmLaneBackend  # noqa: E402

USER, MODEL, LANE, GKE_LANE = "scale", "bench", "slurm", "tpu"
BASE_CLUSTER = Path(__file__).resolve().parents[1] / "tests" / "data" / "env" / "gke-v5p-2x2x2-dave.md"


def timed(call):
    start = time.perf_counter()
    value = call()
    return time.perf_counter() - start, value


def ms(seconds: float) -> str:
    """Milliseconds, with a decimal below 10 ms."""
    return f"{seconds * 1000:.1f} ms" if seconds < 0.01 else f"{seconds * 1000:.0f} ms"


def p90(values: list[float]) -> float:
    return sorted(values)[max(0, int(round(0.9 * len(values))) - 1)]


def drive(backend, args, lane: str, argv: list[str], bare_list, held_names, bare_submit) -> dict:
    """Dispatch every stub of ``argv`` over the tracks; what it measured.

    ``bare_list`` is timed next to each wake's listing (its floor), ``bare_submit`` ten
    times at the end (the floor of a dispatch); ``held_names`` yields the name of every
    workload the backend holds, once per copy.
    """
    prefix = f"{USER}-{MODEL}-{lane}"
    stubs = [LaunchSpec(workload_name(USER, MODEL, lane, n, f"s{n}"), f"v{n:03d}", f"s{n}", 0, argv, {}, None, 600.0)
             for n in range(1, args.stubs + 1)]
    queue, on_track, completed = list(stubs), {}, {}
    launch_s, wake_rows = [], []
    wakes = 0
    while queue or on_track:
        wakes += 1
        wake_s, listed = timed(lambda: backend.list_workloads(prefix))
        raw_s, _ = timed(bare_list)
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
    for name in held_names():
        if name.startswith(prefix + "-"):
            jobs[name] = jobs.get(name, 0) + 1
    floor = [timed(bare_submit)[0] for _ in range(10)]
    return {"launch_s": launch_s, "floor_s": floor, "wakes": wake_rows, "wake_count": wakes,
            "duplicates": sum(1 for n in jobs.values() if n > 1), "jobs": len(jobs),
            "lost": sum(1 for spec in stubs if completed.get(spec.name) != 1)}


def report(result: dict, args, seconds: float, where: str, floors: tuple[str, str, str]) -> None:
    """Print what :func:`drive` measured; ``floors``: the floor column's title, then what the
    dispatch floor and the listing floor ran."""
    launch, floor = result["launch_s"], result["floor_s"]
    title, submit_floor, list_floor = floors
    print(f"\n{args.stubs} stubs over {args.tracks} tracks {where}: {seconds:.0f} s, {result['wake_count']} wakes\n")
    print(f"| measure | median | p90 | {title} | ratio |")
    print("|---|---|---|---|---|")
    print(f"| dispatch latency per stub (launch) | {ms(statistics.median(launch))} | {ms(p90(launch))} | "
          f"{ms(statistics.median(floor))} ({submit_floor}) | {statistics.median(launch) / statistics.median(floor):.1f}x |")
    buckets: dict[int, list] = {}
    for held, wake_s, raw_s in result["wakes"]:
        bucket = max((b for b in (0, 1, 10, 50, 100, 500, 1000) if held >= b), default=0)
        buckets.setdefault(bucket, []).append((wake_s, raw_s))
    for bucket in sorted(buckets):
        rows = buckets[bucket]
        wake, raw = statistics.median(r[0] for r in rows), statistics.median(r[1] for r in rows)
        print(f"| wake listing, {bucket}+ of the lane's jobs held ({len(rows)} wakes) | {ms(wake)} | "
              f"{ms(p90([r[0] for r in rows]))} | {ms(raw)} ({list_floor}) | {wake / raw:.1f}x |")
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


def drive_arguments(parser: argparse.ArgumentParser, stubs: int) -> None:
    """The arguments of :func:`drive`, common to the Slurm and the GKE form."""
    parser.add_argument("--tracks", type=int, default=16)
    parser.add_argument("--stubs", type=int, default=stubs)
    parser.add_argument("--sleep", type=float, default=1.0, help="seconds each stub runs")
    parser.add_argument("--lost", type=int, default=10, help="every Nth launch is asked again")


@contextlib.contextmanager
def fake_clusters(count: int):
    """``count`` loopback API servers (tests/fakes/fake_k8s.py), one cluster per track as a
    GKE session has it: {track: (server, the lane backend of its cluster)}."""
    from kubernetes import client

    from tests.fakes.fake_k8s import FakeKubeApi
    from wikiengine.executors.gke.clusters import parse_cluster_file
    from wikiengine.executors.gke.kube import Kube
    from wikiengine.executors.gke.lane import GkeLaneBackend
    from wikiengine.executors.gke.occupancy import Me

    base = parse_cluster_file(BASE_CLUSTER)
    with contextlib.ExitStack() as stack:
        tracks = {}
        for track in range(1, count + 1):
            api = stack.enter_context(FakeKubeApi())
            name = f"scale-{track}"
            kube = stack.enter_context(Kube.from_configuration(client.Configuration(host=api.url), cluster=name))
            cluster = dataclasses.replace(base, name=name, context=name)
            tracks[track] = (api, GkeLaneBackend(kube, cluster.namespace, cluster=cluster, me=Me(USER, MODEL, GKE_LANE),
                                                 image="example-registry/app:main", storage_root="gs://bench-bucket"))
        yield tracks


def complete(api, namespace: str, name: str) -> None:
    """Play the kubelet's end of a run: its pod exited 0, then the JobSet is Completed."""
    api.add_pod(f"{name}-slice-job-0-0-bench", name, "done\n", namespace=namespace, exit_code=0)
    api.set_state(name, namespace=namespace, terminal_state="Completed")


class Kubelet(threading.Thread):
    """The loopback clusters have no kubelet: this one, polling every 20 ms, starts a JobSet
    (one active job) when it first sees it and completes it ``sleep_s`` seconds later."""

    def __init__(self, apis: list, sleep_s: float):
        super().__init__(daemon=True)
        self.apis, self.sleep_s, self.halt = apis, sleep_s, threading.Event()

    def run(self) -> None:
        from wikiengine.executors.gke.occupancy import is_active

        seen: dict[tuple, float] = {}
        while not self.halt.wait(0.02):
            now = time.monotonic()
            for index, api in enumerate(self.apis):
                with api._lock:
                    running = [key for key, jobset in api.jobsets.items() if is_active(jobset)]
                for namespace, name in running:
                    first = seen.setdefault((index, namespace, name), now)
                    if first == now:
                        api.set_state(name, namespace=namespace, active=1)
                    elif now - first >= self.sleep_s:
                        complete(api, namespace, name)


def wake_growth(counts: list[int], held: int, repeats: int) -> list[tuple]:
    """One wake's listing of the pool at ``held`` finished workloads spread over each count of
    tracks, against one bare listing of every track's JobSets: (tracks, median, p90, bare)."""
    from wikiengine.executors.lane_pool import TrackPool

    rows, prefix = [], f"{USER}-{MODEL}-{GKE_LANE}"
    for count in counts:
        with fake_clusters(count) as tracks:
            for n in range(1, held + 1):
                api = tracks[(n - 1) % count + 1][0]
                name = workload_name(USER, MODEL, GKE_LANE, n, f"s{n}")
                api.add_jobset(name)
                complete(api, "default", name)
            pool = TrackPool({track: backend for track, (_, backend) in tracks.items()})
            listed = pool.list_workloads(prefix)
            if len(listed) != held or not all(w.state == "succeeded" for w in listed):
                raise SystemExit(f"bench_scale gke: listed {len(listed)} of {held} finished workloads")
            wake = [timed(lambda pool=pool: pool.list_workloads(prefix))[0] for _ in range(repeats)]
            bare = [timed(lambda tracks=tracks: [b.kube.list_jobsets() for _, b in tracks.values()])[0]
                    for _ in range(repeats)]
        rows.append((count, statistics.median(wake), p90(wake), statistics.median(bare)))
    return rows


def gke_scale(argv: list[str]) -> dict:
    """The ``gke`` mode (see the module docstring): prints its tables, returns what :func:`drive`
    measured with ``creates`` (JobSet create requests) and ``growth`` (:func:`wake_growth`)."""
    from wikiengine.executors.lane_pool import TrackPool

    parser = argparse.ArgumentParser(prog="bench_scale.py gke")
    drive_arguments(parser, stubs=1000)
    parser.add_argument("--growth", default="1,4,16", help="track counts of the wake-cost table")
    parser.add_argument("--held", type=int, default=240, help="finished workloads held in the wake-cost table")
    parser.add_argument("--repeats", type=int, default=10, help="listings timed per row of the wake-cost table")
    args = parser.parse_args(argv)
    with fake_clusters(args.tracks) as tracks:
        apis = [api for api, _ in tracks.values()]
        kubelet = Kubelet(apis, args.sleep)
        kubelet.start()
        floors = itertools.count(1)
        first = tracks[1][1].kube
        try:
            start = time.perf_counter()
            result = drive(
                TrackPool({track: backend for track, (_, backend) in tracks.items()}), args, GKE_LANE,
                ["bash", "-c", f'sleep {args.sleep}; touch "$XPROF_PATH" "$HLO_PATH"'],
                lambda: [backend.kube.list_jobsets() for _, backend in tracks.values()],
                lambda: [name for api in apis for namespace, name in list(api.jobsets) if namespace == "default"],
                lambda: first.create_jobset("floor", {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
                                                      "metadata": {"name": f"floor-{next(floors)}"}, "spec": {}}))
            seconds = time.perf_counter() - start
        finally:
            kubelet.halt.set()
            kubelet.join()
        result["creates"] = sum(1 for api in apis for r in api.requests
                                if r.method == "POST" and r.path.endswith("/namespaces/default/jobsets"))
    report(result, args, seconds, f"on {args.tracks} loopback GKE API servers (one cluster per track; each JobSet "
           f"completes {args.sleep:g} s after the stand-in kubelet first sees it)",
           ("bare API median", "POST one JobSet", "GET the JobSets of every track"))
    print(f"JobSet create requests: {result['creates']} (every {args.lost}th launch was asked twice)")
    result["growth"] = wake_growth([int(c) for c in args.growth.split(",")], args.held, args.repeats)
    print(f"\n| tracks | wake listing at {args.held} finished workloads held: median | p90 | bare listing "
          "(GET the JobSets of every track) | ratio | wake / wake at the first row |")
    print("|---|---|---|---|---|---|")
    for count, wake, wake_p90, bare in result["growth"]:
        print(f"| {count} | {ms(wake)} | {ms(wake_p90)} | {ms(bare)} | "
              f"{wake / bare:.1f}x | {wake / result['growth'][0][1]:.2f}x |")
    return result


def main() -> int:
    if sys.argv[1:2] == ["wiki"]:
        return wiki_contention(sys.argv[2:])
    if sys.argv[1:2] == ["gke"]:
        result = gke_scale(sys.argv[2:])
        return 0 if result["duplicates"] == 0 and result["lost"] == 0 and result["creates"] == result["jobs"] else 1
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    drive_arguments(parser, stubs=100)
    parser.add_argument("--cpus", type=int, default=16)
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
            result = drive(
                backend, args, LANE, ["sleep", str(args.sleep)],
                lambda: subprocess.run(["scontrol", "show", "job", "-o"], env=env, capture_output=True, check=True),
                lambda: [job.name for job in backend.jobs()],
                lambda: subprocess.run(["sbatch", "--parsable", "--output=/dev/null", "--wrap", "true"], env=env,
                                       capture_output=True, check=True))
            report(result, args, time.perf_counter() - start,
                   f"on one Slurm node ({args.cpus} CPUs declared), each `sleep {args.sleep:g}`",
                   ("bare Slurm median", "sbatch --wrap true", "scontrol show job -o"))
        finally:
            if cluster:
                cluster.stop()
    return 0 if result["duplicates"] == 0 and result["lost"] == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
