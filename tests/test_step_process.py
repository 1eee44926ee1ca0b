"""Issue 13: the holes an adversarial run found, each driven through real `wiki step` processes
against a real store and real local sessions (tests/relay_process.py): tampered stores, killed
and hung sessions, a block while a session trains."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from relay_process import (
    pointer_step,
    process_wiki,
    session_dir,
    session_ended,
    stop_all,
    wait_for,
    wiki_step,
)
from test_relay_support import checkpoint_files, save_checkpoint

from wikiengine.core import clock
from wikiengine.core.errors import ExitCode
from wikiengine.executors.local_store import LocalGitStore
from wikiengine.model import memory
from wikiengine.model.state import RelayState
from wikiengine.training.checkpoint import build_manifest


@pytest.fixture()
def cleanup():
    roots = []
    yield roots.append
    for root in roots:
        stop_all(root)


def run_sessions(root, count):
    """Wake, wait for each session to end, ``count`` times; the last wake's result."""
    for number in range(1, count + 1):
        code, out, err = wiki_step(root)
        assert out.get("decision") == "launch", (out, err)
        wait_for(lambda number=number: session_ended(root, number), what=f"session {number} to end")
    return wiki_step(root)


@pytest.mark.waits
def test_row08_item1_a_rewritten_checkpoint_and_manifest_never_complete(tmp_path, cleanup):
    """Seed section 4: one byte of the last checkpoint's weights changed and the store's manifest rewritten
    to match; the sessions' own logs recorded the original digest, so the run blocks naming checkpoint-24."""
    root = process_wiki(tmp_path, [{}, {}, {}])
    cleanup(root)
    for number in (1, 2, 3):
        code, out, err = wiki_step(root)
        assert out["decision"] == "launch", (out, err)
        wait_for(lambda number=number: session_ended(root, number), what=f"session {number}")
    store = LocalGitStore(root / "store")
    files = checkpoint_files(24)
    files["model.safetensors"] = b"weights 24!"
    files["manifest.json"] = build_manifest({k: v for k, v in files.items() if k != "manifest.json"}, 24)
    save_checkpoint(store, 24, files)
    code, out, err = wiki_step(root)
    assert (code, out["decision"]) == (ExitCode.BLOCKED, "blocked"), (out, err)
    entry = memory.read_errors(root)[0]
    assert entry.kind == "checkpoint_altered" and "checkpoint-24" in entry.evidence
    assert RelayState.read(root).status == "blocked"
    assert not (root / ".wiki" / "published").exists()
    assert memory.read_digests(root)["24"].recorded_by == "session-3"


@pytest.mark.waits
def test_row08_item1_a_healthy_run_completes_with_final_verified_against_the_run(tmp_path, cleanup):
    root = process_wiki(tmp_path, [{}, {}, {}], eval_plan=[])
    cleanup(root)
    code, out, err = run_sessions(root, 3)
    assert (code, out["decision"], out["state"]) == (0, "finish", "complete"), (out, err)
    assert any("verified checkpoints 4, 8, 12, 16, 20, 24" in a for a in out["actions"])
    digests = memory.read_digests(root)
    assert set(digests) == {"4", "8", "12", "16", "20", "24", "final"}
    assert {d.recorded_by for d in digests.values()} == {"session-1", "session-2", "session-3"}


@pytest.mark.parametrize("tamper", ["new_pointer_commit", "branch_rewound"])
@pytest.mark.waits
def test_row02_item2_a_pointer_regression_no_wake_saw_is_an_emergency(tmp_path, cleanup, tamper):
    """Seed section 5: `latest -> 4` committed after an unseen `latest -> 8`, or the branch rewound below
    session 1's exit record: both block, and nothing is launched over them."""
    root = process_wiki(tmp_path, [{}, {}])
    cleanup(root)
    code, out, err = wiki_step(root)
    assert out["decision"] == "launch", (out, err)
    wait_for(lambda: session_ended(root, 1), what="session 1")
    store = LocalGitStore(root / "store")
    if tamper == "new_pointer_commit":
        store.commit_pointer(4, parent=store.head())
    else:
        four = next(c.id for c in store.list_commits(store.head()) if c.title == "latest -> 4")
        subprocess.run(["git", "--git-dir", str(store.path), "update-ref", "refs/heads/main", four], check=True)
    code, out, err = wiki_step(root)
    assert (code, out["decision"]) == (ExitCode.BLOCKED, "blocked"), (out, err)
    entry = memory.read_errors(root)[0]
    assert entry.kind == "pointer_backwards"
    assert ("latest -> 8" in entry.evidence) if tamper == "new_pointer_commit" else ("session-1" in entry.evidence)
    assert not session_dir(root, 2).exists()


@pytest.mark.waits
def test_row31_item3_a_live_session_is_never_launched_over_and_a_quiet_one_is_reported_stalled(tmp_path, cleanup):
    """Seed section 3: session 1 saved twice and then hangs, alive; wakes report it running (stalled once
    its pointer has not moved for 3 save intervals) and never start session 2."""
    root = process_wiki(tmp_path, [{"save_every_s": 0.3, "linger_s": 120}], relay={"stall_after_saves": 3})
    cleanup(root)
    code, out, err = wiki_step(root)
    assert out["decision"] == "launch", (out, err)
    wait_for(lambda: pointer_step(root) == 8, what="checkpoint 8")
    wakes = []

    def stalled() -> bool:  # each wake until one finds the pointer quiet for 3 save intervals
        wakes.append(wiki_step(root))
        code, out, err = wakes[-1]
        assert (code, out["decision"]) == (0, "running"), (out, err)
        return any("stalled" in r for r in out["reasons"])

    wait_for(stalled, limit=60, what="a wake to report session 1 stalled")
    assert not session_dir(root, 2).exists()
    state = RelayState.read(root)  # the past "next check at" of the launch was moved forward
    assert memory.parse_iso(state.next_check_at) >= memory.parse_iso(state.updated_at)


@pytest.mark.waits
def test_item4_a_block_cancels_the_live_session(tmp_path, cleanup):
    """Seed section 5, "stop everything": a loss jump blocks the run while session 1 trains; the block
    cancels it through the backend and says so; it writes no further checkpoint."""
    root = process_wiki(tmp_path, [{"save_every_s": 2.0, "losses": {"5": 4.9, "6": 4.8, "7": 4.7, "8": 4.6}}],
                        session_steps=24)
    cleanup(root)
    code, out, err = wiki_step(root)
    assert out["decision"] == "launch", (out, err)
    wait_for(lambda: pointer_step(root) >= 8, what="checkpoint 8")
    code, out, err = wiki_step(root)
    assert (code, out["decision"]) == (ExitCode.BLOCKED, "blocked"), (out, err)
    assert memory.read_errors(root)[0].kind == "loss_discontinuity"
    assert any("cancelled the live session-1" in a for a in out["actions"]), out["actions"]
    assert any("still running" in r for r in out["reasons"])
    wait_for(lambda: session_ended(root, 1), limit=20, what="session 1 to stop")
    exit_record = json.loads((session_dir(root, 1) / "exit.json").read_text())
    assert exit_record["stopped"].startswith("cancelled")
    assert pointer_step(root) <= 12  # its process is gone (exit.json is written last): nothing more is written
    assert RelayState.read(root).next_check_at is None  # a person decides: no check is scheduled
    code, out, err = wiki_step(root)
    assert out["decision"] == "blocked" and any("session-1 has ended" in r for r in out["reasons"])
    assert any("wiki unblock" in r for r in out["reasons"])


@pytest.mark.waits
def test_row27_item8_a_corrupt_checkpoint_blocks_after_one_refusal(tmp_path, cleanup):
    """Seed section 3: a refusal that is not transient (the checkpoint fails verification) blocks at once,
    as corruption; before, the run launched on it twice and then blocked as a crash loop."""
    root = process_wiki(tmp_path, [{}, {}, {}])
    cleanup(root)
    code, out, err = wiki_step(root)
    wait_for(lambda: session_ended(root, 1), what="session 1")
    store = LocalGitStore(root / "store")
    files = checkpoint_files(8)
    files["optimizer.pt"] = b"flipped"  # corrupt weights under a correct manifest: only a full read sees it
    save_checkpoint(store, 8, files)
    code, out, err = wiki_step(root)
    assert out["decision"] == "launch", (out, err)
    wait_for(lambda: session_ended(root, 2), what="session 2")
    code, out, err = wiki_step(root)
    assert (code, out["decision"]) == (ExitCode.BLOCKED, "blocked"), (out, err)
    entry = memory.read_errors(root)[0]
    assert entry.kind == "checkpoint_corrupt" and "optimizer.pt" in entry.evidence
    assert not session_dir(root, 3).exists()
    sessions = memory.read_exit_records(root)
    assert sessions["session-2"]["exit"].startswith("checkpoint corrupt") and "{" not in sessions["session-2"]["exit"]


@pytest.mark.waits
def test_row27_item8_a_kill_after_real_progress_is_not_a_fast_exit(tmp_path, cleanup):
    """Two sessions killed within two minutes, each after committing a checkpoint: they ran, so this is
    not a crash loop; the third wake launches again from the pointer."""
    root = process_wiki(tmp_path, [{"until": 4, "linger_s": 60}, {"until": 8, "linger_s": 60}, {}])
    cleanup(root)
    for number, step in ((1, 4), (2, 8)):
        code, out, err = wiki_step(root)
        assert out["decision"] == "launch", (out, err)
        wait_for(lambda step=step: pointer_step(root) == step, what=f"checkpoint {step}")
        pid = json.loads((session_dir(root, number) / "session.json").read_text())["pid"]
        os.killpg(pid, signal.SIGKILL)
        wait_for(lambda pid=pid: _dead(pid), what="the kill")
    code, out, err = wiki_step(root)
    assert out["decision"] == "launch", (out, err)
    assert memory.read_errors(root) == []


def _dead(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    stat = open(f"/proc/{pid}/stat").read()
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


@pytest.mark.waits
def test_row28_item7_a_park_on_the_default_ends_when_the_local_quota_window_turns(tmp_path, cleanup):
    """Issue 13 item 7: the local backend's quota refills each window; a park whose reset instant has
    passed reads the quota again and launches (before, the quota never refilled and the past reset
    instant was kept and repeated forever)."""
    root = process_wiki(tmp_path, [{"save_every_s": 1.5}, {}],
                        compute={"quota_hours": 0.0005, "quota_window_hours": 0.003},  # 1.8 s per 10.8 s
                        quota={"session_hours": 0.0004, "reserve_hours": 0.0})  # a session needs 1.44 s
    cleanup(root)
    from wikiengine.executors.local_compute import LocalProcessCompute

    window = LocalProcessCompute(root / ".wiki" / "compute", quota_window_hours=0.003)

    def window_left() -> float:
        _start, end = window.window(memory.parse_iso(clock.utc_iso(_now())))
        return (end - _now()).total_seconds()

    # session 1 must run and be parked inside one window: wait for a window with 7 s left (on a
    # loaded machine the window can end between reading it and the sleep)
    while (left := window_left()) < 7:
        time.sleep(max(0.0, left) + 0.1)
    code, out, err = wiki_step(root)
    assert out["decision"] == "launch", (out, err)
    wait_for(lambda: session_ended(root, 1), what="session 1")
    code, out, err = wiki_step(root)
    assert out["decision"] == "park", (out, err)
    reset = memory.parse_iso(RelayState.read(root).reset_at)
    assert 0 < (reset - _now()).total_seconds() < 15  # the end of this window: never past, never days away
    time.sleep(max(0.0, (reset - _now()).total_seconds()) + 1.0)
    code, out, err = wiki_step(root)
    assert out["decision"] == "launch", (out, err)
    assert RelayState.read(root).status == "running"


@pytest.mark.waits
def test_row38_item6_an_edited_ledger_row_blocks_even_after_the_trusted_commit_is_moved(tmp_path, cleanup):
    """Edit an old ledger row, then in a second commit move `trusted_commit` in STATE.md past the edit: the
    row is checked against the commit that introduced it, so the next real wake blocks and launches nothing."""
    import re

    from test_relay_support import git

    root = process_wiki(tmp_path, [{}, {}])
    cleanup(root)
    code, out, err = wiki_step(root)
    assert out["decision"] == "launch", (out, err)
    wait_for(lambda: session_ended(root, 1), what="session 1")
    ledger = root / "memory" / "QUOTA.md"
    ledger.write_text(ledger.read_text().replace("| 10.00 |", "| 99.00 |", 1))
    git(root, "commit", "--quiet", "--no-verify", "-am", "tidy the ledger")
    edit = git(root, "rev-parse", "HEAD").strip()
    state = root / "memory" / "STATE.md"
    state.write_text(re.sub(r"trusted_commit: \S+", f"trusted_commit: {edit}", state.read_text()))
    git(root, "commit", "--quiet", "--no-verify", "-am", "move the trusted commit")
    code, out, err = wiki_step(root)
    assert (code, out["decision"]) == (ExitCode.BLOCKED, "blocked"), (out, err)
    entry = memory.read_errors(root)[0]
    assert entry.kind == "immutable_page_edited" and "QUOTA.md: row 1" in entry.evidence and edit[:12] in entry.evidence
    assert not session_dir(root, 2).exists()


def _now():
    import datetime as dt

    return dt.datetime.now(dt.UTC)


@pytest.mark.parametrize("block, key", [("store", "token"), ("compute", "key")])
def test_row43_item10_a_secret_key_in_a_backend_block_is_bad_input(tmp_path, block, key):
    """`token:` in the hub store block or `key:` in the kaggle block: exit 2 and one line naming the key."""
    from relay_process import env
    from test_relay_support import CONFIG, make_wiki

    root = tmp_path / "repo"
    root.mkdir()
    backend = ({"kind": "hub", "repo_id": "me/ckpt", key: "hf_x"} if block == "store"
               else {"kind": "kaggle", "owner": "me", key: "k"})
    make_wiki(root, dict(CONFIG, **{block: backend}))
    done = subprocess.run([sys.executable, "-m", "wikiengine", "step", "--root", str(root)], capture_output=True,
                          text=True, env=env())
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    assert f"'{key}'" in lines[0] and "Traceback" not in done.stderr
