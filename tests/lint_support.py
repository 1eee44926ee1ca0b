"""Helpers for the lint engine tests: write a small wiki, run `wiki lint` in-process."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from wikiengine._cli.main import main

PROGRAM_ROOT = "wiki/experiments/program.md"
PROGRAM_MODEL = "wiki/experiments/gemma4_autoresearch_optimization/program.md"
PROGRAM_LANE = "wiki/experiments/gemma4_autoresearch_optimization/tpu/program.md"
NOTE = "wiki/notes/note.md"


def write(root: Path, files: dict[str, str | bytes]) -> Path:
    """Write ``files`` (posix path -> text or bytes) under ``root``; return ``root``."""
    (root / "wiki").mkdir(parents=True, exist_ok=True)
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    return root


def cli(capsys, root: Path, *args: str) -> tuple[int, str, str]:
    """Run ``wiki lint --root ROOT ARGS`` in this process: (exit status, stdout, stderr)."""
    capsys.readouterr()
    status = main(["lint", "--root", str(root), *args])
    out, err = capsys.readouterr()
    return status, out, err


def cli_process(root: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """Run ``wiki lint`` as a separate process (exit codes, no traceback)."""
    return subprocess.run(
        [sys.executable, "-m", "wikiengine", "lint", *args],
        cwd=cwd or root,
        capture_output=True,
        text=True,
        timeout=120,
    )


def codes(result) -> list[str]:
    return [f.code for f in result.findings]


def git(root: Path, *args: str) -> str:
    out = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false", *args],
        cwd=root, capture_output=True, text=True, timeout=60,
    )
    assert out.returncode == 0, out.stderr
    return out.stdout
