"""Fixture wikis for rule tests in ruff's shape: ``tests/data/rule_wikis/<CODE>/`` holds a
small wiki laid out as real wikis are, and ``expected.txt`` the findings of rule CODE on
it, rendered ``path:line:col: CODE message``, compared whole. Every code of the registry
has one (``tests/test_rule_wikis.py``).

A fixture may have a ``setup.json``. With one, the copy is a git repository: its
``commits`` (if any) are made first, in order; then everything else of the fixture is
committed in one last commit. Keys:

- ``gitignore``: the text of the wiki's ``.gitignore`` (stored under this name, so that it
  does not apply to this repository);
- ``gitlinks``: submodule path -> pinned commit, recorded in the index as gitlinks (mode
  160000) and in ``.gitmodules``, not checked out;
- ``checkout``: folders of the fixture that are checked-out submodules (each committed
  as its own repository, its head recorded as the gitlink);
- ``untracked``: fixture files left out of the last commit (neither added nor ignored);
  a file that an earlier commit added is then a change in the work tree;
- ``commits``: the history before the last commit, oldest first. Each is
  ``{"date": ISO time, "message": str, "files": {path: source or null}, "branch": name}``:
  ``source`` is a file of the fixture's ``history/`` folder (which is not copied), null
  deletes ``path``; ``branch`` (optional) makes the commit on that branch (created from
  ``main`` the first time) and returns to ``main``; a commit without files is empty
  (a kernel candidate commit). The date is the author and the committer date;
- ``date``: the author and committer date of the last commit (default: now);
- ``paths``: stored path -> path in the copy, for names this repository cannot hold
  portably (two names that differ only in case, ``aux.md``): the copy is renamed;
- ``deleted``: paths an earlier commit added that are removed before the last commit (the
  removal is committed, or left in the work tree when the path is also ``untracked``);
- ``base``: the revision git-aware rules compare with (``HEAD`` for a pre-commit run,
  ``HEAD~1`` for ``wiki lint --since HEAD~1``); without it they do not run;
- ``now``: the instant the lint runs at (ISO time): rules that age something (EXP011)
  read this clock instead of the wall clock, so that their findings stay the same;
- ``select``: more codes to run beside CODE (their own findings are not compared): WK100
  judges suppressions of the rules that ran, WK101 the baseline entries.

``setup.json`` without ``commits`` keeps the older, one-commit shape.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import shutil
from pathlib import Path

from tests.rules_wiki import commit_all, git, git_init
from wikiengine.lint import lint
from wikiengine.lint.config import LintConfig

FIXTURES = Path(__file__).resolve().parent / "data" / "rule_wikis"
_META = ("setup.json", "expected.txt", "history")


def setup_of(code: str) -> dict:
    path = FIXTURES / code / "setup.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def build(code: str, root: Path) -> Path:
    """Copy the fixture wiki of ``code`` to ``root`` and set up its git repository."""
    source = FIXTURES / code
    setup_file = source / "setup.json"
    if not setup_file.is_file():
        shutil.copytree(source, root, ignore=shutil.ignore_patterns(*_META))
        return root
    setup = setup_of(code)
    root.mkdir(parents=True)
    git_init(root)
    for commit in setup.get("commits", []):
        _commit(root, source, commit)
    shutil.copytree(source, root, ignore=shutil.ignore_patterns(*_META), dirs_exist_ok=True)
    for stored, path in setup.get("paths", {}).items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / stored).rename(root / path)
    if "gitignore" in setup:
        (root / ".gitignore").write_text(setup["gitignore"], encoding="utf-8")
    pins = dict(setup.get("gitlinks", {}))
    for folder in setup.get("checkout", []):
        git_init(root / folder)
        pins[folder] = commit_all(root / folder, "submodule sources")
    if pins:
        (root / ".gitmodules").write_text(
            "".join(f'[submodule "{p}"]\n\tpath = {p}\n\turl = https://example.invalid/{p}.git\n' for p in sorted(pins)),
            encoding="utf-8",
        )
    for path in setup.get("deleted", []):
        (root / path).unlink()
    excluded = [f":!{p}" for p in [*setup.get("checkout", []), *setup.get("untracked", [])]]
    git(root, "add", "-A", "--", ".", *excluded)
    for path, sha in sorted(pins.items()):
        git(root, "update-index", "--add", "--cacheinfo", f"160000,{sha},{path}")
    git(root, "commit", "-q", "--allow-empty", "-m", "fixture", date=setup.get("date"))
    return root


def _commit(root: Path, source: Path, commit: dict) -> None:
    branch = commit.get("branch")
    if branch:
        exists = git(root, "branch", "--list", branch)
        git(root, "checkout", "-q", *([branch] if exists else ["-b", branch]))
    paths = []
    for path, origin in commit.get("files", {}).items():
        target = root / path
        if origin is None:
            target.unlink()
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source / "history" / origin, target)
        paths.append(path)
    if paths:
        git(root, "add", "-A", "--", *paths)
    git(root, "commit", "-q", "--allow-empty", "-m", commit.get("message", "history"), date=commit["date"])
    if branch:
        git(root, "checkout", "-q", "main")


def expected(code: str) -> list[str]:
    return (FIXTURES / code / "expected.txt").read_text(encoding="utf-8").splitlines()


def rendered(root: Path, code: str, **options) -> list[str]:
    """The findings of rule ``code`` alone on the wiki at ``root``, rendered and sorted."""
    config = LintConfig(select=[code], rules={code: options} if options else {})
    result = lint(root, config=config, base=None, use_cache=False)
    return sorted(f.render() for f in result.findings if f.code == code)


def rendered_fixture(root: Path, code: str) -> list[str]:
    """The findings of rule ``code`` on its fixture built at ``root``, as its ``setup.json``
    says to lint it (base revision, clock, codes that run beside it), rendered and sorted."""
    setup = setup_of(code)
    config = LintConfig(select=[code, *setup.get("select", [])])
    with _clock(setup.get("now")):
        result = lint(root, config=config, base=setup.get("base"), use_cache=False)
    return sorted(f.render() for f in result.findings if f.code == code)


@contextlib.contextmanager
def _clock(now: str | None):
    """``datetime.datetime.now()`` answers ``now`` while the block runs (rules read the
    clock through the ``datetime`` module; the lint API takes no clock)."""
    if now is None:
        yield
        return
    fixed = dt.datetime.fromisoformat(now.replace("Z", "+00:00"))
    real = dt.datetime

    class FixedClock(real):
        @classmethod
        def now(cls, tz=None):
            return fixed.astimezone(tz) if tz is not None else fixed.replace(tzinfo=None)

    dt.datetime = FixedClock
    try:
        yield
    finally:
        dt.datetime = real
