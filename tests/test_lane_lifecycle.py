"""The lane lifecycle under crashes and misuse (issue 23, RELIABILITY rows 74, 76, 84): the
stop gate reads what a retrospective says, a stop killed inside its commit is finished by
the next command, a killed writer's temp files are swept, the journal stays JSON, and the
work tree is clean after a legitimate stop."""

from __future__ import annotations

import json
import math
import signal
import subprocess
import sys
import textwrap

import pytest

from tests.test_lane_step import LANE, MemoryBackend, lane_wiki  # noqa: F401 - fixtures
from tests.test_lane_watch import retrospective, watch_cli
from tests.test_lane_writers import git, proposal, wiki  # noqa: F401 - fixtures
from wikiengine.core import clock
from wikiengine.model.journal import append_record, parse_journal
from wikiengine.step.audit import CURSOR, STOP_AUTHORIZED
from wikiengine.step.lane import close as lane_close
from wikiengine.step.lane.start import start_session


def _retrospective_text(root, text):
    """Commit this session's retrospective of gemma4/tpu with ``text`` as its whole file."""
    retrospective(root, text=text)


def _front(lane="tpu"):
    return (f"---\ntitle: gemma4 tpu session retrospective\ntype: analysis\nmodel: gemma4\nlane: {lane}\n"
            f"created: {clock.today()}\n---\n")


@pytest.mark.parametrize(("body", "lane", "named"), [
    ("", "tpu", "no text beyond its frontmatter and headings"),
    ("# Retrospective\n\n## What worked\n\nTBD\n", "tpu", "no text beyond its frontmatter and headings"),
    ("# Retrospective\n\nSplash blocks won twice; the rest was noise.\n", "jax", "lane: jax, not tpu"),
])
def test_row74_an_empty_or_foreign_retrospective_keeps_the_gate_shut(lane_wiki, tmp_path, body, lane, named):
    start_session(lane_wiki, LANE, parallelism="1")
    _retrospective_text(lane_wiki, _front(lane) + body)
    closing = watch_cli(lane_wiki, "--closing")
    assert closing.returncode == 1 and named in closing.stdout, closing.stdout
    assert not (lane_wiki / LANE.dir / STOP_AUTHORIZED).exists()  # never authorized, so never refused late
    head = git(lane_wiki, "rev-parse", "HEAD")
    stop = subprocess.run([sys.executable, "-m", "wikiengine", "loop", "stop", "--yes"], cwd=lane_wiki,
                          capture_output=True, text=True, timeout=300)
    assert stop.returncode == 3 and named in stop.stderr + stop.stdout
    assert git(lane_wiki, "rev-parse", "HEAD") == head


def test_row74_the_sections_the_lane_program_requires(lane_wiki):
    program = lane_wiki / LANE.program
    program.write_text(program.read_text().replace(
        "wake_interval_s: 600\n", "wake_interval_s: 600\nretrospective_sections: [What worked, Why stop]\n"))
    git(lane_wiki, "commit", "-qam", "the lane asks for two sections")
    start_session(lane_wiki, LANE, parallelism="1")
    _retrospective_text(lane_wiki, _front() + "# Retrospective\n\n## What worked (v048)\n\nSplash blocks.\n\n"
                        "## Why stop\n\n<!-- later -->\n")
    closing = watch_cli(lane_wiki, "--closing")
    assert closing.returncode == 1 and "its '## Why stop' section is empty" in closing.stdout, closing.stdout
    _retrospective_text(lane_wiki, _front() + "# Retrospective\n\n## What worked (v048)\n\nSplash blocks.\n\n"
                        "## Why stop\n\nNo hypothesis left within the lane's budget.\n")
    done = watch_cli(lane_wiki, "--closing")
    assert done.returncode == 0, done.stdout


STOP_KILLED_IN_ITS_COMMIT = textwrap.dedent("""
    import os, signal, sys
    from wikiengine.step import txn as lane_txn
    from wikiengine._cli import main as cli
    real = lane_txn._commit
    def commit(root, paths, message, probe=None):
        if ": stop session" in message:
            os.kill(os.getpid(), signal.SIGKILL)  # the files written, the redo record on disk, no commit
        return real(root, paths, message, probe)
    lane_txn._commit = commit
    raise SystemExit(cli.main(sys.argv[1:]))
""")


def test_row76_a_stop_killed_inside_its_commit_is_finished_by_the_next_stop(lane_wiki):
    start_session(lane_wiki, LANE, parallelism="1")
    retrospective(lane_wiki)
    watch_cli(lane_wiki)
    assert watch_cli(lane_wiki, "--closing").returncode == 0
    killed = subprocess.run([sys.executable, "-c", STOP_KILLED_IN_ITS_COMMIT, "loop", "stop", "--yes"], cwd=lane_wiki,
                            capture_output=True, text=True, timeout=300)
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    assert "status: stopped" in (lane_wiki / "memory/STATE.md").read_text()  # on disk, not in HEAD
    assert "status: running" in git(lane_wiki, "show", "HEAD:memory/STATE.md")
    again = subprocess.run([sys.executable, "-m", "wikiengine", "loop", "stop", "--yes", "--json"], cwd=lane_wiki,
                           capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    done = json.loads(again.stdout)
    assert done["stopped"] and done["final_audit"].startswith("ALL-CLEAR gemma4/tpu session 1")
    assert "status: stopped" in git(lane_wiki, "show", "HEAD:memory/STATE.md")
    assert git(lane_wiki, "log", "-1", "--format=%s").startswith("loop(tpu): stop session 1")
    assert git(lane_wiki, "status", "--porcelain") == ""  # and the tree is clean after the stop


def test_row84_the_tree_is_clean_after_a_legitimate_stop(lane_wiki, tmp_path):
    start_session(lane_wiki, LANE, parallelism="1")
    retrospective(lane_wiki)
    assert watch_cli(lane_wiki).returncode == 0
    assert git(lane_wiki, "status", "--porcelain") == ""  # the cursor never shows as untracked
    assert watch_cli(lane_wiki, "--closing").returncode == 0
    lane_close.stop(lane_wiki, backend=MemoryBackend(tmp_path / "art"), yes=True)
    assert (lane_wiki / LANE.dir / CURSOR).is_file() and (lane_wiki / LANE.dir / STOP_AUTHORIZED).is_file()
    assert git(lane_wiki, "status", "--porcelain") == ""


def test_row84_a_tracked_cursor_is_committed_by_the_stop(lane_wiki, tmp_path):
    """A wiki that grew by hand committed its watcher's cursor: the stop takes it along."""
    (lane_wiki / LANE.dir / CURSOR).write_text("wiki=0\ncode=0\n")
    git(lane_wiki, "add", "-f", f"{LANE.dir}/{CURSOR}")
    git(lane_wiki, "commit", "-qm", "a hand-committed cursor")
    start_session(lane_wiki, LANE, parallelism="1")
    retrospective(lane_wiki)
    watch_cli(lane_wiki)
    assert watch_cli(lane_wiki, "--closing").returncode == 0
    lane_close.stop(lane_wiki, backend=MemoryBackend(tmp_path / "art"), yes=True)
    assert git(lane_wiki, "status", "--porcelain") == ""
    assert git(lane_wiki, "show", f"HEAD:{LANE.dir}/{CURSOR}").startswith("wiki=")


WRITER_KILLED_IN_A_RENAME = textwrap.dedent("""
    import os, signal, sys
    from wikiengine._cli import main as cli
    real = os.replace
    def replace(src, dst, *a, **k):
        if str(dst).endswith(".md") and "experiments" in str(dst):
            os.kill(os.getpid(), signal.SIGKILL)  # the temp file written, never renamed
        return real(src, dst, *a, **k)
    os.replace = replace
    raise SystemExit(cli.main(sys.argv[1:]))
""")


def test_row84_a_killed_writers_temp_files_are_removed_by_the_next_writer(wiki):
    argv = ["exp", "new", "gemma4", "tpu", "--slug", "killed", "--variant", "2B/v5p-16",
            "--proposal", str(proposal(wiki, "killed")), "--track", "1"]
    killed = subprocess.run([sys.executable, "-c", WRITER_KILLED_IN_A_RENAME, *argv], cwd=wiki, capture_output=True,
                            text=True, timeout=300)
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    left = git(wiki, "status", "--porcelain", "--untracked-files=all")
    assert ".tmp-" in left  # what the kill left: a temp file beside the stub
    after = subprocess.run([sys.executable, "-m", "wikiengine", "exp", "new", "gemma4", "tpu", "--slug", "after",
                            "--variant", "2B/v5p-16", "--proposal", str(proposal(wiki, "after")), "--track", "2",
                            "--json"], cwd=wiki, capture_output=True, text=True, timeout=300)
    assert after.returncode == 0, after.stderr
    assert ".tmp-" not in git(wiki, "status", "--porcelain", "--untracked-files=all")
    assert git(wiki, "status", "--porcelain") == ""


def test_row126_the_journal_stays_json_when_a_run_writes_nan():
    text = append_record("", {"op": "complete", "metrics": {"tps": math.nan, "mfu": 41.5, "loss": -math.inf},
                              "samples": [1.0, math.inf]})
    assert "NaN" not in text and "Infinity" not in text
    assert json.loads(text) == {"op": "complete", "metrics": {"tps": None, "mfu": 41.5, "loss": None},
                                "samples": [1.0, None]}
    older = '{"op":"complete","metrics":{"tps":NaN}}\n'  # what an older engine wrote
    assert parse_journal(older) == [{"op": "complete", "metrics": {"tps": None}}]


def test_loop_stop_with_no_session_is_one_line_not_a_traceback(wiki):
    done = subprocess.run([sys.executable, "-m", "wikiengine", "loop", "stop"], cwd=wiki, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 2 and "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert git(wiki, "status", "--porcelain") == ""


# --- a wall clock that jumps (row 125) -------------------------------------------------------


def test_row125_how_long_a_run_ran_is_the_backends_monotonic_measure():
    from wikiengine.step.lane.decide import LaneLimits, _overdue

    now, day = 2_000_000_000.0, 86400.0
    limits = LaneLimits(hung_after_s=1800, ceiling_s=6 * 3600)
    # its start was read while the clock stood 10 days back: the wall clock says 10 days, the run 30 s
    assert _overdue("w", now - 10 * day, None, now, limits, elapsed_s=30.0) is None
    assert _overdue("w", now - 10 * day, now - 10 * day, now, limits, elapsed_s=30.0) is None  # idle <= ran
    assert "past the ceiling" in _overdue("w", now - 60, None, now, limits, elapsed_s=7 * 3600)
    assert "hung after" in _overdue("w", now - 3 * 3600, now - 2 * 3600, now, limits, elapsed_s=3 * 3600)
    # an older runner's record (no monotonic start): judged by the wall clock, as before
    assert "past the ceiling" in _overdue("w", now - 10 * day, None, now, limits)


def test_row125_a_healthy_local_run_is_not_killed_after_the_clock_moved(tmp_path):
    from tests.test_lane_backend_contract import MODEL_DIR, wait_for
    from wikiengine.core.clock import timestamp
    from wikiengine.core.identity import workload_name
    from wikiengine.executors.lane_backend import LaunchSpec
    from wikiengine.executors.lane_local import LocalLaneBackend
    from wikiengine.step.lane.decide import LaneLimits, _overdue

    backend = LocalLaneBackend(tmp_path, MODEL_DIR, "tpu", kill_grace_s=0.5)
    name = workload_name("alice", "gemma4", "tpu", 1, "clock")
    backend.launch(LaunchSpec(name, "v001", "clock", 1, [sys.executable, "-c", "import time; time.sleep(30)"],
                              timeout_s=60))
    try:
        wait_for(lambda: backend.status(name).state == "running", "the run to start")
        status_path = backend.folder / name / "status.json"
        status = json.loads(status_path.read_text())
        status["started"] = "2026-01-01T00:00:00.000Z"  # read while the machine's clock stood months back
        status_path.write_text(json.dumps(status))
        workload = backend.status(name)
        assert workload.elapsed_s is not None and workload.elapsed_s < 60
        now = timestamp("2026-06-01T00:00:00Z")  # the clock set right again
        limits = LaneLimits(hung_after_s=1800, ceiling_s=6 * 3600)
        assert _overdue(name, timestamp(workload.started), None, now, limits, workload.elapsed_s) is None
    finally:
        backend.delete(name)
