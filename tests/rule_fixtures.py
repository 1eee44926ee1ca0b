"""Fixture wikis for rule tests in ruff's shape: ``tests/data/rule_wikis/<CODE>/`` holds a
small wiki laid out as real wikis are, and ``expected.txt`` the findings of rule CODE on
it, rendered ``path:line:col: CODE message``, compared whole.

A fixture may have a ``setup.json``:

- ``gitignore``: the text of the wiki's ``.gitignore`` (stored under this name, so that it
  does not apply to this repository);
- ``gitlinks``: submodule path -> pinned commit, recorded in the index as gitlinks (mode
  160000) and in ``.gitmodules``, not checked out;
- ``checkout``: folders of the fixture that are checked-out submodules (each committed
  as its own repository, its head recorded as the gitlink);
- ``untracked``: files left out of git (neither added nor ignored).

With a ``setup.json`` the copy is a git repository with everything else committed.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.rules_wiki import commit_all, git, git_init
from wikiengine.lint import lint
from wikiengine.lint.config import LintConfig

FIXTURES = Path(__file__).resolve().parent / "data" / "rule_wikis"
_META = ("setup.json", "expected.txt")


def build(code: str, root: Path) -> Path:
    """Copy the fixture wiki of ``code`` to ``root`` and set up its git repository."""
    source = FIXTURES / code
    shutil.copytree(source, root, ignore=shutil.ignore_patterns(*_META))
    setup_file = source / "setup.json"
    if not setup_file.is_file():
        return root
    setup = json.loads(setup_file.read_text(encoding="utf-8"))
    if "gitignore" in setup:
        (root / ".gitignore").write_text(setup["gitignore"], encoding="utf-8")
    git_init(root)
    pins = dict(setup.get("gitlinks", {}))
    for folder in setup.get("checkout", []):
        git_init(root / folder)
        pins[folder] = commit_all(root / folder, "submodule sources")
    (root / ".gitmodules").write_text(
        "".join(f'[submodule "{p}"]\n\tpath = {p}\n\turl = https://example.invalid/{p}.git\n' for p in sorted(pins)),
        encoding="utf-8",
    )
    excluded = [f":!{p}" for p in [*setup.get("checkout", []), *setup.get("untracked", [])]]
    git(root, "add", "-A", "--", ".", *excluded)
    for path, sha in sorted(pins.items()):
        git(root, "update-index", "--add", "--cacheinfo", f"160000,{sha},{path}")
    git(root, "commit", "-q", "-m", "fixture")
    return root


def expected(code: str) -> list[str]:
    return (FIXTURES / code / "expected.txt").read_text(encoding="utf-8").splitlines()


def rendered(root: Path, code: str, **options) -> list[str]:
    """The findings of rule ``code`` alone on the wiki at ``root``, rendered and sorted."""
    config = LintConfig(select=[code], rules={code: options} if options else {})
    result = lint(root, config=config, base=None, use_cache=False)
    return sorted(f.render() for f in result.findings if f.code == code)
