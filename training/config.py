"""The run configuration: one frozen dataclass, read strictly from a JSON file.

A run is fixed by its config, whatever the device: the global batch
(``samples_per_step``) and the sequence length fix ``tokens_per_step``; the device only
changes how the global batch is split into micro-batches (gradient accumulation) and
across data-parallel ranks.

Example (the ``tiny`` demo run, several sessions in seconds on two CPU cores)::

    {"preset": "tiny", "max_steps": 24, "save_steps": 4, "session_steps": 8,
     "samples_per_step": 8, "seq_len": 64, "micro_batch": 4, "seed": 1234}

The seed's relay run is ``ounce100m`` with ``max_steps`` 3814, ``save_steps`` 127,
``session_steps`` 762, ``samples_per_step`` 256 and ``seq_len`` 1024
(262,144 tokens a step).
"""

from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from wikiengine.core.errors import WikiError
from wikiengine.executors.store import StoreFormatError, strict_json

SHA16 = re.compile(r"^[0-9a-f]{16}$")
PRECISIONS = ("auto", "fp32", "bf16", "fp16")


class ConfigError(WikiError, ValueError):
    """The run config is malformed; the message is one line naming the field."""


@dataclass(frozen=True)
class RunConfig:
    """Everything that fixes a run (the arithmetic a wake checks) and how to train it."""

    preset: str = "tiny"
    max_steps: int = 24
    save_steps: int = 4
    session_steps: int = 8
    samples_per_step: int = 8  # the global batch B
    seq_len: int = 64
    micro_batch: int = 4  # samples per forward pass on one rank
    seed: int = 1234
    learning_rate: float = 3e-3
    min_learning_rate: float = 3e-4
    warmup_steps: int = 4
    weight_decay: float = 0.1
    beta1: float = 0.9
    beta2: float = 0.95
    grad_clip: float = 1.0
    logging_steps: int = 1
    precision: str = "auto"  # auto: fp16 + grad scaler on T4, bf16 where supported, fp32 on CPU
    compile: bool = False
    dropout: float | None = None  # None: the preset's dropout
    corpus: str = ""  # a directory of shards; empty = the tiny corpus shipped with the package
    dataset_files_sha: str = ""  # pinned: the session refuses to start when the data differs
    shuffle_perm_sha: str = ""
    save_margin_s: float = 60.0  # reserved at the end of the time budget
    extra: dict = field(default_factory=dict, compare=False)

    @property
    def tokens_per_step(self) -> int:
        """Tokens consumed by one optimizer step: ``samples_per_step * seq_len``."""
        return self.samples_per_step * self.seq_len

    def validate(self) -> RunConfig:
        """Check types and the arithmetic; raise ConfigError naming the first bad field."""
        ints = ("max_steps", "save_steps", "session_steps", "samples_per_step", "seq_len", "micro_batch",
                "seed", "warmup_steps", "logging_steps")
        for name in ints:
            value = getattr(self, name)
            if type(value) is not int:
                raise ConfigError(f"{name} must be an integer, got {value!r}")
            if value < 0 or (value == 0 and name not in ("seed", "warmup_steps")):
                raise ConfigError(f"{name} must be positive, got {value!r}")
        floats = ("learning_rate", "min_learning_rate", "weight_decay", "beta1", "beta2", "grad_clip", "save_margin_s")
        for name in floats:
            value = getattr(self, name)
            if type(value) not in (int, float) or not (value >= 0) or value == float("inf"):
                raise ConfigError(f"{name} must be a finite non-negative number, got {value!r}")
        if self.precision not in PRECISIONS:
            raise ConfigError(f"precision must be one of {', '.join(PRECISIONS)}, got {self.precision!r}")
        if self.dropout is not None and (type(self.dropout) not in (int, float) or not 0 <= self.dropout < 1):
            raise ConfigError(f"dropout must be in [0, 1) or null, got {self.dropout!r}")
        if type(self.compile) is not bool:
            raise ConfigError(f"compile must be true or false, got {self.compile!r}")
        from wikiengine.training.presets import PRESETS

        if self.preset not in PRESETS:
            raise ConfigError(f"preset must be one of {', '.join(sorted(PRESETS))}, got {self.preset!r}")
        if self.seq_len > PRESETS[self.preset].context:
            raise ConfigError(
                f"seq_len {self.seq_len} exceeds the context {PRESETS[self.preset].context} of {self.preset}")
        if self.samples_per_step % self.micro_batch:
            raise ConfigError(
                f"samples_per_step {self.samples_per_step} is not a multiple of micro_batch {self.micro_batch}")
        if self.save_steps % self.logging_steps:
            raise ConfigError(f"save_steps {self.save_steps} is not a multiple of logging_steps {self.logging_steps}")
        if self.session_steps % self.save_steps:
            raise ConfigError(f"session_steps {self.session_steps} is not a multiple of save_steps {self.save_steps}")
        for name in ("dataset_files_sha", "shuffle_perm_sha"):
            value = getattr(self, name)
            if not isinstance(value, str) or (value and not SHA16.match(value)):
                raise ConfigError(f"{name} must be 16 lowercase hex digits (or empty), got {value!r}")
        if not isinstance(self.corpus, str):
            raise ConfigError(f"corpus must be a path string, got {self.corpus!r}")
        return self

    def to_json(self) -> str:
        """The config as JSON (round-trips through :func:`load_config`)."""
        data = dataclasses.asdict(self)
        if not data["extra"]:
            del data["extra"]
        return json.dumps(data, indent=2, sort_keys=True) + "\n"


def config_from_dict(data: dict) -> RunConfig:
    """Build and validate a RunConfig from a parsed mapping; unknown keys are refused."""
    if not isinstance(data, dict):
        raise ConfigError("the run config must be a JSON object")
    known = {f.name for f in dataclasses.fields(RunConfig)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise ConfigError(f"unknown config key {unknown[0]!r}")
    return RunConfig(**data).validate()


def load_config(path: str | Path) -> RunConfig:
    """Read a run config from a JSON file (strict: no duplicate keys, no NaN)."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the run config ({exc.strerror})") from None
    try:
        data = strict_json(raw, str(path))
    except StoreFormatError as exc:
        raise ConfigError(str(exc)) from None
    try:
        return config_from_dict(data)
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from None


def tiny_demo_config(**overrides) -> RunConfig:
    """The small run ``wiki demo`` and the tests train: 24 steps, saves every 4, sessions of 8."""
    return dataclasses.replace(RunConfig(), **overrides).validate()
