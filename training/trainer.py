"""The training loop state: model, optimizer, schedule, grad scaler, RNGs and data cursor.

:class:`Trainer` runs one optimizer step at a time over the global batch of the run
config (gradient accumulation over micro-batches, data parallel across ranks), turns its
whole state into checkpoint files (:meth:`Trainer.checkpoint_files`) and restores it
from verified ones (:meth:`Trainer.restore`). Restoring model, optimizer, scheduler,
scaler, every RNG and the step makes a resumed run bitwise equal to an uninterrupted
one on the CPU.
"""

from __future__ import annotations

import contextlib
import math
import random
import time

import numpy as np
import torch
import torch.distributed as dist

from wikiengine.core.lazy_dynamo import eager_optimizer
from wikiengine.training.checkpoint import (
    CURSOR_NAME,
    MODEL_NAME,
    TRAINER_STATE_NAME,
    CheckpointError,
    Cursor,
    load_model_verified,
    load_torch_verified,
    make_cursor,
    read_trainer_state,
    torch_bytes,
    trainer_state,
)
from wikiengine.training.config import RunConfig
from wikiengine.training.data import Corpus, open_corpus, rank_slice
from wikiengine.training.model import GPT, build_model


def resolve_precision(requested: str, device: torch.device) -> str:
    """``auto``: bf16 on GPUs that support it, fp16 (with a grad scaler) on others (T4), fp32 on CPU."""
    if requested != "auto":
        return requested
    if device.type == "cuda":
        return "bf16" if torch.cuda.is_bf16_supported() else "fp16"
    return "fp32"


def lr_at(step: int, config: RunConfig) -> float:
    """Linear warmup then cosine decay to ``min_learning_rate`` at ``max_steps``."""
    if config.warmup_steps and step < config.warmup_steps:
        return config.learning_rate * (step + 1) / config.warmup_steps
    span = max(1, config.max_steps - config.warmup_steps)
    progress = min(1.0, (step - config.warmup_steps) / span)
    span_lr = config.learning_rate - config.min_learning_rate
    return config.min_learning_rate + 0.5 * span_lr * (1 + math.cos(math.pi * progress))


def capture_rng() -> dict:
    """Every RNG the run touches, as tensors and plain values (``weights_only``-loadable)."""
    np_state = np.random.get_state()
    state = {
        "python": random.getstate(),
        "numpy": {"name": np_state[0], "keys": torch.from_numpy(np_state[1].astype(np.int64)), "pos": int(np_state[2]),
                  "has_gauss": int(np_state[3]), "cached_gaussian": float(np_state[4])},
        "cpu": torch.get_rng_state(),
    }
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def restore_rng(state: dict) -> None:
    """Restore what :func:`capture_rng` captured."""
    version, internal, gauss = state["python"]
    random.setstate((version, tuple(internal), gauss))
    numpy_state = state["numpy"]
    np.random.set_state((numpy_state["name"], numpy_state["keys"].numpy().astype(np.uint32), numpy_state["pos"],
                         numpy_state["has_gauss"], numpy_state["cached_gaussian"]))
    torch.set_rng_state(state["cpu"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


class Trainer:
    """One run's training state on one rank."""

    def __init__(self, config: RunConfig, device: str | torch.device = "cpu", rank: int = 0, world_size: int = 1,
                 corpus: Corpus | None = None):
        self.config = config
        self.device = torch.device(device)
        self.rank, self.world_size = rank, world_size
        self.corpus = corpus or open_corpus(config.corpus, config.seq_len, config.seed)
        self.rank_offset, self.rank_samples = rank_slice(config.samples_per_step, world_size, rank)
        if self.rank_samples % config.micro_batch:
            raise ValueError(
                f"a rank's {self.rank_samples} samples are not a multiple of micro_batch {config.micro_batch}")
        self.accumulation = self.rank_samples // config.micro_batch
        self.precision = resolve_precision(config.precision, self.device)

        random.seed(config.seed)
        np.random.seed(config.seed % 2**32)
        torch.manual_seed(config.seed)
        self.model: GPT = build_model(config.preset, self.device, dropout=config.dropout)
        # every rank starts from the same weights but draws its own dropout masks
        torch.manual_seed(int(np.random.SeedSequence([config.seed, rank]).generate_state(1)[0]))
        self.forward_model = self.model
        if world_size > 1:
            self.forward_model = torch.nn.parallel.DistributedDataParallel(self.model)
        if config.compile:
            self.forward_model = torch.compile(self.forward_model)
        decay = [p for n, p in self.model.named_parameters() if p.dim() >= 2]
        no_decay = [p for n, p in self.model.named_parameters() if p.dim() < 2]
        fused = self.device.type == "cuda"
        self.optimizer = eager_optimizer(torch.optim.AdamW)(
            [{"params": decay, "weight_decay": config.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
            lr=config.learning_rate, betas=(config.beta1, config.beta2), fused=fused or None)
        base_lr = config.learning_rate
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(self.optimizer, lambda step: lr_at(step, config) / base_lr)
        self.scaler = torch.amp.GradScaler(self.device.type, enabled=self.precision == "fp16")
        self.step = 0
        self.log_history: list[dict] = []
        self.rng_fallback = False  # True after restoring RNGs saved under another world size
        self._interval = (0.0, 0, 0.0)  # loss sum, steps, seconds since the last log entry
        self._last = (0.0, 0.0)  # grad norm and learning rate of the last step

    # ---------------------------------------------------------------- training

    def _autocast(self):
        if self.precision in ("bf16", "fp16"):
            dtype = torch.bfloat16 if self.precision == "bf16" else torch.float16
            return torch.autocast(self.device.type, dtype=dtype)
        return contextlib.nullcontext()

    def train_step(self) -> dict:
        """Run optimizer step ``self.step + 1`` on its global batch; return its log entry."""
        config = self.config
        started = time.perf_counter()
        self.model.train()
        base = self.step * config.samples_per_step + self.rank_offset
        loss_sum = torch.zeros((), device=self.device)
        for micro in range(self.accumulation):
            inputs, targets = self.corpus.batch(base + micro * config.micro_batch, config.micro_batch)
            inputs, targets = inputs.to(self.device, non_blocking=True), targets.to(self.device, non_blocking=True)
            last = micro == self.accumulation - 1
            sync = contextlib.nullcontext() if last or self.world_size == 1 else self.forward_model.no_sync()
            with sync:
                with self._autocast():
                    _, loss = self.forward_model(inputs, targets)
                loss = loss / self.accumulation
                self.scaler.scale(loss).backward()
            loss_sum += loss.detach()
        self.scaler.unscale_(self.optimizer)
        max_norm = config.grad_clip if config.grad_clip else float("inf")
        grad_norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), max_norm)
        learning_rate = self.optimizer.param_groups[0]["lr"]
        self.scaler.step(self.optimizer)
        self.scaler.update()
        self.optimizer.zero_grad(set_to_none=True)
        self.scheduler.step()
        if self.world_size > 1:
            dist.all_reduce(loss_sum, op=dist.ReduceOp.SUM)
            loss_sum /= self.world_size
        self.step += 1
        elapsed = time.perf_counter() - started
        step_loss = float(loss_sum)
        self._interval = (self._interval[0] + step_loss, self._interval[1] + 1, self._interval[2] + elapsed)
        self._last = (float(grad_norm), float(learning_rate))
        if self.step % config.logging_steps == 0:
            self.flush_log()
        return {"step": self.step, "loss": step_loss, "grad_norm": self._last[0], "learning_rate": self._last[1],
                "tokens_per_second": config.tokens_per_step / elapsed if elapsed > 0 else 0.0}

    def flush_log(self) -> None:
        """Append the log entry of the steps since the last one (HF semantics: the mean loss of
        the interval, the last step's grad norm and learning rate). The session flushes before
        every save, so a checkpoint never holds a partial interval."""
        loss_sum, steps, seconds = self._interval
        if not steps:
            return
        config = self.config
        self.log_history.append({
            "epoch": self.step * config.samples_per_step / self.corpus.n_samples,
            "grad_norm": _finite_or_none(self._last[0]),
            "learning_rate": self._last[1],
            "loss": _finite_or_none(loss_sum / steps),
            "num_input_tokens_seen": self.step * config.tokens_per_step,
            "step": self.step,
            "tokens_per_second": steps * config.tokens_per_step / seconds if seconds > 0 else 0.0,
        })
        self._interval = (0.0, 0, 0.0)

    # ---------------------------------------------------------------- checkpoints

    def _rng_file(self, files: dict[str, bytes]) -> str:
        name, self.rng_fallback = _rng_file_for(files, self.rank, self.world_size)
        return name

    def cursor(self) -> Cursor:
        """The data cursor at the current step."""
        return make_cursor(self.step, self.config.samples_per_step, self.config.seq_len, self.config.seed,
                           self.corpus.n_samples, self.world_size, self.corpus.files_sha, self.corpus.perm_sha)

    def model_state(self) -> dict[str, torch.Tensor]:
        """Model tensors without the tied output head (safetensors refuses shared storage)."""
        return {name: tensor.detach().to("cpu").contiguous() for name, tensor in self.model.state_dict().items()
                if name != "head.weight"}

    def checkpoint_files(self) -> dict[str, bytes] | None:
        """The files of ``checkpoint-<step>`` (on rank 0; other ranks return None).

        Collective under data parallelism: every rank must call it (RNG states are gathered).
        """
        from safetensors.torch import save

        self.flush_log()
        rng = capture_rng()
        rng_states = [rng]
        if self.world_size > 1:
            rng_states = [None] * self.world_size
            dist.all_gather_object(rng_states, rng)
        if self.rank != 0:
            return None
        config = self.config
        files = {
            MODEL_NAME: save(self.model_state(), metadata={"format": "pt"}),
            "optimizer.pt": torch_bytes(self.optimizer.state_dict()),
            "scheduler.pt": torch_bytes(self.scheduler.state_dict()),
            TRAINER_STATE_NAME: _json_bytes(trainer_state(
                self.step, config.max_steps, config.save_steps, config.logging_steps, config.micro_batch,
                self.step * config.tokens_per_step, self.log_history,
                self.step * config.samples_per_step / self.corpus.n_samples)),
            CURSOR_NAME: self.cursor().to_bytes(),
        }
        if self.scaler.is_enabled():
            files["scaler.pt"] = torch_bytes(self.scaler.state_dict())
        if self.world_size == 1:
            files["rng_state.pth"] = torch_bytes(rng_states[0])
        else:
            for rank, state in enumerate(rng_states):
                files[f"rng_state_{rank}.pth"] = torch_bytes(state)
        return files

    def restore(self, files: dict[str, bytes], step: int) -> None:
        """Restore the whole state from verified checkpoint files of ``step``."""
        state = read_trainer_state(files[TRAINER_STATE_NAME])
        if state["global_step"] != step:
            raise CheckpointError(f"trainer_state.json global_step {state['global_step']} != {step}")
        weights = load_model_verified(files)
        missing, unexpected = self.model.load_state_dict(weights, strict=False)
        if set(missing) != {"head.weight"} or unexpected:
            absent = sorted(set(missing) - {"head.weight"})[:3]
            raise CheckpointError(f"model.safetensors does not fit preset {self.config.preset} "
                                  f"(missing {absent}, unexpected {unexpected[:3]})")
        self.optimizer.load_state_dict(load_torch_verified(files, "optimizer.pt"))
        self.scheduler.load_state_dict(load_torch_verified(files, "scheduler.pt"))
        if self.scaler.is_enabled():
            if "scaler.pt" not in files:
                raise CheckpointError("scaler.pt is missing for an fp16 run")
            self.scaler.load_state_dict(load_torch_verified(files, "scaler.pt"))
        restore_rng(load_torch_verified(files, self._rng_file(files)))
        self.log_history = list(state["log_history"])
        self.step = step


def _rng_file_for(files: dict[str, bytes], rank: int, world_size: int) -> tuple[str, bool]:
    """The RNG file this rank restores and whether it is a fallback (another world size saved it).

    The data cursor does not depend on the world size, so a checkpoint saved by 2 ranks
    resumes on 1 (and back); only the RNG streams differ, as they must.
    """
    preferred = "rng_state.pth" if world_size == 1 else f"rng_state_{rank}.pth"
    for name in (preferred, f"rng_state_{rank}.pth", "rng_state.pth", "rng_state_0.pth"):
        if name in files:
            return name, name != preferred
    raise CheckpointError("no rng_state.pth or rng_state_<rank>.pth in the checkpoint")


def _finite_or_none(value: float) -> float | None:
    """JSON has no NaN or infinity (and our readers refuse them): a non-finite value logs as null."""
    return value if math.isfinite(value) else None


def _json_bytes(obj) -> bytes:
    import json

    return (json.dumps(obj, indent=2, sort_keys=True, allow_nan=False) + "\n").encode()
