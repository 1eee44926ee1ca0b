"""Benchmark the trainer: tokens per second against a bare loop, and checkpoint save/verify cost.

In one run, interleaved rounds of

- a **bare loop**: the same model, optimizer, global batch, micro-batches, data reads,
  gradient clipping and learning-rate schedule (the same training), written without
  any bookkeeping (no scaler plumbing, loss sync, timing, log entry, cursor);
- the **trainer**: :meth:`training.trainer.Trainer.train_step`, with all of it;

and medians over the rounds. The overhead is the median of the per-round ratios (paired,
so drift from other processes on the machine cancels), on CPU time of the process with
one torch thread (wall-clock tokens/s shown beside it). Then the cost of one checkpoint: building its files,
writing them atomically with the manifest, the two store commits, byte-verifying it
read back from the store at a pinned revision, against the raw sha256 throughput of the
same bytes. Prints a markdown table::

    python benchmarks/bench_trainer.py [--rounds 7] [--steps 20] [--threads 1]
                                       [--save-preset tiny|ounce100m]
"""

from __future__ import annotations

import argparse
import hashlib
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from executors.local_store import LocalGitStore  # noqa: E402
from training.checkpoint import read_verified_from_store, write_checkpoint  # noqa: E402
from training.config import tiny_demo_config  # noqa: E402
from training.data import open_corpus  # noqa: E402
from training.model import build_model  # noqa: E402
from training.trainer import Trainer, lr_at  # noqa: E402


def bare_loop_tokens_per_second(config, corpus, steps: int) -> tuple[float, float]:
    """The same training without bookkeeping; (CPU-time, wall-clock) tokens per second."""
    torch.manual_seed(config.seed)
    model = build_model(config.preset, dropout=config.dropout)
    decay = [p for p in model.parameters() if p.dim() >= 2]  # the trainer's optimizer, same groups
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": config.weight_decay},
                                   {"params": no_decay, "weight_decay": 0.0}],
                                  lr=config.learning_rate, betas=(config.beta1, config.beta2))
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: lr_at(step, config) / config.learning_rate)
    accumulation = config.samples_per_step // config.micro_batch
    model.train()
    cpu, wall = time.process_time(), time.perf_counter()
    for step in range(steps):
        for micro in range(accumulation):
            inputs, targets = corpus.batch(step * config.samples_per_step + micro * config.micro_batch,
                                           config.micro_batch)
            _, loss = model(inputs, targets)
            (loss / accumulation).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), config.grad_clip)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        schedule.step()
    tokens = steps * config.tokens_per_step
    return tokens / (time.process_time() - cpu), tokens / (time.perf_counter() - wall)


def trainer_tokens_per_second(config, corpus, steps: int) -> tuple[float, float]:
    """The trainer's own step, bookkeeping included; (CPU-time, wall-clock) tokens per second."""
    trainer = Trainer(config, corpus=corpus)
    cpu, wall = time.process_time(), time.perf_counter()
    for _ in range(steps):
        trainer.train_step()
    tokens = steps * config.tokens_per_step
    return tokens / (time.process_time() - cpu), tokens / (time.perf_counter() - wall)


def checkpoint_costs(preset: str, rounds: int) -> dict:
    """Median seconds to save (files + local write + two commits) and to verify one checkpoint."""
    config = tiny_demo_config(preset=preset, seq_len=64, samples_per_step=2, micro_batch=1)
    trainer = Trainer(config)
    trainer.train_step()  # creates the optimizer state
    build_s, write_s, commit_s, verify_s, sha_s, sizes = [], [], [], [], [], 0
    with tempfile.TemporaryDirectory(prefix="bench-ckpt-") as tmp:
        store = LocalGitStore.create(Path(tmp) / "store")
        for index in range(rounds):
            step = index + 1
            tick = time.perf_counter()
            files = trainer.checkpoint_files()
            build_s.append(time.perf_counter() - tick)
            tick = time.perf_counter()
            local = write_checkpoint(Path(tmp) / "out", step, files)
            write_s.append(time.perf_counter() - tick)
            tick = time.perf_counter()
            commit = store.commit_checkpoint(step, local, store.head())
            head = store.commit_pointer(step, commit)
            commit_s.append(time.perf_counter() - tick)
            tick = time.perf_counter()
            verified = read_verified_from_store(store, step, head)
            verify_s.append(time.perf_counter() - tick)
            sizes = sum(len(data) for data in verified.values())
            tick = time.perf_counter()
            for data in verified.values():
                hashlib.sha256(data).hexdigest()
            sha_s.append(time.perf_counter() - tick)
    med = statistics.median
    return {"bytes": sizes, "build_s": med(build_s), "write_s": med(write_s), "commit_s": med(commit_s),
            "verify_s": med(verify_s), "sha_s": med(sha_s)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--save-preset", default="tiny")
    parser.add_argument("--save-rounds", type=int, default=5)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    config = tiny_demo_config(max_steps=args.steps, dropout=0.0)
    corpus = open_corpus(config.corpus, config.seq_len, config.seed)
    bare_loop_tokens_per_second(config, corpus, 3)  # warm up both paths
    trainer_tokens_per_second(config, corpus, 3)
    bare, trainer = [], []
    for round_index in range(args.rounds):
        order = (bare_loop_tokens_per_second, trainer_tokens_per_second)
        if round_index % 2:
            order = order[::-1]
        for measure in order:
            value = measure(config, corpus, args.steps)
            (bare if measure is bare_loop_tokens_per_second else trainer).append(value)
    med = statistics.median
    overhead = med((b[0] - t[0]) / b[0] * 100 for b, t in zip(bare, trainer))
    wall_overhead = med((b[1] - t[1]) / b[1] * 100 for b, t in zip(bare, trainer))
    costs = checkpoint_costs(args.save_preset, args.save_rounds)
    megabytes = costs["bytes"] / 1e6
    print(f"## trainer benchmark (preset tiny, B={config.samples_per_step} x seq {config.seq_len}, "
          f"micro-batch {config.micro_batch}, {args.threads} thread(s), {args.rounds} interleaved rounds of "
          f"{args.steps} steps, torch {torch.__version__})\n")
    print("| measure | CPU time | wall clock |")
    print("|---|---|---|")
    print(f"| bare loop tokens/s | {med(b[0] for b in bare):,.0f} | {med(b[1] for b in bare):,.0f} |")
    print(f"| trainer tokens/s | {med(t[0] for t in trainer):,.0f} | {med(t[1] for t in trainer):,.0f} |")
    print(f"| bookkeeping overhead (median of paired rounds; target < 5%) | {overhead:.1f}% | {wall_overhead:.1f}% |")
    print(f"\n## checkpoint cost (preset {args.save_preset}, {megabytes:.2f} MB a checkpoint, "
          f"median of {args.save_rounds})\n")
    print("| measure | seconds | MB/s |")
    print("|---|---|---|")
    for label, key in (("build files (serialise state)", "build_s"), ("write locally (fsync, manifest)", "write_s"),
                       ("two store commits", "commit_s"), ("byte-verify from the store", "verify_s"),
                       ("raw sha256 of the same bytes", "sha_s")):
        print(f"| {label} | {costs[key]:.4f} | {megabytes / costs[key]:,.0f} |")
    save_total = costs["build_s"] + costs["write_s"] + costs["commit_s"]
    print(f"| save total | {save_total:.4f} | {megabytes / save_total:,.0f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
