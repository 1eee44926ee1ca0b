"""Data pins, the cursor's sample order, the model presets, precision and the run config."""

from __future__ import annotations

import io
import json
import shutil

import numpy as np
import pytest
import torch
from torch_threads import one_torch_thread  # noqa: E402,F401  (autouse: one torch thread)

from wikiengine.training.checkpoint import read_verified_local, write_checkpoint
from wikiengine.training.config import ConfigError, RunConfig, config_from_dict, load_config, tiny_demo_config
from wikiengine.training.data import (
    CORPUS_DIR,
    dataset_files_sha,
    epoch_permutation,
    open_corpus,
    rank_slice,
    shuffle_perm_sha,
)
from wikiengine.training.make_corpus import generate
from wikiengine.training.model import build_model, count_parameters
from wikiengine.training.presets import PRESETS, parameter_count
from wikiengine.training.trainer import Trainer, lr_at, resolve_precision


def test_shipped_corpus_regenerates_byte_for_byte(tmp_path):
    generate(tmp_path)
    shipped = sorted(p.name for p in CORPUS_DIR.iterdir() if p.suffix in (".bin", ".json"))
    assert shipped == sorted(p.name for p in tmp_path.iterdir())
    for name in shipped:
        assert (tmp_path / name).read_bytes() == (CORPUS_DIR / name).read_bytes(), name
    total = sum((CORPUS_DIR / n).stat().st_size for n in shipped)
    assert total < 400_000  # a few hundred KB at most


def test_dataset_files_sha_covers_names_and_bytes(tmp_path):
    corpus = tmp_path / "c"
    shutil.copytree(CORPUS_DIR, corpus)
    pinned = dataset_files_sha(corpus)
    assert pinned == dataset_files_sha(CORPUS_DIR) and len(pinned) == 16
    shard = corpus / "shard_001.bin"
    data = bytearray(shard.read_bytes())
    data[100] ^= 1
    shard.write_bytes(bytes(data))
    assert dataset_files_sha(corpus) != pinned
    data[100] ^= 1
    shard.write_bytes(bytes(data))
    assert dataset_files_sha(corpus) == pinned
    shard.rename(corpus / "shard_001b.bin")  # same bytes, same order, another name
    assert dataset_files_sha(corpus) != pinned


def test_shuffle_perm_sha_is_the_seeded_permutation():
    assert shuffle_perm_sha(1234, 1499) == shuffle_perm_sha(1234, 1499)
    assert shuffle_perm_sha(1234, 1499) != shuffle_perm_sha(1235, 1499)
    assert shuffle_perm_sha(1234, 1499) != shuffle_perm_sha(1234, 1498)
    perm = epoch_permutation(1234, 0, 1499)
    assert sorted(perm.tolist()) == list(range(1499))


def test_step_s_reads_perm_slice():
    corpus = open_corpus(None, 64, 1234)
    perm = epoch_permutation(1234, 0, corpus.n_samples)
    batch = 8
    for step in (0, 1, 7, 100):
        np.testing.assert_array_equal(corpus.sample_indices(step * batch, batch), perm[step * batch:(step + 1) * batch])
    inputs, targets = corpus.batch(3 * batch, batch)
    first = int(perm[3 * batch])
    expected = torch.from_numpy(corpus.tokens[first * 64:first * 64 + 65].astype(np.int64))
    assert torch.equal(inputs[0], expected[:-1]) and torch.equal(targets[0], expected[1:])


def test_epochs_wrap_into_a_new_permutation():
    corpus = open_corpus(None, 64, 1234)
    n = corpus.n_samples
    both = corpus.sample_indices(n - 3, 6)
    np.testing.assert_array_equal(both[:3], epoch_permutation(1234, 0, n)[-3:])
    np.testing.assert_array_equal(both[3:], epoch_permutation(1234, 1, n)[:3])
    assert sorted(corpus.sample_indices(n, n).tolist()) == list(range(n))


def test_rank_slices_partition_the_global_batch():
    assert [rank_slice(256, 2, r) for r in range(2)] == [(0, 128), (128, 128)]
    with pytest.raises(ValueError):
        rank_slice(256, 3, 0)


def test_ounce100m_is_about_100m_parameters_with_context_1024():
    model = build_model("ounce100m", "meta")
    assert 95_000_000 <= count_parameters(model) <= 110_000_000
    assert PRESETS["ounce100m"].context == 1024


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_the_parameter_count_from_the_shape_is_the_models(preset):
    """The free-space check counts from the shape (a meta-device model imports dynamo)."""
    assert parameter_count(preset) == count_parameters(build_model(preset, "meta"))


def test_seed_run_arithmetic_from_the_config():
    seed_run = RunConfig(preset="ounce100m", max_steps=3814, save_steps=127, session_steps=762, samples_per_step=256,
                         seq_len=1024, micro_batch=8).validate()
    assert seed_run.tokens_per_step == 262_144


def test_tiny_model_forward_and_loss():
    model = build_model("tiny")
    idx = torch.randint(0, 256, (2, 16))
    logits, loss = model(idx, idx)
    assert logits.shape == (2, 16, 256) and loss.ndim == 0 and torch.isfinite(loss)
    assert model.head.weight is model.tok_emb.weight


def test_precision_resolution():
    assert resolve_precision("auto", torch.device("cpu")) == "fp32"
    assert resolve_precision("bf16", torch.device("cpu")) == "bf16"


@pytest.mark.parametrize("precision", ["bf16", "fp16"])
def test_mixed_precision_paths_train_and_resume(tmp_path, precision):
    """fp16 writes scaler.pt (the HF name) and restores it; both reduced precisions train."""
    config = tiny_demo_config(precision=precision, max_steps=4)
    trainer = Trainer(config)
    losses = [trainer.train_step()["loss"] for _ in range(2)]
    assert all(np.isfinite(losses))
    files = trainer.checkpoint_files()
    assert ("scaler.pt" in files) == (precision == "fp16")
    directory = write_checkpoint(tmp_path, 2, files)
    resumed = Trainer(config)
    resumed.restore(read_verified_local(directory, 2), 2)
    assert resumed.step == 2
    if precision == "fp16":
        assert resumed.scaler.state_dict() == trainer.scaler.state_dict()


def test_gradient_accumulation_keeps_the_global_batch():
    """micro_batch changes how a step is computed, not what it computes."""
    results = []
    for micro in (8, 4, 2):
        trainer = Trainer(tiny_demo_config(micro_batch=micro, dropout=0.0, max_steps=4))
        results.append([trainer.train_step()["loss"] for _ in range(2)])
        assert trainer.accumulation == 8 // micro
    assert results[0] == pytest.approx(results[1], rel=1e-5) and results[0] == pytest.approx(results[2], rel=1e-5)


def test_learning_rate_schedule_warms_up_then_decays():
    config = tiny_demo_config()
    rates = [lr_at(step, config) for step in range(config.max_steps + 1)]
    assert rates[0] < rates[config.warmup_steps - 1] == pytest.approx(config.learning_rate)
    assert rates[-1] == pytest.approx(config.min_learning_rate)
    assert all(a >= b for a, b in zip(rates[config.warmup_steps:], rates[config.warmup_steps + 1:]))


def test_config_round_trips_through_json(tmp_path):
    config = tiny_demo_config(seed=7, dataset_files_sha="0123456789abcdef")
    path = tmp_path / "run.json"
    path.write_text(config.to_json())
    assert load_config(path) == config


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"save_steps": 3, "session_steps": 8}, "not a multiple of save_steps"),
        ({"seq_len": 4096}, "exceeds the context"),
        ({"precision": "fp8"}, "precision must be"),
        ({"max_steps": True}, "must be an integer"),
        ({"learning_rate": float("nan")}, "finite"),
        ({"shuffle_perm_sha": "xyz"}, "16 lowercase hex"),
        ({"dropout": 1.5}, "dropout"),
        ({"save_steps": 4, "logging_steps": 3}, "not a multiple of logging_steps"),
    ],
)
def test_config_validation(data, message):
    with pytest.raises(ConfigError, match=message):
        config_from_dict(data)


def test_non_finite_loss_and_grad_norm_log_as_null():
    """An fp16 step with inf gradients (skipped by the scaler) must not make trainer_state.json invalid."""
    from wikiengine.training.checkpoint import read_trainer_state

    trainer = Trainer(tiny_demo_config(max_steps=4))
    trainer.train_step()
    trainer._interval = (float("nan"), 1, 0.01)
    trainer._last = (float("inf"), 1e-3)
    trainer.flush_log()
    assert trainer.log_history[-1]["loss"] is None and trainer.log_history[-1]["grad_norm"] is None
    state = read_trainer_state(trainer.checkpoint_files()["trainer_state.json"])  # strict: no NaN/Infinity
    assert state["log_history"][-1]["loss"] is None


def test_torch_files_are_loadable_with_weights_only(tmp_path):
    trainer = Trainer(tiny_demo_config(max_steps=4))
    trainer.train_step()
    files = trainer.checkpoint_files()
    for name in ("optimizer.pt", "scheduler.pt", "rng_state.pth"):
        torch.load(io.BytesIO(files[name]), weights_only=True)
    assert json.loads(files["cursor.json"])["step"] == 1


def test_a_config_and_its_corpus_pins_are_read_without_torch():
    """What `wiki demo relay` and a session's refusals need (the run config checked against its
    preset, the corpus opened and pinned) imports no torch: its import is 1.3 s of CPU."""
    import subprocess
    import sys

    probe = ("import sys\n"
             "from wikiengine.training.config import tiny_demo_config\n"
             "from wikiengine.training.data import open_corpus\n"
             "config = tiny_demo_config().validate()\n"
             "corpus = open_corpus('', config.seq_len, config.seed)\n"
             "print(corpus.files_sha, corpus.perm_sha, 'torch' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    corpus = open_corpus("", tiny_demo_config().seq_len, tiny_demo_config().seed)
    assert done.stdout.split() == [corpus.files_sha, corpus.perm_sha, "False"], done.stderr
