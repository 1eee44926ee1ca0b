"""Pre-tokenized shards, their pins, the seeded permutation and the data cursor.

A corpus is a directory of shards ``*.bin`` (little-endian uint16 token ids, read in
name order as one stream) and a ``meta.json`` (``{"dtype": "uint16", "vocab_size": V}``).
Sample ``i`` is the ``seq_len + 1`` tokens starting at ``i * seq_len`` (inputs and
shifted targets), so the stream holds ``(n_tokens - 1) // seq_len`` samples.

Pins (first 16 hex digits of a sha256):

- ``dataset_files_sha``: over each shard's name and bytes, in name order;
- ``shuffle_perm_sha``: over the seeded permutation of sample indices (int64 LE).

Step ``s`` reads the global sample positions ``s*B .. (s+1)*B - 1``; position ``g`` is
sample ``perm_e[g % N]`` of epoch ``e = g // N`` (epoch 0 uses the pinned permutation,
epoch ``e`` a permutation seeded with ``(seed, e)``). So the data a step reads is a pure
function of (corpus, seed, step): a resume replays nothing.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from wikiengine.core.errors import WikiError

TYPE_CHECKING = False  # typing's constant, without importing typing
if TYPE_CHECKING:
    import torch

CORPUS_DIR = Path(__file__).resolve().parent / "corpus"


class DataError(WikiError, ValueError):
    """The corpus is missing, malformed or differs from its pins."""


def _sha16(digest: hashlib._Hash) -> str:
    return digest.hexdigest()[:16]


def shard_paths(corpus_dir: Path) -> list[Path]:
    """The shards of a corpus, in stream order (sorted by name)."""
    shards = sorted(Path(corpus_dir).glob("*.bin"))
    if not shards:
        raise DataError(f"{corpus_dir}: no *.bin shards")
    return shards


def dataset_files_sha(corpus_dir: Path) -> str:
    """sha256 over every shard's name and bytes (name order), first 16 hex digits."""
    digest = hashlib.sha256()
    for path in shard_paths(corpus_dir):
        name = path.name.encode()
        data = path.read_bytes()
        digest.update(len(name).to_bytes(8, "little") + name)
        digest.update(len(data).to_bytes(8, "little"))
        digest.update(data)
    return _sha16(digest)


def epoch_permutation(seed: int, epoch: int, n_samples: int) -> np.ndarray:
    """The seeded permutation of sample indices used in ``epoch`` (int64)."""
    rng = np.random.Generator(np.random.PCG64([seed, epoch]))
    return rng.permutation(n_samples).astype(np.int64)


def shuffle_perm_sha(seed: int, n_samples: int) -> str:
    """sha256 over the epoch-0 permutation (int64 little-endian), first 16 hex digits."""
    perm = epoch_permutation(seed, 0, n_samples)
    return _sha16(hashlib.sha256(perm.astype("<i8").tobytes()))


@dataclass(frozen=True)
class Corpus:
    """An opened corpus: the token stream (memory-mapped) and its pins for one seq_len."""

    directory: Path
    tokens: np.ndarray
    vocab_size: int
    seq_len: int
    seed: int
    files_sha: str
    perm_sha: str

    @property
    def n_samples(self) -> int:
        return (len(self.tokens) - 1) // self.seq_len

    def sample_indices(self, start: int, count: int) -> np.ndarray:
        """Sample ids at global positions ``start .. start + count - 1`` (across epochs)."""
        positions = np.arange(start, start + count, dtype=np.int64)
        epochs = positions // self.n_samples
        out = np.empty(count, dtype=np.int64)
        for epoch in np.unique(epochs):
            mask = epochs == epoch
            out[mask] = _cached_perm(self.seed, int(epoch), self.n_samples)[positions[mask] % self.n_samples]
        return out

    def batch(self, start: int, count: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Inputs and targets ``(count, seq_len)`` int64 for global positions ``start..``
        (torch is imported here: opening a corpus and reading its pins need none)."""
        import torch

        width = self.seq_len
        rows = [self.tokens[i * width: i * width + width + 1] for i in self.sample_indices(start, count)]
        block = torch.from_numpy(np.stack(rows).astype(np.int64))
        return block[:, :-1], block[:, 1:]


@lru_cache(maxsize=4)
def _cached_perm(seed: int, epoch: int, n_samples: int) -> np.ndarray:
    return epoch_permutation(seed, epoch, n_samples)


def open_corpus(corpus_dir: str | Path | None, seq_len: int, seed: int) -> Corpus:
    """Open a corpus (the shipped tiny corpus when ``corpus_dir`` is empty) and compute its pins."""
    directory = Path(corpus_dir) if corpus_dir else CORPUS_DIR
    meta_path = directory / "meta.json"
    try:
        meta = json.loads(meta_path.read_text())
    except (OSError, ValueError) as exc:
        raise DataError(f"{meta_path}: cannot read corpus metadata ({exc})") from None
    if meta.get("dtype") != "uint16" or type(meta.get("vocab_size")) is not int:
        raise DataError(f"{meta_path}: expected dtype uint16 and an integer vocab_size")
    parts = [np.memmap(path, dtype="<u2", mode="r") for path in shard_paths(directory)]
    tokens = parts[0] if len(parts) == 1 else np.concatenate(parts)
    if (len(tokens) - 1) // seq_len < 1:
        raise DataError(f"{directory}: {len(tokens)} tokens hold no sample of {seq_len + 1}")
    n_samples = (len(tokens) - 1) // seq_len
    return Corpus(directory, tokens, meta["vocab_size"], seq_len, seed, dataset_files_sha(directory),
                  shuffle_perm_sha(seed, n_samples))


def rank_slice(samples_per_step: int, world_size: int, rank: int) -> tuple[int, int]:
    """The (offset, count) of one data-parallel rank's share of a step's global batch."""
    if samples_per_step % world_size:
        raise DataError(f"samples_per_step {samples_per_step} is not divisible by the world size {world_size}")
    per_rank = samples_per_step // world_size
    return rank * per_rank, per_rank
