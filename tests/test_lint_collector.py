"""A run pauses the cycle collector and frees what it held itself (runner._collector_paused,
LintContext.close): the collector is as it was after the run, and the run leaves (next to)
no cyclic garbage behind for it, in the serial pass and in the forked workers' pass."""

from __future__ import annotations

import gc

import pytest

from tests.lint_support import write
from wikiengine.lint import lint, runner

PAGE = "---\ntitle: Note {n}\ntype: concept\ntags: [a]\ncreated: 2026-01-01\nupdated: 2026-01-02\n---\n\n## Body\n\nSee [the next](note{m}.md) and [a gone page](gone.md).\n"


def _wiki(root, pages: int):
    files = {f"wiki/concepts/note{n}.md": PAGE.format(n=n, m=(n + 1) % pages) for n in range(pages)}
    files["wiki/index.md"] = "# Index\n\n" + "".join(f"- [n{n}](concepts/note{n}.md)\n" for n in range(pages))
    return write(root, files)


@pytest.mark.parametrize("pages", [5, runner.POOL_THRESHOLD + 10])
def test_a_run_restores_the_collector_and_leaves_no_cycles(tmp_path, pages):
    root = _wiki(tmp_path, pages)
    collecting = gc.isenabled()
    try:
        gc.enable()
        assert any(f.code == "LNK001" for f in lint(root).findings)
        assert gc.isenabled()
        gc.disable()  # no collection between the run and the count below
        gc.collect()
        lint(root, use_cache=False)
        assert not gc.isenabled()
        assert gc.collect() < 50  # hundreds when the context is left to the collector
    finally:
        (gc.enable if collecting else gc.disable)()
