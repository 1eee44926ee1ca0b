"""The checkpoint store interface, shared by the trainer, `wiki step` and every backend.

A store is a versioned repository of files with a linear history, like a Hub repo:
saving checkpoint N is two commits in this order,

1. ``ckpt/checkpoint-N/...`` (the checkpoint folder, message ``checkpoint N``), then
2. ``latest.json`` = ``{"step": N, "path_in_repo": "ckpt/checkpoint-N"}`` with the
   message ``latest -> N``.

After ``latest -> max_steps`` the session commits ``final/`` (the final weights and
their manifest, message ``final N``).

Both commits name the parent the writer last saw; a store refuses a commit whose
parent is not the current head (:class:`StaleParentError`): a second writer is
refused, never merged. All reads of one wake are pinned to one revision (a commit id)
read first with :meth:`CheckpointStore.head`.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

from wikiengine.core.errors import BackendError, BackendUnavailable

POINTER_PATH = "latest.json"
CHECKPOINT_PREFIX = "ckpt/checkpoint-"
FINAL_PATH = "final"  # the final weights, written once after ``latest -> max_steps``


def checkpoint_path(step: int) -> str:
    """``ckpt/checkpoint-N``: where checkpoint ``step`` lives in the store."""
    return f"{CHECKPOINT_PREFIX}{step}"


def pointer_message(step: int) -> str:
    """The message of the pointer commit: ``latest -> N``."""
    return f"latest -> {step}"


def checkpoint_message(step: int) -> str:
    """The message of the checkpoint-folder commit."""
    return f"checkpoint {step}"


def final_message(step: int) -> str:
    """The message of the ``final/`` commit, made after ``latest -> max_steps``."""
    return f"final {step}"


@dataclass(frozen=True)
class StoreCommit:
    """One commit of the store's history (newest first in listings)."""

    id: str
    title: str
    date: dt.datetime  # timezone-aware, UTC


@dataclass(frozen=True)
class Pointer:
    """The parsed ``latest.json``."""

    step: int
    path_in_repo: str

    @staticmethod
    def from_bytes(data: bytes) -> Pointer:
        """Parse ``latest.json`` strictly (exact types, no duplicate keys, no NaN)."""
        obj = strict_json(data, "latest.json")
        if not isinstance(obj, dict) or set(obj) != {"step", "path_in_repo"}:
            raise StoreFormatError("latest.json must hold exactly the keys 'step' and 'path_in_repo'")
        step, path = obj["step"], obj["path_in_repo"]
        if type(step) is not int or step < 0:
            raise StoreFormatError(f"latest.json step is not a non-negative integer: {step!r}")
        if not isinstance(path, str):
            raise StoreFormatError(f"latest.json path_in_repo is not a string: {path!r}")
        return Pointer(step, path)

    def to_bytes(self) -> bytes:
        return (json.dumps({"step": self.step, "path_in_repo": self.path_in_repo}) + "\n").encode()


class StoreError(BackendError):
    """A store operation failed; the message never contains a secret."""


class StoreUnavailableError(StoreError, BackendUnavailable):
    """The store could not be reached or answered ambiguously: state is unknown."""


class StaleParentError(StoreError):
    """A commit was refused because the head is not the parent the writer named."""


class FileMissingError(StoreError):
    """The file does not exist at that revision."""


class StoreFormatError(StoreError):
    """A store file (pointer, cursor, manifest) is malformed."""


def unique_keys(make_error: Callable[[str], Exception]):
    """A ``json.loads`` ``object_pairs_hook`` refusing a key given twice in one object: it
    raises ``make_error("duplicate key 'k'")``."""

    def hook(pairs):
        obj = {}
        for key, value in pairs:
            if key in obj:
                raise make_error(f"duplicate key {key!r}")
            obj[key] = value
        return obj

    return hook


def strict_json(data: bytes, what: str):
    """Parse JSON refusing duplicate keys, NaN/Infinity and non-UTF-8 bytes."""

    def no_constant(name):
        raise StoreFormatError(f"{what}: {name} is not a number")

    no_dupes = unique_keys(lambda message: StoreFormatError(f"{what}: {message}"))
    try:
        return json.loads(data.decode("utf-8"), object_pairs_hook=no_dupes, parse_constant=no_constant)
    except UnicodeDecodeError:
        raise StoreFormatError(f"{what}: not UTF-8") from None
    except json.JSONDecodeError as exc:
        raise StoreFormatError(f"{what}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    except RecursionError:
        raise StoreFormatError(f"{what}: nesting too deep") from None


@runtime_checkable
class CheckpointStore(Protocol):
    """What the trainer and a wake's check need from a checkpoint repository."""

    def head(self) -> str:
        """The commit id the branch points at now. Raises StoreUnavailableError."""

    def list_commits(self, revision: str) -> list[StoreCommit]:
        """History reachable from ``revision``, newest first."""

    def read_file(self, path: str, revision: str) -> bytes:
        """The bytes of ``path`` at ``revision``. Raises FileMissingError."""

    def read_files(self, paths: list[str], revision: str) -> dict[str, bytes]:
        """The bytes of each of ``paths`` that exists at ``revision`` (a missing one is left out),
        read together where the store can."""

    def list_files(self, prefix: str, revision: str) -> list[str]:
        """Paths of the files under ``prefix`` at ``revision``, sorted."""

    def read_pointer(self, revision: str) -> Pointer | None:
        """The parsed ``latest.json`` at ``revision``; None when there is none yet."""

    def commit_checkpoint(self, step: int, local_dir: Path, parent: str) -> str:
        """Commit the files of ``local_dir`` as ``ckpt/checkpoint-<step>/`` on top of
        ``parent`` (StaleParentError when the head moved); return the new commit id."""

    def commit_pointer(self, step: int, parent: str) -> str:
        """Commit ``latest.json`` for ``step`` with message ``latest -> <step>`` on top of
        ``parent`` (StaleParentError when the head moved); return the new commit id."""

    def commit_final(self, step: int, local_dir: Path, parent: str) -> str:
        """Commit the files of ``local_dir`` as ``final/`` (message ``final <step>``) on top
        of ``parent`` (StaleParentError when the head moved); return the new commit id."""

    def is_ancestor(self, ancestor: str, descendant: str) -> bool:
        """True when ``ancestor`` is in the history of ``descendant`` (a rewrite check)."""
