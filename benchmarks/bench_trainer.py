"""Benchmark the trainer: tokens per second against a bare loop, and checkpoint save/verify cost.

In one run, rounds in which two loops alternate step by step:

- a **bare loop**: the same model, optimizer, global batch, micro-batches, data reads,
  gradient clipping and learning-rate schedule (the same training), written without
  any bookkeeping (no scaler plumbing, loss sync, timing, log entry, cursor);
- the **trainer**: :meth:`training.trainer.Trainer.train_step`, with all of it;

tokens per second from the median step time of each loop, in CPU time of the process
(one torch thread) and in wall-clock time. Alternating single steps means both loops
see the same machine at the same moment, so load from other processes cancels out of
the overhead figure. Then the cost of one checkpoint: building its files,
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

from wikiengine.executors.local_store import LocalGitStore  # noqa: E402
from wikiengine.training.checkpoint import read_verified_from_store, write_checkpoint  # noqa: E402
from wikiengine.training.config import tiny_demo_config  # noqa: E402
from wikiengine.training.data import open_corpus  # noqa: E402
from wikiengine.training.model import build_model  # noqa: E402
from wikiengine.training.trainer import Trainer, lr_at  # noqa: E402


class BareLoop:
    """The same training without bookkeeping: forward, backward, clip, AdamW step, schedule."""

    def __init__(self, config, corpus):
        torch.manual_seed(config.seed)
        self.config, self.corpus = config, corpus
        self.model = build_model(config.preset, dropout=config.dropout)
        decay = [p for p in self.model.parameters() if p.dim() >= 2]  # the trainer's optimizer, same groups
        no_decay = [p for p in self.model.parameters() if p.dim() < 2]
        self.optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": config.weight_decay},
                                            {"params": no_decay, "weight_decay": 0.0}],
                                           lr=config.learning_rate, betas=(config.beta1, config.beta2))
        self.schedule = torch.optim.lr_scheduler.LambdaLR(
            self.optimizer, lambda step: lr_at(step, config) / config.learning_rate)
        self.accumulation = config.samples_per_step // config.micro_batch
        self.step = 0
        self.model.train()

    def train_step(self) -> None:
        config = self.config
        for micro in range(self.accumulation):
            inputs, targets = self.corpus.batch(self.step * config.samples_per_step + micro * config.micro_batch,
                                                config.micro_batch)
            _, loss = self.model(inputs, targets)
            (loss / self.accumulation).backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), config.grad_clip)
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        self.schedule.step()
        self.step += 1


def interleaved_step_times(config, corpus, steps: int) -> dict[str, list[tuple[float, float]]]:
    """(CPU, wall) seconds of each step of both loops, alternating step by step (and which goes first),
    so that both see the same machine at the same moment."""
    loops = {"bare": BareLoop(config, corpus), "trainer": Trainer(config, corpus=corpus)}
    times: dict[str, list[tuple[float, float]]] = {"bare": [], "trainer": []}
    for index in range(steps):
        order = ("bare", "trainer") if index % 2 == 0 else ("trainer", "bare")
        for name in order:
            cpu, wall = time.process_time(), time.perf_counter()
            loops[name].train_step()
            times[name].append((time.process_time() - cpu, time.perf_counter() - wall))
    return times


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
    interleaved_step_times(config, corpus, 4)  # warm up both paths
    bare, trainer = [], []
    for _ in range(args.rounds):  # fresh models each round, steps interleaved within it
        times = interleaved_step_times(config, corpus, args.steps)
        bare += times["bare"]
        trainer += times["trainer"]
    med = statistics.median
    tokens = config.tokens_per_step
    rates = {name: (tokens / med(t[0] for t in values), tokens / med(t[1] for t in values))
             for name, values in (("bare", bare), ("trainer", trainer))}
    overhead = (1 - rates["trainer"][0] / rates["bare"][0]) * 100
    wall_overhead = (1 - rates["trainer"][1] / rates["bare"][1]) * 100
    costs = checkpoint_costs(args.save_preset, args.save_rounds)
    megabytes = costs["bytes"] / 1e6
    print(f"## trainer benchmark (preset tiny, B={config.samples_per_step} x seq {config.seq_len}, "
          f"micro-batch {config.micro_batch}, {args.threads} thread(s), {args.rounds} rounds of {args.steps} "
          f"steps of each loop interleaved step by step, median step time; torch {torch.__version__})\n")
    print("| measure | CPU time | wall clock |")
    print("|---|---|---|")
    print(f"| bare loop tokens/s | {rates['bare'][0]:,.0f} | {rates['bare'][1]:,.0f} |")
    print(f"| trainer tokens/s | {rates['trainer'][0]:,.0f} | {rates['trainer'][1]:,.0f} |")
    print(f"| bookkeeping overhead (target < 5%) | {overhead:.1f}% | {wall_overhead:.1f}% |")
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
