"""Generate the tiny pre-tokenized corpus shipped in ``training/corpus/`` (deterministic).

The text is synthetic English-like prose from a small seeded grammar (so a model has
something learnable: word spelling, agreement, simple sums), tokenized as bytes
(vocab 256) into uint16 shards. Re-running this script reproduces the shipped files
byte for byte::

    python -m wikiengine.training.make_corpus [--out training/corpus]
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

import numpy as np

SEED = 20260920
N_SHARDS = 4
TOKENS_PER_SHARD = 24_000

SUBJECTS = ["the cat", "a dog", "the old sailor", "my sister", "the small robot", "a quiet student", "the baker",
            "our teacher", "the river", "a red bird"]
VERBS = ["sees", "likes", "carries", "paints", "follows", "finds", "builds", "watches", "counts", "remembers"]
OBJECTS = ["the moon", "a green apple", "three stones", "the long road", "a paper boat", "the open door",
           "an old map", "the winter sky", "a warm loaf", "the last train"]
PLACES = ["near the hill", "in the kitchen", "by the sea", "after the rain", "at dawn", "under the bridge",
          "in the garden", "before dinner"]


def sentence(rng: random.Random) -> str:
    """One sentence of the grammar."""
    kind = rng.random()
    if kind < 0.15:
        a, b = rng.randint(0, 49), rng.randint(0, 49)
        return f"{a} plus {b} is {a + b}."
    text = f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(OBJECTS)}"
    if kind < 0.6:
        text += f" {rng.choice(PLACES)}"
    return text[0].upper() + text[1:] + "."


def generate(out_dir: Path) -> None:
    """Write ``N_SHARDS`` shards of ``TOKENS_PER_SHARD`` byte tokens and ``meta.json``."""
    rng = random.Random(SEED)
    out_dir.mkdir(parents=True, exist_ok=True)
    for index in range(N_SHARDS):
        pieces: list[str] = []
        size = 0
        while size < TOKENS_PER_SHARD:
            paragraph = " ".join(sentence(rng) for _ in range(rng.randint(3, 7))) + "\n"
            pieces.append(paragraph)
            size += len(paragraph)
        data = "".join(pieces).encode("ascii")[:TOKENS_PER_SHARD]
        np.frombuffer(data, dtype=np.uint8).astype("<u2").tofile(out_dir / f"shard_{index:03d}.bin")
    (out_dir / "meta.json").write_text(json.dumps({"dtype": "uint16", "vocab_size": 256, "tokenizer": "bytes"}) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "corpus")
    args = parser.parse_args(argv)
    generate(args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
