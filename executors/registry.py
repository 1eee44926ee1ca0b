"""Backend selection: the run config's ``kind`` names the store or compute class to build.

Each kind maps to ``module:Class`` and to the extra that brings its client library.
Modules are imported only when their kind is chosen, so the default kinds
(``local-git``, ``local-process``) never load huggingface_hub, kaggle or kubernetes.
Every class is built with ``Class.from_config(config, root)``, except the local git
store, which is opened at its ``path`` (default ``store``, relative to ``root``).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from pathlib import Path

from wikiengine.core.errors import BackendError
from wikiengine.executors.compute import ComputeBackend
from wikiengine.executors.store import CheckpointStore

# kind -> (module, class, extra that installs its client library or None)
STORE_KINDS: dict[str, tuple[str, str, str | None]] = {
    "local-git": ("wikiengine.executors.local_store", "LocalGitStore", None),
    "hub": ("wikiengine.executors.hub_store", "HubStore", "hub"),
}
COMPUTE_KINDS: dict[str, tuple[str, str, str | None]] = {
    "local-process": ("wikiengine.executors.local_compute", "LocalProcessCompute", None),
    "kaggle": ("wikiengine.executors.kaggle_compute", "KaggleCompute", "kaggle"),
    "gke": ("wikiengine.executors.gke.compute", "GkeCompute", "gke"),
}
_CLIENT_MODULES = {"hub": "huggingface_hub", "kaggle": "kagglesdk", "gke": "kubernetes"}


class BackendConfigError(BackendError):
    """The config names an unknown backend kind, or one whose extra is not installed."""


def _build(table: dict[str, tuple[str, str, str | None]], what: str, config: Mapping, root: Path):
    kind = config.get("kind")
    if kind not in table:
        known = ", ".join(sorted(table))
        raise BackendConfigError(f"{what}: unknown kind {kind!r}; expected one of {known}")
    module_name, class_name, extra = table[kind]
    if extra is not None:
        try:
            importlib.import_module(_CLIENT_MODULES[extra])
        except ImportError:
            raise BackendConfigError(
                f"{what} kind {kind!r} needs the '{extra}' extra: pip install 'wikiengine[{extra}]'"
            ) from None
    cls = getattr(importlib.import_module(module_name), class_name)
    settings = {key: value for key, value in config.items() if key != "kind"}
    from wikiengine.executors.compute import ComputeError
    from wikiengine.executors.store import StoreError

    try:
        if kind == "local-git":
            path = Path(settings.get("path", "store"))
            return cls(path if path.is_absolute() else Path(root) / path)
        return cls.from_config(settings, Path(root))
    except (ComputeError, StoreError, ValueError, TypeError) as exc:
        # a refused key (a token in the config), a bad value: bad input, one line naming it
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise BackendConfigError(f"{what} ({kind}): {first}") from None


def make_store(config: Mapping, *, root: Path) -> CheckpointStore:
    """The checkpoint store the run config's ``store`` mapping names (``kind`` + settings)."""
    return _build(STORE_KINDS, "store", config, root)


def make_compute(config: Mapping, *, root: Path) -> ComputeBackend:
    """The compute backend the run config's ``compute`` mapping names (``kind`` + settings)."""
    return _build(COMPUTE_KINDS, "compute", config, root)
