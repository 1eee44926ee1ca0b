"""Decide, table-driven: every state of seed section 2 and every emergency of section 5,
each row with the exact observations that cause it (the seed's ounce100m arithmetic)."""

from __future__ import annotations

import dataclasses
import datetime as dt

import pytest

from wikiengine.executors.compute import Quota, SessionState
from wikiengine.step.relay.decide import (
    EMERGENCIES,
    Finding,
    Memory,
    Observations,
    SessionView,
    Settings,
    decide,
    remaining_steps,
)
from wikiengine.step.relay.records import SessionRecord

NOW = dt.datetime(2026, 9, 21, 3, 0, tzinfo=dt.UTC)
RESET = dt.datetime(2026, 9, 26, 0, 0, tzinfo=dt.UTC)
SEED = Settings(max_steps=3814, save_steps=127, session_steps=762, tokens_per_step=262144, samples_per_step=256,
                dataset_files_sha="53df4708526da5c8", shuffle_perm_sha="c6f617b96f502d96", session_hours=7.0,
                reserve_hours=0.5, session_timeout_s=25200, claim_ttl_s=600)
QUOTA = Quota(used_hours=10.0, total_hours=30.0, refresh_at=RESET)


def ago(**delta) -> dt.datetime:
    return NOW - dt.timedelta(**delta)


def session(job="session-2", state=SessionState.COMPLETE, started=None, ended=None, reason=None):
    started = started or ago(hours=7)
    ended = ended if ended is not None else (None if state.alive else ago(minutes=5))
    return SessionView(job, f"dodosoomro/ounce100m-p4-{job.replace('-', '')}", state, started, started, ended, reason)


def obs(pointer=1524, **changes) -> Observations:
    base = Observations(now=NOW, store_head="a" * 40, pointer_step=pointer, last_session=session(), quota=QUOTA,
                        plan_steps=remaining_steps(pointer or 0, SEED) if (pointer or 0) < 3814 else None)
    return dataclasses.replace(base, **changes)


def mem(**changes) -> Memory:
    base = Memory(status="running", session=2, last_seen_step=1524, high_water_step=1524, store_head="a" * 40)
    return dataclasses.replace(base, **changes)


# ---------------------------------------------------------------- seed section 2: the three states (and park, wait)

STATES = [
    # (case, observations, memory, decision, job, steps)
    ("a session is still running: nothing to do",
     obs(1651, last_session=session("session-3", SessionState.RUNNING, started=ago(hours=2))), mem(session=3),
     "running", None, None),
    ("queued counts as alive", obs(1524, last_session=session("session-3", SessionState.QUEUED, started=ago(
        minutes=1))), mem(session=3), "running", None, None),
    ("fresh store: launch session 1 for 762 steps", obs(None, last_session=None, plan_steps=762),
     mem(session=0, last_seen_step=0, high_water_step=0), "launch", "session-1", 762),
    ("session 2 ended on its boundary 1524: launch session 3", obs(1524), mem(), "launch", "session-3", 762),
    ("session 4 ended at 3048: session 5 absorbs the remainder (766)", obs(3048, last_session=session("session-4")),
     mem(session=4, last_seen_step=3048, high_water_step=3048), "launch", "session-5", 766),
    ("platform kill short of the boundary is not an emergency: resume from the pointer",
     obs(1016, last_session=session(state=SessionState.ERROR, started=ago(hours=5), reason="killed")),
     mem(last_seen_step=1016, high_water_step=1016), "launch", "session-3", 508),
    ("latest -> 3814: the run is finished", obs(3814, last_session=session("session-5")),
     mem(session=5, last_seen_step=3814, high_water_step=3814), "finish", None, None),
    ("the run is complete: nothing", obs(3814), mem(status="complete", high_water_step=3814), "complete", None, None),
    ("a blocked run stays blocked until a person clears it", obs(1524), mem(status="blocked", blocker="x"),
     "blocked", None, None),
    ("row 28: the quota cannot fund a full session plus the reserve: park",
     obs(1524, quota=Quota(used_hours=23.0, total_hours=30.0, refresh_at=RESET)), mem(), "park", "session-3", 762),
    ("row 29: the quota is unreadable: neither exhausted nor funded",
     obs(1524, quota=None, quota_error="timeout"), mem(), "wait", None, None),
    ("rows 17, 24: the session status is unknown: never gone",
     obs(1524, last_session=session(state=SessionState.UNKNOWN)), mem(), "wait", None, None),
    ("the store cannot be read: unknown", obs(None, store_head=None, store_error="timeout"), mem(), "wait", None,
     None),
    ("row 31: a session killed at 12 h is treated as ended; resume from the pointer",
     obs(1397, last_session=session(state=SessionState.ERROR, started=ago(hours=12), reason="timeout")),
     mem(last_seen_step=1397, high_water_step=1397), "launch", "session-3", 127),
    ("issue 13 item 3: a session the backend calls RUNNING past its timeout is never launched over",
     obs(1524, last_session=session(state=SessionState.RUNNING, started=ago(hours=13))), mem(), "running",
     None, None),
    ("issue 13 item 3: a session QUEUED for a day is still alive at the backend: no second session",
     obs(1524, last_session=session(state=SessionState.QUEUED, started=ago(hours=24))), mem(), "running",
     None, None),
    ("one fast exit is not yet a crash loop: one more launch",
     obs(1524, last_session=session("session-3", SessionState.ERROR, started=ago(minutes=5), ended=ago(minutes=4),
                                    reason="free space")), mem(session=3), "launch", "session-4", 762),
]


@pytest.mark.parametrize("case, observations, memory, kind, job, steps", STATES, ids=[s[0] for s in STATES])
def test_seed_states(case, observations, memory, kind, job, steps):
    decision = decide(observations, memory, SEED)
    assert decision.kind == kind, decision.reasons
    assert decision.job == job
    assert decision.steps_to_run == steps
    assert not decision.emergencies


def test_park_writes_the_reset_instant_and_waits_for_it():
    decision = decide(obs(1524, quota=Quota(23.0, 30.0, RESET)), mem(), SEED)
    assert decision.reset_at == RESET and decision.next_check_at == RESET
    assert decision.needed_hours == pytest.approx(7.5)
    assert any("park until 2026-09-26" in r for r in decision.reasons)


def test_after_a_launch_the_next_check_confirms_within_three_minutes():
    decision = decide(obs(1524), mem(), SEED)
    assert decision.kind == "launch"
    assert decision.next_check_at == NOW + dt.timedelta(seconds=180)


def test_park_without_a_backend_reset_uses_the_next_saturday():
    decision = decide(obs(1524, quota=Quota(23.0, 30.0, None)), mem(), SEED)
    assert decision.reset_at == RESET  # 2026-09-21 is a Monday; the seed's reset is Saturday 2026-09-26 00:00Z


# ---------------------------------------------------------------- claims (rows 22, 23)

CLAIMED = dict(claim_job="session-3", claimed_at=ago(minutes=1))


@pytest.mark.parametrize("case, claimed, claimed_at, kind, release", [
    ("the backend has the claimed launch: adopt it, never relaunch", session("session-3", SessionState.RUNNING,
                                                                             started=ago(minutes=1)),
     ago(minutes=1), "adopt", False),
    ("a claimed launch that already ended is adopted too", session("session-3", SessionState.COMPLETE),
     ago(hours=8), "adopt", False),
    ("row 23: the claim is not visible yet, inside its TTL: wait", session("session-3", SessionState.GONE),
     ago(minutes=2), "wait", False),
    ("row 24: the lookup failed: unknown is not gone", session("session-3", SessionState.UNKNOWN), ago(hours=2),
     "wait", False),
    ("the claim never reached the backend and its TTL passed: close it unspent, then launch",
     session("session-3", SessionState.GONE), ago(minutes=11), "launch", True),
])
def test_row22_claims(case, claimed, claimed_at, kind, release):
    decision = decide(obs(1524, claimed=claimed), mem(claim_job="session-3", claimed_at=claimed_at), SEED)
    assert decision.kind == kind, decision.reasons
    assert decision.release_claim is release
    if kind == "adopt":
        assert decision.job == "session-3"
    if release:
        assert decision.job == "session-3" and decision.job_released == "session-3"


# ---------------------------------------------------------------- seed section 5: the emergencies


def finding(kind, check="check", detail="detail"):
    return Finding(check, kind, detail)


EMERGENCY_ROWS = [
    ("row 2: the pointer moved backwards", obs(1397), mem(high_water_step=1524), "pointer_backwards"),
    ("row 11: a cursor hash changed", obs(1524, findings=(finding("cursor_hash_changed", "cursor.json.dataset_files_sha",
                                                                  "'53df4708526da5c9' != pinned '53df4708526da5c8'"),)),
     mem(), "cursor_hash_changed"),
    ("row 10: tokens != step x 262,144", obs(1524, findings=(finding("token_arithmetic", "cursor.json.tokens_consumed",
                                                                      "399507456.0 (float) != 1524 x 262,144"),)),
     mem(), "token_arithmetic"),
    ("row 27: two consecutive launches exit inside 2 min for the same reason",
     obs(1524, last_session=session("session-4", SessionState.ERROR, started=ago(minutes=3), ended=ago(
         minutes=2), reason="refused: no free space"),
         previous_session=session("session-3", SessionState.ERROR, started=ago(minutes=30), ended=ago(minutes=29),
                                  reason="refused: no free space")), mem(session=4), "crash_loop"),
    ("row 14: loss discontinuity at a boundary", obs(1524, findings=(finding("loss_discontinuity"),)), mem(),
     "loss_discontinuity"),
    ("row 13: loss NaN fails closed", obs(1524, findings=(finding("loss_not_finite"),)), mem(), "loss_not_finite"),
    ("the planner disagrees with the grid", obs(1524, plan_steps=700), mem(), "planner_disagrees"),
    ("the planner's own cross-check disagrees", obs(1524, plan_problems=("boundary 2000 != 2286",)), mem(),
     "planner_disagrees"),
    ("row 4: history rewritten", obs(1524, history_rewritten=True), mem(), "history_rewritten"),
    ("row 3: pointer names a partial checkpoint", obs(1524, findings=(finding("checkpoint_incomplete"),)), mem(),
     "checkpoint_incomplete"),
    ("row 12: global_step != N", obs(1524, findings=(finding("trainer_state_mismatch"),)), mem(),
     "trainer_state_mismatch"),
    ("malformed latest.json", obs(1524, findings=(finding("store_format"),)), mem(), "store_format"),
    ("row 38: an immutable page changed without hooks", obs(1524, immutable_edits=("wiki/x.md: changed",)), mem(),
     "immutable_page_edited"),
    ("issue 13 item 2: the store's history shows a higher pointer than latest -> N",
     obs(1524, findings=(finding("pointer_backwards", "store history", "'latest -> 1651' is above latest -> 1524"),)),
     mem(), "pointer_backwards"),
    ("issue 13 item 1: the manifest differs from the digest the run recorded",
     obs(1524, findings=(finding("checkpoint_altered"),)), mem(), "checkpoint_altered"),
    ("issue 13 item 8: a session refused a corrupt checkpoint: corruption at once, not after a second launch",
     obs(1524, last_session=dataclasses.replace(
         session("session-3", SessionState.ERROR, started=ago(minutes=3), ended=ago(minutes=2)),
         record=SessionRecord(start_step=1524, end_step=1524, reason="checkpoint_corrupt",
                              detail="ckpt/checkpoint-1524: model.safetensors: sha256 differs"))),
     mem(session=3), "checkpoint_corrupt"),
]


@pytest.mark.parametrize("case, observations, memory, kind", EMERGENCY_ROWS, ids=[r[0] for r in EMERGENCY_ROWS])
def test_emergencies_block_with_evidence_and_launch_nothing(case, observations, memory, kind):
    decision = decide(observations, memory, SEED)
    assert decision.kind == "blocked"
    assert [e.kind for e in decision.emergencies] == [kind]
    assert decision.emergencies[0].evidence
    assert decision.job is None and not any("launch" in a for a in decision.actions)


def test_every_emergency_of_the_table_has_a_row():
    assert {kind for kind, _, _ in EMERGENCIES} == {row[3] for row in EMERGENCY_ROWS}


def test_an_emergency_wins_over_a_running_session():
    running = session("session-3", SessionState.RUNNING, started=ago(hours=1))
    decision = decide(obs(1397, last_session=running), mem(high_water_step=1524), SEED)
    assert decision.kind == "blocked"
    assert decision.cancel == running  # issue 13 item 4: a block stops the live session
    assert any("session-3" in r and "still running" in r for r in decision.reasons)
    assert decision.actions[-1].startswith("cancel the live session-3")


def test_row27_item8_a_kill_after_real_progress_is_not_a_fast_exit():
    progressed = SessionRecord(digests={"1651": "a" * 64}, start_step=1524, end_step=1651)
    killed = [dataclasses.replace(session(f"session-{k}", SessionState.CANCELLED, started=ago(minutes=m + 1),
                                          ended=ago(minutes=m), reason="killed"), record=progressed)
              for k, m in ((3, 30), (4, 2))]
    decision = decide(obs(1651, last_session=killed[1], previous_session=killed[0]),
                      mem(session=4, last_seen_step=1651, high_water_step=1651), SEED)
    assert decision.kind == "launch", decision.reasons


def test_row31_item3_a_session_alive_without_pointer_progress_is_reported_stalled():
    running = session("session-3", SessionState.RUNNING, started=ago(hours=5))
    quiet = obs(1651, last_session=running, pointer_moved_at=ago(hours=3), save_interval_s=1200.0)
    settings = dataclasses.replace(SEED, max_clock_skew_s=0, clock_slack_s=0)
    decision = decide(quiet, mem(session=3, last_seen_step=1651, high_water_step=1651), settings)
    assert decision.kind == "running" and any("stalled" in r for r in decision.reasons)
    busy = dataclasses.replace(quiet, pointer_moved_at=ago(minutes=30))
    decision = decide(busy, mem(session=3, last_seen_step=1651, high_water_step=1651), settings)
    assert decision.kind == "running" and not any("stalled" in r for r in decision.reasons)


@pytest.mark.parametrize("reasons, kind", [(("free space", "pointer read"), "launch"),
                                           (("free space", "free space"), "blocked")])
def test_row27_crash_loop_needs_the_same_reason(reasons, kind):
    last = session("session-4", SessionState.ERROR, started=ago(minutes=3), ended=ago(minutes=2), reason=reasons[1])
    previous = session("session-3", SessionState.ERROR, started=ago(minutes=30), ended=ago(minutes=29),
                       reason=reasons[0])
    assert decide(obs(1524, last_session=last, previous_session=previous), mem(session=4), SEED).kind == kind


def test_row27_completed_sessions_are_never_a_crash_loop():
    last = session("session-4", SessionState.COMPLETE, started=ago(minutes=3), ended=ago(minutes=2))
    previous = session("session-3", SessionState.COMPLETE, started=ago(minutes=30), ended=ago(minutes=29))
    assert decide(obs(1524, last_session=last, previous_session=previous), mem(session=4), SEED).kind == "launch"


@pytest.mark.parametrize("skew_hours", [-1, 0, 1])
def test_row32_clock_skew_does_not_move_the_crash_loop_window(skew_hours):
    """The 2-minute window uses the backend's start and end times, never the agent's clock."""
    last = session("session-4", SessionState.ERROR, started=ago(minutes=3), ended=ago(minutes=1), reason="r")
    previous = session("session-3", SessionState.ERROR, started=ago(minutes=30), ended=ago(minutes=28), reason="r")
    slow = session("session-4", SessionState.ERROR, started=ago(minutes=10), ended=ago(minutes=1), reason="r")
    skewed = NOW + dt.timedelta(hours=skew_hours)
    loop = obs(1524, now=skewed, last_session=last, previous_session=previous)
    no_loop = obs(1524, now=skewed, last_session=slow, previous_session=previous)
    assert decide(loop, mem(session=4), SEED).kind == "blocked"
    assert decide(no_loop, mem(session=4), SEED).kind == "launch"


def test_row33_the_same_observations_give_the_same_decision():
    observations, memory = obs(1524), mem()
    assert decide(observations, memory, SEED) == decide(observations, memory, SEED)


def test_a_warning_finding_does_not_block():
    warning = Finding("loss", None, "mean loss 3.1 is not lower than 3.0")
    decision = decide(obs(1524, findings=(warning,)), mem(), SEED)
    assert decision.kind == "launch"
    assert any("not lower" in r for r in decision.reasons)


def test_settings_from_the_seed_program_config():
    from pathlib import Path

    from wikiengine.model import cascade, targets

    root = Path(__file__).resolve().parents[1]
    config = cascade.resolve(targets.target_for_run(root, "ounce100m")).config
    settings = Settings.from_config(config)
    assert (settings.max_steps, settings.save_steps, settings.session_steps, settings.tokens_per_step) == (
        3814, 127, 762, 262144)
    assert [remaining_steps(762 * k, settings) for k in range(5)] == [762, 762, 762, 762, 766]


@pytest.mark.parametrize("bad", [3814.0, True, "3814"])
def test_row10_a_count_that_is_not_an_exact_int_is_refused(bad):
    from pathlib import Path

    from wikiengine.core.errors import WikiError
    from wikiengine.model import cascade, targets

    root = Path(__file__).resolve().parents[1]
    config = dict(cascade.resolve(targets.target_for_run(root, "ounce100m")).config, max_steps=bad)
    with pytest.raises(WikiError, match="max_steps"):
        Settings.from_config(config)
