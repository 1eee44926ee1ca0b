"""Every rule on its fixture wiki (``tests/rule_fixtures.py``), in ruff's shape: the
findings of that one rule, rendered ``path:line:col: CODE message``, compared whole with
the fixture's ``expected.txt``. A rule without a fixture fails here."""

from __future__ import annotations

import pytest

from tests.rule_fixtures import FIXTURES, build, expected, rendered_fixture
from wikiengine.lint.registry import REGISTRY

CODES = sorted(REGISTRY)


def test_every_rule_has_a_fixture_wiki_and_every_fixture_a_rule():
    folders = sorted(p.name for p in FIXTURES.iterdir() if p.is_dir())
    assert [c for c in CODES if c not in folders] == [], "rules without a fixture wiki"
    assert [f for f in folders if f not in REGISTRY] == [], "fixture wikis of no rule"


@pytest.mark.parametrize("code", CODES)
def test_fixture_wiki_gives_exactly_the_expected_findings(tmp_path, code):
    want = expected(code)
    assert want, f"{code}: expected.txt holds no finding"
    root = build(code, tmp_path / "wiki")
    assert rendered_fixture(root, code) == want
