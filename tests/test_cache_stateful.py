"""The lint cache's invariant, under random edits: a cached run finds exactly what a run
without the cache finds, after every step.

A Hypothesis state machine edits a generated wiki (``benchmarks/gen_wiki.py``: experiment
pages in lanes, their logs, programs and model pages, some broken), committed to git as
real wikis are, and lints it after each step, cached (twice: the second run takes the
first one's run snapshot; the first takes the last step's, with the files edited since) and then ``use_cache=False``, with the run's configuration (a ``--select``, one rule's options) drawn too. Steps: add,
remove and rename pages; edit a body, the frontmatter, a link (to a page, to a file that
is not there, then is); stage or commit; touch a page without changing it; mark a page
assume-unchanged or skip-worktree (git then vouches for what it did not compare:
lint/changefeed.py must look at those pages itself). An fsmonitor is left to
tests/test_changefeed.py: a hook that says nothing changed makes git's own diffs differ
from one run to the next (EXP007's deletions come and go), cached or not.

Each edit leaves its file with an mtime of its own seconds in the past, and git's index is
made older than the run, as on a wiki edited a while before its lint: otherwise every
page would be "racy" and git's change feed would never be taken (a run started within 2 s
of the index's last write looks at every page).
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from tests.lint_support import generated_git_wiki
from tests.rules_wiki import git
from wikiengine.lint import lint, runner
from wikiengine.lint.config import LintConfig

CONFIGS = {
    "all": lambda: LintConfig(),
    "select EXP": lambda: LintConfig(select=["EXP"]),
    "select LNK,WK": lambda: LintConfig(select=["LNK", "WK"]),
    "ignore LOG,IDX": lambda: LintConfig(ignore=["LOG", "IDX"]),
    "EXP002 sections": lambda: LintConfig(rules={"EXP002": {"sections": ["Setup"]}}),
}


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> Path:
    """A generated wiki of 40 experiment pages, some broken, committed to git."""
    return generated_git_wiki(tmp_path_factory.mktemp("template") / "wiki", 40, seed=5, broken_fraction=0.1)


def _pages(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in (root / "wiki").rglob("*.md"))


def _experiments(root: Path) -> list[str]:
    return [rel for rel in _pages(root) if "/experiments/" in rel and "-v" in rel.rsplit("/", 1)[-1]]


class CachedEqualsUncached(RuleBasedStateMachine):
    """Random edits of a git-tracked wiki; after each, a cached lint == an uncached one."""

    root: Path
    template: Path
    most_vouched = 0  # the most pages git vouched for in one run: the feed was taken
    snapshots_taken = 0  # runs that took the last run's snapshot (lint/snapshot.py)
    edits_on_snapshots = 0  # runs that took it and analysed the files edited since alone
    snapshots_carried = 0  # runs that carried it over to another listing or other files

    @initialize(config=st.sampled_from(sorted(CONFIGS)))
    def copy_wiki(self, config):
        shutil.rmtree(self.root, ignore_errors=True)
        shutil.copytree(self.template, self.root, symlinks=True)
        self.config = config
        self.counter = 0
        self.past = time.time() - 3600  # the next mtime an edit gets: each its own second
        for path in (self.root / "wiki").rglob("*"):
            os.utime(path, (self.past, self.past))

    def _pick(self, data, pages: list[str]) -> str:
        return data.draw(st.sampled_from(pages))

    def _aged(self, path: Path) -> None:
        """Give ``path`` an mtime seconds in the past that no earlier step used."""
        self.past += 1
        os.utime(path, (self.past, self.past))

    @rule(data=st.data())
    def edit_body(self, data):
        rel = self._pick(data, _pages(self.root))
        path = self.root / rel
        text = data.draw(st.sampled_from(["\nEdited.\n", "\n## Extra\n\nmore\n", "\n<!-- wiki-lint: disable LNK001 -->\n"]))
        path.write_text(path.read_text(encoding="utf-8") + text, encoding="utf-8")
        self._aged(path)

    @rule(data=st.data())
    def edit_frontmatter(self, data):
        rel = self._pick(data, _experiments(self.root))
        path = self.root / rel
        old = path.read_text(encoding="utf-8")
        key, value = data.draw(st.sampled_from([
            ("status", "refuted"), ("status", "in_progress"), ("status", "nonsense"), ("created", "not-a-date"),
            ("variant", "ref"), ("model", "nobody"),
        ]))
        lines = old.split("\n")
        for number, line in enumerate(lines[1:], 1):
            if line == "---":
                break
            if line.startswith(f"{key}:"):
                lines[number] = f"{key}: {value}"
        path.write_text("\n".join(lines), encoding="utf-8")
        self._aged(path)

    @rule(data=st.data())
    def add_link(self, data):
        rel = self._pick(data, _pages(self.root))
        target = data.draw(st.sampled_from(["missing.md", "../missing.md", "later.md"]))
        if data.draw(st.booleans()):
            target = self._pick(data, _pages(self.root))
            target = "/".join([".."] * rel.count("/")) + "/" + target
        path = self.root / rel
        path.write_text(path.read_text(encoding="utf-8") + f"\nSee [it]({target}).\n", encoding="utf-8")
        self._aged(path)

    @rule(data=st.data())
    def create_link_target(self, data):
        rel = self._pick(data, _pages(self.root))
        later = (self.root / rel).parent / "later.md"
        later.write_text("# Later\n\nA page.\n", encoding="utf-8")
        self._aged(later)

    @rule(data=st.data())
    def add_page(self, data):
        source = self._pick(data, _experiments(self.root))
        self.counter += 1
        folder, name = source.rsplit("/", 1)
        new = f"{folder}/{name[:11]}v9{self.counter:02d}-added.md"
        shutil.copyfile(self.root / source, self.root / new)
        self._aged(self.root / new)

    @precondition(lambda self: len(_experiments(self.root)) > 5)
    @rule(data=st.data())
    def remove_page(self, data):
        (self.root / self._pick(data, _pages(self.root))).unlink()

    @precondition(lambda self: len(_experiments(self.root)) > 5)
    @rule(data=st.data())
    def rename_page(self, data):
        source = self._pick(data, _experiments(self.root))
        self.counter += 1
        folder, name = source.rsplit("/", 1)
        (self.root / source).rename(self.root / f"{folder}/{name[:11]}v8{self.counter:02d}-moved.md")

    @rule(data=st.data())
    def touch_unchanged(self, data):
        path = self.root / self._pick(data, _pages(self.root))
        path.write_bytes(path.read_bytes())

    @rule(data=st.data(), flag=st.sampled_from(["--assume-unchanged", "--skip-worktree"]))
    def hide_from_git(self, data, flag):
        rel = self._pick(data, _pages(self.root))
        if rel in git(self.root, "ls-files", "-z").split("\0"):
            git(self.root, "update-index", flag, "--", rel)

    @rule(kind=st.sampled_from(["stage", "commit"]))
    def record_in_git(self, kind):
        git(self.root, "add", "-A")
        if kind == "commit":
            git(self.root, "commit", "-q", "--allow-empty", "-m", "step")

    @rule(config=st.sampled_from(sorted(CONFIGS)))
    def change_config(self, config):
        self.config = config

    @invariant()
    def cached_run_finds_what_an_uncached_one_does(self):
        config = CONFIGS[self.config]
        index = self.root / ".git" / "index"
        os.utime(index, (time.time() - 10, time.time() - 10))  # older than the run: git's answer is taken
        result = lint(self.root, None, config())
        again = lint(self.root, None, config())  # nothing changed: it takes the run snapshot the first made
        type(self).most_vouched = max(type(self).most_vouched, result.stats.get("vouched", 0))
        type(self).snapshots_taken += again.stats.get("snapshot", 0)
        type(self).edits_on_snapshots += result.stats.get("snapshot_changed", 0) > 0
        type(self).snapshots_carried += result.stats.get("snapshot_moved", 0)
        cached = [f.render() for f in result.findings]
        uncached = [f.render() for f in lint(self.root, None, config(), use_cache=False).findings]
        assert cached == uncached == [f.render() for f in again.findings]


@pytest.mark.slow
def test_a_cached_lint_equals_an_uncached_one_after_every_random_edit(template, tmp_path, monkeypatch):
    monkeypatch.setattr(runner, "FEED_THRESHOLD", 0)  # git's change feed taken at this size too
    machine = CachedEqualsUncached
    machine.template = template
    machine.root = tmp_path / "wiki"
    case = machine.TestCase
    case.settings = settings(max_examples=8, stateful_step_count=8, deadline=None,
                             suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
    case().runTest()
    assert machine.most_vouched > 0 and machine.snapshots_taken > 0 and machine.edits_on_snapshots > 0
    assert machine.snapshots_carried > 0  # over a commit, a staging, a page added or gone
