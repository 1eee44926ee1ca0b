"""The local chip's hardware token (`wiki kernel start` and `stub`): the device query imports
torch (about 1.3 s of CPU), so its answer is kept per user for the same CPU, torch override,
torch and verifier (wikiengine/step/kernel/run.py: _local_token)."""

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


def _query(cache: Path, **env: str) -> tuple[str, bool]:
    """The token a fresh `wiki` process finds, and whether it imported torch to find it."""
    child_env = {k: v for k, v in os.environ.items() if k != "ATEN_CPU_CAPABILITY"}
    child_env.update(XDG_CACHE_HOME=str(cache), **env)
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, env=child_env, timeout=300)
    assert done.returncode == 0, done.stderr
    token, imported = done.stdout.split()
    return token, imported == "True"


def _queried_by_torch(**env: str) -> str:
    done = subprocess.run([sys.executable, "-c", "from wikiengine.step.kernel.verify import device_token; print(device_token())"],
                          capture_output=True, text=True, env={**os.environ, **env}, timeout=300)
    return done.stdout.strip()


@pytest.fixture
def cache(tmp_path) -> Path:
    if not Path("/proc/cpuinfo").is_file():
        pytest.skip("the CPU's features are read from /proc/cpuinfo")
    return tmp_path / "cache"


def test_the_second_query_on_the_same_machine_is_answered_without_torch(cache):
    first = _query(cache)
    assert first == (_queried_by_torch(), True)
    assert _query(cache) == (first[0], False)


def test_another_torch_cpu_setting_is_queried_again(cache):
    plain, _ = _query(cache)
    assert _query(cache, ATEN_CPU_CAPABILITY="default") == ("cpu-default", True)
    assert _query(cache, ATEN_CPU_CAPABILITY="default") == ("cpu-default", False)
    assert _query(cache) == (plain, False)


def test_nothing_is_kept_where_a_tpu_stack_answers_first(cache, tmp_path):
    stack = tmp_path / "stack"
    (stack / "jax").mkdir(parents=True)
    (stack / "jax" / "__init__.py").write_text("raise ImportError('no TPU runtime here')\n")
    path = os.pathsep.join([str(stack), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    assert _query(cache, PYTHONPATH=path)[1] is True
    assert _query(cache, PYTHONPATH=path)[1] is True
    assert _query(cache)[1] is True  # and what the jax-less machine keeps is its own query
