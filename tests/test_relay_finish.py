"""Finishing a run (seed section 4): verification, the clean-room publish check (row 47),
the eval plan saved as it lands, and never a partial report."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from test_relay_support import checkpoint_files, final_files, save_checkpoint, save_final

from wikiengine.executors.local_store import LocalGitStore
from wikiengine.step.relay import finish
from wikiengine.training.checkpoint import CheckpointError, build_manifest


def _recorded(*steps, final=None):
    import hashlib

    digests = {str(s): hashlib.sha256(checkpoint_files(s)["manifest.json"]).hexdigest() for s in steps}
    if final is not None:
        digests["final"] = hashlib.sha256(final_files(final)["manifest.json"]).hexdigest()
    return digests


def test_verify_all_checks_every_kept_checkpoint_byte_for_byte(tmp_path):
    store = LocalGitStore.create(tmp_path / "store")
    for step in (4, 8, 12):
        save_checkpoint(store, step, tmp=tmp_path)
    save_final(store, 12)
    steps, final = finish.verify_all(store, store.head(), 12, _recorded(4, 8, 12, final=12))
    assert steps == [4, 8, 12] and final["model.safetensors"] == b"weights 12"
    bad = checkpoint_files(8)
    bad["optimizer.pt"] = b"opt!"  # bytes changed after the manifest was written
    save_checkpoint(store, 8, bad, tmp=tmp_path)
    store.commit_pointer(12, parent=store.head())
    with pytest.raises(CheckpointError, match="checkpoint-8: optimizer.pt"):
        finish.verify_all(store, store.head(), 12, _recorded(4, 8, 12, final=12))


@pytest.mark.parametrize("damage, message", [
    ("rewritten", "checkpoint-8: manifest.json has sha256"),  # bytes and manifest rewritten together
    ("no_record", "checkpoint-12: the run recorded no digest"),
    ("no_final", "final/ is not in the store"),
    ("dropped", "checkpoint-4: recorded by the run, missing from the store"),
])
def test_row08_item1_verify_all_trusts_the_runs_record_over_the_stores_manifest(tmp_path, damage, message):
    store = LocalGitStore.create(tmp_path / "store")
    recorded = _recorded(4, 8, 12, final=12)
    for step in (8, 12) if damage == "dropped" else (4, 8, 12):
        files = checkpoint_files(step)
        if damage == "rewritten" and step == 8:
            files["model.safetensors"] = b"weights 9"
            files["manifest.json"] = build_manifest({k: v for k, v in files.items() if k != "manifest.json"}, 8)
        save_checkpoint(store, step, files, tmp=tmp_path)
    if damage != "no_final":
        save_final(store, 12)
    if damage == "no_record":
        del recorded["12"]
    with pytest.raises(CheckpointError, match=message):
        finish.verify_all(store, store.head(), 12, recorded)


def test_verify_all_refuses_a_run_without_its_last_checkpoint(tmp_path):
    store = LocalGitStore.create(tmp_path / "store")
    save_checkpoint(store, 4, tmp=tmp_path)
    with pytest.raises(CheckpointError, match="checkpoint-12"):
        finish.verify_all(store, store.head(), 12, _recorded(4))


@pytest.fixture()
def published(tmp_path):
    return finish.publish({"model.safetensors": b"final weights"}, tmp_path / "published" / "tiny", "tiny")


def test_row47_the_clean_room_reaches_no_token(tmp_path, published, monkeypatch):
    home = tmp_path / "home"
    (home / ".kaggle").mkdir(parents=True)
    (home / ".kaggle" / "kaggle.json").write_text('{"username": "u", "key": "kagglecanary0123456789"}')
    (home / ".netrc").write_text("machine huggingface.co login u password hf_netrccanary0123456789\n")
    hf_home = tmp_path / "hf"
    hf_home.mkdir()
    (hf_home / "token").write_text("hf_filecanary0123456789abcdef")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("HF_HOME", str(hf_home))
    monkeypatch.setenv("HF_TOKEN", "hf_envcanary0123456789abcdef")
    monkeypatch.setenv("KAGGLE_KEY", "kagglecanary0123456789")
    monkeypatch.setenv("ACTIONS_ID_TOKEN_REQUEST_TOKEN", "oidccanary0123456789")
    from huggingface_hub import get_token

    assert get_token() is not None  # the parent can reach a token ...
    done = finish.run_in_clean_room([sys.executable, "-m", "wikiengine.step.relay.finish", "clean-room-check",
                                     str(published)])
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"token": None, "verified": ["model.safetensors"]}  # ... the child cannot
    for canary in ("hf_envcanary", "kagglecanary", "hf_filecanary", "oidccanary", "hf_netrccanary"):
        assert canary not in done.stdout + done.stderr


def test_row47_the_check_fails_when_a_token_is_present(published, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", "hf_envcanary0123456789abcdef")
    with pytest.raises(SystemExit, match="HF_TOKEN"):
        finish.clean_room_check(published)


def test_the_clean_room_check_re_verifies_the_published_bytes(published, monkeypatch):
    from wikiengine.executors.clean_room import is_secret_name

    for name in list(__import__("os").environ):
        if is_secret_name(name):
            monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", str(published))
    import huggingface_hub

    monkeypatch.setattr(huggingface_hub, "get_token", lambda: None)  # token paths are fixed at import time
    (published / "model.safetensors").write_bytes(b"swapped")
    with pytest.raises(SystemExit, match="differs"):
        finish.clean_room_check(published)


def test_a_partial_eval_table_is_never_written(tmp_path):
    with pytest.raises(ValueError, match="partial"):
        finish.report_text("tiny", [4, 8], tmp_path, ["heldout_loss", "next_token_accuracy"],
                           {"heldout_loss": {"value": 3.0, "samples": 64, "tokens": 4096}})
    text = finish.report_text("tiny", [4, 8], tmp_path, ["heldout_loss"],
                              {"heldout_loss": {"value": 3.0, "samples": 64, "tokens": 4096}})
    assert "| heldout_loss | 3.0000 | 64 | 4096 |" in text


def test_eval_results_are_read_as_they_landed(tmp_path):
    (tmp_path / "heldout_loss.json").write_text(json.dumps({"task": "heldout_loss", "value": 2.5}))
    (tmp_path / "next_token_accuracy.smoke.json").write_text(json.dumps({"value": 0.1}))
    found = finish.results(tmp_path, ["heldout_loss", "next_token_accuracy"])
    assert list(found) == ["heldout_loss"]  # a smoke result never stands in for the full one


def test_trainer_config_keeps_only_trainer_keys():
    config = {"preset": "tiny", "max_steps": 24, "store": {"kind": "local-git"}, "eval_plan": ["x"]}
    assert json.loads(finish.trainer_config_json(config)) == {"max_steps": 24, "preset": "tiny"}


def test_evaluate_heldout_positions_refuse_trained_samples():
    from wikiengine.training.evaluate import heldout_positions

    assert heldout_positions(1000, 192, 64) == range(936, 1000)
    with pytest.raises(ValueError, match="not held out"):
        heldout_positions(1000, 950, 64)


def test_report_paths_stay_under_the_run(tmp_path):
    assert finish.eval_dir(tmp_path, "tiny") == tmp_path / "wiki" / "runs" / "tiny" / "eval"
    assert finish.publish_dir(tmp_path, "tiny", {}) == tmp_path / ".wiki" / "published" / "tiny"
    assert finish.publish_dir(tmp_path, "tiny", {"publish": {"dir": "/abs/p"}}) == Path("/abs/p/tiny")


TEMPLATE = """# ounce100m: final report

Written by hand before the run; the engine fills the four blocks.

## Checkpoints

<!-- PENDING: checkpoints -->
PENDING
<!-- /PENDING -->

## Published

<!-- PENDING: published -->
PENDING
<!-- /PENDING -->

## Evaluation

<!-- PENDING: evaluation -->
PENDING
<!-- /PENDING -->

## Summary

<!-- PENDING: summary -->
PENDING
<!-- /PENDING -->

## Notes kept as written
"""


def test_a_report_template_has_its_pending_blocks_filled_and_nothing_else_changed(tmp_path):
    found = {"heldout_loss": {"value": 3.21, "samples": 64, "tokens": 4096}}
    blocks = finish.report_blocks("tiny", [4, 8], tmp_path / "tiny", ["heldout_loss"], found)
    filled = finish.fill_report(TEMPLATE, blocks)
    assert "PENDING" not in filled and filled.count("<!-- filled: ") == 4
    assert "| heldout_loss | 3.2100 | 64 | 4096 |" in filled
    assert filled.startswith("# ounce100m: final report\n\nWritten by hand") and filled.endswith(
        "## Notes kept as written\n")
    with pytest.raises(ValueError, match="unknown PENDING block 'budget'"):
        finish.fill_report(TEMPLATE.replace("PENDING: summary", "PENDING: budget"), blocks)
    with pytest.raises(ValueError, match="no '<!-- PENDING"):
        finish.fill_report("# nothing to fill\n", blocks)
