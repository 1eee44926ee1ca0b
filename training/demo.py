"""A ready-made tiny relay run: a fresh local store and a run config, for ``wiki demo`` and tests.

>>> run = create_demo_run(Path("/tmp/demo"))            # doctest: +SKIP
>>> subprocess.run([sys.executable, "-m", "wikiengine.training.session", *run.session_argv()])  # doctest: +SKIP

Each session trains 8 steps of the ``tiny`` preset (24 in all, a save every 4) in a few
seconds on two CPU cores.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from wikiengine.executors.local_store import LocalGitStore
from wikiengine.training.config import tiny_demo_config


@dataclass(frozen=True)
class DemoRun:
    """Where a demo run lives."""

    store_path: Path
    config_path: Path
    out_dir: Path

    def session_argv(self, *extra: str) -> list[str]:
        """Arguments of ``python -m wikiengine.training.session`` for this run."""
        return ["--store", str(self.store_path), "--config", str(self.config_path), "--out", str(self.out_dir),
                "--no-progress", *extra]

    def store(self) -> LocalGitStore:
        return LocalGitStore(self.store_path)


def create_demo_run(root: Path, **config_overrides) -> DemoRun:
    """Create ``root/store`` (a fresh LocalGitStore), ``root/run.json`` and ``root/out``.

    ``config_overrides`` change fields of the tiny demo config (e.g. ``max_steps=8``).
    """
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    store_path, config_path, out_dir = root / "store", root / "run.json", root / "out"
    LocalGitStore.create(store_path, description="demo checkpoint store")
    config_path.write_text(tiny_demo_config(**config_overrides).to_json())
    return DemoRun(store_path, config_path, out_dir)
