"""The checks of seed section 1 on a real LocalGitStore, all reads pinned to one head:
each tampering shows up as the finding (and emergency kind) the seed names."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from test_relay_support import CONFIG, checkpoint_files, save_checkpoint

from wikiengine.executors.local_store import LocalGitStore
from wikiengine.step.relay.decide import Settings
from wikiengine.step.relay.observe import read_snapshot, run_checks

SETTINGS = Settings.from_config(CONFIG)


@pytest.fixture(scope="module")
def healthy(tmp_path_factory) -> Path:
    """A store with checkpoints 4 and 8, made once for the module (34 git processes)."""
    folder = tmp_path_factory.mktemp("healthy")
    store = LocalGitStore.create(folder / "store")
    for step in (4, 8):
        save_checkpoint(store, step, tmp=folder)
    return store.path


@pytest.fixture()
def store(tmp_path, healthy):
    """A copy of the healthy store, for the test to tamper with."""
    return LocalGitStore(shutil.copytree(healthy, tmp_path / "store", symlinks=True))


def kinds(store, settings=SETTINGS):
    return [(f.emergency, f.check) for f in run_checks(read_snapshot(store), settings) if f.emergency]


def test_a_healthy_store_passes_every_check(store):
    snap = read_snapshot(store)
    assert snap.pointer.step == 8
    assert run_checks(snap, SETTINGS) == ()


def test_a_fresh_store_has_no_findings(tmp_path):
    store = LocalGitStore.create(tmp_path / "fresh")
    assert run_checks(read_snapshot(store), SETTINGS) == ()


@pytest.mark.parametrize("value", [12 * 512 + 1, 6144.0, True, "6144", 1e400])
def test_row10_token_arithmetic_shows_both_values(store, tmp_path, value):
    files = checkpoint_files(12, cursor={"tokens_consumed": value})
    save_checkpoint(store, 12, files, tmp=tmp_path)
    findings = [f for f in run_checks(read_snapshot(store), SETTINGS) if f.emergency == "token_arithmetic"]
    assert findings and findings[0].check == "cursor.json.tokens_consumed"
    shown = "Infinity" if value == 1e400 else repr(value)
    assert shown in findings[0].detail and "6144" in findings[0].detail


def test_row10_nan_tokens_fail_closed(store, tmp_path):
    good = checkpoint_files(12)
    text = good["cursor.json"].decode().replace('"tokens_consumed": 6144', '"tokens_consumed": NaN')
    files = checkpoint_files(12, cursor_bytes=text.encode())
    save_checkpoint(store, 12, files, tmp=tmp_path)
    assert ("token_arithmetic", "cursor.json.tokens_consumed") in kinds(store)


@pytest.mark.parametrize("key", ["dataset_files_sha", "shuffle_perm_sha"])
def test_row11_a_changed_cursor_hash_is_an_emergency(store, tmp_path, key):
    save_checkpoint(store, 12, checkpoint_files(12, cursor={key: "0" * 16}), tmp=tmp_path)
    assert ("cursor_hash_changed", f"cursor.json.{key}") in kinds(store)


@pytest.mark.parametrize("where, change, check", [
    ("state", {"global_step": 11}, "trainer_state.json.global_step"),
    ("state", {"max_steps": 25}, "trainer_state.json.max_steps"),
    ("state", {"save_steps": 3}, "trainer_state.json.save_steps"),
])
def test_row12_trainer_state_disagrees(store, tmp_path, where, change, check):
    save_checkpoint(store, 12, checkpoint_files(12, **{where: change}), tmp=tmp_path)
    assert ("trainer_state_mismatch", check) in kinds(store)


def test_row12_samples_consumed(store, tmp_path):
    save_checkpoint(store, 12, checkpoint_files(12, cursor={"samples_consumed": 95}), tmp=tmp_path)
    assert ("token_arithmetic", "cursor.json.samples_consumed") in kinds(store)


@pytest.mark.parametrize("loss", [float("nan"), float("inf"), None])
def test_row13_loss_nan_inf_or_missing_fails_closed(store, tmp_path, loss):
    files = checkpoint_files(12)
    state = json.loads(files["trainer_state.json"])
    if loss is None:
        del state["log_history"][-1]["loss"]
    else:
        state["log_history"][-1]["loss"] = loss
    text = json.dumps(state)  # json writes NaN / Infinity, as Python's json accepts them
    save_checkpoint(store, 12, checkpoint_files(12, state_bytes=text.encode()), tmp=tmp_path)
    assert ("loss_not_finite", "loss") in kinds(store)


def test_row14_a_loss_jump_at_a_checkpoint_boundary(store, tmp_path):
    files = checkpoint_files(12, losses={9: 4.2, 10: 4.1, 11: 4.0, 12: 3.9})  # step 8 -> 9 jumps up by 0.3
    save_checkpoint(store, 12, files, tmp=tmp_path)
    found = kinds(store)
    assert ("loss_discontinuity", "loss at checkpoint 8") in found


def test_row14_noise_is_not_a_discontinuity(store, tmp_path):
    losses = {s: 5.0 - 0.1 * s + (0.02 if s % 2 else -0.02) for s in range(1, 13)}
    save_checkpoint(store, 12, checkpoint_files(12, losses=losses), tmp=tmp_path)
    assert kinds(store) == []


def test_loss_not_lower_than_the_previous_checkpoint_is_a_warning(store, tmp_path):
    noise = {s: 0.05 if s % 2 else -0.05 for s in range(1, 13)}
    losses = {s: (5.0 - 0.1 * s if s <= 8 else 4.4) + noise[s] for s in range(1, 13)}  # a plateau within noise
    save_checkpoint(store, 12, checkpoint_files(12, losses=losses), tmp=tmp_path)
    findings = run_checks(read_snapshot(store), SETTINGS)
    assert [f.emergency for f in findings] == [None]
    assert "not lower" in findings[0].detail


@pytest.mark.parametrize("damage", ["drop_file", "extra_file", "alter_cursor", "no_manifest"])
def test_row3_partial_or_altered_checkpoint(store, tmp_path, damage):
    files = checkpoint_files(12)
    if damage == "drop_file":
        del files["optimizer.pt"]
    elif damage == "extra_file":
        files["evil.pt"] = b"x"
    elif damage == "alter_cursor":
        files["cursor.json"] = files["cursor.json"].replace(b'"epoch": 0', b'"epoch":  0')
    else:
        del files["manifest.json"]
    save_checkpoint(store, 12, files, tmp=tmp_path)
    assert "checkpoint_incomplete" in [k for k, _ in kinds(store)]


def test_row1_checkpoint_without_pointer_is_ignored(store, tmp_path):
    save_checkpoint(store, 12, tmp=tmp_path, pointer=False)
    snap = read_snapshot(store)
    findings = run_checks(snap, SETTINGS)
    assert snap.pointer.step == 8
    assert [f.emergency for f in findings] == [None]
    assert "checkpoint 12" in findings[0].detail


def test_row7_every_read_is_pinned_to_the_head_read_first(store, tmp_path, monkeypatch):
    """The branch moves between the head read and the file reads: the reads still see the first head."""
    first_head = store.head()
    real_read = store.read_file
    moved = []

    def read_then_move(path, revision):
        if not moved:
            moved.append(save_checkpoint(store, 12, tmp=tmp_path))
        return real_read(path, revision)

    monkeypatch.setattr(store, "read_file", read_then_move)
    snap = read_snapshot(store)
    assert snap.head == first_head and snap.pointer.step == 8
    assert json.loads(snap.cursor)["step"] == 8
    assert store.head() == moved[0] != first_head


def test_row14_boundaries_before_the_last_seen_step_are_not_judged_again(store, tmp_path):
    files = checkpoint_files(12, losses={9: 4.2, 10: 4.1, 11: 4.0, 12: 3.9})
    save_checkpoint(store, 12, files, tmp=tmp_path)
    snap = read_snapshot(store)
    assert [f.emergency for f in run_checks(snap, SETTINGS, seen_step=8)] == ["loss_discontinuity"]
    assert [f.emergency for f in run_checks(snap, SETTINGS, seen_step=12)] == []
