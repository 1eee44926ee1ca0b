"""Distributed data parallel through torchrun (2 CPU processes on gloo) keeps the cursor arithmetic.

Two DDP sessions (0 -> 2, then a resume 2 -> 4 from ``rng_state_0/1.pth``) against one
single-process session 0 -> 4 with the same global batch: the cursors agree exactly
(apart from ``dp_world_size``); weights and losses agree closely, not bitwise, because
the gradient of the global batch is summed in another order (an all-reduce of two
half-batch means instead of an accumulation of two micro-batches). Dropout is off so
that both runs draw the same computation.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import torch
from safetensors.torch import load

from wikiengine.training import session
from wikiengine.training.checkpoint import read_cursor, read_trainer_state, read_verified_from_store
from wikiengine.training.demo import create_demo_run

CONFIG = {"max_steps": 4, "save_steps": 2, "session_steps": 2, "samples_per_step": 8, "micro_batch": 4, "dropout": 0.0}


def _torchrun(run):
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    return subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
         "-m", "wikiengine.training.session", *run.session_argv()],
        capture_output=True, text=True, timeout=600, env=env)


@pytest.mark.slow
def test_two_process_ddp_keeps_the_cursor_and_matches_one_process(tmp_path):
    ddp = create_demo_run(tmp_path / "ddp", **CONFIG)
    for expected_end in (2, 4):
        result = _torchrun(ddp)
        # the ranks' own lines first (torchrun's summary of a failed rank buries them at the top)
        assert result.returncode == 0, result.stderr[:4000] + "\n...\n" + result.stderr[-1500:]
        events = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
        assert events[-1]["event"] == "session_end" and events[-1]["end_step"] == expected_end
        assert sum(e["event"] == "session_end" for e in events) == 1  # only rank 0 reports
    single = create_demo_run(tmp_path / "single", **{**CONFIG, "session_steps": 4})
    assert session.main(single.session_argv()) == 0

    ddp_store, single_store = ddp.store(), single.store()
    ddp_files = read_verified_from_store(ddp_store, 4, ddp_store.head())
    single_files = read_verified_from_store(single_store, 4, single_store.head())
    assert {"rng_state_0.pth", "rng_state_1.pth"} <= set(ddp_files) and "rng_state.pth" not in ddp_files

    ddp_cursor, single_cursor = read_cursor(ddp_files["cursor.json"]), read_cursor(single_files["cursor.json"])
    assert ddp_cursor.dp_world_size == 2 and single_cursor.dp_world_size == 1
    assert ddp_cursor.__dict__ | {"dp_world_size": 1} == single_cursor.__dict__
    assert (ddp_cursor.tokens_consumed, ddp_cursor.samples_consumed) == (4 * 8 * 64, 4 * 8)

    ddp_losses = [e["loss"] for e in read_trainer_state(ddp_files["trainer_state.json"])["log_history"]]
    single_losses = [e["loss"] for e in read_trainer_state(single_files["trainer_state.json"])["log_history"]]
    assert len(ddp_losses) == len(single_losses) == 4
    assert ddp_losses == pytest.approx(single_losses, rel=1e-4)
    ddp_weights, single_weights = load(ddp_files["model.safetensors"]), load(single_files["model.safetensors"])
    assert ddp_weights.keys() == single_weights.keys()
    for name in ddp_weights:
        torch.testing.assert_close(ddp_weights[name], single_weights[name], rtol=1e-4, atol=1e-5)
