"""The knobs of the autoresearch target's training step: one frozen dataclass, read strictly.

Torch-free, so that the scripted queue (:mod:`wikiengine.training.autoresearch_queue`) and whatever
scaffolds a lane can build and check configs without importing torch; what each knob
does is :mod:`wikiengine.training.autoresearch_target`'s business (its docstring has the table).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from wikiengine.core.errors import WikiError
from wikiengine.executors.store import StoreFormatError, strict_json

CHOICES = {
    "dtype": ("float32", "bfloat16"),
    "adamw": ("for-loop", "foreach", "fused"),
    "gelu": ("fused", "composed"),
    "layout": ("out-in", "in-out"),
    "logsumexp": ("exact", "max"),
}


class TargetConfigError(WikiError, ValueError):
    """A knob is unknown or has a bad value; the message is one line naming it."""


@dataclass(frozen=True)
class TargetConfig:
    """The knobs of one training step (see the module docstring for what each changes)."""

    batch: int = 64
    micro_batch: int | None = None
    dtype: str = "float32"
    adamw: str = "for-loop"
    gelu: str = "composed"
    layout: str = "out-in"
    logsumexp: str = "exact"
    pin_memory: bool = False
    seed: int = 0

    @classmethod
    def from_dict(cls, data: object) -> TargetConfig:
        """Read knobs strictly: unknown keys, wrong types and values outside the choices raise."""
        if not isinstance(data, dict):
            raise TargetConfigError(f"the config must be a JSON object, got {type(data).__name__}")
        known = {f.name for f in dataclasses.fields(cls)}
        for key in data:
            if key not in known:
                raise TargetConfigError(f"unknown knob {key!r} (known: {', '.join(sorted(known))})")
        config = cls(**data)
        for name in ("batch", "seed"):
            value = getattr(config, name)
            if type(value) is not int or value < (1 if name == "batch" else 0):
                raise TargetConfigError(f"{name} must be a {'positive' if name == 'batch' else 'non-negative'} "
                                        f"integer, got {value!r}")
        if config.micro_batch is not None and (type(config.micro_batch) is not int or config.micro_batch < 1):
            raise TargetConfigError(f"micro_batch must be a positive integer or null, got {config.micro_batch!r}")
        for name, allowed in CHOICES.items():
            if getattr(config, name) not in allowed:
                raise TargetConfigError(f"{name} must be one of {', '.join(allowed)}, got {getattr(config, name)!r}")
        if type(config.pin_memory) is not bool:
            raise TargetConfigError(f"pin_memory must be true or false, got {config.pin_memory!r}")
        return config

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


def load_target_config(path: str | Path) -> TargetConfig:
    """Read a knob file (strict JSON: no duplicate keys, no NaN); errors name the file."""
    path = Path(path)
    try:
        data = strict_json(path.read_bytes(), str(path))
    except OSError as exc:
        raise TargetConfigError(f"{path}: cannot read the config ({exc.strerror})") from None
    except StoreFormatError as exc:
        raise TargetConfigError(str(exc)) from None
    try:
        return TargetConfig.from_dict(data)
    except (TargetConfigError, TypeError) as exc:
        raise TargetConfigError(f"{path}: {exc}") from None
