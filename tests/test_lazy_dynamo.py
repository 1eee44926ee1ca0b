"""An eager torch process imports no ``torch._dynamo`` (wikiengine/core/lazy_dynamo.py), with
torch's own numbers: the optimizer's step, state and schedule bit for bit."""

from __future__ import annotations

import json
import subprocess
import sys

from wikiengine.core import lazy_dynamo

# one process: the autoresearch target's whole measurement, then each AdamW implementation
# trained 5 steps (a LambdaLR schedule, a disabled GradScaler) by the eager subclass, by
# torch's AdamW (which loads dynamo) and by the eager subclass again (torch's wrappers now)
PROCESS = r"""
import json, runpy, sys, warnings
warnings.simplefilter("error")  # a scheduler that missed the step warns
sys.argv = ["target", *sys.argv[1:]]
try:
    runpy.run_module("wikiengine.training.autoresearch_target", run_name="__main__")
except SystemExit as exit:
    assert not exit.code, exit.code
after_target = "torch._dynamo" in sys.modules
import torch
from wikiengine.core.lazy_dynamo import eager_optimizer

def train(optimizer_class, implementation):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 4))
    groups = [{"params": [p for p in model.parameters() if p.dim() >= 2], "weight_decay": 0.1},
              {"params": [p for p in model.parameters() if p.dim() < 2], "weight_decay": 0.0}]
    optimizer = optimizer_class(groups, lr=0.01, foreach=implementation == "foreach", fused=implementation == "fused")
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 1.0 / (1 + step))
    scaler = torch.amp.GradScaler("cpu", enabled=False)
    for _ in range(5):
        scaler.scale(model(torch.randn(32, 8)).pow(2).mean()).backward()
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad(set_to_none=True)
        schedule.step()
    state = optimizer.state_dict()
    tensors = [*model.parameters(), *(t for s in state["state"].values() for t in s.values())]
    return [t.detach().numpy().tobytes().hex() for t in tensors], state["param_groups"], schedule.state_dict()

implementations = ("for-loop", "foreach", "fused")
eager = {i: train(eager_optimizer(torch.optim.AdamW), i) for i in implementations}
after_eager = "torch._dynamo" in sys.modules
torch_own = {i: train(torch.optim.AdamW, i) for i in implementations}
after_torch = "torch._dynamo" in sys.modules
eager_loaded = {i: train(eager_optimizer(torch.optim.AdamW), i) for i in implementations}
print(json.dumps({"after_target": after_target, "after_eager": after_eager, "after_torch": after_torch,
                  "eager_is_torchs": eager == torch_own, "eager_loaded_is_torchs": eager_loaded == torch_own,
                  "class": eager_optimizer(torch.optim.AdamW).__name__}))
"""


def test_a_training_step_process_imports_no_dynamo_and_steps_bit_for_bit_as_torch(tmp_path):
    """The autoresearch target (16 processes a demo) imported dynamo (and inductor, through the
    profiler's start): about 2 s of its 6 s of CPU. Nothing there compiles."""
    knobs = {"batch": 64, "adamw": "fused"}
    (tmp_path / "candidate.json").write_text(json.dumps(knobs))
    (tmp_path / "frontier.json").write_text(json.dumps({**knobs, "adamw": "for-loop"}))
    run = subprocess.run([sys.executable, "-c", PROCESS, "--config", "candidate.json", "--frontier", "frontier.json",
                          "--out", "out", "--rounds", "1", "--seconds", "0.2"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    assert json.loads(run.stdout.splitlines()[-1]) == {
        "after_target": False, "after_eager": False, "after_torch": True,
        "eager_is_torchs": True, "eager_loaded_is_torchs": True, "class": "AdamW"}
    metrics = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert metrics["exit_code"] == 0 and "aten::_fused_adamw_" in (tmp_path / "out" / "profile.md").read_text()


def test_a_wrapper_of_another_layout_is_called_as_it_is():
    def plain(x):
        return x + 1

    def _use_grad(self, *args):  # torch's name, reading what torch's does not
        import os

        return os.getpid()

    _use_grad.__wrapped__ = plain
    assert lazy_dynamo.eager_until_dynamo(plain) is plain
    assert lazy_dynamo._eager_step(plain) is plain
    assert lazy_dynamo._eager_step(_use_grad) is _use_grad


def test_torchs_wrappers_are_called_once_dynamo_is_loaded(monkeypatch):
    calls = []
    switch = lazy_dynamo._until_dynamo_loads(lambda x: calls.append(("eager", x)), lambda x: calls.append(("torch", x)))
    monkeypatch.delitem(sys.modules, lazy_dynamo.DYNAMO, raising=False)
    switch(1)
    monkeypatch.setitem(sys.modules, lazy_dynamo.DYNAMO, sys)
    switch(2)
    assert calls == [("eager", 1), ("torch", 2)]
