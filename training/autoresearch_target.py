"""The real optimization target of ``wiki demo autoresearch``: the throughput of a training step.

A two-hidden-layer MLP classifier (256 -> 1024 -> 1024 -> 64, erf GELU, mean cross-entropy,
AdamW) trains on synthetic data drawn from a fixed seed (labels from a random linear
teacher). The step's *math* is fixed by ``batch`` and ``seed``; every other knob of
:class:`TargetConfig` only chooses how that math is executed, except two that exist to be
caught:

===============  ==========================================  ===============================
knob             values                                      what it changes
===============  ==========================================  ===============================
``batch``        positive int (64)                           samples per optimizer step
``micro_batch``  positive int or null (null = ``batch``)     gradient accumulation; a value
                                                             that does not divide ``batch``
                                                             crashes in the step (a reshape)
``dtype``        ``float32`` | ``bfloat16``                  bfloat16 autocast (fp32 master
                                                             weights)
``adamw``        ``for-loop`` | ``foreach`` | ``fused``      the optimizer implementation
``gelu``         ``fused`` | ``composed``                    one aten op, or erf built from
                                                             elementwise ops
``layout``       ``out-in`` | ``in-out``                     weights stored (out, in) for
                                                             ``F.linear`` or (in, out) for
                                                             ``addmm``
``logsumexp``    ``exact`` | ``max``                         ``max`` is a "fast" loss that
                                                             drops the log-sum term: it
                                                             breaks the numerics
``pin_memory``   bool                                        pins host batches before a
                                                             device copy; the step runs on
                                                             the CPU, so it is read and has
                                                             no effect (a silent no-op)
===============  ==========================================  ===============================

Three measurements judge a candidate against the current frontier, in one process:

- **throughput** (samples/s): after a warm-up, candidate and frontier steps alternate one
  by one (CF FC CF ...) for N rounds, so machine load hits both alike. A round's figure
  for each side is its batch over its median step time in the round; ``speedup`` is the
  median of the per-round candidate/frontier ratios, ``frontier_tps`` the median frontier
  figure and ``tps = frontier_tps * speedup`` (the candidate at the frontier's load; the
  unpaired median is ``candidate_raw_tps``). The frontier is also timed against itself
  (its odd against its even steps of each round): half the interquartile range of that
  A/A ratio is ``noise_band_pct``, and ``noise_band = frontier_tps * noise_band_pct/100``
  is comparable with ``tps - frontier_tps``;
- **parity**: the candidate's losses over :data:`PARITY_STEPS` steps, and its outputs on a
  held-out probe batch after them, against a float64 run of the step's definition (same
  seed, same batch, exact math); a relative error above :data:`PARITY_TOLERANCE` is
  ``fail`` (bfloat16 passes at about 4.5e-3, ``logsumexp: max`` fails at about 1.1);
- **op digest**: the aten ops (name, input dtypes and shapes) one step dispatches,
  recorded with a ``TorchDispatchMode``, hashed: a knob whose digest equals the
  frontier's changed nothing that ran.

``python -m wikiengine.training.autoresearch_target --config CAND.json --frontier FRONT.json --out DIR``
writes ``DIR/metrics.json``, ``DIR/profile.md`` (top ops by self time, torch.profiler)
and ``DIR/hlo.md`` (the op comparison and the hypothesis-firing audit line), and prints
one progress line per round (``--json`` also prints the metrics). ``--seconds`` is the
wall time of the timed rounds; parity, op traces and the profile add about 3 s of CPU.
Bad input: one line on stderr, exit 2; a crash of the step:
the error on stderr, ``DIR/crash.txt`` with the traceback, exit 8 (crashed); both still write
``metrics.json`` with the exit code.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import dataclasses
import hashlib
import json
import math
import os
import statistics
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from wikiengine.core.atomic import atomic_write_text
from wikiengine.core.collector import collector_paused
from wikiengine.core.errors import ExitCode
from wikiengine.core.lazy_dynamo import eager_optimizer, eager_until_dynamo
from wikiengine.training.autoresearch_knobs import TargetConfig, TargetConfigError, load_target_config

with collector_paused(keep=__name__ == "__main__"):  # torch's 166,000 objects, never garbage (core/collector.py)
    import torch
    import torch.nn.functional as F
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_leaves

D_IN, HIDDEN, CLASSES = 256, 1024, 64
LEARNING_RATE = 1e-3
PARITY_STEPS = 4
PARITY_TOLERANCE = 2e-2  # bfloat16 autocast measures about 4.5e-3, ``logsumexp: max`` about 1
PROBE_BATCH, PROBE_SEED_OFFSET = 64, 7919  # the held-out batch the parity check compares outputs on
DATA_BATCHES = 4  # distinct synthetic batches the step cycles through
WARMUP_STEPS = 3
PROFILE_STEPS = 5  # profiled steps per side; the profile is the median per op

AUDIT_CONFIRMED = "Hypothesis-firing audit: CONFIRMED"
AUDIT_SILENT_NO_OP = "Hypothesis-firing audit: SILENT NO-OP"

# --- the step -----------------------------------------------------------------------------


def synthetic_batches(batch: int, seed: int, dtype: torch.dtype) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """:data:`DATA_BATCHES` batches of inputs and teacher labels, a function of batch and seed only."""
    generator = torch.Generator().manual_seed(seed)
    teacher = torch.randn(D_IN, CLASSES, generator=generator, dtype=torch.float64)
    batches = []
    for _ in range(DATA_BATCHES):
        inputs = torch.randn(batch, D_IN, generator=generator, dtype=torch.float64)
        batches.append((inputs.to(dtype), (inputs @ teacher).argmax(dim=1)))
    return batches


def initial_weights(seed: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """(weight (out, in), bias) per layer in float32, Kaiming-uniform like ``nn.Linear``."""
    generator = torch.Generator().manual_seed(seed + 1)
    layers = []
    for fan_in, fan_out in ((D_IN, HIDDEN), (HIDDEN, HIDDEN), (HIDDEN, CLASSES)):
        bound = 1 / math.sqrt(fan_in)
        weight = (torch.rand(fan_out, fan_in, generator=generator) * 2 - 1) * bound
        bias = (torch.rand(fan_out, generator=generator) * 2 - 1) * bound
        layers.append((weight, bias))
    return layers


def composed_gelu(x: torch.Tensor) -> torch.Tensor:
    """The erf GELU of ``F.gelu`` written out as elementwise ops (the same math, more kernels)."""
    return 0.5 * x * (1.0 + torch.erf(x * (1.0 / math.sqrt(2.0))))


def max_logsumexp_cross_entropy(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """A "fast" cross-entropy with logsumexp approximated by the max logit: wrong by up to log(classes)."""
    picked = logits.gather(1, labels[:, None]).squeeze(1)
    return (logits.max(dim=1).values - picked).mean()


class TrainingStep:
    """One configured implementation of the step: parameters, optimizer and data, ready to run."""

    def __init__(self, config: TargetConfig, param_dtype: torch.dtype = torch.float32):
        self.config = config
        self.micro_batch = config.micro_batch or config.batch
        self.batches = synthetic_batches(config.batch, config.seed, param_dtype)
        self.params: list[tuple[torch.Tensor, torch.Tensor]] = []
        for weight, bias in initial_weights(config.seed):
            stored = weight.t().contiguous() if config.layout == "in-out" else weight
            self.params.append((stored.to(param_dtype).requires_grad_(), bias.to(param_dtype).requires_grad_()))
        flat = [t for pair in self.params for t in pair]
        self.optimizer = eager_optimizer(torch.optim.AdamW)(flat, lr=LEARNING_RATE, foreach=config.adamw == "foreach",
                                           fused=config.adamw == "fused")
        self.steps_done = 0

    def _layer(self, x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        if self.config.layout == "in-out":
            return torch.addmm(bias, x, weight)
        return F.linear(x, weight, bias)

    def _autocast(self) -> contextlib.AbstractContextManager:
        if self.config.dtype == "bfloat16":
            return torch.autocast("cpu", dtype=torch.bfloat16)
        return contextlib.nullcontext()

    def _forward(self, inputs: torch.Tensor) -> torch.Tensor:
        x = inputs
        for index, (weight, bias) in enumerate(self.params):
            x = self._layer(x, weight, bias)
            if index < len(self.params) - 1:
                x = F.gelu(x) if self.config.gelu == "fused" else composed_gelu(x)
        return x.float() if x.dtype == torch.bfloat16 else x

    def _loss(self, inputs: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        logits = self._forward(inputs)
        if self.config.logsumexp == "max":
            return max_logsumexp_cross_entropy(logits, labels)
        return F.cross_entropy(logits, labels)

    def logits(self, inputs: torch.Tensor) -> torch.Tensor:
        """The model's outputs on ``inputs`` as the step computes them (its dtype), without gradients."""
        with torch.no_grad(), self._autocast():
            return self._forward(inputs.to(self.params[0][0].dtype))

    def _host_batch(self) -> tuple[torch.Tensor, torch.Tensor]:
        inputs, labels = self.batches[self.steps_done % DATA_BATCHES]
        if self.config.pin_memory and torch.cuda.is_available():
            inputs, labels = inputs.pin_memory(), labels.pin_memory()
        return inputs, labels

    def run(self) -> float:
        """One optimizer step over the global batch (accumulating micro-batches); returns its loss."""
        inputs, labels = self._host_batch()
        micro_steps = self.config.batch // self.micro_batch
        # a micro_batch that does not divide the batch fails here, as a real reshape would
        micro_inputs = inputs.view(micro_steps, self.micro_batch, D_IN)
        micro_labels = labels.view(micro_steps, self.micro_batch)
        self.optimizer.zero_grad(set_to_none=True)
        total = 0.0
        for chunk, chunk_labels in zip(micro_inputs, micro_labels):
            with self._autocast():
                loss = self._loss(chunk, chunk_labels) / micro_steps
            loss.backward()
            total += loss.item()
        self.optimizer.step()
        self.steps_done += 1
        return total


# --- parity -------------------------------------------------------------------------------


def reference_config(config: TargetConfig) -> TargetConfig:
    """The definition of the candidate's math: its batch and seed, every implementation knob plain."""
    return TargetConfig(batch=config.batch, seed=config.seed)


def _relative_error(got: torch.Tensor, want: torch.Tensor) -> float:
    error = ((got.double() - want).norm() / want.norm()).item()
    return error if math.isfinite(error) else math.inf


def parity_rel_err(config: TargetConfig, steps: int = PARITY_STEPS) -> float:
    """The candidate against the float64 reference after ``steps`` steps from the same seed.

    The larger of two relative errors: of the loss trajectory (as a vector over the steps),
    and of the outputs on a held-out probe batch after the last step (norm-wise).
    """
    candidate = TrainingStep(config)
    reference = TrainingStep(reference_config(config), param_dtype=torch.float64)
    losses = torch.tensor([[candidate.run(), reference.run()] for _ in range(steps)], dtype=torch.float64)
    probe = synthetic_batches(PROBE_BATCH, config.seed + PROBE_SEED_OFFSET, torch.float64)[0][0]
    return max(_relative_error(losses[:, 0], losses[:, 1]),
               _relative_error(candidate.logits(probe), reference.logits(probe)))


# --- op digest ----------------------------------------------------------------------------


class OpRecorder(TorchDispatchMode):
    """Records every aten op dispatched: its name with the dtypes and shapes of its tensor inputs."""

    def __init__(self):
        super().__init__()
        self.ops: list[str] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        tensors = [a for a in tree_leaves((args, kwargs)) if isinstance(a, torch.Tensor)]
        signature = ",".join(f"{str(t.dtype).removeprefix('torch.')}{list(t.shape)}" for t in tensors)
        self.ops.append(f"{func.name()}({signature})")
        return func(*args, **kwargs)


# torch wraps a dispatch mode's method in a dynamo guard that imports dynamo at the first op
OpRecorder.__torch_dispatch__ = eager_until_dynamo(OpRecorder.__dict__["__torch_dispatch__"])


def op_trace(config: TargetConfig) -> list[str]:
    """The ops of one steady-state step (after one step that creates the optimizer's state)."""
    step = TrainingStep(config)
    step.run()
    with OpRecorder() as recorder:
        step.run()
    return recorder.ops


def op_digest(ops: list[str]) -> str:
    """A stable hash of an op trace (order included)."""
    return hashlib.sha256("\n".join(ops).encode()).hexdigest()[:16]


# --- throughput ---------------------------------------------------------------------------


@dataclass(frozen=True)
class RoundResult:
    """One round: each side's batch over its median step time, and the frontier against itself."""

    candidate_tps: float
    frontier_tps: float
    frontier_self_ratio: float  # median time of the frontier's odd steps over its even ones: an A/A test

    @property
    def ratio(self) -> float:
        return self.candidate_tps / self.frontier_tps


@dataclass(frozen=True)
class Throughput:
    """Interleaved measurement of a candidate against the frontier (samples/s)."""

    frontier_tps: float
    speedup: float  # median of the per-round candidate/frontier ratios
    noise_pct: float  # half the IQR of the frontier's per-round A/A ratios, in percent
    candidate_raw_tps: float  # median of the candidate's per-round figures, load not cancelled
    steps_per_round: int
    rounds: list[RoundResult]

    @property
    def tps(self) -> float:
        """The candidate's throughput at the frontier's median load: ``frontier_tps * speedup``."""
        return self.frontier_tps * self.speedup

    @property
    def noise_band(self) -> float:
        """The A/A noise band in samples/s, comparable with ``tps - frontier_tps``."""
        return self.frontier_tps * self.noise_pct / 100


def _timed_step(step: TrainingStep) -> float:
    started = time.perf_counter()
    step.run()
    return time.perf_counter() - started


def half_iqr(values: list[float]) -> float:
    """Half the interquartile range (inclusive quartiles); 0 for fewer than two values."""
    if len(values) < 2:
        return 0.0
    q1, _, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return (q3 - q1) / 2


def measure(candidate: TrainingStep, frontier: TrainingStep, rounds: int, seconds: float,
            progress: Callable[[str], None] = print) -> Throughput:
    """Warm both up, then ``rounds`` rounds of single steps alternating CF FC CF ... filling ``seconds``.

    A round's figure for each side is its batch over the median of its step times in that
    round: a load burst longer than a step hits both sides, one shorter than a round is
    dropped by the median. The frontier's steps of a round, split odd/even, also measure
    the frontier against itself: the spread of that A/A ratio over the rounds is the noise
    band of a paired comparison.
    """
    for _ in range(WARMUP_STEPS):
        candidate.run()
        frontier.run()
    pair_seconds = _timed_step(candidate) + _timed_step(frontier)
    steps_per_round = max(2, round(seconds / (rounds * pair_seconds)))
    results = []
    for index in range(rounds):
        times: dict[int, list[float]] = {id(candidate): [], id(frontier): []}
        for pair in range(steps_per_round):
            for step in (candidate, frontier) if (index + pair) % 2 == 0 else (frontier, candidate):
                times[id(step)].append(_timed_step(step))
        frontier_times = times[id(frontier)]
        result = RoundResult(
            candidate_tps=candidate.config.batch / statistics.median(times[id(candidate)]),
            frontier_tps=frontier.config.batch / statistics.median(frontier_times),
            frontier_self_ratio=statistics.median(frontier_times[1::2]) / statistics.median(frontier_times[0::2]))
        results.append(result)
        progress(f"round {index + 1}/{rounds}: candidate {result.candidate_tps:.1f} tps, "
                 f"frontier {result.frontier_tps:.1f} tps, ratio {result.ratio:.3f}")
    return Throughput(
        frontier_tps=statistics.median(r.frontier_tps for r in results),
        speedup=statistics.median(r.ratio for r in results),
        noise_pct=100 * half_iqr([r.frontier_self_ratio for r in results]),
        candidate_raw_tps=statistics.median(r.candidate_tps for r in results),
        steps_per_round=steps_per_round,
        rounds=results,
    )


# --- profile and op comparison (the markdown artifacts) ----------------------------------


@contextlib.contextmanager
def _without_profiler_chatter() -> Iterator[None]:
    """Drop the ``USDT: ... profiler_start/stop`` lines kineto writes to fd 2; pass anything else on."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as captured:
        os.dup2(captured.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            captured.seek(0)
            kept = [line for line in captured.read().decode(errors="replace").splitlines(keepends=True)
                    if not line.startswith("USDT:")]
            sys.stderr.write("".join(kept))


def _profile_one_step(step: TrainingStep) -> dict[str, tuple[float, int]]:
    # the CPU profiler torch.profiler.profile(activities=[CPU]) starts, without its start's
    # `hasattr(torch, "_inductor")`, which imports inductor and dynamo (seconds of CPU) to read a
    # CUDA-graphs setting
    with torch.autograd.profiler.profile(use_cpu=True, use_kineto=True) as prof:
        step.run()
    return {event.key: (event.self_cpu_time_total / 1000, event.count) for event in prof.key_averages()}


def _median_per_op(samples: list[dict[str, tuple[float, int]]]) -> dict[str, tuple[float, int]]:
    names = {name for sample in samples for name in sample}
    return {name: (statistics.median(sample.get(name, (0.0, 0))[0] for sample in samples),
                   max(sample.get(name, (0.0, 0))[1] for sample in samples)) for name in names}


def self_times(candidate: TargetConfig, frontier: TargetConfig,
               steps: int = PROFILE_STEPS) -> tuple[dict[str, tuple[float, int]], dict[str, tuple[float, int]]]:
    """{op: (self CPU ms, calls)} per step for candidate and frontier, from torch.profiler.

    One profiled step at a time, alternating CF FC ... like the timing, and the median
    per op over ``steps`` steps, so that a load burst during one step does not show up as
    a difference between the two.
    """
    sides = TrainingStep(candidate), TrainingStep(frontier)
    samples: tuple[list, list] = ([], [])
    for step in sides:
        step.run()
    with _without_profiler_chatter():
        for index in range(steps):
            for side in (0, 1) if index % 2 == 0 else (1, 0):
                samples[side].append(_profile_one_step(sides[side]))
    return _median_per_op(samples[0]), _median_per_op(samples[1])


def profile_markdown(candidate: dict[str, tuple[float, int]], frontier: dict[str, tuple[float, int]],
                     top: int = 15) -> str:
    """The top ops by self time (the larger of candidate and frontier), side by side."""
    names = sorted(set(candidate) | set(frontier),
                   key=lambda n: -max(candidate.get(n, (0, 0))[0], frontier.get(n, (0, 0))[0]))[:top]
    lines = ["# Profile: top ops by self CPU time per step (torch.profiler, median of interleaved steps)", "",
             "| op | candidate self ms | frontier self ms | candidate calls | frontier calls |",
             "| --- | ---: | ---: | ---: | ---: |"]
    for name in names:
        c_ms, c_calls = candidate.get(name, (0.0, 0))
        f_ms, f_calls = frontier.get(name, (0.0, 0))
        lines.append(f"| `{name}` | {c_ms:.3f} | {f_ms:.3f} | {c_calls} | {f_calls} |")
    c_total = sum(ms for ms, _ in candidate.values())
    f_total = sum(ms for ms, _ in frontier.values())
    lines += ["", f"Total self CPU time per step: candidate {c_total:.3f} ms, frontier {f_total:.3f} ms."]
    return "\n".join(lines) + "\n"


def audit_line(candidate_digest: str, frontier_digest: str) -> str:
    return AUDIT_SILENT_NO_OP if candidate_digest == frontier_digest else AUDIT_CONFIRMED


def ops_markdown(candidate_ops: list[str], frontier_ops: list[str]) -> str:
    """Digests, the per-op count differences, and the one hypothesis-firing audit line."""
    c_digest, f_digest = op_digest(candidate_ops), op_digest(frontier_ops)
    c_counts, f_counts = collections.Counter(candidate_ops), collections.Counter(frontier_ops)
    changed = sorted(op for op in set(c_counts) | set(f_counts) if c_counts[op] != f_counts[op])
    lines = ["# Op dump: aten ops of one steady-state step (TorchDispatchMode)", "",
             f"- candidate op digest: `{c_digest}` ({len(candidate_ops)} ops, {len(c_counts)} distinct)",
             f"- frontier op digest: `{f_digest}` ({len(frontier_ops)} ops, {len(f_counts)} distinct)", ""]
    if changed:
        lines += ["| op (input dtypes and shapes) | candidate count | frontier count |", "| --- | ---: | ---: |"]
        lines += [f"| `{op}` | {c_counts[op]} | {f_counts[op]} |" for op in changed]
    elif c_digest != f_digest:
        lines.append("The same ops with the same counts, dispatched in a different order.")
    else:
        lines.append("The candidate dispatched exactly the frontier's ops: the change did not reach the step.")
    lines += ["", audit_line(c_digest, f_digest)]
    return "\n".join(lines) + "\n"


# --- the run ------------------------------------------------------------------------------


def evaluate(candidate: TargetConfig, frontier: TargetConfig, out: Path, rounds: int, seconds: float,
             progress: Callable[[str], None] = print) -> dict:
    """Measure, check parity, trace and profile; write the artifacts; return the metrics."""
    torch.set_num_threads(1)
    torch.manual_seed(0)
    progress("parity: candidate against its float64 reference")
    rel_err = parity_rel_err(candidate)
    progress(f"parity: relative error {rel_err:.2e} (tolerance {PARITY_TOLERANCE:.0e})")
    candidate_ops, frontier_ops = op_trace(candidate), op_trace(frontier)
    throughput = measure(TrainingStep(candidate), TrainingStep(frontier), rounds, seconds, progress)
    (out / "profile.md").write_text(profile_markdown(*self_times(candidate, frontier)))
    (out / "hlo.md").write_text(ops_markdown(candidate_ops, frontier_ops))
    return {
        "tps": throughput.tps,
        "frontier_tps": throughput.frontier_tps,
        "speedup": throughput.speedup,
        "noise_band": throughput.noise_band,
        "noise_band_pct": throughput.noise_pct,
        "candidate_raw_tps": throughput.candidate_raw_tps,
        "parity": "pass" if rel_err <= PARITY_TOLERANCE else "fail",
        "parity_rel_err": rel_err if math.isfinite(rel_err) else None,
        "parity_tolerance": PARITY_TOLERANCE,
        "op_digest": op_digest(candidate_ops),
        "frontier_op_digest": op_digest(frontier_ops),
        "rounds": [dataclasses.asdict(r) for r in throughput.rounds],
        "steps_per_round": throughput.steps_per_round,
        "config": candidate.as_dict(),
        "frontier_config": frontier.as_dict(),
        "exit_code": 0,
    }


def _write_metrics(out: Path, metrics: dict) -> None:
    atomic_write_text(out / "metrics.json", json.dumps(metrics, indent=2) + "\n")


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m wikiengine.training.autoresearch_target",
        description="Measure a training-step config against the frontier: interleaved throughput, "
                    "float64 parity and op digest.")
    parser.add_argument("--config", required=True, help="the candidate's knobs (JSON object)")
    parser.add_argument("--frontier", required=True, help="the current frontier's knobs (JSON object)")
    parser.add_argument("--out", required=True, help="directory for metrics.json, profile.md, hlo.md")
    parser.add_argument("--rounds", type=int, default=10, help="interleaved rounds (default 10)")
    parser.add_argument("--seconds", type=float, default=3.0,
                        help="wall time of the timed rounds, candidate and frontier together (default 3); "
                             "parity, op traces and the profile add about 3 s of CPU")
    parser.add_argument("--json", action="store_true", help="print metrics.json on stdout at the end")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    from wikiengine.core import run_report as lane_run

    args = _arguments(argv)
    if lane_run.smoke():  # `wiki lane check`: the contract, not the figure, is what is checked
        args.rounds, args.seconds = min(args.rounds, 2), min(args.seconds, 0.5)
    out = Path(args.out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        print(f"{out}: cannot create the output directory ({exc.strerror})", file=sys.stderr)
        return ExitCode.BAD_INPUT
    try:
        if args.rounds < 1 or not (args.seconds > 0) or math.isinf(args.seconds):
            raise TargetConfigError(f"--rounds must be >= 1 and --seconds a positive number, "
                                    f"got {args.rounds} and {args.seconds}")
        candidate, frontier = load_target_config(args.config), load_target_config(args.frontier)
    except TargetConfigError as exc:
        print(str(exc), file=sys.stderr)
        _write_metrics(out, {"exit_code": ExitCode.BAD_INPUT, "error": str(exc)})
        return ExitCode.BAD_INPUT
    try:
        metrics = evaluate(candidate, frontier, out, args.rounds, args.seconds,
                           progress=lambda line: (print(line, flush=True), lane_run.progress()))
    except Exception as exc:  # the experiment crashed: that is a result, recorded, not a bug of this tool
        error = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}".rstrip(": ")
        (out / "crash.txt").write_text(traceback.format_exc())
        print(f"crash: {error}", file=sys.stderr)
        _write_metrics(out, {"exit_code": ExitCode.CRASHED, "error": error, "config": candidate.as_dict(),
                             "frontier_config": frontier.as_dict()})
        return ExitCode.CRASHED
    _write_metrics(out, metrics)
    if args.json:
        print(json.dumps(metrics, indent=2))
    return 0


if __name__ == "__main__":
    from wikiengine.core.process_end import end_now

    sys.exit(end_now(main(), hooks=True))  # torch's teardown is 0.5 s of CPU; every output is written and closed
