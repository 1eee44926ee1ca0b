"""Helpers for the lint engine tests: write a small wiki, run `wiki lint` in-process, fail a hang."""

from __future__ import annotations

import importlib.util
import json
import signal
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

from wikiengine._cli.main import main
from wikiengine.core import schemas, validators

REPO = Path(__file__).resolve().parent.parent
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


def gen_wiki():
    """``benchmarks/gen_wiki.py``, the generator of test and benchmark wikis, as a module."""
    spec = importlib.util.spec_from_file_location("gen_wiki", REPO / "benchmarks" / "gen_wiki.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("gen_wiki", module)
    spec.loader.exec_module(module)
    return module


def generated_git_wiki(root: Path, pages: int, seed: int, broken_fraction: float = 0.0) -> Path:
    """A :func:`gen_wiki` wiki of ``pages`` experiment pages at ``root``, committed to git
    (the lint cache ignored), as real wikis are."""
    from tests.rules_wiki import commit_all, git_init

    gen_wiki().generate(root, pages, seed=seed, broken_fraction=broken_fraction)
    (root / ".gitignore").write_text(".wiki_cache/\n", encoding="utf-8")
    git_init(root)
    commit_all(root, "corpus")
    return root


class Hung(Exception):
    pass


@contextmanager
def hang_guard(seconds: int = 60):
    """Fail (instead of hanging the suite) when the block does not finish within ``seconds``."""

    def expire(*_):
        raise Hung(f"did not finish within {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def use_schema(monkeypatch, tmp_path: Path, kind: str, schema: dict) -> None:
    """Validate the pages of ``kind`` against ``schema`` (draft 7), not the repository's own schemas."""
    directory = tmp_path / "schemas"
    directory.mkdir()
    (directory / f"{kind}.schema.json").write_text(json.dumps({"$schema": "http://json-schema.org/draft-07/schema#",
                                                               **schema}))
    monkeypatch.setattr(schemas, "schema_dir", lambda: directory)
    schemas.load_schema.cache_clear()
    schemas._validator.cache_clear()
    monkeypatch.setattr(validators, "_COMPILED", {})
