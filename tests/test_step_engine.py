"""The one wake skeleton (``wikiengine/step/engine.py``), its result, its transaction records
and its expectations: what every mode gets from the engine, tested once."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from wikiengine.core.errors import ExitCode, WikiError
from wikiengine.model.journal import (
    LAPSED,
    MET,
    PENDING,
    REASK,
    SEEN,
    UNKNOWN,
    UNSEEN,
    Expectation,
    dispatch_expectations,
)
from wikiengine.step import engine
from wikiengine.step.result import WakeResult, locked_result
from wikiengine.step.txn import REDO, UNDO, UndoRecord, record_path, recover


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True).stdout


@pytest.fixture
def repo(tmp_path):
    git(tmp_path, "init", "-q", "-b", "main")
    git(tmp_path, "config", "user.email", "t@example.invalid")
    git(tmp_path, "config", "user.name", "t")
    (tmp_path / "memory").mkdir()
    (tmp_path / "memory" / "STATE.md").write_text("---\nrun: r\n---\n")
    (tmp_path / "notes.md").write_text("a\n")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-q", "-m", "init")
    return tmp_path


def recording_mode(calls: list[str], *, end_at: str | None = None, owned=("memory/STATE.md",)) -> engine.Mode:
    def phase(name):
        def run(wake):
            calls.append(name)
            if name == end_at:
                wake.end()
        return run

    names = ("load", "observe", "decide", "act", "record", "recover", "reconcile", "needs")
    return engine.Mode("test", **{n: phase(n) for n in names}, owned_paths=lambda wake: list(owned))


def test_every_phase_runs_in_the_declared_order(repo):
    calls: list[str] = []
    result = engine.wake(recording_mode(calls), repo)
    assert calls == [name for name, _ in engine.WAKE if name != "sanity"]
    assert result.mode == "test" and result.exit_code == 0


def test_a_dry_run_skips_every_phase_that_writes(repo):
    calls: list[str] = []
    engine.wake(recording_mode(calls), repo, dry_run=True)
    assert calls == ["load", "observe", "decide", "act", "needs"]


def test_a_phase_that_ends_the_wake_stops_it(repo):
    calls: list[str] = []
    engine.wake(recording_mode(calls, end_at="load"), repo)
    assert calls == ["recover", "load"]


def test_the_mode_s_own_files_must_be_clean_before_anything_is_written(repo):
    (repo / "memory" / "STATE.md").write_text("---\nrun: r\nstatus: edited by hand\n---\n")
    calls: list[str] = []
    with pytest.raises(WikiError, match="memory/STATE.md has uncommitted changes"):
        engine.wake(recording_mode(calls), repo)
    assert calls == ["recover", "load"]  # nothing observed, nothing written


def test_strays_elsewhere_do_not_stop_a_wake(repo):
    (repo / "notes.md").write_text("edited\n")
    (repo / "stray.txt").write_text("untracked\n")
    calls: list[str] = []
    engine.wake(recording_mode(calls), repo)
    assert "record" in calls


def test_a_merge_in_progress_is_refused_in_every_mode(repo):
    git_dir = Path(git(repo, "rev-parse", "--absolute-git-dir").strip())
    (git_dir / "MERGE_HEAD").write_text(git(repo, "rev-parse", "HEAD"))
    with pytest.raises(WikiError, match="merge"):
        engine.wake(recording_mode([], owned=()), repo)


def test_every_mode_is_declared_and_loads_by_name():
    for name in engine.MODES:
        mode = engine.load_mode(name)
        assert isinstance(mode, engine.Mode) and mode.name == name


# --- the result --------------------------------------------------------------------------------

COMMON = {"mode", "state", "decision", "decisions", "actions", "needs", "next_wake_s", "commits", "exit_code"}


@pytest.mark.parametrize("mode, own", [
    ("relay", {"step", "reasons"}),
    ("lane", {"lane", "tracks", "disagreements", "reground", "budgets", "queue"}),
    ("kernel", {"family", "findings", "disagreements", "k9"}),
])
def test_one_json_shape_plus_the_mode_s_own_facts(mode, own):
    doc = WakeResult(mode, "running", mode, decisions=[{"track": 1, "decision": "skip", "vid": "v1", "reason": "r"}],
                     subject="x").as_json()
    assert set(doc) == COMMON | own
    assert json.loads(json.dumps(doc)) == doc
    if mode == "lane":
        assert doc["tracks"] == doc["decisions"]


def test_blocked_is_the_only_headline_with_its_own_exit_code():
    assert WakeResult("relay", "blocked", "blocked").exit_code == ExitCode.BLOCKED != 0
    assert all(WakeResult(m, "running", d).exit_code == 0 for m, d in [("relay", "launch"), ("lane", "lane"),
                                                                      ("kernel", "kernel"), ("lane", "locked")])


def test_one_text_rendering_for_every_mode():
    relay = WakeResult("relay", "running", "launch", reasons=["latest -> 8"], actions=["launched session-2"], step=8)
    assert relay.text().splitlines() == ["launch: latest -> 8 (run status: running)", "  - latest -> 8",
                                         "  * launched session-2"]
    lane = WakeResult("lane", "running", "lane", subject="gemma4/tpu", next_wake_s=120,
                      decisions=[{"track": 1, "decision": "dispatch", "vid": "v043", "reason": "a stub ready to run"}],
                      needs=[{"kind": "verdict", "vid": "v042", "inputs": {}, "command": "wiki exp file ..."}])
    assert lane.text().splitlines() == ["lane gemma4/tpu: running; next wake in 120 s",
                                        "  track 1: dispatch v043 — a stub ready to run",
                                        "  owed: verdict for v042: wiki exp file ..."]
    kernel = WakeResult("kernel", "paused", "kernel", subject="layernorm")
    assert kernel.text() == "kernel family layernorm: paused; no next wake"
    for mode in engine.MODES:
        assert locked_result(mode).text() == "locked: another wiki step holds the lock; nothing done"


def test_a_long_summary_is_cut_and_says_where_the_rest_is():
    result = WakeResult("lane", "running", "lane", subject="m/l", actions=[f"a{i}" for i in range(100)])
    lines = result.text().splitlines()
    assert len(lines) == 40 and lines[-1].endswith("more lines (--json has all)")


# --- the transaction records --------------------------------------------------------------------


def test_an_undo_record_puts_back_the_texts_of_its_last_checkpoint(repo):
    state = repo / "memory" / "STATE.md"
    record = UndoRecord(repo, "relay", ["memory/STATE.md", "memory/QUOTA.md"], "2026-01-01T00:00:00Z launch")
    state.write_text("half written")
    (repo / "memory" / "QUOTA.md").write_text("a new file")
    done = recover(repo, "relay")
    assert done.policy == UNDO and done.note == "2026-01-01T00:00:00Z launch" and done.commit is None
    assert state.read_text() == "---\nrun: r\n---\n" and not (repo / "memory" / "QUOTA.md").exists()
    assert not record.path.exists() and recover(repo, "relay") is None


def test_an_undo_record_checkpointed_after_a_commit_keeps_that_commit(repo):
    state = repo / "memory" / "STATE.md"
    record = UndoRecord(repo, "relay", ["memory/STATE.md"], "note")
    state.write_text("committed by the wake\n")
    git(repo, "commit", "-qam", "booking")
    record.checkpoint()
    state.write_text("then half written")
    recover(repo, "relay")
    assert state.read_text() == "committed by the wake\n" and git(repo, "status", "--porcelain") == ""


def test_a_redo_record_is_finished_and_committed(repo):
    path = record_path(repo, "m__l")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"policy": REDO, "message": "exp(v1): stub", "files": {"notes.md": "b\n"}}))
    done = recover(repo, "m__l")
    assert done.policy == REDO and done.commit and (repo / "notes.md").read_text() == "b\n"
    assert git(repo, "log", "-1", "--format=%s").strip() == "exp(v1): stub" and not path.exists()


def test_a_torn_record_is_discarded(repo):
    path = record_path(repo, "relay")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('{"policy": "undo", "be')
    assert recover(repo, "relay") is None and not path.exists()


# --- expectations -------------------------------------------------------------------------------

NOW = 1_800_000_000.0


@pytest.mark.parametrize("ttl, age, sighting, settled", [
    (600, 10, SEEN, MET),
    (600, 10, UNKNOWN, PENDING),  # unknown is never gone
    (600, 10_000, UNKNOWN, PENDING),
    (600, 10, UNSEEN, PENDING),  # asked, not visible yet: ask nothing
    (600, 601, UNSEEN, LAPSED),  # never appeared: release it
    (None, 10_000, UNSEEN, REASK),  # ask again by the same name (a request that landed is adopted)
    (None, 10, SEEN, MET),
])
def test_an_expectation_settles_by_what_the_observe_saw(ttl, age, sighting, settled):
    assert Expectation("launch", "session-3", NOW - age, ttl).settle(sighting, NOW) == settled


def test_an_expectation_with_no_time_has_lapsed_once_unseen():
    assert Expectation("launch", "session-3", None, 600).settle(UNSEEN, NOW) == LAPSED


def test_a_lane_s_dispatch_records_are_its_expectations():
    records = [{"op": "claim", "vid": "v1"}, {"op": "dispatch", "vid": "v1", "workload": "w-1", "at": "2026-01-01T00:00:00Z"},
               {"op": "dispatch", "vid": "v1", "workload": "w-1b", "at": "2026-01-01T00:10:00Z"},
               {"op": "complete", "vid": "v2"}]
    found = dispatch_expectations(records)
    assert list(found) == ["v1"] and found["v1"].name == "w-1b" and found["v1"].kind == "dispatch"
    assert found["v1"].ttl_s is None and found["v1"].at == 1767226200.0
