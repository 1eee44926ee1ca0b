"""`wiki step` end to end on a real git wiki and a real LocalGitStore, with a fake compute
backend: every act, its memory commits, and the faults of RELIABILITY.md."""

from __future__ import annotations

import base64
import dataclasses
import datetime as dt
import json
import os
import subprocess

import pytest
from relay_process import wait_for
from test_relay_support import (
    CONFIG,
    Clock,
    FakeCompute,
    checkpoint_event,
    checkpoint_files,
    git,
    make_wiki,
    save_checkpoint,
    save_final,
    stale_lock,
)

from wikiengine.core.errors import ExitCode, WikiError
from wikiengine.executors.compute import SessionState
from wikiengine.model import memory
from wikiengine.model.state import RelayState
from wikiengine.step.engine import lock_path
from wikiengine.step.relay import act
from wikiengine.step.relay.wake import run_step
from wikiengine.training.checkpoint import build_manifest


class Killed(BaseException):
    """A SIGKILL stand-in: nothing catches it, nothing after it runs."""


def killed_before_recording(wiki, monkeypatch) -> None:
    """One wake launches and is killed before it records the launch (the act's record step)."""

    def killed_record(*args, **kwargs):
        raise Killed()

    monkeypatch.setattr(act, "record", killed_record)
    with pytest.raises(Killed):
        step(wiki)
    monkeypatch.undo()


@pytest.fixture()
def wiki(tmp_path):
    root = tmp_path / "wiki-repo"
    root.mkdir()
    store = make_wiki(root)
    clock = Clock()
    compute = FakeCompute(clock=clock)
    return root, store, compute, clock


def step(wiki, **kwargs):
    root, store, compute, clock = wiki
    return run_step(root, clock=clock, store=store, compute=compute, **kwargs)


def commits(root):
    return git(root, "log", "--format=%s").splitlines()


def test_first_wake_books_then_launches_then_records(wiki):
    root, store, compute, clock = wiki
    seen_at_launch = {}

    def check_ledger(request):  # Q: the booked row is committed before the backend is asked
        seen_at_launch["quota"] = git(root, "show", "HEAD:memory/QUOTA.md")
        seen_at_launch["state"] = git(root, "show", "HEAD:memory/STATE.md")

    compute.on_launch = check_ledger
    result = step(wiki)
    assert result.decision == "launch" and result.exit_code == 0
    assert "| 1 | 2026-09-21T03:00:00Z | session-1 | 20.00 | none: 8 steps of real training | booked |" in \
        seen_at_launch["quota"]
    assert "job: session-1" in seen_at_launch["state"]  # the claim
    assert [r.slug for r in compute.launches] == ["tiny-session1"]
    assert 'os.environ["QUOTA_LEFT_HOURS"] = "20.00"' in compute.launches[0].script_text
    assert commits(root)[:2] == ["step: launch session 1 from latest -> 0",
                                 "step: book session-1 (ledger row 1) before launch"]
    state = RelayState.read(root)
    assert (state.session, state.claim, state.status) == (1, None, "running")
    assert state.next_check_at == "2026-09-21T03:01:00Z"
    (asset,) = memory.read_assets(root)
    assert (asset.job, asset.ref, asset.accelerator) == ("session-1", "tiny-session1", "gpu")


def test_row33_a_replayed_wake_changes_nothing(wiki):
    root, store, compute, clock = wiki
    step(wiki)
    before = commits(root)
    files = {p: p.read_bytes() for p in (root / "memory").iterdir()}
    for _ in range(2):
        result = step(wiki)
        assert result.decision == "running"
    assert commits(root) == before
    assert {p: p.read_bytes() for p in (root / "memory").iterdir()} == files
    assert len(compute.launches) == 1


def test_next_session_after_the_boundary_with_a_spent_row(wiki):
    root, store, compute, clock = wiki
    step(wiki)
    save_checkpoint(store, 4)
    save_checkpoint(store, 8)
    compute.end("tiny-session1")
    clock.advance(hours=1)
    result = step(wiki)
    assert result.decision == "launch" and result.step == 8
    ledger = memory.read_ledger(root)
    assert [(r.job, r.outcome) for r in ledger] == [("session-1", "booked"), ("session-1", "spent"),
                                                   ("session-2", "booked")]
    assert commits(root)[0] == "step: launch session 2 from latest -> 8"
    assert RelayState.read(root).high_water_step == 8


def test_row22_killed_after_booking_before_launch_then_rerun_launches_once(wiki):
    root, store, compute, clock = wiki

    def kill(request):
        raise Killed()

    compute.on_launch = kill
    with pytest.raises(Killed):
        step(wiki)
    assert compute.launches == []
    assert RelayState.read(root).claim.job == "session-1"
    compute.on_launch = None
    result = step(wiki)  # inside the claim TTL: the launch may still show up
    assert result.decision == "wait" and compute.launches == []
    clock.advance(minutes=6)
    result = step(wiki)
    assert result.decision == "launch"
    assert len(compute.launches) == 1
    ledger = memory.read_ledger(root)
    assert [(r.job, r.outcome) for r in ledger] == [("session-1", "booked"), ("session-1", "unspent"),
                                                   ("session-1", "booked")]
    state = RelayState.read(root)
    assert state.claim is None and state.session == 1


def test_row22_killed_after_launch_before_recording_adopts_instead_of_relaunching(wiki, monkeypatch):
    root, store, compute, clock = wiki
    killed_before_recording(wiki, monkeypatch)
    assert len(compute.launches) == 1 and memory.read_assets(root) == []
    clock.advance(minutes=10)
    result = step(wiki)
    assert result.decision == "adopt"
    assert len(compute.launches) == 1
    assert [a.ref for a in memory.read_assets(root)] == ["tiny-session1"]
    assert RelayState.read(root).claim is None
    assert step(wiki).decision == "running" and len(compute.launches) == 1


def test_row22_killed_before_the_booking_commit_recovers_and_launches_once(wiki, monkeypatch):
    root, store, compute, clock = wiki
    import wikiengine.core.git as git_commit

    real = git_commit.commit_paths

    def killed_commit(*args, **kwargs):
        raise Killed()

    monkeypatch.setattr(git_commit, "commit_paths", killed_commit)
    with pytest.raises(Killed):
        step(wiki)  # the ledger row and the claim are written, not committed
    monkeypatch.setattr(git_commit, "commit_paths", real)
    assert compute.launches == []
    result = step(wiki)
    assert result.decision == "launch" and "recovered from a wake that died mid-act" in result.reasons[0]
    assert len(compute.launches) == 1
    assert [(r.job, r.outcome) for r in memory.read_ledger(root)] == [("session-1", "booked")]


def test_row39_all_memory_of_a_wake_is_committed_or_none(wiki):
    root, store, compute, clock = wiki
    step(wiki)
    assert git(root, "status", "--porcelain", "memory") == ""
    from wikiengine.step.relay.wake import RELAY_KEY
    from wikiengine.step.txn import record_path

    assert not record_path(root, RELAY_KEY).exists()  # the wake's undo record is closed with its last commit


def test_row22_a_lost_launch_answer_keeps_the_claim_and_the_next_wake_adopts(wiki):
    from wikiengine.executors.compute import ComputeUnavailableError

    root, store, compute, clock = wiki
    real_launch = compute.launch

    def landed_then_dropped(request):
        real_launch(request)
        raise ComputeUnavailableError("the connection dropped after the push")

    compute.launch = landed_then_dropped
    result = step(wiki)
    assert result.exit_code == 0 and "outcome unknown" in result.actions[-1]
    assert RelayState.read(root).claim.job == "session-1" and memory.read_assets(root) == []
    compute.launch = real_launch
    clock.advance(minutes=20)  # past the claim TTL: only the backend's answer matters now
    assert step(wiki).decision == "adopt"
    assert len(compute.launches) == 1 and [a.job for a in memory.read_assets(root)] == ["session-1"]


def test_row24_unknown_status_never_launches(wiki):
    root, store, compute, clock = wiki
    step(wiki)
    compute.status_fails = True
    clock.advance(hours=20)
    assert step(wiki).decision == "wait"
    assert len(compute.launches) == 1


def test_row25_capacity_refusal_closes_the_row_unspent(wiki):
    root, store, compute, clock = wiki
    compute.refuse_capacity = True
    result = step(wiki)
    assert compute.launches == []
    assert [r.outcome for r in memory.read_ledger(root)] == ["booked", "unspent"]
    assert "capacity" in commits(root)[0]
    assert RelayState.read(root).claim is None and result.exit_code == 0


def test_row28_park_writes_resume_step_reset_and_next_command(wiki):
    root, store, compute, clock = wiki
    compute.quota_left = 1.0
    result = step(wiki)
    assert result.decision == "park" and compute.launches == []
    state = RelayState.read(root)
    assert (state.status, state.resume_step, state.reset_at, state.next_command) == (
        "parked", 0, "2026-09-26T00:00:00Z", "wiki step")
    assert memory.read_ledger(root) == []
    before = commits(root)
    assert step(wiki).decision == "park" and commits(root) == before  # idempotent
    compute.quota_left = 30.0
    assert step(wiki).decision == "launch"
    state = RelayState.read(root)
    assert state.status == "running" and state.resume_step is None


def test_row29_quota_unreadable_books_nothing(wiki):
    root, store, compute, clock = wiki
    compute.quota_left = None
    assert step(wiki).decision == "wait"
    assert memory.read_ledger(root) == [] and compute.launches == []


@pytest.mark.parametrize("fault", ["enospc", "commit_rejected"])
def test_row30_a_failed_booking_starts_no_job(wiki, monkeypatch, fault):
    import wikiengine.core.git as git_commit

    root, store, compute, clock = wiki

    def no_space(*args, **kwargs):
        raise OSError(28, "No space left on device")

    def rejected(*args, **kwargs):
        raise git_commit.GitCommitError("git commit failed: hook declined")

    if fault == "enospc":
        monkeypatch.setattr(memory, "append_ledger_row", no_space)
    else:
        monkeypatch.setattr(git_commit, "commit_paths", rejected)
    with pytest.raises((OSError, WikiError)):
        step(wiki)
    assert compute.launches == []
    monkeypatch.undo()
    result = step(wiki)  # the next wake recovers the half-written memory and books again
    assert result.decision == "launch" and len(compute.launches) == 1
    assert [(r.job, r.outcome) for r in memory.read_ledger(root)] == [("session-1", "booked")]


def test_row31_a_session_killed_short_of_its_boundary_resumes_from_the_pointer(wiki):
    root, store, compute, clock = wiki
    step(wiki)
    save_checkpoint(store, 4)
    save_checkpoint(store, 8, pointer=False)  # killed mid-save: checkpoint 8 committed, pointer not moved
    compute.end("tiny-session1", SessionState.CANCELLED, failure="killed")
    clock.advance(hours=12)
    result = step(wiki)
    assert result.decision == "launch" and result.step == 4
    assert any("8 steps" not in a and "session-2" in a for a in result.actions)
    state = RelayState.read(root)
    assert state.last_seen_step == 4 and state.high_water_step == 4


def test_fault_a_session_killed_mid_save_loses_nothing(wiki):
    """Killed between the checkpoint commit and the pointer commit: the last good checkpoint,
    the ledger and memory are intact; the next session resumes from the pointer (row 1)."""
    from wikiengine.training.checkpoint import read_verified_from_store

    root, store, compute, clock = wiki
    step(wiki)
    save_checkpoint(store, 4)
    ledger_before = memory.memory_path(root, "QUOTA.md").read_text()
    save_checkpoint(store, 8, pointer=False)
    compute.end("tiny-session1", SessionState.CANCELLED, failure="killed")
    result = step(wiki)
    assert result.decision == "launch" and result.step == 4 and not memory.read_errors(root)
    assert read_verified_from_store(store, 4, store.head())["model.safetensors"] == b"weights 4"
    assert memory.memory_path(root, "QUOTA.md").read_text().startswith(ledger_before)
    assert "ignored" in " ".join(result.reasons)


def test_row27_two_fast_exits_for_the_same_reason_block(wiki):
    root, store, compute, clock = wiki
    step(wiki)
    start = clock.now
    compute.end("tiny-session1", SessionState.ERROR, at=start + dt.timedelta(seconds=50),
                failure="refused: not enough free space")
    clock.advance(minutes=5)
    assert step(wiki).decision == "launch"
    compute.end("tiny-session2", SessionState.ERROR, at=clock.now + dt.timedelta(seconds=40),
                failure="refused: not enough free space")
    clock.advance(minutes=5)
    result = step(wiki)
    assert result.decision == "blocked" and result.exit_code == ExitCode.BLOCKED
    assert len(compute.launches) == 2
    (entry,) = memory.read_errors(root)
    assert entry.kind == "crash_loop" and "free space" in entry.evidence


@pytest.mark.parametrize("tamper, kind", [
    ("pointer_backwards", "pointer_backwards"),
    ("cursor_sha", "cursor_hash_changed"),
    ("tokens", "token_arithmetic"),
])
def test_fault_tampered_store_blocks_with_evidence_and_no_launch(wiki, tmp_path, tamper, kind):
    root, store, compute, clock = wiki
    step(wiki)
    for s in (4, 8):
        save_checkpoint(store, s)
    compute.end("tiny-session1")
    clock.advance(hours=1)
    step(wiki)  # session 2 launched from 8
    for s in (12, 16):
        save_checkpoint(store, s)
    assert step(wiki).decision == "running"  # the wake sees latest -> 16 while session 2 trains
    assert RelayState.read(root).high_water_step == 16
    compute.end("tiny-session2")
    if tamper == "pointer_backwards":
        store.commit_pointer(12, parent=store.head())
    elif tamper == "cursor_sha":
        save_checkpoint(store, 20, checkpoint_files(20, cursor={"shuffle_perm_sha": "c6f617b96f502d97"}))
    else:
        save_checkpoint(store, 20, checkpoint_files(20, cursor={"tokens_consumed": 20 * 512 + 1}))
    clock.advance(hours=1)
    result = step(wiki)
    assert result.decision == "blocked" and result.exit_code == ExitCode.BLOCKED
    assert len(compute.launches) == 2
    entry = memory.read_errors(root)[0]
    assert entry.kind == kind and entry.evidence
    state = RelayState.read(root)
    assert state.status == "blocked" and state.blocker.startswith(kind)
    assert commits(root)[0].startswith("step: blocked at latest -> ")
    # stays blocked, launches nothing, writes nothing, until a person clears it
    before = commits(root)
    assert step(wiki).decision == "blocked" and commits(root) == before and len(compute.launches) == 2


def _pointer_moved_back_from_8_to_4(wiki) -> None:
    """Session 1 saves 4 and 8, then the pointer is moved back to 4 and the session ends."""
    root, store, compute, clock = wiki
    for s in (4, 8):
        save_checkpoint(store, s)
    step(wiki)
    store.commit_pointer(4, parent=store.head())
    compute.end("tiny-session1")


def test_row2_pointer_backwards_evidence_names_both_steps(wiki):
    root, store, compute, clock = wiki
    _pointer_moved_back_from_8_to_4(wiki)
    result = step(wiki)
    assert result.decision == "blocked"
    entry = memory.read_errors(root)[0]
    assert entry.kind == "pointer_backwards"
    assert "pointer step 4" in entry.evidence and "high-water step 8" in entry.evidence
    assert RelayState.read(root).high_water_step == 8


def test_row4_history_rewritten_is_an_emergency(wiki, tmp_path):
    root, store, compute, clock = wiki
    save_checkpoint(store, 4)
    step(wiki)
    seen = RelayState.read(root).store_head
    # rewrite: move main to a new root commit carrying the same files
    tree = subprocess.run(["git", "--git-dir", str(store.path), "rev-parse", f"{seen}^{{tree}}"], capture_output=True,
                          text=True, check=True).stdout.strip()
    env = dict(os.environ, GIT_AUTHOR_NAME="x", GIT_AUTHOR_EMAIL="x@x", GIT_COMMITTER_NAME="x",
               GIT_COMMITTER_EMAIL="x@x")
    squashed = subprocess.run(["git", "--git-dir", str(store.path), "commit-tree", tree, "-m", "latest -> 4"],
                              capture_output=True, text=True, check=True, env=env).stdout.strip()
    subprocess.run(["git", "--git-dir", str(store.path), "update-ref", "refs/heads/main", squashed], check=True)
    compute.end("tiny-session1")
    result = step(wiki)
    assert result.decision == "blocked"
    assert "history_rewritten" in [e.kind for e in memory.read_errors(root)]


def _blocked_then_pointer_restored(wiki) -> None:
    """The pointer moved back from 8 to 4: the wake blocks; then a person restores it to 8 by hand."""
    root, store, compute, clock = wiki
    _pointer_moved_back_from_8_to_4(wiki)
    assert step(wiki).decision == "blocked"
    store.commit_pointer(8, parent=store.head())


def test_unblock_records_the_reason_and_the_next_wake_rechecks(wiki, monkeypatch):
    root, store, compute, clock = wiki
    from wikiengine._cli import unblock

    _blocked_then_pointer_restored(wiki)
    args = type("A", (), {"reason": "pointer restored to 8 by hand", "root": root, "json": False})()
    assert unblock.run(args) == 0
    assert RelayState.read(root).status == "running"
    assert memory.read_errors(root)[0].kind == "unblocked"
    assert git(root, "log", "-1", "--format=%s").startswith("unblock: pointer restored")
    assert step(wiki).decision == "launch"


def test_unblock_json_says_what_was_cleared(wiki, capsys):
    import json

    from wikiengine._cli.main import main

    root, store, compute, clock = wiki
    _blocked_then_pointer_restored(wiki)
    blocker = RelayState.read(root).blocker
    assert blocker
    capsys.readouterr()
    assert main(["unblock", "--reason", "pointer restored", "--json", "--root", str(root)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out == {"run": "tiny", "status": "running", "was": blocker, "reason": "pointer restored"}


def test_unblock_refuses_a_run_that_is_not_blocked(wiki):
    root, *_ = wiki
    from wikiengine._cli import unblock

    with pytest.raises(WikiError, match="not blocked"):
        unblock.run(type("A", (), {"reason": "x", "root": root, "json": False})())


def test_dry_run_decides_and_acts_on_nothing(wiki):
    root, store, compute, clock = wiki
    before = commits(root)
    result = step(wiki, dry_run=True)
    assert result.decision == "launch"
    assert result.actions and all(a.startswith("(dry run)") for a in result.actions)
    assert compute.launches == [] and commits(root) == before and memory.read_ledger(root) == []
    assert set(result.as_json()) == {"mode", "state", "decision", "decisions", "actions", "needs", "next_wake_s", "commits", "exit_code", "step", "reasons"}  # the one shape of every mode, and the relay's own facts


def test_row20_a_held_lock_makes_the_second_wake_exit_locked(wiki):
    root, store, compute, clock = wiki
    holder = subprocess.Popen(
        ["python3", "-c", "import sys,time,fcntl; f=open(sys.argv[1],'a'); fcntl.flock(f, fcntl.LOCK_EX); "
         "print('held', flush=True); time.sleep(30)", str(lock_path(root))], stdout=subprocess.PIPE,
        text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        result = step(wiki)
        assert result.decision == "locked" and result.exit_code == 0
        assert compute.launches == []
    finally:
        holder.kill()
        holder.wait()
    assert step(wiki).decision == "launch"
    assert lock_path(root).parent == root / ".git"  # the lock never lands in the user's work tree
    assert "wiki-step.lock" not in git(root, "status", "--porcelain", "--ignored")


@pytest.mark.parametrize("name", ["index.lock", "HEAD.lock", "refs/heads/main.lock"])
def test_row127_a_lock_a_killed_git_left_is_removed_when_no_git_runs(wiki, name):
    root, store, compute, clock = wiki
    stale_lock(root / ".git" / name)
    assert step(wiki).decision == "launch"  # the wake commits as if the killed git had never run
    assert not (root / ".git" / name).exists()


def test_row127_a_lock_a_live_git_holds_is_named_not_removed(wiki, monkeypatch):
    import wikiengine.core.git as core_git

    root, store, compute, clock = wiki
    lock = root / ".git" / "index.lock"
    stale_lock(lock)
    holder = subprocess.Popen(["git", "hash-object", "--stdin"], cwd=root, stdin=subprocess.PIPE,
                              stdout=subprocess.DEVNULL)  # a git alive in the repository (waits on its input)
    try:
        wait_for(lambda: core_git.git_processes(root), 10, "the git to start")
        monkeypatch.setattr(core_git, "LOCK_WAIT_S", 0.3)
        with pytest.raises(WikiError, match=r"index\.lock is held: a git process is running"):
            step(wiki)
    finally:
        holder.communicate(b"")
    assert compute.launches == []
    assert lock.exists()  # never removed while a git runs


def test_row36_dirty_memory_is_refused_and_strays_are_never_committed(wiki):
    root, store, compute, clock = wiki
    (root / "stray.txt").write_text("not ours")
    (root / "wiki" / "notes.md").write_text("# a draft\n")
    git(root, "add", "wiki/notes.md")  # even a staged stray stays out of the memory commit
    step(wiki)
    tracked = git(root, "ls-files").split()
    assert "stray.txt" not in tracked
    assert "wiki/notes.md" not in git(root, "show", "--name-only", "--format=", "HEAD~1", "HEAD").split()
    path = root / "memory" / "QUOTA.md"
    path.write_text(path.read_text() + "| 2 | 2026-09-21T03:00:00Z | session-9 | 1 | none | booked |\n")
    with pytest.raises(WikiError, match="memory/QUOTA.md has uncommitted changes"):
        step(wiki)


def test_row37_an_unresolved_merge_is_refused(wiki):
    root, store, compute, clock = wiki
    git(root, "checkout", "--quiet", "-b", "other")
    (root / "wiki" / "runs" / "program.md").write_text("# Runs\n\nother side\n")
    git(root, "commit", "--quiet", "-am", "other")
    git(root, "checkout", "--quiet", "main")
    (root / "wiki" / "runs" / "program.md").write_text("# Runs\n\nmain side\n")
    git(root, "commit", "--quiet", "-am", "main")
    subprocess.run(["git", "merge", "other"], cwd=root, capture_output=True)
    with pytest.raises(WikiError, match="merge"):
        step(wiki)
    assert compute.launches == []


def _an_edit_without_hooks_blocks(wiki, message: str) -> str:
    """Commit the edit in the work tree with ``--no-verify`` and end session 1: the next wake
    blocks on an immutable page edited; the evidence it wrote."""
    root, store, compute, clock = wiki
    git(root, "commit", "--quiet", "--no-verify", "-am", message)
    compute.end("tiny-session1")
    assert step(wiki).decision == "blocked"
    error = memory.read_errors(root)[0]
    assert error.kind == "immutable_page_edited"
    return error.evidence


def test_row38_a_verdict_page_edited_without_hooks_blocks(wiki):
    root, store, compute, clock = wiki
    page = root / "wiki" / "experiments" / "demo_autoresearch_optimization" / "tpu" / "2026-06-01-v001-base.md"
    page.parent.mkdir(parents=True)
    page.write_text("---\ncreated: 2026-06-01\nstatus: refuted\n---\n# v001\n\n## Results\n\nslower\n")
    git(root, "add", "wiki/experiments")
    git(root, "commit", "--quiet", "-m", "v001 verdict")
    step(wiki)  # trusted commit recorded
    assert RelayState.read(root).trusted_commit
    page.write_text(page.read_text().replace("slower", "faster"))
    evidence = _an_edit_without_hooks_blocks(wiki, "edit a closed page")
    assert "2026-06-01-v001-base.md" in evidence
    assert "EXP007" in evidence


def test_row38_a_ledger_row_edited_without_hooks_blocks(wiki):
    root, store, compute, clock = wiki
    step(wiki)  # books and launches session-1; its commit becomes the trusted one
    assert RelayState.read(root).trusted_commit
    ledger = root / "memory" / "QUOTA.md"
    booked = ledger.read_text()
    assert "| 1 |" in booked
    ledger.write_text(booked.replace("| session-1 |", "| session-9 |", 1))
    assert "MEM002" in _an_edit_without_hooks_blocks(wiki, "rewrite a ledger row")


CANARIES = {"HF_TOKEN": "hf_CanaryToken1234567890abcdef", "KAGGLE_KEY": "kagglecanary0123456789abcdef"}


def test_row46_canary_secrets_never_reach_memory_or_commits(wiki, monkeypatch):
    root, store, compute, clock = wiki
    for name, value in CANARIES.items():
        monkeypatch.setenv(name, value)
    step(wiki)
    save_checkpoint(store, 4)
    store.commit_pointer(4, parent=store.head())
    compute.end("tiny-session1", SessionState.ERROR, failure=f"crash with token {CANARIES['HF_TOKEN']}")
    clock.advance(hours=1)
    step(wiki)
    history = git(root, "log", "-p", "--all")
    everything = history + "".join(p.read_text() for p in (root / "memory").iterdir())
    for value in CANARIES.values():
        for form in (value, base64.b64encode(value.encode()).decode()):
            assert form not in everything


def test_row46_a_secret_in_a_crash_loop_reason_is_redacted_from_errors(wiki, monkeypatch):
    root, store, compute, clock = wiki
    monkeypatch.setenv("HF_TOKEN", CANARIES["HF_TOKEN"])
    failure = f"refused: GET https://huggingface.co?token={CANARIES['HF_TOKEN']} failed"
    step(wiki)
    compute.end("tiny-session1", SessionState.ERROR, at=clock.now + dt.timedelta(seconds=30), failure=failure)
    clock.advance(minutes=5)
    step(wiki)
    compute.end("tiny-session2", SessionState.ERROR, at=clock.now + dt.timedelta(seconds=30), failure=failure)
    clock.advance(minutes=5)
    assert step(wiki).decision == "blocked"
    entry = memory.read_errors(root)[0]
    assert entry.kind == "crash_loop" and "<redacted>" in entry.evidence
    everything = git(root, "log", "-p") + "".join(p.read_text() for p in (root / "memory").iterdir())
    assert CANARIES["HF_TOKEN"] not in everything


def test_row46_a_secret_in_memory_refuses_the_commit(wiki, monkeypatch):
    from wikiengine.core.git import GitCommitError, commit_paths

    root, *_ = wiki
    monkeypatch.setenv("KAGGLE_KEY", CANARIES["KAGGLE_KEY"])
    path = root / "memory" / "STATE.md"
    path.write_text(path.read_text() + f"\nkey {CANARIES['KAGGLE_KEY']}\n")
    with pytest.raises(GitCommitError, match="secret"):
        commit_paths(root, ["memory/STATE.md"], "step: x")
    assert CANARIES["KAGGLE_KEY"] not in git(root, "log", "-p")


def test_json_summary_through_the_cli(wiki, monkeypatch, capsys):
    """`wiki step --json --dry-run` through the real CLI against the run's own backends."""
    from wikiengine._cli.main import main

    root, *_ = wiki
    program = root / "wiki" / "runs" / "tiny" / "program.md"
    config = dict(CONFIG, compute=dict(CONFIG["compute"], state_dir=".wiki/compute", quota_hours=10))
    import yaml

    program.write_text(f"# tiny\n\n## Config\n\n```yaml\n{yaml.safe_dump(config, sort_keys=False)}```\n")
    git(root, "commit", "--quiet", "-am", "local compute")
    code = main(["step", "--json", "--dry-run", "--root", str(root)])
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    assert out["decision"] == "launch" and out["state"] == "running" and out["step"] is None
    assert out["actions"][0].startswith("(dry run) book ledger row for session-1")


def test_bad_program_config_is_one_line_exit_2(wiki, capsys):
    from wikiengine._cli.main import main

    root, *_ = wiki
    program = root / "wiki" / "runs" / "tiny" / "program.md"
    program.write_text(program.read_text().replace("max_steps: 24", "max_steps: -1"))
    code = main(["step", "--root", str(root)])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "program.md" in err and "max_steps" in err


def test_memory_stays_lint_clean_across_acts(wiki):
    """Memory after launches, a spent row, an unspent claim and an emergency passes `wiki lint` (M)."""
    from wikiengine.lint.runner import lint

    root, store, compute, clock = wiki
    step(wiki)
    for s in (4, 8):
        save_checkpoint(store, s)
    compute.end("tiny-session1")
    step(wiki)
    compute.end("tiny-session2")
    store.commit_pointer(4, parent=store.head())
    assert step(wiki).decision == "blocked"
    findings = [f.render() for f in lint(root, base="HEAD~3", use_cache=False).findings]
    assert findings == []
    ledger = memory.read_ledger(root)
    assets = memory.read_assets(root)
    assert [r.row for r in ledger] == list(range(1, len(ledger) + 1))
    for asset in assets:
        booked = [r for r in ledger if r.job == asset.job and r.outcome == "booked"]
        assert booked and booked[0].booked_at <= asset.submitted_at
    assert dataclasses.asdict(RelayState.read(root))["status"] == "blocked"


def _run_to_the_end(wiki, corrupt: int | None = None, rewrite_last: bool = False):
    """Three sessions to latest -> 24 and final/, each logging its checkpoints as training.session does.
    ``rewrite_last``: one byte of checkpoint 24's weights changed *and* its manifest rewritten to match."""
    root, store, compute, clock = wiki
    step(wiki)
    for k, boundary in enumerate((8, 16, 24), start=1):
        ref = f"tiny-session{k}"
        for s in (boundary - 4, boundary):
            files = checkpoint_files(s)
            compute.log(ref, checkpoint_event(s, files))
            if s == corrupt:
                files["optimizer.pt"] = b"tampered after the manifest"
            if s == 24 and rewrite_last:
                files["model.safetensors"] = b"weights 25"
                files["manifest.json"] = build_manifest({n: v for n, v in files.items() if n != "manifest.json"}, 24)
            save_checkpoint(store, s, files)
        if boundary == 24:
            save_final(store, 24)
            compute.log(ref, checkpoint_event(24, event="final"))
        compute.end(ref)
        clock.advance(hours=1)
        result = step(wiki)
    return result


def test_finish_verifies_publishes_reports_and_completes(wiki):
    root, store, compute, clock = wiki
    result = _run_to_the_end(wiki)
    assert result.decision == "finish" and result.state == "complete"
    assert any(a.startswith("verified checkpoints 4, 8, 12, 16, 20, 24") for a in result.actions)
    assert any("clean room: no token" in a for a in result.actions)
    assert (root / ".wiki" / "published" / "tiny" / "model.safetensors").read_bytes() == b"weights 24"
    assert "wiki/runs/tiny/report.md" in git(root, "show", "--name-only", "--format=", "HEAD")
    assert git(root, "log", "-1", "--format=%s").strip() == "step: run complete at latest -> 24"
    assert len(compute.launches) == 3
    before = commits(root)
    assert step(wiki).decision == "complete" and commits(root) == before


def test_finish_with_a_checkpoint_altered_after_its_manifest_blocks(wiki):
    root, store, compute, clock = wiki
    result = _run_to_the_end(wiki, corrupt=12)
    assert result.decision == "blocked" and result.state == "blocked"
    entry = memory.read_errors(root)[0]
    assert entry.kind == "checkpoint_altered" and "checkpoint-12" in entry.evidence and "optimizer.pt" in entry.evidence
    assert not (root / "wiki" / "runs" / "tiny" / "report.md").exists()


def test_row08_item1_finish_verifies_against_the_runs_own_record_not_the_stores_manifest(wiki):
    """One byte of the last checkpoint's weights changed and the store's manifest rewritten to match: the
    session's own log recorded the original digest, so the run blocks naming checkpoint-24, never completes."""
    root, store, compute, clock = wiki
    result = _run_to_the_end(wiki, rewrite_last=True)
    assert result.decision == "blocked" and result.state == "blocked"
    entry = memory.read_errors(root)[0]
    assert entry.kind == "checkpoint_altered" and "checkpoint-24" in entry.evidence
    assert not (root / ".wiki" / "published").exists() and not (root / "wiki" / "runs" / "tiny" / "report.md").exists()
    digests = memory.read_digests(root)
    assert digests["24"].recorded_by == "session-3" and set(digests) >= {"4", "8", "12", "16", "20", "final"}


def test_row08_item1_finish_requires_final(wiki):
    root, store, compute, clock = wiki
    step(wiki)
    for k, boundary in enumerate((8, 16, 24), start=1):
        for s in (boundary - 4, boundary):
            save_checkpoint(store, s)
            compute.log(f"tiny-session{k}", checkpoint_event(s))
        compute.end(f"tiny-session{k}")
        clock.advance(hours=1)
        result = step(wiki)
    assert result.decision == "blocked"
    assert "final/" in memory.read_errors(root)[0].evidence


def test_a_run_without_bootstrap_pins_books_nothing(wiki):
    root, store, compute, clock = wiki
    program = root / "wiki" / "runs" / "tiny" / "program.md"
    text = program.read_text()
    program.write_text(text[:text.index("bootstrap:")] + text[text.index("```\n", text.index("bootstrap:")):])
    git(root, "commit", "--quiet", "-am", "no pins")
    with pytest.raises(WikiError, match="no bootstrap block"):
        step(wiki)
    assert memory.read_ledger(root) == [] and compute.launches == []
    assert git(root, "status", "--porcelain", "memory") == ""


def test_row14_a_loss_jump_cleared_by_a_person_is_not_judged_again(wiki):
    from wikiengine._cli import unblock

    root, store, compute, clock = wiki
    step(wiki)
    save_checkpoint(store, 4)
    jump = checkpoint_files(8, losses={5: 4.9, 6: 4.8, 7: 4.7, 8: 4.6})  # step 4 -> 5 jumps up by 0.3
    save_checkpoint(store, 8, jump)
    compute.end("tiny-session1")
    assert step(wiki).decision == "blocked"
    assert memory.read_errors(root)[0].kind == "loss_discontinuity"
    assert RelayState.read(root).last_seen_step == 8
    unblock.run(type("A", (), {"reason": "the jump is the warmup restart, expected", "root": root, "json": False})())
    assert step(wiki).decision == "launch"


def test_row27_a_crash_loop_cleared_by_a_person_allows_one_new_launch(wiki):
    from wikiengine._cli import unblock

    root, store, compute, clock = wiki
    for k in (1, 2):
        step(wiki)
        compute.end(f"tiny-session{k}", SessionState.ERROR, at=clock.now + dt.timedelta(seconds=30),
                    failure="refused: disk full")
        clock.advance(minutes=5)
    assert step(wiki).decision == "blocked" and len(compute.launches) == 2
    unblock.run(type("A", (), {"reason": "freed the disk", "root": root, "json": False})())
    assert RelayState.read(root).unblocked_session == 2
    assert step(wiki).decision == "launch" and len(compute.launches) == 3
    compute.end("tiny-session3", SessionState.ERROR, at=clock.now + dt.timedelta(seconds=30),
                failure="refused: disk full")
    clock.advance(minutes=5)
    assert step(wiki).decision == "launch"  # session 3 alone is one fast exit
    compute.end("tiny-session4", SessionState.ERROR, at=clock.now + dt.timedelta(seconds=30),
                failure="refused: disk full")
    clock.advance(minutes=5)
    assert step(wiki).decision == "blocked" and len(compute.launches) == 4


# ---------------------------------------------------------------- issue 13


def test_row31_item3_a_live_status_past_the_timeout_never_launches_a_second_session(wiki):
    """Seed section 3: the stale timeout used to override a live status; now a session the backend calls
    alive is never launched over, however long it has run (the backend enforces the timeout)."""
    root, store, compute, clock = wiki
    step(wiki)
    save_checkpoint(store, 4)
    clock.advance(hours=13)  # past session_timeout_s + the clock-skew allowance; the backend still says RUNNING
    result = step(wiki)
    assert result.decision == "running" and len(compute.launches) == 1
    assert any("past the session timeout" in r for r in result.reasons)


def test_item5_every_session_that_ran_has_exactly_one_outcome_row(wiki, monkeypatch):
    """A launch lands, the wake dies before recording it, the listing hides it past the claim TTL: the claim
    is released and session-1 booked again. The session that ran still gets its spent row: each booking
    has exactly one outcome."""
    root, store, compute, clock = wiki
    killed_before_recording(wiki, monkeypatch)
    compute.hidden.add("tiny-session1")
    clock.advance(minutes=10)
    assert step(wiki).decision == "launch"  # released unspent, booked and launched again
    compute.hidden.clear()
    save_checkpoint(store, 4)
    compute.end("tiny-session1")
    clock.advance(hours=1)
    step(wiki)
    rows = [(r.job, r.outcome) for r in memory.read_ledger(root) if r.job == "session-1"]
    assert rows == [("session-1", "booked"), ("session-1", "unspent"), ("session-1", "booked"),
                    ("session-1", "spent")]
    spent = [r for r in memory.read_ledger(root) if r.outcome == "spent"]
    assert spent[0].cpu_alternative == "none: 8 steps of real training"  # the check, not the hours used
    record = memory.read_exit_records(root)["session-1"]
    assert record["hours_used"] == "1.000" and record["state"] == "complete"


def test_row38_item6_a_ledger_row_edited_then_trusted_commit_moved_still_blocks(wiki):
    """Edit an old ledger row, then in a second commit move trusted_commit in STATE.md past the edit: each
    row is checked against the commit that introduced it, so the wake still blocks."""
    root, store, compute, clock = wiki
    step(wiki)
    ledger = root / "memory" / "QUOTA.md"
    ledger.write_text(ledger.read_text().replace("| 20.00 |", "| 29.00 |", 1))
    git(root, "commit", "--quiet", "--no-verify", "-am", "tidy the ledger")
    edit = git(root, "rev-parse", "HEAD").strip()
    state = root / "memory" / "STATE.md"
    text = state.read_text()
    import re as _re

    state.write_text(_re.sub(r"trusted_commit: \S+", f"trusted_commit: {edit}", text))
    git(root, "commit", "--quiet", "--no-verify", "-am", "move the trusted commit")
    compute.end("tiny-session1")
    result = step(wiki)
    assert result.decision == "blocked", result.reasons
    entry = memory.read_errors(root)[0]
    assert entry.kind == "immutable_page_edited" and "QUOTA.md: row 1" in entry.evidence
    assert edit[:12] in entry.evidence


def test_row28_item7_a_park_whose_reset_has_passed_reads_the_quota_again(wiki):
    root, store, compute, clock = wiki
    compute.quota_left = 1.0
    assert step(wiki).decision == "park"
    assert RelayState.read(root).reset_at == "2026-09-26T00:00:00Z"
    clock.now = dt.datetime(2026, 9, 27, 1, 0, tzinfo=dt.UTC)  # the reset passed; still not funded
    result = step(wiki)
    assert result.decision == "park" and RelayState.read(root).reset_at == "2026-10-03T00:00:00Z"
    compute.quota_left = 30.0
    assert step(wiki).decision == "launch"


def test_clarity_an_adopted_launch_records_its_version_and_kernel_id(wiki, monkeypatch):
    root, store, compute, clock = wiki
    def killed_record(*args, **kwargs):
        raise Killed()

    monkeypatch.setattr(act, "record", killed_record)
    real_status = compute.status

    def status_with_ids(ref):
        found = real_status(ref)
        return dataclasses.replace(found, version=3, kernel_id="81234503") if found.state.alive else found

    compute.status = status_with_ids
    with pytest.raises(Killed):
        step(wiki)
    monkeypatch.undo()
    clock.advance(minutes=10)
    assert step(wiki).decision == "adopt"
    (asset,) = memory.read_assets(root)
    assert (asset.version, asset.kernel_id) == ("3", "81234503")


def test_clarity_running_wakes_move_a_past_next_check(wiki):
    root, store, compute, clock = wiki
    step(wiki)
    assert RelayState.read(root).next_check_at == "2026-09-21T03:01:00Z"
    before = commits(root)
    assert step(wiki).decision == "running" and commits(root) == before  # not due yet: a replay writes nothing
    clock.advance(minutes=5)
    assert step(wiki).decision == "running"
    assert RelayState.read(root).next_check_at == "2026-09-21T03:06:00Z"


def test_clarity_the_summary_says_run_status_and_locked_names_no_pointer():
    from wikiengine.step.relay.wake import StepResult

    assert StepResult("running", 8, "running", ["session session-2 is running"]).text().startswith(
        "running: latest -> 8 (run status: running)")
    assert StepResult("unknown", None, "locked", ["another wiki step holds the lock; nothing done"]).text() == \
        "locked: another wiki step holds the lock; nothing done"


def test_clarity_a_run_that_names_a_report_template_gets_its_pending_blocks_filled(wiki):
    from test_relay_finish import TEMPLATE

    root, store, compute, clock = wiki
    (root / "docs").mkdir()
    (root / "docs" / "final-report.md").write_text(TEMPLATE)
    program = root / "wiki" / "runs" / "tiny" / "program.md"
    program.write_text(program.read_text().replace("bootstrap:", "report:\n  template: docs/final-report.md\nbootstrap:"))
    git(root, "add", "-A")
    git(root, "commit", "--quiet", "-m", "the report template")
    result = _run_to_the_end(wiki)
    assert result.state == "complete", result.actions
    report = (root / "docs" / "final-report.md").read_text()
    assert "PENDING" not in report and "Verified byte for byte" in report
    assert not (root / "wiki" / "runs" / "tiny" / "report.md").exists()
    assert "docs/final-report.md" in git(root, "show", "--name-only", "--format=", "HEAD")


def test_row38_item6_a_reverted_row_edit_is_not_reported_and_a_removed_row_is(wiki):
    from wikiengine.step.relay.observe import append_only_edits

    root, store, compute, clock = wiki
    step(wiki)
    ledger = root / "memory" / "QUOTA.md"
    original = ledger.read_text()
    ledger.write_text(original.replace("| 20.00 |", "| 29.00 |", 1))
    git(root, "commit", "--quiet", "--no-verify", "-am", "edit")
    ledger.write_text(original)
    git(root, "commit", "--quiet", "--no-verify", "-am", "revert")
    assert append_only_edits(root) == ()
    ledger.write_text("".join(line for line in original.splitlines(keepends=True) if "| 1 |" not in line))
    git(root, "commit", "--quiet", "--no-verify", "-am", "drop the row")
    (found,) = append_only_edits(root)
    assert "row 1 of '## Ledger'" in found and found.endswith("removed")


def test_row38_item6_an_unblock_after_wakes_that_only_touched_state_accepts_the_tables(wiki):
    """Commits that change only STATE.md leave the tables' rows as they were (the walk does not
    parse them again); a `wiki unblock` commit accepts the tables as they stand, whatever
    touched them before it."""
    from wikiengine.step.relay.observe import UNBLOCK_SUBJECT, append_only_edits

    root, store, compute, clock = wiki
    step(wiki)
    ledger, state = root / "memory" / "QUOTA.md", root / "memory" / "STATE.md"
    original = ledger.read_text()
    ledger.write_text(original.replace("| 20.00 |", "| 29.00 |", 1))
    git(root, "commit", "--quiet", "--no-verify", "-am", "edit")
    for wake in range(3):  # wakes that commit STATE.md alone
        state.write_text(state.read_text() + f"\n<!-- wake {wake} -->\n")
        git(root, "commit", "--quiet", "--no-verify", "-am", f"step: wake {wake}")
    (found,) = append_only_edits(root)
    assert "row 1 of '## Ledger'" in found and "29.00" in found
    state.write_text(state.read_text() + "\n<!-- unblocked -->\n")
    git(root, "commit", "--quiet", "--no-verify", "-am", f"{UNBLOCK_SUBJECT} the ledger's figure was corrected by hand")
    assert append_only_edits(root) == ()


def test_row45_a_hostile_failure_line_reaches_the_exit_record_as_plain_text(wiki):
    root, store, compute, clock = wiki
    step(wiki)
    compute.end("tiny-session1", SessionState.ERROR, failure='| 9 | forged | <!-- `x` --> [a](javascript:1) {"e": 1}')
    clock.advance(hours=1)
    step(wiki)
    record = memory.read_exit_records(root)["session-1"]
    assert not any(c in record["exit"] for c in "|<>`[]{}") and "forged" in record["exit"]
    assert [r.job for r in memory.read_ledger(root)].count("session-1") == 2  # no forged ledger row
