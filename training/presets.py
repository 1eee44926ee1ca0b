"""The model presets' shapes, and a preset's parameter count from its shape, without torch.

A run config names its preset; reading and checking the config (``training/config.py``)
needs only these shapes, so a session refuses a bad config, or a store it cannot read,
before it imports torch (about 1.3 s of CPU). ``training/model.py`` builds the models.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ModelPreset:
    """The shape of a model."""

    vocab_size: int
    context: int
    n_layer: int
    n_head: int
    d_model: int
    dropout: float = 0.0


PRESETS: dict[str, ModelPreset] = {
    "ounce100m": ModelPreset(vocab_size=32768, context=1024, n_layer=11, n_head=12, d_model=768, dropout=0.0),
    "tiny": ModelPreset(vocab_size=256, context=128, n_layer=2, n_head=2, d_model=64, dropout=0.1),
}


def parameter_count(preset: str) -> int:
    """The distinct parameters of ``training.model.build_model(preset)`` (tied weights once), from
    the preset's shape alone: no model is built (a meta-device model's initialisation runs
    torch's Python references, which import dynamo)."""
    shape = PRESETS[preset]
    d = shape.d_model
    norms = 2 * 2 * d  # ln1 and ln2: weight and bias
    attention = (d * 3 * d + 3 * d) + (d * d + d)  # qkv, proj
    mlp = (d * 4 * d + 4 * d) + (4 * d * d + d)
    # token and position embeddings (the head is tied to the token embedding), the final norm
    return (shape.vocab_size + shape.context) * d + shape.n_layer * (norms + attention + mlp) + 2 * d
