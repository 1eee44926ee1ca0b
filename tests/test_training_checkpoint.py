"""Checkpoints: HF layout, manifest verification, strict cursor, refusal of bad bytes.

RELIABILITY rows 3 (partial or missing), 8 (truncated or bit-flipped safetensors),
9 (malicious pickle), 19 (a directory without its marker is never deleted) and
39 (atomic local writes under SIGKILL).
"""

from __future__ import annotations

import json
import os
import pickle
import shutil
import signal
import subprocess
import sys
import textwrap
import time

import pytest
from torch_threads import one_torch_thread  # noqa: E402,F401  (autouse: one torch thread)

from wikiengine.core.atomic import atomic_write_bytes
from wikiengine.executors.local_store import LocalGitStore
from wikiengine.executors.store import StoreFormatError
from wikiengine.training import session
from wikiengine.training.checkpoint import (
    MANIFEST_NAME,
    CheckpointError,
    build_manifest,
    load_torch_verified,
    local_checkpoints,
    read_cursor,
    read_trainer_state,
    read_verified_from_store,
    read_verified_local,
    rotate_local,
    verify_files,
    write_checkpoint,
)
from wikiengine.training.demo import create_demo_run

HF_FILES = {"model.safetensors", "optimizer.pt", "scheduler.pt", "rng_state.pth", "trainer_state.json", "cursor.json",
            "manifest.json"}


@pytest.fixture(scope="module")
def saved_run(tmp_path_factory):
    """A demo run after one session: checkpoints 4 and 8 in the store."""
    run = create_demo_run(tmp_path_factory.mktemp("ckpt") / "run")
    assert session.main(run.session_argv()) == 0
    return run


def _files(run, step=8):
    store = run.store()
    return read_verified_from_store(store, step, store.head())


def _commit_tampered(run, tmp_path, step, change, in_place=False):
    """Commit checkpoint ``step`` with ``change(folder)`` applied and move the pointer to it.

    Works on a copy of the run's store unless ``in_place`` (the module's run is shared).
    """
    store = run.store()
    if not in_place:
        shutil.copytree(run.store_path, tmp_path / "store-copy")
        store = LocalGitStore(tmp_path / "store-copy")
    folder = tmp_path / f"tampered-{step}"
    folder.mkdir()
    head = store.head()
    prefix = f"ckpt/checkpoint-{step}/"
    for path in store.list_files(prefix, head):
        (folder / path[len(prefix):]).write_bytes(store.read_file(path, head))
    change(folder)
    commit = store.commit_checkpoint(step, folder, head)
    return store, store.commit_pointer(step, commit)


# ---------------------------------------------------------------- layout and cursor

def test_checkpoint_has_the_trainer_layout(saved_run):
    files = _files(saved_run)
    assert set(files) == HF_FILES
    state = read_trainer_state(files["trainer_state.json"])
    assert (state["global_step"], state["max_steps"], state["save_steps"]) == (8, 24, 4)
    assert [entry["step"] for entry in state["log_history"]] == list(range(1, 9))
    assert {"loss", "grad_norm", "learning_rate", "tokens_per_second"} <= set(state["log_history"][-1])
    cursor = read_cursor(files["cursor.json"])
    assert cursor.tokens_consumed == 8 * 8 * 64 and cursor.samples_consumed == 8 * 8


def test_trainer_state_loads_as_a_transformers_trainer_state(saved_run):
    """Every key is a TrainerState field (an unknown key would raise TypeError there)."""
    expected = {"epoch", "global_step", "max_steps", "logging_steps", "eval_steps", "save_steps", "train_batch_size",
                "num_train_epochs", "num_input_tokens_seen", "total_flos", "log_history", "best_metric",
                "best_global_step", "best_model_checkpoint", "is_local_process_zero", "is_world_process_zero",
                "is_hyper_param_search", "trial_name", "trial_params", "stateful_callbacks"}
    assert set(json.loads(_files(saved_run)["trainer_state.json"])) == expected


GOOD_CURSOR = {"step": 3, "tokens_consumed": 3 * 262144, "samples_consumed": 768, "tokens_per_step": 262144,
               "samples_per_step": 256, "seq_len": 1024, "seed": 1, "epoch": 0, "sample_in_epoch": 768,
               "dp_world_size": 2, "dataset_files_sha": "53df4708526da5c8", "shuffle_perm_sha": "c6f617b96f502d96"}


def test_read_cursor_accepts_exact_arithmetic():
    cursor = read_cursor(json.dumps(GOOD_CURSOR).encode())
    assert cursor.tokens_consumed == 786432 and cursor.dataset_files_sha == "53df4708526da5c8"


@pytest.mark.parametrize(
    "raw",
    [
        json.dumps({**GOOD_CURSOR, "tokens_consumed": 786432.0}),
        json.dumps({**GOOD_CURSOR, "step": True}),
        json.dumps({**GOOD_CURSOR, "tokens_consumed": 786433}),
        json.dumps({**GOOD_CURSOR, "samples_consumed": 769}),
        json.dumps({**GOOD_CURSOR, "tokens_per_step": 262145, "tokens_consumed": 3 * 262145}),
        json.dumps({**GOOD_CURSOR, "dataset_files_sha": "53DF4708526DA5C8"}),
        json.dumps({**GOOD_CURSOR, "extra": 1}),
        json.dumps({k: v for k, v in GOOD_CURSOR.items() if k != "seed"}),
        json.dumps(GOOD_CURSOR).replace('"seed": 1', '"seed": NaN'),
        json.dumps(GOOD_CURSOR)[:-1] + ', "step": 3}',
        "[1, 2]",
        "\xff",
    ],
    ids=["float", "bool", "tokens", "samples", "tokens-per-step", "sha-case", "unknown", "missing", "nan", "dup",
         "list", "utf8"],
)
def test_read_cursor_refuses_inexact_input(raw):
    with pytest.raises(StoreFormatError):
        read_cursor(raw.encode("latin-1"))


# ---------------------------------------------------------------- row 3: partial or missing

def test_row03_pointer_to_a_missing_directory_is_refused(tmp_path):
    run = create_demo_run(tmp_path / "run", max_steps=8)
    store = run.store()
    head = store.commit_pointer(4, store.head())  # latest -> 4, but no checkpoint-4 was ever committed
    with pytest.raises(CheckpointError, match="does not exist"):
        read_verified_from_store(store, 4, head)
    assert session.main(run.session_argv()) == session.EXIT_REFUSED
    assert store.head() == head


@pytest.mark.parametrize("victim", ["optimizer.pt", "rng_state.pth", "cursor.json"])
def test_row03_file_deleted_from_the_checkpoint_is_refused(saved_run, tmp_path, victim):
    store, head = _commit_tampered(saved_run, tmp_path, 8, lambda folder: (folder / victim).unlink())
    with pytest.raises(CheckpointError, match=f"{victim} is listed in manifest.json but missing"):
        read_verified_from_store(store, 8, head)


def test_row03_file_not_in_the_manifest_is_refused(saved_run, tmp_path):
    store, head = _commit_tampered(saved_run, tmp_path, 8, lambda folder: (folder / "extra.pt").write_bytes(b"x"))
    with pytest.raises(CheckpointError, match="extra.pt is present but not listed"):
        read_verified_from_store(store, 8, head)


def test_row03_directory_without_manifest_is_refused(saved_run, tmp_path):
    store, head = _commit_tampered(saved_run, tmp_path, 8, lambda folder: (folder / MANIFEST_NAME).unlink())
    with pytest.raises(CheckpointError, match="no manifest.json"):
        read_verified_from_store(store, 8, head)


def test_row03_manifest_for_another_step_is_refused(saved_run):
    files = _files(saved_run)
    with pytest.raises(CheckpointError, match="another step"):
        verify_files(files[MANIFEST_NAME], files, 12)


def test_row03_session_refuses_a_pointer_to_a_partial_checkpoint(tmp_path):
    run = create_demo_run(tmp_path / "run", max_steps=16)
    assert session.main(run.session_argv()) == 0
    _commit_tampered(run, tmp_path, 8, lambda folder: (folder / "scheduler.pt").unlink(), in_place=True)
    before = run.store().head()
    assert session.main(run.session_argv()) == session.EXIT_REFUSED
    assert run.store().head() == before  # nothing written


# ---------------------------------------------------------------- row 8: truncated or flipped safetensors

def test_row08_truncated_safetensors_is_refused(saved_run, tmp_path):
    def truncate(folder):
        path = folder / "model.safetensors"
        path.write_bytes(path.read_bytes()[:-100])

    store, head = _commit_tampered(saved_run, tmp_path, 8, truncate)
    with pytest.raises(CheckpointError, match="model.safetensors: .* bytes, manifest says"):
        read_verified_from_store(store, 8, head)


def test_row08_bit_flipped_safetensors_is_refused(saved_run, tmp_path):
    def flip(folder):
        path = folder / "model.safetensors"
        data = bytearray(path.read_bytes())
        data[len(data) // 2] ^= 0x01
        path.write_bytes(bytes(data))

    store, head = _commit_tampered(saved_run, tmp_path, 8, flip)
    with pytest.raises(CheckpointError, match="model.safetensors: sha256 differs"):
        read_verified_from_store(store, 8, head)


def test_row08_session_refuses_to_resume_from_a_flipped_checkpoint(tmp_path):
    run = create_demo_run(tmp_path / "run", max_steps=8, session_steps=4)
    assert session.main(run.session_argv()) == 0

    def flip(folder):
        path = folder / "model.safetensors"
        data = bytearray(path.read_bytes())
        data[-1] ^= 0x80
        path.write_bytes(bytes(data))

    _commit_tampered(run, tmp_path, 4, flip, in_place=True)
    before = run.store().head()
    assert session.main(run.session_argv()) == session.EXIT_REFUSED
    assert run.store().head() == before


# ---------------------------------------------------------------- row 9: malicious pickle

class _Payload:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def test_row09_pickle_payload_with_a_wrong_hash_is_never_unpickled(saved_run, tmp_path):
    marker = tmp_path / "pwned"
    store, head = _commit_tampered(
        saved_run, tmp_path, 8,
        lambda folder: (folder / "optimizer.pt").write_bytes(pickle.dumps({"state": _Payload(marker)}, protocol=2)))
    with pytest.raises(CheckpointError, match="optimizer.pt"):
        read_verified_from_store(store, 8, head)
    assert not marker.exists()


def test_row09_pickle_payload_with_a_rewritten_manifest_is_refused_by_weights_only(saved_run, tmp_path):
    marker = tmp_path / "pwned"
    files = dict(_files(saved_run))
    files["optimizer.pt"] = pickle.dumps({"state": _Payload(marker)}, protocol=2)
    del files[MANIFEST_NAME]
    files[MANIFEST_NAME] = build_manifest(files, 8)  # an attacker who can rewrite the manifest too
    verify_files(files[MANIFEST_NAME], files, 8)
    with pytest.raises(CheckpointError, match="optimizer.pt: refused to unpickle"):
        load_torch_verified(files, "optimizer.pt")
    assert not marker.exists()


def test_row09_torch_save_payload_is_refused_by_weights_only(saved_run, tmp_path):
    import io

    import torch

    marker = tmp_path / "pwned"
    buffer = io.BytesIO()
    torch.save({"state": _Payload(marker)}, buffer)
    with pytest.raises(CheckpointError, match="refused to unpickle"):
        load_torch_verified({"rng_state.pth": buffer.getvalue()}, "rng_state.pth")
    assert not marker.exists()


def test_row09_unverified_file_is_never_loaded():
    with pytest.raises(CheckpointError, match="not in the verified checkpoint"):
        load_torch_verified({}, "optimizer.pt")


# ---------------------------------------------------------------- row 19: never delete an unmarked directory

def test_row19_checkpoint_without_manifest_is_quarantined_not_deleted(tmp_path, saved_run):
    out = tmp_path / "out"
    files = {k: v for k, v in _files(saved_run).items() if k != MANIFEST_NAME}
    write_checkpoint(out, 4, files)
    write_checkpoint(out, 8, files)
    copied = out / "checkpoint-12"  # a real checkpoint copied without its marker
    shutil.copytree(out / "checkpoint-8", copied)
    (copied / MANIFEST_NAME).unlink()
    temp_like = out / ".checkpoint-16.tmp-99999"
    shutil.copytree(out / "checkpoint-8", temp_like)
    complete, partial = local_checkpoints(out)
    assert sorted(complete) == [4, 8] and sorted(p.name for p in partial) == [".checkpoint-16.tmp-99999",
                                                                             "checkpoint-12"]
    reports = rotate_local(out, keep_steps={8}, quarantine_dir=out / "quarantine")
    assert len(reports) == 2 and all("no manifest.json" in line for line in reports)
    assert not (out / "checkpoint-4").exists()  # complete and superseded: rotated away
    assert (out / "checkpoint-8" / MANIFEST_NAME).is_file()
    quarantined = sorted(p.name for p in (out / "quarantine").iterdir())
    assert quarantined == ["checkpoint-12", "checkpoint-16.tmp-99999"]
    assert (out / "quarantine" / "checkpoint-12" / "model.safetensors").read_bytes() == files["model.safetensors"]


def test_row19_session_reports_and_keeps_a_partial_local_checkpoint(tmp_path):
    run = create_demo_run(tmp_path / "run", max_steps=4, session_steps=4)
    partial = run.out_dir / "checkpoint-0"
    partial.mkdir(parents=True)
    (partial / "model.safetensors").write_bytes(b"precious")
    result = subprocess.run([sys.executable, "-m", "wikiengine.training.session", *run.session_argv()], capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]
    assert any(e["event"] == "quarantine" and "checkpoint-0" in e["detail"] for e in events)
    assert (run.out_dir / "quarantine" / "checkpoint-0" / "model.safetensors").read_bytes() == b"precious"


def test_local_checkpoint_round_trip(tmp_path, saved_run):
    files = {k: v for k, v in _files(saved_run).items() if k != MANIFEST_NAME}
    directory = write_checkpoint(tmp_path, 8, files)
    assert read_verified_local(directory, 8) == {**files, MANIFEST_NAME: (directory / MANIFEST_NAME).read_bytes()}
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


# ---------------------------------------------------------------- row 39: atomic local writes

WRITER = textwrap.dedent("""
    import sys
    from pathlib import Path
    from wikiengine.core.atomic import atomic_write_bytes
    path = Path(sys.argv[1])
    old, new = b"A" * 4_000_000, b"B" * 3_000_000
    print("ready", flush=True)
    i = 0
    while True:
        atomic_write_bytes(path, new if i % 2 else old)
        i += 1
""")


def test_row39_sigkill_mid_write_leaves_old_or_new(tmp_path):
    path = tmp_path / "cursor.json"
    atomic_write_bytes(path, b"A" * 4_000_000)
    for delay in (0.05, 0.13, 0.21, 0.37):
        proc = subprocess.Popen([sys.executable, "-c", WRITER, str(path)], stdout=subprocess.PIPE)
        assert proc.stdout.readline() == b"ready\n"
        time.sleep(delay)  # not an assertion on time: only where the kill lands
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        data = path.read_bytes()
        assert data in (b"A" * 4_000_000, b"B" * 3_000_000)
    leftovers = [p.name for p in tmp_path.iterdir() if p.name != "cursor.json"]
    assert all(name.startswith(".cursor.json.tmp-") for name in leftovers)  # temp files only, never the target


def test_row39_killed_checkpoint_write_leaves_no_checkpoint_dir(tmp_path, saved_run):
    """A crash before the rename leaves only a hidden temp dir (quarantined later), never checkpoint-N."""
    files = {k: v for k, v in _files(saved_run).items() if k != MANIFEST_NAME}
    script = textwrap.dedent("""
        import os, sys, signal, pickle
        from pathlib import Path
        import wikiengine.training.checkpoint as ck
        files = pickle.loads(Path(sys.argv[2]).read_bytes())
        real = ck.atomic_write_bytes
        def die(path, data):
            os.kill(os.getpid(), signal.SIGKILL)
        ck.atomic_write_bytes = die  # dies when the manifest, the last file, is written
        ck.write_checkpoint(Path(sys.argv[1]), 8, files)
    """)
    blob = tmp_path / "files.pkl"
    blob.write_bytes(pickle.dumps(files))
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-c", script, str(out), str(blob)], timeout=120)
    assert proc.returncode == -signal.SIGKILL
    complete, partial = local_checkpoints(out)
    assert complete == {} and [p.name.startswith(".checkpoint-8.tmp-") for p in partial] == [True]
