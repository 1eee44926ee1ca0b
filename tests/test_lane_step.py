"""`wiki step` in lane mode (issue 10): the per-track decision table, and wakes driven
against an in-memory lane backend that keeps the protocol's contract (launch adopts by
name; a listing that cannot be read raises ComputeUnavailableError)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.lane_runs import seed_band
from tests.test_lane_writers import HLO, V046, git, proposal, wiki  # noqa: F401 - the fixture
from wikiengine.core.errors import ExitCode
from wikiengine.executors.compute import ComputeUnavailableError
from wikiengine.executors.lane_backend import LaneWorkload
from wikiengine.lint.runner import lint
from wikiengine.model.journal import Expectation
from wikiengine.model.lanes import Lane
from wikiengine.step import writers as lw
from wikiengine.step.lane.decide import LaneLimits, TrackView, decide_track, next_wake_s
from wikiengine.step.lane.start import NoFreeClusters, start_session
from wikiengine.step.lane.wake import wake

SENT = Expectation("dispatch", "demo-gemma4-tpu-v048-x")  # the dispatch record, as read
NOW = 1_800_000_000.0
LIMITS = LaneLimits(hung_after_s=600, ceiling_s=3600, wake_interval_s=600)
LANE = Lane("gemma4_autoresearch_optimization", "tpu")

TABLE = [
    # view, expected decision
    (TrackView(1, backend_state="unknown", vid="v048", page_state="open", expected=SENT), "wait"),
    (TrackView(1), "need_hypothesis"),
    (TrackView(1, vid="v048", page_state="filed", expected=SENT, processed=True), "need_hypothesis"),
    (TrackView(1, vid="v048", page_state="missing"), "need_hypothesis"),
    (TrackView(1, vid="v048", page_state="open"), "dispatch"),
    (TrackView(1, vid="v048", page_state="open", expected=SENT, backend_state=None), "dispatch"),
    (TrackView(1, vid="v048", page_state="open", expected=SENT, backend_state="running", started_at=NOW - 60,
               progress_at=NOW - 30), "skip"),
    (TrackView(1, vid="v048", page_state="open", expected=SENT, backend_state="running", started_at=NOW - 900,
               progress_at=NOW - 700), "kill"),
    (TrackView(1, vid="v048", page_state="open", expected=SENT, backend_state="running", started_at=NOW - 4000,
               progress_at=NOW - 5), "kill"),
    (TrackView(1, vid="v048", page_state="open", expected=SENT, backend_state="succeeded"), "process"),
    (TrackView(1, vid="v048", page_state="open", expected=SENT, backend_state="failed"), "process"),
    (TrackView(1, vid="v048", page_state="open", expected=SENT, killed=True, backend_state=None), "process"),
    (TrackView(1, vid="v048", page_state="open", expected=SENT, processed=True, backend_state="succeeded"),
     "need_verdict"),
]


@pytest.mark.parametrize("view,expected", TABLE)
def test_track_decision_table(view, expected):
    assert decide_track(view, NOW, LIMITS).kind == expected


def test_next_wake_is_clamped_to_the_seed_window():
    fast = [decide_track(TrackView(1, vid="v048", page_state="open"), NOW, LIMITS)]
    idle = [decide_track(TrackView(1, vid="v048", page_state="open", expected=SENT, backend_state="running",
                                   started_at=NOW, progress_at=NOW), NOW, LIMITS)]
    assert next_wake_s(fast, LIMITS) == 120
    assert next_wake_s(idle, LIMITS) == 600
    assert next_wake_s(idle, dataclasses.replace(LIMITS, wake_interval_s=5000)) == 600
    assert next_wake_s(idle, dataclasses.replace(LIMITS, wake_interval_s=10)) == 120


class MemoryBackend:
    """A lane backend in memory: launch is idempotent by name; ``down`` makes it unknown."""

    def __init__(self, artifacts_dir: Path):
        self.runs: dict[str, LaneWorkload] = {}
        self.launches: list[str] = []
        self.down = False
        self.lose_answer = False
        self.dir = artifacts_dir

    def list_workloads(self, prefix):
        if self.down:
            raise ComputeUnavailableError("fake backend down")
        return [w for w in self.runs.values() if w.name.startswith(prefix + "-")]

    def launch(self, spec):
        if spec.name not in self.runs:
            self.launches.append(spec.name)
            now = dt.datetime.now(dt.UTC).isoformat()
            self.runs[spec.name] = LaneWorkload(spec.name, spec.vid, spec.slug, "running", None, now, None, "", now)
        if self.lose_answer:
            raise ComputeUnavailableError("answer lost")
        return self.runs[spec.name]

    def finish(self, name, exit_code=0, metrics=None):
        folder = self.dir / name
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "metrics.json").write_text(json.dumps({"mfu": 42.9, "parity": "pass", **(metrics or {})}))
        (folder / "profile.md").write_text("splash 19% of step\n")
        (folder / "hlo.md").write_text(HLO)
        self.runs[name] = dataclasses.replace(self.runs[name], state="succeeded" if exit_code == 0 else "failed",
                                              exit_code=exit_code)

    def artifacts(self, name):
        folder = self.dir / name
        return {"artifact_dir": str(folder), "metrics": str(folder / "metrics.json"), "xprof": str(folder / "xprof"),
                "hlo": str(folder / "hlo")}

    def delete(self, name):
        self.runs.pop(name, None)

    def logs(self, name, tail=200):
        return ""


@pytest.fixture()
def lane_wiki(wiki):  # noqa: F811 - the fixture imported above
    program = wiki / LANE.program
    program.write_text(program.read_text().replace("wake_interval_s: 600\n", 'wake_interval_s: 600\n'
                                                   'launch_cmd: "python -m bench --config {config} --frontier {frontier}"\n'))
    (wiki / ".gitignore").write_text(".wiki/\n")
    git(wiki, "add", "-A")
    git(wiki, "commit", "-qm", "lane launch_cmd")
    return wiki


def _clean(root):
    return git(root, "status", "--porcelain", "--", "wiki", "memory") == ""


def test_a_session_runs_new_dispatch_process_file(lane_wiki, tmp_path):
    root = lane_wiki
    backend = MemoryBackend(tmp_path / "art")
    started = start_session(root, LANE, parallelism="2", backend="local", first="splash q blocks")
    seed_band(root, LANE.dir, variant="2B/v5p-16", frontier=V046)
    assert [s["name"] for s in started["pool"]] == ["local-1", "local-2"]
    log = (root / LANE.log).read_text()
    assert "] start | wiki loop start session begin\n\n**Op**: start\n**Cluster pool**: local-1, local-2\n" in log
    first = wake(root, backend=backend)
    assert [d["decision"] for d in first.decisions] == ["need_hypothesis", "need_hypothesis"]
    assert [n["kind"] for n in first.needs] == ["hypothesis", "hypothesis"]
    assert 120 <= first.next_wake_s <= 600
    for track in (1, 2):
        lw.new_experiment(root, LANE, slug=f"t{track}", variant="2B/v5p-16", proposal_path=proposal(root, f"t{track}"),
                          track=track)
    second = wake(root, backend=backend)
    assert [d["decision"] for d in second.decisions] == ["dispatch", "dispatch"]
    assert sorted(backend.launches) == ["demo-gemma4-tpu-v048-t1", "demo-gemma4-tpu-v049-t2"]
    third = wake(root, backend=backend)
    assert [d["decision"] for d in third.decisions] == ["skip", "skip"] and len(backend.launches) == 2
    backend.finish("demo-gemma4-tpu-v048-t1")
    fourth = wake(root, backend=backend)
    assert [d["decision"] for d in fourth.decisions] == ["process", "skip"]
    (need,) = [n for n in fourth.needs if n["kind"] == "verdict"]
    inputs = need["inputs"]
    assert need["vid"] == "v048" and inputs["metrics"]["mfu"] == 42.9 and inputs["value"] == 42.9
    assert inputs["band_n"] == 3 and inputs["exit_code"] == 0 and need["command"].endswith("--verdict V --reason TEXT")
    page = (root / lw.find_page(root, LANE, "v048").rel).read_text()
    assert "**Command that ran**: `python -m bench --config" in page and "| 42.9 |" in page
    lw.file_experiment(root, LANE, "v048", verdict="supported", reason="signal seen")
    fifth = wake(root, backend=backend)
    assert [d["decision"] for d in fifth.decisions] == ["need_hypothesis", "skip"]
    assert fifth.reground["last_verdicts"][-1]["vid"] == "v048"
    assert _clean(root)
    assert [f.render() for f in lint(root, base=None, use_cache=False).findings] == []


def _one_track_with_a_stub(root, tmp_path, slug: str) -> MemoryBackend:
    """A session of one track and the stub ``slug`` on it; the backend it will launch on."""
    backend = MemoryBackend(tmp_path / "art")
    start_session(root, LANE, parallelism="1")
    seed_band(root, LANE.dir, variant="2B/v5p-16", frontier=V046)
    lw.new_experiment(root, LANE, slug=slug, variant="2B/v5p-16", proposal_path=proposal(root, slug), track=1)
    return backend


def test_a_lost_launch_answer_is_adopted_not_doubled(lane_wiki, tmp_path):
    root = lane_wiki
    backend = _one_track_with_a_stub(root, tmp_path, "lost")
    backend.lose_answer = True
    wake(root, backend=backend)
    backend.lose_answer = False
    again = wake(root, backend=backend)
    assert [d["decision"] for d in again.decisions] == ["skip"]
    assert backend.launches == ["demo-gemma4-tpu-v048-lost"]
    dispatches = [json.loads(ln) for ln in (root / LANE.journal).read_text().splitlines()
                  if json.loads(ln)["op"] == "dispatch"]
    assert len(dispatches) == 1


def test_unknown_backend_waits_and_dispatches_nothing(lane_wiki, tmp_path):
    root = lane_wiki
    backend = _one_track_with_a_stub(root, tmp_path, "unreachable")
    backend.down = True
    result = wake(root, backend=backend)
    assert [d["decision"] for d in result.decisions] == ["wait"] and backend.launches == []
    assert any("cannot be read" in d for d in result.disagreements)


def test_a_hung_run_is_killed_then_processed_as_crashed(lane_wiki, tmp_path):
    root = lane_wiki
    backend = _one_track_with_a_stub(root, tmp_path, "hung")
    wake(root, backend=backend)
    later = lambda: dt.datetime.now(dt.UTC) + dt.timedelta(hours=1)  # noqa: E731 - past hung_after_s (1800 s)
    killed = wake(root, backend=backend, clock=later)
    assert [d["decision"] for d in killed.decisions] == ["kill"] and backend.runs == {}
    after = wake(root, backend=backend, clock=later)
    assert [d["decision"] for d in after.decisions] == ["process"]
    (need,) = after.needs
    assert need["kind"] == "verdict" and any("the wake killed it" in c for c in need["inputs"]["caps"])
    assert need["inputs"]["strongest_verdict"] == "invalid"


def test_a_workload_with_no_stub_is_reported(lane_wiki, tmp_path):
    root = lane_wiki
    backend = MemoryBackend(tmp_path / "art")
    start_session(root, LANE, parallelism="1")
    seed_band(root, LANE.dir, variant="2B/v5p-16", frontier=V046)
    backend.runs["demo-gemma4-tpu-v070-rogue"] = LaneWorkload("demo-gemma4-tpu-v070-rogue", "v070", "rogue", "running",
                                                              None, None, None, "")
    result = wake(root, backend=backend)
    assert any("demo-gemma4-tpu-v070-rogue is on the backend with no stub" in d for d in result.disagreements)


@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({"backend": "pbs"}, "is not local, gke or slurm"),
        ({"partition": "low"}, "use them with --backend slurm"),
        ({"parallelism": "many"}, "is not a number or 'all'"),
        ({"parallelism": "0"}, "at least 1"),
    ],
)
def test_bad_session_configuration_writes_nothing(lane_wiki, kwargs, message):
    from wikiengine.core.errors import WikiError

    head = git(lane_wiki, "rev-parse", "HEAD")
    with pytest.raises(WikiError, match=message):
        start_session(lane_wiki, LANE, **kwargs)
    assert git(lane_wiki, "rev-parse", "HEAD") == head and _clean(lane_wiki)


def test_a_lane_with_no_program_is_refused(lane_wiki):
    result = subprocess.run([sys.executable, "-m", "wikiengine", "loop", "start", "gemma4", "jax", "--yes"],
                            cwd=lane_wiki, capture_output=True, text=True)
    assert "no launch_cmd" in result.stderr or "no program" in result.stderr
    assert result.returncode == 2


def test_no_free_cluster_is_exit_busy_class():
    assert NoFreeClusters("x").exit_code == ExitCode.BUSY == 7


def test_adopt_a_lane_with_no_program_or_log_starts_from_the_cascade_and_a_flag(lane_wiki):
    """A hand-grown lane: pages, but no program.md and no log.md. The cascade gives its config;
    the launch command comes from --launch-cmd, kept in the start record for every wake."""
    from wikiengine.step.lane.wake import load_lane_run

    jax = lane_wiki / "wiki/experiments/gemma4_autoresearch_optimization/jax"
    git(lane_wiki, "rm", "-q", str(jax / "program.md"), str(jax / "log.md"))
    git(lane_wiki, "commit", "-qm", "a lane that grew by hand")
    refused = subprocess.run([sys.executable, "-m", "wikiengine", "loop", "start", "gemma4", "jax", "--yes"],
                             cwd=lane_wiki, capture_output=True, text=True)
    assert refused.returncode == 2 and "--launch-cmd" in refused.stderr
    started = subprocess.run([sys.executable, "-m", "wikiengine", "loop", "start", "gemma4", "jax", "--yes", "--json",
                              "--launch-cmd", "python -m bench --config {config}"], cwd=lane_wiki, capture_output=True,
                             text=True)
    assert started.returncode == 0, started.stderr
    run = load_lane_run(lane_wiki, backend=object())
    assert run.config["launch_cmd"] == "python -m bench --config {config}"
    assert "] start | wiki loop start session begin" in (jax / "log.md").read_text()
    status = subprocess.run([sys.executable, "-m", "wikiengine", "loop", "status", "--json"], cwd=lane_wiki,
                            capture_output=True, text=True)
    assert status.returncode == 0, status.stderr


def test_row83_loop_start_over_a_live_session_is_refused(lane_wiki):
    start_session(lane_wiki, LANE, parallelism="1")
    head = git(lane_wiki, "rev-parse", "HEAD")
    again = subprocess.run([sys.executable, "-m", "wikiengine", "loop", "start", "gemma4", "tpu", "--yes"],
                           cwd=lane_wiki, capture_output=True, text=True)
    assert again.returncode == ExitCode.REFUSED and "is running" in again.stderr and "--pause" in again.stderr
    assert git(lane_wiki, "rev-parse", "HEAD") == head and _clean(lane_wiki)


def test_row75_a_stub_after_the_lane_was_stopped_is_refused_until_a_new_start(lane_wiki, tmp_path):
    from tests.test_lane_watch import retrospective, watch_cli
    from wikiengine.step.lane import close as lane_close

    start_session(lane_wiki, LANE, parallelism="1")
    retrospective(lane_wiki)
    watch_cli(lane_wiki)
    watch_cli(lane_wiki, "--closing")
    lane_close.stop(lane_wiki, backend=MemoryBackend(tmp_path / "art"), yes=True)
    stub = ["exp", "new", "gemma4", "tpu", "--slug", "late", "--variant", "2B/v5p-16", "--proposal",
            str(proposal(lane_wiki, "late")), "--track", "1"]
    late = subprocess.run([sys.executable, "-m", "wikiengine", *stub], cwd=lane_wiki, capture_output=True, text=True)
    assert late.returncode == ExitCode.REFUSED and "was stopped" in late.stderr and "wiki loop start" in late.stderr
    start_session(lane_wiki, LANE, parallelism="1")
    after = subprocess.run([sys.executable, "-m", "wikiengine", *stub], cwd=lane_wiki, capture_output=True, text=True)
    assert after.returncode == 0, after.stderr


@pytest.mark.parametrize("command,problem", [
    ("python run.py --token ${HF_TOKEN} --config {config}", "has a brace"),
    ("python -c 'print({1})' {config}", "has a brace"),
    ("CUDA_VISIBLE_DEVICES=0 python run.py {config}", "runs without a shell"),
])
def test_row82_a_launch_cmd_no_wake_could_run_is_refused_at_loop_start(lane_wiki, command, problem):
    head = git(lane_wiki, "rev-parse", "HEAD")
    done = subprocess.run([sys.executable, "-m", "wikiengine", "loop", "start", "gemma4", "jax", "--yes",
                           "--launch-cmd", command], cwd=lane_wiki, capture_output=True, text=True)
    assert done.returncode == 2 and problem in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert git(lane_wiki, "rev-parse", "HEAD") == head
