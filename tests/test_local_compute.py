"""LocalProcessCompute: detached sessions running a real pinned bootstrap, their status, exit
codes, logs, quota; and two concurrent `wiki step` processes that launch once (row 20)."""

from __future__ import annotations

import datetime as dt
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from relay_process import wait_for
from test_relay_support import CONFIG, make_wiki, pinned_launcher_repo

from wikiengine.executors.compute import ComputeError, LaunchRequest, SessionState
from wikiengine.executors.local_compute import LocalProcessCompute, dir_name
from wikiengine.training.launch import bootstrap_template, pin_bootstrap, render_bootstrap

LAUNCHER = """\
import os, sys, time
seconds, code, message = BOOTSTRAP["session_args"]
print("token seen:", os.environ.get("HF_TOKEN"), flush=True)
time.sleep(float(seconds))
print(message, file=sys.stderr, flush=True)
raise SystemExit(int(code))
"""


def pinned_source(tmp_path: Path) -> tuple[str, str, str]:
    """A git repository whose training/launcher.py sleeps, prints and exits as told."""
    return pinned_launcher_repo(tmp_path / "src", LAUNCHER, "launcher")


def script(tmp_path, seconds=0.2, code=0, message="done", hours="1.5") -> str:
    repo, rev, sha = pinned_source(tmp_path)
    pinned = pin_bootstrap(bootstrap_template(), repo, rev, sha, [str(seconds), str(code), message])
    return render_bootstrap(pinned, hours)


def wait_until_ended(compute, ref, limit=60.0):
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        status = compute.status(ref)
        if status.state.ended:
            return status
        time.sleep(0.1)
    raise AssertionError(f"{ref} did not end")


@pytest.fixture()
def compute(tmp_path):
    return LocalProcessCompute(tmp_path / "state", quota_hours=2.0)


def test_a_session_runs_the_pinned_bootstrap_and_completes(tmp_path, compute, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", "hf_canary_must_not_reach_the_session")
    record = compute.launch(LaunchRequest("me/tiny-session1", script(tmp_path), 600))
    assert record.ref == "me/tiny-session1" and record.version == 1
    assert compute.status(record.ref).state in (SessionState.QUEUED, SessionState.RUNNING, SessionState.COMPLETE)
    status = wait_until_ended(compute, record.ref)
    assert (status.state, status.exit_code, status.failure_message) == (SessionState.COMPLETE, 0, None)
    assert status.started_at <= status.ended_at
    log = compute.log_tail(record.ref)
    assert '"event": "bootstrap"' in log and "token seen: None" in log
    assert compute.list_sessions() == [("me/tiny-session1", SessionState.COMPLETE)]
    quota = compute.quota()
    assert 0 < quota.used_hours < 0.1 and quota.total_hours == 2.0


def test_a_refusal_is_an_error_with_its_last_log_line(tmp_path, compute):
    record = compute.launch(LaunchRequest("tiny-session2", script(tmp_path, code=3, message="refused: no space"), 600))
    status = wait_until_ended(compute, record.ref)
    assert (status.state, status.exit_code, status.failure_message) == (SessionState.ERROR, 3, "refused: no space")


def test_a_tampered_bootstrap_refuses_before_exec(tmp_path, compute):
    lines = script(tmp_path).split("\n")
    at = next(i for i, line in enumerate(lines) if line.startswith("LAUNCHER_SHA = "))
    lines[at] = 'LAUNCHER_SHA = "' + "0" * 64 + '"'  # the launcher's bytes no longer match the pin (row 48)
    text = "\n".join(lines)
    record = compute.launch(LaunchRequest("tiny-session3", text, 600))
    status = wait_until_ended(compute, record.ref)
    assert status.state == SessionState.ERROR and "bootstrap refused" in status.failure_message


def test_row128_a_session_that_ends_while_its_status_is_read_is_complete_not_killed(tmp_path, compute, monkeypatch):
    """A status that found no exit.json, then a supervisor no longer alive, reads the files
    again before it calls the session killed: the whole session can end between the two looks."""
    from wikiengine.executors import local_compute

    record = compute.launch(LaunchRequest("tiny-session9", script(tmp_path), 600))
    exit_file = compute.state_dir / "tiny-session9" / "exit.json"
    real = local_compute.still_running

    def asked_after_the_session_ended(pid, recorded, directory):
        wait_for(lambda: exit_file.exists() and not real(pid, recorded, directory), what="the session to end and exit")
        return real(pid, recorded, directory)

    monkeypatch.setattr(local_compute, "still_running", asked_after_the_session_ended)
    status = compute.status(record.ref)
    assert (status.state, status.exit_code, status.failure_message) == (SessionState.COMPLETE, 0, None)


def test_a_killed_session_is_cancelled_not_running(tmp_path, compute):
    record = compute.launch(LaunchRequest("tiny-session4", script(tmp_path, seconds=30), 600))
    deadline = time.monotonic() + 30
    while compute.status(record.ref).state != SessionState.RUNNING and time.monotonic() < deadline:
        time.sleep(0.1)
    info = json.loads((compute.state_dir / "tiny-session4" / "session.json").read_text())
    os.killpg(info["pid"], signal.SIGKILL)
    status = wait_until_ended(compute, record.ref)
    assert status.state == SessionState.CANCELLED and "killed" in status.failure_message


def test_a_slug_launches_once(tmp_path, compute):
    text = script(tmp_path, seconds=0)
    compute.launch(LaunchRequest("tiny-session5", text, 600))
    with pytest.raises(ComputeError, match="already launched"):
        compute.launch(LaunchRequest("tiny-session5", text, 600))
    assert len(compute.list_sessions()) == 1


def test_unknown_sessions_are_gone_and_bad_slugs_refused(compute):
    assert compute.status("never-launched").state == SessionState.GONE
    for slug in ("../escape", "a/../../b", "", "x\x00y"):
        with pytest.raises(ComputeError):
            dir_name(slug)


def test_from_config_resolves_the_state_dir_under_the_root(tmp_path):
    compute = LocalProcessCompute.from_config({"kind": "local-process", "state_dir": ".wiki/c", "quota_hours": 3,
                                               "quota_reset_at": "2026-09-26T00:00:00Z"}, tmp_path)
    assert compute.state_dir == tmp_path / ".wiki" / "c"
    quota = compute.quota()
    assert quota.total_hours == 3.0 and quota.refresh_at > dt.datetime.now(dt.UTC)
    assert (quota.refresh_at - dt.datetime(2026, 9, 26, tzinfo=dt.UTC)) % dt.timedelta(days=7) == \
        dt.timedelta(0)  # a weekly window from the configured reset instant


def test_row28_item7_the_local_quota_refills_each_window_and_never_resets_in_the_past(tmp_path):
    """Issue 13 item 7: hours spent in an earlier window no longer count; refresh_at is the current
    window's end, so a park ends."""
    now = [dt.datetime(2026, 9, 25, 23, 0, tzinfo=dt.UTC)]
    compute = LocalProcessCompute(tmp_path / "state", quota_hours=2.0,
                                  quota_reset_at=dt.datetime(2026, 9, 19, tzinfo=dt.UTC),
                                  clock=lambda: now[0])
    session = compute.state_dir / "tiny-session1"
    session.mkdir(parents=True)
    (session / "session.json").write_text(json.dumps({"slug": "tiny-session1", "version": 1, "pid": None,
                                                      "submitted_at": "2026-09-25T21:00:00+00:00"}))
    (session / "started.json").write_text(json.dumps({"started_at": "2026-09-25T21:00:00+00:00", "pid": 1}))
    (session / "exit.json").write_text(json.dumps({"exit_code": 0, "ended_at": "2026-09-26T01:00:00+00:00"}))
    before = compute.quota()
    assert before.used_hours == pytest.approx(2.0) and before.left_hours == 0
    assert before.refresh_at == dt.datetime(2026, 9, 26, tzinfo=dt.UTC)
    now[0] = dt.datetime(2026, 9, 26, 2, 0, tzinfo=dt.UTC)  # the reset instant has passed
    after = compute.quota()
    assert after.used_hours == pytest.approx(1.0)  # only the hour after midnight counts in the new window
    assert after.refresh_at == dt.datetime(2026, 10, 3, tzinfo=dt.UTC)


def test_row20_two_concurrent_wiki_step_processes_launch_once(tmp_path):
    root = tmp_path / "repo"
    root.mkdir()
    repo, rev, sha = pinned_source(tmp_path)
    config = dict(CONFIG, compute={"kind": "local-process", "accelerator": "cpu", "state_dir": ".wiki/compute",
                                   "quota_hours": 10, "slug_prefix": "tiny-session"},
                  bootstrap={"repo": repo, "rev": rev, "launcher_sha256": sha, "session_args": ["20", "0", "ok"]})
    make_wiki(root, config)
    go = tmp_path / "go"
    runner = ("import os, sys, time\n"
              "open(sys.argv[3], 'w').close()\n"
              "while not os.path.exists(sys.argv[1]): time.sleep(0.01)\n"
              "from wikiengine._cli.main import main\n"
              "sys.exit(main(['step', '--json', '--root', sys.argv[2]]))\n")
    procs = [subprocess.Popen([sys.executable, "-c", runner, str(go), str(root), str(tmp_path / f"ready-{i}")],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for i in range(2)]
    wait_for(lambda: all((tmp_path / f"ready-{i}").exists() for i in range(2)), limit=60, what="both wakes to wait at the start")
    go.write_text("")
    outs = [p.communicate(timeout=120) for p in procs]
    codes = [p.returncode for p in procs]
    decisions = sorted(json.loads(out)["decision"] for out, _ in outs)
    try:
        assert codes == [0, 0], [err for _, err in outs]
        assert decisions in (["launch", "locked"], ["launch", "running"])
        assert [p.name for p in (root / ".wiki" / "compute").iterdir()] == ["tiny-session1"]
        from wikiengine.model import memory

        assert [(r.job, r.outcome) for r in memory.read_ledger(root)] == [("session-1", "booked")]
    finally:
        LocalProcessCompute(root / ".wiki" / "compute").cancel("tiny-session1")


@pytest.mark.waits
def test_row31_item3_the_local_backend_enforces_the_session_timeout_itself(tmp_path, compute):
    """Issue 13 item 3: past its timeout the supervisor stops the session and records why, as a platform
    does; the wake never has to guess that a live session is dead."""
    record = compute.launch(LaunchRequest("tiny-session6", script(tmp_path, seconds=60), 2))
    status = wait_until_ended(compute, record.ref, limit=40)
    assert status.state == SessionState.CANCELLED and status.failure_message.startswith("session timeout")
    assert (status.ended_at - status.started_at).total_seconds() < 30


def test_item4_a_cancel_while_the_script_starts_is_recorded_not_a_killed_supervisor(tmp_path, compute):
    """The moment the session is seen started (started.json), a cancel is the supervisor's to
    record: before, its SIGTERM handler came only after the script was started, and a cancel in
    between killed the supervisor with no exit record ('died without an exit code (killed)')."""
    record = compute.launch(LaunchRequest("tiny-session8", script(tmp_path, seconds=60), 600))
    started = compute.state_dir / "tiny-session8" / "started.json"
    deadline = time.monotonic() + 60
    while not started.exists() and time.monotonic() < deadline:
        time.sleep(0.001)
    compute.cancel(record.ref)
    status = wait_until_ended(compute, record.ref, limit=30)
    assert status.state == SessionState.CANCELLED and "cancelled" in status.failure_message, status
    wait_for(lambda: not subprocess.run(["pgrep", "-f", str(compute.state_dir / "tiny-session8")],
                                        capture_output=True, text=True).stdout.split(), limit=30,
             what="every process of the session to be gone")


def test_item4_cancel_stops_the_session_and_everything_it_started(tmp_path, compute):
    record = compute.launch(LaunchRequest("tiny-session7", script(tmp_path, seconds=60), 600))
    def started() -> list[str]:  # the session's processes: the supervisor, the launcher, the script
        return subprocess.run(["pgrep", "-f", str(compute.state_dir / "tiny-session7")], capture_output=True,
                              text=True).stdout.split()

    wait_for(lambda: compute.status(record.ref).state == SessionState.RUNNING and len(started()) >= 2,
             limit=60, what="the session to run its script")
    compute.cancel(record.ref)
    status = wait_until_ended(compute, record.ref, limit=30)
    assert status.state == SessionState.CANCELLED and "cancelled" in status.failure_message
    assert (status.version, status.kernel_id) == (1, record.kernel_id)
    wait_for(lambda: started() == [], limit=30, what="every process of the session to be gone")
