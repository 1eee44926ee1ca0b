"""An eager torch process imports no ``torch._dynamo`` (wikiengine/core/lazy_dynamo.py), with
torch's own numbers: the optimizer's step, state and schedule bit for bit."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from wikiengine.core import lazy_dynamo

REPO = Path(__file__).resolve().parent.parent
IMPLEMENTATIONS = ("for-loop", "foreach", "fused")

# a fresh process: each AdamW implementation trained by the eager subclass, then the two other
# places where the autoresearch target imported dynamo (a dispatch mode's op trace, the profiler),
# then a relay session of two steps (its free-space check counted on a meta-device model)
PROCESS = r"""
import json, sys, warnings
from pathlib import Path
warnings.simplefilter("error")  # a schedule that missed the optimizer's step warns
import torch
from tests.test_lazy_dynamo import IMPLEMENTATIONS, train
from wikiengine.core.lazy_dynamo import eager_optimizer
from wikiengine.training import autoresearch_target as target, session
from wikiengine.training.autoresearch_knobs import TargetConfig
from wikiengine.training.demo import create_demo_run

trained = {i: train(eager_optimizer(torch.optim.AdamW), i) for i in IMPLEMENTATIONS}
run = create_demo_run(Path(sys.argv[1]) / "run", max_steps=2, save_steps=2, session_steps=2, samples_per_step=8,
                      micro_batch=4)
assert session.main(run.session_argv()) == 0
step = target.TrainingStep(TargetConfig(batch=16, adamw="fused"))
traced = target.op_trace(TargetConfig(batch=16, adamw="fused"))
profiled = target._profile_one_step(step)
print(json.dumps({"trained": trained, "traced": any(op.startswith("aten::_fused_adamw_(") for op in traced),
                  "profiled": "aten::_fused_adamw_" in profiled, "dynamo": "torch._dynamo" in sys.modules}))
"""


def train(optimizer_class, implementation: str) -> list:
    """Five steps of a small model (two parameter groups, a LambdaLR schedule, a disabled
    GradScaler): every parameter and optimizer state tensor as hex, the groups, the schedule."""
    import torch

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
    return [[t.detach().numpy().tobytes().hex() for t in tensors], state["param_groups"], schedule.state_dict()]


def test_a_training_step_process_imports_no_dynamo_and_steps_bit_for_bit_as_torch(tmp_path):
    """The autoresearch target (16 processes a demo) imported dynamo (and inductor, through the
    profiler's start): about 2 s of its 6 s of CPU; a relay session the same. Nothing there compiles."""
    import torch
    import torch._dynamo  # noqa: F401  (torch's own optimizer imports it anyway)

    run = subprocess.run([sys.executable, "-c", PROCESS, str(tmp_path)], cwd=REPO, capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    eager = json.loads(run.stdout.splitlines()[-1])
    assert eager["dynamo"] is False and eager["traced"] and eager["profiled"]
    torchs = {i: train(torch.optim.AdamW, i) for i in IMPLEMENTATIONS}
    assert json.loads(json.dumps(torchs)) == eager["trained"]
    # once dynamo is loaded, the subclass calls torch's own wrappers: the same numbers
    assert {i: train(lazy_dynamo.eager_optimizer(torch.optim.AdamW), i) for i in IMPLEMENTATIONS} == torchs
    assert lazy_dynamo.eager_optimizer(torch.optim.AdamW).__name__ == "AdamW"


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
