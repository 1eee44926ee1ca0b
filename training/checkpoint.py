"""Checkpoints in the Hugging Face Trainer layout, their manifest, verification and loading.

``checkpoint-N/`` holds ``model.safetensors``, ``optimizer.pt``, ``scheduler.pt``,
``rng_state.pth`` (``rng_state_<rank>.pth`` per rank when the world size is above 1),
``scaler.pt`` (only with an fp16 grad scaler), ``trainer_state.json`` (HF's
``TrainerState`` fields, so ``TrainerState(**json)`` loads it), ``cursor.json`` (the data
cursor, never inside trainer_state.json) and, written last, ``manifest.json``:
``{"files": {name: {"sha256", "size"}}, "step": N}``. The manifest is the marker of a
complete checkpoint: a directory without it is partial (never trusted, never deleted).

Loading never unpickles bytes that are not in the manifest with their recorded sha256;
weights come from safetensors, everything else through ``torch.load(weights_only=True)``.
Local files are written atomically (temp file, fsync, rename; RELIABILITY row 39).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from wikiengine.core.atomic import atomic_write_bytes, fsync_dir
from wikiengine.core.errors import WikiError
from wikiengine.executors.store import (
    CheckpointStore,
    StoreFormatError,
    checkpoint_path,
    strict_json,
)

MANIFEST_NAME = "manifest.json"
CURSOR_NAME = "cursor.json"
TRAINER_STATE_NAME = "trainer_state.json"
MODEL_NAME = "model.safetensors"
REQUIRED_FILES = (MODEL_NAME, "optimizer.pt", "scheduler.pt", TRAINER_STATE_NAME, CURSOR_NAME)
FINAL_FILES = (MODEL_NAME, TRAINER_STATE_NAME, CURSOR_NAME)  # what final/ holds (with its manifest)
FILE_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")
SHA16 = re.compile(r"^[0-9a-f]{16}$")
SHA256 = re.compile(r"^[0-9a-f]{64}$")
CURSOR_INT_KEYS = ("step", "tokens_consumed", "samples_consumed", "tokens_per_step", "samples_per_step", "seq_len",
                   "seed", "epoch", "sample_in_epoch", "dp_world_size")
CURSOR_KEYS = frozenset(CURSOR_INT_KEYS + ("dataset_files_sha", "shuffle_perm_sha"))


class CheckpointError(WikiError):
    """A checkpoint is missing, partial, corrupt or inconsistent: never load it."""


def sha256_hex(data: bytes) -> str:
    """The sha256 of ``data`` as 64 hex digits."""
    return hashlib.sha256(data).hexdigest()


# ---------------------------------------------------------------- cursor

@dataclass(frozen=True)
class Cursor:
    """The parsed ``cursor.json``: where in the data stream a checkpoint stands."""

    step: int
    tokens_consumed: int
    samples_consumed: int
    tokens_per_step: int
    samples_per_step: int
    seq_len: int
    seed: int
    epoch: int
    sample_in_epoch: int
    dp_world_size: int
    dataset_files_sha: str
    shuffle_perm_sha: str

    def to_bytes(self) -> bytes:
        return (json.dumps(self.__dict__, indent=2, sort_keys=True) + "\n").encode()


def make_cursor(step: int, samples_per_step: int, seq_len: int, seed: int, n_samples: int, world_size: int,
                files_sha: str, perm_sha: str) -> Cursor:
    """The cursor after ``step`` optimizer steps (exact integer arithmetic)."""
    samples = step * samples_per_step
    return Cursor(step=step, tokens_consumed=step * samples_per_step * seq_len, samples_consumed=samples,
                  tokens_per_step=samples_per_step * seq_len, samples_per_step=samples_per_step, seq_len=seq_len,
                  seed=seed, epoch=samples // n_samples, sample_in_epoch=samples % n_samples,
                  dp_world_size=world_size, dataset_files_sha=files_sha, shuffle_perm_sha=perm_sha)


def read_cursor(data: bytes) -> Cursor:
    """Parse ``cursor.json`` strictly and check its arithmetic.

    Refuses duplicate keys, NaN, missing or unknown keys, bool or float where an integer
    belongs (``262144.0`` is not ``262144``), and any of ``tokens_consumed != step *
    tokens_per_step``, ``samples_consumed != step * samples_per_step``, ``tokens_per_step
    != samples_per_step * seq_len``. Raises :class:`executors.store.StoreFormatError`.
    """
    obj = strict_json(data, CURSOR_NAME)
    if not isinstance(obj, dict):
        raise StoreFormatError("cursor.json must be a JSON object")
    missing = sorted(CURSOR_KEYS - set(obj))
    unknown = sorted(set(obj) - CURSOR_KEYS)
    if missing:
        raise StoreFormatError(f"cursor.json lacks {missing[0]!r}")
    if unknown:
        raise StoreFormatError(f"cursor.json has an unknown key {unknown[0]!r}")
    for key in CURSOR_INT_KEYS:
        if type(obj[key]) is not int or obj[key] < 0:
            raise StoreFormatError(f"cursor.json {key} is not a non-negative integer: {obj[key]!r}")
    for key in ("dataset_files_sha", "shuffle_perm_sha"):
        if not isinstance(obj[key], str) or not SHA16.match(obj[key]):
            raise StoreFormatError(f"cursor.json {key} is not 16 hex digits: {obj[key]!r}")
    cursor = Cursor(**obj)
    if cursor.tokens_per_step != cursor.samples_per_step * cursor.seq_len:
        raise StoreFormatError("cursor.json tokens_per_step != samples_per_step * seq_len")
    if cursor.tokens_consumed != cursor.step * cursor.tokens_per_step:
        raise StoreFormatError(
            f"cursor.json tokens_consumed {cursor.tokens_consumed} != step {cursor.step} x {cursor.tokens_per_step}")
    if cursor.samples_consumed != cursor.step * cursor.samples_per_step:
        raise StoreFormatError(
            f"cursor.json samples_consumed {cursor.samples_consumed} != step {cursor.step} x {cursor.samples_per_step}")
    if cursor.dp_world_size < 1:
        raise StoreFormatError("cursor.json dp_world_size must be at least 1")
    return cursor


# ---------------------------------------------------------------- trainer_state.json

def trainer_state(step: int, max_steps: int, save_steps: int, logging_steps: int, train_batch_size: int,
                  tokens_seen: int, log_history: list[dict], epoch: float) -> dict:
    """A ``trainer_state.json`` with exactly the fields of transformers' ``TrainerState``."""
    return {
        "best_global_step": None, "best_metric": None, "best_model_checkpoint": None, "epoch": epoch,
        "eval_steps": save_steps, "global_step": step, "is_hyper_param_search": False,
        "is_local_process_zero": True, "is_world_process_zero": True, "log_history": log_history,
        "logging_steps": logging_steps, "max_steps": max_steps, "num_input_tokens_seen": tokens_seen,
        "num_train_epochs": 1, "save_steps": save_steps, "stateful_callbacks": {}, "total_flos": 0.0,
        "train_batch_size": train_batch_size, "trial_name": None, "trial_params": None,
    }


def read_trainer_state(data: bytes) -> dict:
    """Parse ``trainer_state.json`` strictly; ``global_step``, ``max_steps``, ``save_steps`` exact ints."""
    obj = strict_json(data, TRAINER_STATE_NAME)
    if not isinstance(obj, dict):
        raise StoreFormatError("trainer_state.json must be a JSON object")
    for key in ("global_step", "max_steps", "save_steps"):
        if type(obj.get(key)) is not int:
            raise StoreFormatError(f"trainer_state.json {key} is not an integer: {obj.get(key)!r}")
    if not isinstance(obj.get("log_history"), list):
        raise StoreFormatError("trainer_state.json log_history is not a list")
    return obj


# ---------------------------------------------------------------- manifest

def build_manifest(files: dict[str, bytes], step: int) -> bytes:
    """``manifest.json`` bytes for the given checkpoint files (not including itself)."""
    entries = {name: {"sha256": sha256_hex(data), "size": len(data)} for name, data in sorted(files.items())}
    return (json.dumps({"files": entries, "step": step}, indent=2, sort_keys=True) + "\n").encode()


def read_manifest(data: bytes) -> tuple[int, dict[str, dict]]:
    """Parse ``manifest.json`` strictly; return ``(step, {name: {"sha256", "size"}})``."""
    obj = strict_json(data, MANIFEST_NAME)
    if not isinstance(obj, dict) or set(obj) != {"files", "step"} or not isinstance(obj["files"], dict):
        raise StoreFormatError("manifest.json must hold exactly 'files' (an object) and 'step'")
    if type(obj["step"]) is not int:
        raise StoreFormatError("manifest.json step is not an integer")
    for name, entry in obj["files"].items():
        if not FILE_NAME.match(name) or name == MANIFEST_NAME:
            raise StoreFormatError(f"manifest.json names a bad file {name!r}")
        if (not isinstance(entry, dict) or set(entry) != {"sha256", "size"} or not isinstance(entry["sha256"], str)
                or not SHA256.match(entry["sha256"]) or type(entry["size"]) is not int or entry["size"] < 0):
            raise StoreFormatError(f"manifest.json entry for {name!r} is not {{sha256: 64 hex, size: int}}")
    return obj["step"], obj["files"]


def verify_files(manifest_bytes: bytes, files: dict[str, bytes], step: int,
                 required: tuple[str, ...] = REQUIRED_FILES) -> None:
    """Check checkpoint bytes against the manifest: same file set, sizes and sha256.

    Raises :class:`CheckpointError` naming the first difference (RELIABILITY rows 3, 8, 9).
    """
    try:
        manifest_step, manifest = read_manifest(manifest_bytes)
    except StoreFormatError as exc:
        raise CheckpointError(str(exc)) from None
    if manifest_step != step:
        raise CheckpointError(f"manifest.json is for another step than {step}")
    for name in required:
        if name not in manifest:
            raise CheckpointError(f"manifest.json does not list {name}")
    listed, present = set(manifest), set(files) - {MANIFEST_NAME}
    if listed - present:
        raise CheckpointError(f"{sorted(listed - present)[0]} is listed in manifest.json but missing")
    if present - listed:
        raise CheckpointError(f"{sorted(present - listed)[0]} is present but not listed in manifest.json")
    for name, entry in sorted(manifest.items()):
        data = files[name]
        if len(data) != entry["size"]:
            raise CheckpointError(f"{name}: {len(data)} bytes, manifest says {entry['size']} (truncated or padded)")
        if sha256_hex(data) != entry["sha256"]:
            raise CheckpointError(f"{name}: sha256 differs from manifest.json (corrupt or tampered)")


def read_verified_from_store(store: CheckpointStore, step: int, revision: str) -> dict[str, bytes]:
    """Read ``ckpt/checkpoint-<step>/`` at ``revision`` and verify it against its manifest.

    Returns ``{file name: bytes}`` of the verified files (manifest included). Raises
    :class:`CheckpointError` when a file is missing, extra, truncated or altered.
    """
    prefix = checkpoint_path(step) + "/"
    names = [path[len(prefix):] for path in store.list_files(prefix, revision)]
    if not names:
        raise CheckpointError(f"{checkpoint_path(step)} does not exist at {revision[:12]}")
    if MANIFEST_NAME not in names:
        raise CheckpointError(f"{checkpoint_path(step)} has no manifest.json (partial checkpoint)")
    if any("/" in name for name in names):
        raise CheckpointError(f"{checkpoint_path(step)} holds a subdirectory")
    found = store.read_files([prefix + name for name in names], revision)
    missing = [name for name in names if prefix + name not in found]
    if missing:
        raise CheckpointError(f"{prefix}{missing[0]} does not exist at {revision[:12]}")
    files = {name: found[prefix + name] for name in names}
    verify_files(files[MANIFEST_NAME], files, step)
    return files


def read_verified_local(directory: Path, step: int) -> dict[str, bytes]:
    """Read and verify a local ``checkpoint-N`` directory against its manifest."""
    directory = Path(directory)
    if not (directory / MANIFEST_NAME).is_file():
        raise CheckpointError(f"{directory} has no manifest.json (partial checkpoint)")
    files = {path.name: path.read_bytes() for path in directory.iterdir() if path.is_file()}
    verify_files(files[MANIFEST_NAME], files, step)
    return files


# ---------------------------------------------------------------- serialising and loading

def torch_bytes(obj) -> bytes:
    """``torch.save`` of a state (tensors, numbers, strings, lists, dicts) to bytes."""
    import torch

    buffer = io.BytesIO()
    torch.save(obj, buffer)
    return buffer.getvalue()


def load_torch_verified(files: dict[str, bytes], name: str):
    """``torch.load(weights_only=True)`` of a file already checked against the manifest."""
    import pickle

    import torch

    if name not in files:
        raise CheckpointError(f"{name} is not in the verified checkpoint")
    try:
        return torch.load(io.BytesIO(files[name]), weights_only=True, map_location="cpu")
    except (pickle.UnpicklingError, RuntimeError, EOFError, ValueError) as exc:
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise CheckpointError(f"{name}: refused to unpickle ({first_line[:200]})") from None


def load_model_verified(files: dict[str, bytes]) -> dict:
    """The model state dict from verified ``model.safetensors`` bytes."""
    from safetensors import SafetensorError
    from safetensors.torch import load

    try:
        return load(files[MODEL_NAME])
    except (SafetensorError, KeyError, ValueError) as exc:
        raise CheckpointError(f"{MODEL_NAME}: cannot be read ({exc})") from None


def write_checkpoint(out_dir: Path, step: int, files: dict[str, bytes]) -> Path:
    """Write ``files`` and their manifest as ``out_dir/checkpoint-<step>`` atomically.

    The files go into a temporary directory (each fsynced), ``manifest.json`` last, then
    the directory is renamed into place; an existing ``checkpoint-<step>`` is replaced
    only by a complete one. Returns the final directory.
    """
    for name in files:
        if not FILE_NAME.match(name) or name == MANIFEST_NAME:
            raise ValueError(f"bad checkpoint file name {name!r}")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    final = out_dir / f"checkpoint-{step}"
    tmp = out_dir / f".checkpoint-{step}.tmp-{os.getpid()}"
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir()
    for name, data in files.items():
        with open(tmp / name, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
    atomic_write_bytes(tmp / MANIFEST_NAME, build_manifest(files, step))
    if final.exists():
        old = out_dir / f".checkpoint-{step}.old-{os.getpid()}"
        os.replace(final, old)
        os.replace(tmp, final)
        shutil.rmtree(old)
    else:
        os.replace(tmp, final)
    fsync_dir(out_dir)
    return final


def local_checkpoints(out_dir: Path) -> tuple[dict[int, Path], list[Path]]:
    """Split ``out_dir`` into complete checkpoints ``{step: dir}`` and partial directories.

    A directory is complete when it is named ``checkpoint-N`` and holds ``manifest.json``;
    anything else that looks like a checkpoint (no manifest, a temp name) is partial.
    """
    complete: dict[int, Path] = {}
    partial: list[Path] = []
    if not Path(out_dir).is_dir():
        return complete, partial
    for path in sorted(Path(out_dir).iterdir()):
        if not path.is_dir() or "checkpoint-" not in path.name:
            continue
        match = re.fullmatch(r"checkpoint-(\d+)", path.name)
        if match and (path / MANIFEST_NAME).is_file():
            complete[int(match.group(1))] = path
        else:
            partial.append(path)
    return complete, partial


def rotate_local(out_dir: Path, keep_steps: set[int], quarantine_dir: Path) -> list[str]:
    """Delete complete local checkpoints not in ``keep_steps``; quarantine partial ones.

    A directory without its manifest is never deleted (RELIABILITY row 19): it moves to
    ``quarantine_dir`` and is reported. Returns one report line per quarantined directory.
    """
    complete, partial = local_checkpoints(out_dir)
    for step, path in complete.items():
        if step not in keep_steps:
            shutil.rmtree(path)
    reports = []
    for path in partial:
        if path.name.startswith(".") and f".tmp-{os.getpid()}" in path.name:
            continue  # our own save in progress
        quarantine_dir.mkdir(parents=True, exist_ok=True)
        target = quarantine_dir / path.name.lstrip(".")
        suffix = 1
        while target.exists():
            target = quarantine_dir / f"{path.name.lstrip('.')}.{suffix}"
            suffix += 1
        os.replace(path, target)
        reports.append(f"quarantined {path.name}: no manifest.json (partial checkpoint) -> {target}")
    return reports
