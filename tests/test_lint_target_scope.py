"""Cross-file rules work from the target pages (``ctx.target_pages``) and their lanes, so
that ``wiki lint PATH...`` (pre-commit) does not read the whole wiki; a cross-file
finding on a target must still be found, and a PATH run must not leave target-only
findings in the cache for a later whole-wiki run."""

from __future__ import annotations

import pytest

from tests.rules_wiki import LANE, MODEL_PAGE, OTHER_LANE, experiment_page, write
from wikiengine.lint import lint
from wikiengine.lint.config import LintConfig

OLD = f"{LANE}/2026-06-02-v042-splash.md"
NEW = f"{LANE}/experiments/2026-06-09-v042-remat.md"
LOG = f"{LANE}/log.md"
OTHER_LOG = f"{OTHER_LANE}/log.md"

# One wiki with a finding of every cross-file rule that reports on the page it examines.
CROSS_FILE_WIKI = {
    OLD: experiment_page(),
    NEW: experiment_page(created="2026-06-09"),
    LOG: "## [2026-06-09] loop-iteration | v077-missing: supported\n\n## [2026-06-02] loop-iteration | v042-splash: supported\n",
    f"{LANE}/2026-06-03-v043-unlogged.md": experiment_page(created="2026-06-03", variant="2b-8k"),
    f"{OTHER_LANE}/2026-06-04-v044-nolog.md": experiment_page(created="2026-06-04"),
    "wiki/models/gemma4-tpu.md": MODEL_PAGE.format(best="v099"),
    "wiki/hypotheses/splash.md": "---\nmodel: gemma4\nlane: tpu\nexperiments: [v042, v098]\n---\n# Splash\n",
}


def _render(findings) -> list[str]:
    return [f.render() for f in findings]


def test_exp008_new_page_duplicating_an_unchanged_page_is_found_in_a_path_run(tmp_path):
    write(tmp_path, {OLD: experiment_page()})
    config = LintConfig(select=["EXP008"])
    assert lint(tmp_path, config=config, base=None).findings == []  # warm the cache on the clean wiki
    write(tmp_path, {NEW: experiment_page(created="2026-06-09")})
    (found,) = lint(tmp_path, [NEW], config=config, base=None).findings
    assert found.path == NEW and OLD in found.message and "v042" in found.message


def test_exp013_new_verdict_page_missing_from_an_unchanged_log_is_found_in_a_path_run(tmp_path):
    write(tmp_path, {OLD: experiment_page(), LOG: "## [2026-06-02] loop-iteration | v042-splash: supported\n"})
    config = LintConfig(select=["EXP013"])
    assert lint(tmp_path, config=config, base=None).findings == []
    late = f"{LANE}/2026-06-10-v050-late.md"
    write(tmp_path, {late: experiment_page(created="2026-06-10")})
    (found,) = lint(tmp_path, [late], config=config, base=None).findings
    assert found.path == late and "v050" in found.message


@pytest.mark.parametrize("warm", [False, True], ids=["cold", "warm"])
def test_a_path_run_finds_what_the_whole_wiki_run_finds_on_each_file(tmp_path, warm):
    write(tmp_path, CROSS_FILE_WIKI)
    whole = lint(tmp_path, base=None, use_cache=False).findings
    cross_codes = {"EXP008", "EXP010", "EXP013", "HYP001", "LOG005", "MOD001"}
    assert cross_codes <= {f.code for f in whole}, _render(whole)
    if warm:
        lint(tmp_path, base=None)
    for rel in sorted({f.path for f in whole}):
        alone = lint(tmp_path, [rel], base=None, use_cache=warm).findings
        assert _render(alone) == _render(f for f in whole if f.path == rel)


def test_a_path_run_leaves_no_partial_cross_file_findings_in_the_cache(tmp_path):
    write(tmp_path, {OLD: experiment_page(), NEW: experiment_page(created="2026-06-09")})
    config = LintConfig(select=["EXP008"])
    assert [f.path for f in lint(tmp_path, [NEW], config=config, base=None).findings] == [NEW]
    warm = lint(tmp_path, config=config, base=None).findings
    assert _render(warm) == _render(lint(tmp_path, config=config, base=None, use_cache=False).findings)
    assert [f.path for f in warm] == [NEW]  # the later page of the pair, not the earlier one
