"""The real-shape corpus of ``benchmarks/gen_wiki.py --real-shape``: deterministic, and
the rules that read links, the index, contradictions and submodule pins find exactly the
violations its manifest plants (the precision and recall of ``benchmarks/precision.py``,
held for those codes)."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path

import pytest

from tests.lint_support import gen_wiki
from tests.rules_wiki import git
from wikiengine.lint import lint
from wikiengine.lint.config import LintConfig

REPO = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.slow  # about 4,500 pages generated (and linted) per test
CODES = ["LNK001", "LNK002", "IDX001", "IDX002", "CON001", "CDB001", "HYP002", "HYP003", "MOD004"]


def _tree_hash(root: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted((root / "wiki").rglob("*.md")):
        digest.update(path.relative_to(root).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def test_real_shape_corpus_is_deterministic_and_shaped(tmp_path, real_shape_corpus):
    """Generated again with the session's seed, the corpus is the session's, to its commit (one
    generation here, not two: the session's corpus is made once for the whole run anyway)."""
    root, planted = real_shape_corpus  # seed 0, committed (tests/conftest.py)
    again = gen_wiki().generate_real(tmp_path / "wiki", seed=0)
    assert again == planted
    assert _tree_hash(tmp_path / "wiki") == _tree_hash(root)
    assert git(tmp_path / "wiki", "rev-parse", "HEAD") == git(root, "rev-parse", "HEAD")  # the same commits, submodule pins included
    pages = [p.relative_to(root).as_posix() for p in (root / "wiki").rglob("*.md")]
    silo = [p for p in pages if p.startswith("wiki/codebases/") and p.count("/") > 2]
    assert 4000 < len(pages) < 5000 and abs(len(silo) - len(pages) / 2) < len(pages) / 10
    assert {e["code"] for e in planted} >= set(CODES)


def test_new_rules_find_exactly_the_planted_violations(real_shape_corpus):
    root, planted = real_shape_corpus  # seed 0, committed: the session's (tests/conftest.py)
    assert json.loads((root / "manifest.json").read_text())["planted"] == planted
    found = lint(root, config=LintConfig(select=CODES), base=None, use_cache=False).findings
    assert Counter((f.code, f.path) for f in found) == Counter((p["code"], p["path"]) for p in planted if p["code"] in CODES)
