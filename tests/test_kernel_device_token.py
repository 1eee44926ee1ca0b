"""The local chip's hardware token (`wiki kernel start` and `stub`): the device query imports
torch (about 1.3 s of CPU), so its answer is kept per user for the same CPU, torch override,
torch and verifier (wikiengine/step/kernel/run.py: device_token, _kept)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

PROBE = """
import sys
from pathlib import Path
from wikiengine.core import usercache
from wikiengine.step.kernel import run
token = run.device_token(Path("."), {"kind": "local", "chip": 0})
usercache.save_all()
print(token, "torch" in sys.modules)
"""


def _query(cache: Path, stack: Path | None = None, **env: str) -> tuple[str, bool]:
    """The token a fresh `wiki` process finds, and whether it imported torch to find it;
    ``stack``: a folder put first on its module path."""
    child_env = {k: v for k, v in os.environ.items() if k != "ATEN_CPU_CAPABILITY"}
    child_env.update(XDG_CACHE_HOME=str(cache), **env)
    if stack is not None:
        child_env["PYTHONPATH"] = os.pathsep.join([str(stack), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, env=child_env, timeout=300)
    assert done.returncode == 0, done.stderr
    token, imported = done.stdout.split()
    return token, imported == "True"


@pytest.fixture
def cache(tmp_path) -> Path:
    if not Path("/proc/cpuinfo").is_file():
        pytest.skip("the CPU's features are read from /proc/cpuinfo")
    return tmp_path / "cache"


@pytest.fixture
def light_torch(tmp_path) -> Path:
    """A folder whose ``torch`` answers the capability query as torch does (``ATEN_CPU_CAPABILITY``
    first) without torch's import: the keeping is what these tests check, not torch."""
    stack = tmp_path / "stack"
    (stack / "torch").mkdir(parents=True)
    (stack / "torch" / "__init__.py").write_text(
        "import os, types\n"
        "backends = types.SimpleNamespace(cpu=types.SimpleNamespace(\n"
        "    get_cpu_capability=lambda: os.environ.get('ATEN_CPU_CAPABILITY') or 'AVX2'))\n")
    return stack


def test_the_second_query_on_the_same_machine_is_answered_without_torch(cache):
    token, imported = _query(cache)
    assert imported and token.startswith("cpu-")
    assert _query(cache) == (token, False)


def test_another_torch_cpu_setting_is_queried_again(cache, light_torch):
    assert _query(cache, light_torch) == ("cpu-avx2", True)
    assert _query(cache, light_torch, ATEN_CPU_CAPABILITY="default") == ("cpu-default", True)
    assert _query(cache, light_torch, ATEN_CPU_CAPABILITY="default") == ("cpu-default", False)
    assert _query(cache, light_torch) == ("cpu-avx2", False)


def test_nothing_kept_is_used_where_a_tpu_stack_answers_first(cache, light_torch):
    assert _query(cache, light_torch) == ("cpu-avx2", True)
    (light_torch / "jax").mkdir()
    (light_torch / "jax" / "__init__.py").write_text("raise ImportError('no TPU runtime here')\n")
    assert _query(cache, light_torch) == ("cpu-avx2", True)
    assert _query(cache, light_torch) == ("cpu-avx2", True)
