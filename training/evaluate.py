"""Evaluate a trained checkpoint on held-out samples: the tasks of a run's eval plan.

Held-out samples are the last positions of the epoch-0 permutation, which a run that
consumed fewer samples than ``n_samples - held_out`` never trained on (refused
otherwise). Tasks:

- ``heldout_loss``: mean next-token cross-entropy (nats per token);
- ``heldout_perplexity``: ``exp`` of that loss;
- ``next_token_accuracy``: the fraction of next tokens predicted exactly (argmax).

Command line (what ``wiki step`` runs at the end of a run, in plan order)::

    python -m wikiengine.training.evaluate --model DIR --config RUN.json --tasks a,b --out-dir D
        [--smoke-limit 5] [--limit N]

It first runs every task on ``--smoke-limit`` samples (results ``<task>.smoke.json``),
then each task in order on the full held-out set, writing ``<task>.json`` atomically as
each lands; a task whose result exists is skipped (a crashed evaluation resumes).
Exit 0 when every result is written, 2 on bad input, 3 when a task cannot run.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

TASKS = ("heldout_loss", "heldout_perplexity", "next_token_accuracy")
HELD_OUT = 64  # samples


def heldout_positions(n_samples: int, consumed: int, count: int) -> range:
    """Stream positions of the held-out samples: the tail of epoch 0, never reached by training."""
    start = n_samples - count
    if consumed > start:
        raise ValueError(f"the run consumed {consumed} samples: the last {count} of {n_samples} are not held out")
    return range(start, n_samples)


def measure(model_dir: Path, config, limit: int | None) -> dict:
    """Loss and next-token accuracy of ``model_dir/model.safetensors`` on the held-out samples."""
    from wikiengine.core.collector import collector_paused

    with collector_paused(keep=__name__ == "__main__"):  # torch's 166,000 objects (core/collector.py)
        import torch
        from safetensors.torch import load_file

    from wikiengine.training.data import open_corpus
    from wikiengine.training.model import build_model

    corpus = open_corpus(config.corpus, config.seq_len, config.seed)
    consumed = config.max_steps * config.samples_per_step
    positions = heldout_positions(corpus.n_samples, consumed, HELD_OUT)
    if limit is not None:
        positions = positions[:limit]
    model = build_model(config.preset, "cpu", dropout=0.0)
    missing, unexpected = model.load_state_dict(load_file(str(model_dir / "model.safetensors")), strict=False)
    if set(missing) - {"head.weight"} or unexpected:
        raise ValueError("model.safetensors does not fit the run's preset")
    model.eval()
    total_loss, correct, tokens = 0.0, 0, 0
    with torch.no_grad():
        for start in range(positions.start, positions.stop, 8):
            count = min(8, positions.stop - start)
            inputs, targets = corpus.batch(start, count)
            logits, loss = model(inputs, targets)
            n = targets.numel()
            total_loss += float(loss) * n
            correct += int((logits.argmax(-1) == targets).sum())
            tokens += n
    mean = total_loss / tokens
    return {"heldout_loss": mean, "heldout_perplexity": math.exp(mean), "next_token_accuracy": correct / tokens,
            "samples": len(positions), "tokens": tokens}


def result_of(task: str, measured: dict, limit: int | None) -> dict:
    return {"task": task, "value": measured[task], "samples": measured["samples"], "tokens": measured["tokens"],
            "limit": limit}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m wikiengine.training.evaluate", description=__doc__.split("\n")[0])
    parser.add_argument("--model", required=True, type=Path)
    parser.add_argument("--config", required=True, type=Path)
    parser.add_argument("--tasks", required=True)
    parser.add_argument("--out-dir", required=True, type=Path)
    parser.add_argument("--smoke-limit", type=int, default=5)
    args = parser.parse_args(argv)
    from wikiengine.core.atomic import atomic_write_bytes
    from wikiengine.core.errors import ExitCode
    from wikiengine.training.config import ConfigError, load_config

    tasks = [t for t in args.tasks.split(",") if t]
    unknown = [t for t in tasks if t not in TASKS]
    if unknown or not tasks:
        print(f"error: unknown eval task {unknown[0] if unknown else '(none)'!r}; known: {', '.join(TASKS)}",
              file=sys.stderr)
        return ExitCode.BAD_INPUT
    try:
        config = load_config(args.config)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return ExitCode.BAD_INPUT
    args.out_dir.mkdir(parents=True, exist_ok=True)
    try:
        smoke = measure(args.model, config, args.smoke_limit)
        for task in tasks:
            atomic_write_bytes(args.out_dir / f"{task}.smoke.json",
                               (json.dumps(result_of(task, smoke, args.smoke_limit)) + "\n").encode())
        full = None
        for task in tasks:
            if (args.out_dir / f"{task}.json").exists():
                continue
            full = full or measure(args.model, config, None)
            atomic_write_bytes(args.out_dir / f"{task}.json", (json.dumps(result_of(task, full, None)) + "\n").encode())
            print(json.dumps({"event": "eval_result", "task": task, "value": full[task]}), flush=True)
    except (ValueError, OSError) as exc:
        print(f"evaluation refused: {exc}", file=sys.stderr)
        return ExitCode.REFUSED
    return ExitCode.OK


if __name__ == "__main__":
    from wikiengine.core.process_end import end_now

    raise SystemExit(end_now(main(), hooks=True))  # torch's teardown is 0.5 s of CPU; every output is written and closed
