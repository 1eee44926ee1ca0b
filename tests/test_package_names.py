"""Every import of the repository's training/ and executors/ folders goes through the
``wikiengine`` name they install under (issue 15): a bare ``import training`` works in a
checkout and breaks in the wheel, so it is caught here, in the checkout."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
BARE = {"training", "executors"}


def _bare_imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    shown = path.relative_to(REPO) if path.is_relative_to(REPO) else path
    found = []
    for node in ast.walk(tree):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
            [node.module] if isinstance(node, ast.ImportFrom) and node.module and not node.level else [])
        found += [f"{shown}:{node.lineno}: {n}" for n in names if n.split(".")[0] in BARE]
    return found


def test_no_module_imports_the_folders_by_their_bare_names():
    files = [p for d in ("wikiengine", "training", "executors", "tests", "benchmarks") for p in (REPO / d).rglob("*.py")]
    assert len(files) > 100
    assert [line for p in files for line in _bare_imports(p)] == []


def test_the_detector_finds_a_bare_import(tmp_path):
    """The probe lives outside the checkout: written into tests/, another worker's scan of the
    checkout listed it and then found it gone."""
    probe = tmp_path / "probe_bare_import.py"
    probe.write_text("from training.session import main\nimport executors.gke\n")
    assert [line.split(": ")[1] for line in _bare_imports(probe)] == ["training.session", "executors.gke"]


def test_a_checkout_maps_the_folders_without_touching_sys_path(tmp_path):
    """From a plain checkout on PYTHONPATH (no install: how a relay session's pinned tree
    runs), the two folders import as wikiengine.training and wikiengine.executors."""
    code = ("import wikiengine.training.checkpoint as c, wikiengine.executors.registry as r\n"
            "print(c.__file__); print(r.__file__)\n")
    out = subprocess.run([sys.executable, "-S", "-c", code], cwd=tmp_path, capture_output=True, text=True,
                         env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"}, timeout=60)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.split()
    assert lines[0] == str(REPO / "training" / "checkpoint.py")
    assert lines[1] == str(REPO / "executors" / "registry.py")


@pytest.mark.parametrize("folder", ["tests", "benchmarks", "contrib", "docs", "wiki", "schema"])
def test_no_other_folder_of_a_checkout_becomes_a_subpackage(folder):
    """Only executors/ and training/ are mapped in: ``import wikiengine.tests`` fails in a checkout."""
    code = f"import importlib.util, wikiengine; print(importlib.util.find_spec('wikiengine.{folder}'))"
    out = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True,
                         env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"}, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "None"
