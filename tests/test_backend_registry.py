"""Backend selection from the run config (executors/registry.py)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from tests.fakes.fixtures import hub_env, kaggle_env, loopback_only  # noqa: F401 - pytest fixtures
from wikiengine.executors.hub_store import HubStore
from wikiengine.executors.kaggle_compute import KaggleCompute
from wikiengine.executors.registry import BackendConfigError, make_compute, make_store

pytestmark = pytest.mark.usefixtures("loopback_only")


def test_hub_and_kaggle_kinds_build_their_backends(tmp_path, hub_env, kaggle_env):
    store = make_store({"kind": "hub", "repo_id": "o/ckpt", "endpoint": "http://127.0.0.1:9"}, root=tmp_path)
    compute = make_compute({"kind": "kaggle", "owner": "o", "slug_prefix": "run-session"}, root=tmp_path)
    assert isinstance(store, HubStore) and store.repo_id == "o/ckpt" and store.repo_type == "dataset"
    assert isinstance(compute, KaggleCompute) and compute.owner == "o"
    assert compute.claims.path == tmp_path / ".wiki" / "kaggle-claims.json"


@pytest.mark.parametrize("maker, kind", [(make_store, "s3"), (make_compute, "slurm"), (make_store, None)])
def test_unknown_kind_is_one_clear_line(tmp_path, maker, kind):
    with pytest.raises(BackendConfigError) as err:
        maker({"kind": kind}, root=tmp_path)
    assert "unknown kind" in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize(
    "maker, kind, module, extra",
    [(make_store, "hub", "huggingface_hub", "hub"), (make_compute, "kaggle", "kagglesdk", "kaggle"),
     (make_compute, "gke", "kubernetes", "gke")],
)
def test_missing_extra_names_the_pip_command(tmp_path, monkeypatch, maker, kind, module, extra):
    monkeypatch.setitem(sys.modules, module, None)  # import now raises ImportError
    with pytest.raises(BackendConfigError, match=rf"pip install 'wikiengine\[{extra}\]'"):
        maker({"kind": kind}, root=tmp_path)


def test_default_kinds_load_no_client_library(tmp_path):
    script = textwrap.dedent(
        f"""
        import sys
        from pathlib import Path
        from wikiengine.executors.local_store import LocalGitStore
        from wikiengine.executors.registry import make_compute, make_store
        root = Path({str(tmp_path)!r})
        LocalGitStore.create(root / "store")
        store = make_store({{"kind": "local-git"}}, root=root)
        compute = make_compute({{"kind": "local-process"}}, root=root)
        assert store.head()
        heavy = [m for m in ("huggingface_hub", "kaggle", "kagglesdk", "kubernetes", "httpx2") if m in sys.modules]
        print(",".join(heavy) or "none")
        """
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "none"
