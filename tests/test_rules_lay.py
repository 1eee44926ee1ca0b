"""LAY001-LAY002: a wiki that resolve and lint cannot see is a finding, not "All checks passed"."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.lint_support import PROGRAM_LANE, PROGRAM_MODEL, PROGRAM_ROOT, write
from wikiengine.lint import lint
from wikiengine.lint.config import LintConfig

PAGE = "---\ntitle: remat\ntype: experiment\nstatus: in_progress\n---\n\n# remat\n"


def run(root, select, paths=None):
    return lint(root, paths, LintConfig(select=select), base=None, use_cache=False)


def found(result):
    return [(f.path, f.line, f.code) for f in result.findings]


def test_lay001_names_a_misnamed_model_folder_once_on_its_program(tmp_path):
    write(tmp_path, {
        PROGRAM_ROOT: "# r\n",
        "wiki/experiments/gemma4/program.md": "# m\n",
        "wiki/experiments/gemma4/tpu/experiments/2026-06-01-v001-remat.md": PAGE,
        "wiki/experiments/llama_autoresearch_optimisation/tpu/2026-06-01-v001-remat.md": PAGE,
        PROGRAM_MODEL: "# m\n",
        "wiki/experiments/.scratch/notes.md": "# hidden folders are not model folders\n",
    })
    result = run(tmp_path, ["LAY001"])
    assert found(result) == [
        ("wiki/experiments/gemma4/program.md", 1, "LAY001"),
        ("wiki/experiments/llama_autoresearch_optimisation/tpu/2026-06-01-v001-remat.md", 1, "LAY001"),
    ]
    assert "rename it gemma4_autoresearch_optimization/" in result.findings[0].message
    assert "rename it llama_autoresearch_optimization/" in result.findings[1].message


def test_lay001_in_a_path_run_looks_only_at_the_folders_of_its_targets(tmp_path):
    bad = "wiki/experiments/gemma4/program.md"
    write(tmp_path, {PROGRAM_ROOT: "# r\n", bad: "# m\n", "wiki/experiments/gemma4/tpu/2026-06-01-v001-remat.md": PAGE,
                     PROGRAM_MODEL: "# m\n", PROGRAM_LANE: "# l\n"})
    assert found(run(tmp_path, ["LAY001"], [bad])) == [(bad, 1, "LAY001")]
    # the folder's reported page is its program, also when a target is another page of the folder
    assert found(run(tmp_path, ["LAY001"], ["wiki/experiments/gemma4/tpu/2026-06-01-v001-remat.md"])) == []
    assert found(run(tmp_path, ["LAY001"], [PROGRAM_LANE])) == []


def test_lay001_passes_the_naming_rule_and_files_at_the_area_root(tmp_path):
    write(tmp_path, {PROGRAM_ROOT: "# r\n", PROGRAM_MODEL: "# m\n", PROGRAM_LANE: "# l\n",
                     "wiki/experiments/README.md": "# about\n"})
    assert found(run(tmp_path, ["LAY"])) == []


def test_lay002_a_missing_root_program_is_reported_on_the_programs_that_need_it(tmp_path):
    write(tmp_path, {PROGRAM_MODEL: "# m\n", PROGRAM_LANE: "# l\n",
                     "wiki/kernel_experiments/flash/pallas/2026-06-01-v001-tile.md": PAGE,
                     "wiki/runs/program.md": "# runs\n", "wiki/runs/tiny/program.md": "# tiny\n"})
    result = run(tmp_path, ["LAY002"])
    assert found(result) == [
        (PROGRAM_MODEL, 1, "LAY002"),
        (PROGRAM_LANE, 1, "LAY002"),
        ("wiki/kernel_experiments/flash/pallas/2026-06-01-v001-tile.md", 1, "LAY002"),
    ]
    assert result.findings[0].message.startswith("wiki/experiments/program.md is missing")


def test_lay002_in_a_path_run_reports_on_the_named_program(tmp_path):
    write(tmp_path, {PROGRAM_MODEL: "# m\n", PROGRAM_LANE: "# l\n"})
    assert found(run(tmp_path, ["LAY002"], [PROGRAM_LANE])) == [(PROGRAM_LANE, 1, "LAY002")]


def test_whole_wiki_lint_no_longer_passes_a_wiki_it_cannot_see(tmp_path):
    write(tmp_path, {"wiki/experiments/gemma4/tpu/experiments/2026-06-01-v001-remat.md": PAGE})
    done = subprocess.run([sys.executable, "-m", "wikiengine", "lint", "--no-cache"], cwd=tmp_path,
                          capture_output=True, text=True)
    assert done.returncode == 1
    assert {line.split()[1] for line in done.stdout.splitlines() if ": LAY" in line} == {"LAY001", "LAY002"}


def test_resolve_says_why_a_model_was_not_found(tmp_path):
    write(tmp_path, {PROGRAM_ROOT: "# r\n", "wiki/experiments/gemma4/program.md": "# m\n"})
    wiki = [sys.executable, "-m", "wikiengine", "resolve"]
    done = subprocess.run([*wiki, "gemma4"], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 2
    assert done.stderr.strip() == (
        "error: no model 'gemma4' under wiki/experiments (models: none); wiki/experiments/gemma4 is ignored: "
        "a model folder is named <model>_autoresearch_optimization (rename it gemma4_autoresearch_optimization)")
    listing = subprocess.run([*wiki, "--list"], cwd=tmp_path, capture_output=True, text=True).stdout
    assert "ignored under wiki/experiments (not named <model>_autoresearch_optimization): gemma4" in listing
    data = json.loads(subprocess.run([*wiki, "--list", "--json"], cwd=tmp_path, capture_output=True, text=True).stdout)
    assert data["ignored_folders"] == ["gemma4"] and data["models"] == {}


def test_lay003_passes_a_lane_with_its_log_without_listing_its_pages(tmp_path, monkeypatch):
    """A writer's run lints a few files; LAY003 looks for lanes with pages and no log.md.
    A lane that has its log.md is passed by before its pages are listed (on 10,000 pages,
    listing every lane's pages cost a writer more than the rest of its rules)."""
    from wikiengine.lint.rules import wiki_layout

    logged, bare = "wiki/experiments/gemma4_autoresearch_optimization/tpu", "wiki/experiments/gemma4_autoresearch_optimization/gpu"
    write(tmp_path, {PROGRAM_ROOT: "# r\n", PROGRAM_MODEL: "# m\n", f"{logged}/log.md": "# log\n\n## [2026-05-01] start | a session\n",
                     f"{logged}/experiments/2026-06-01-v001-remat.md": PAGE, f"{bare}/2026-06-01-v001-remat.md": PAGE})
    listed = []
    real = wiki_layout.lane_files
    monkeypatch.setattr(wiki_layout, "lane_files", lambda ctx, key: listed.append(key[1]) or real(ctx, key))
    result = lint(tmp_path, None, LintConfig(select=["LAY003"]), base=None, use_cache=False)
    assert [(f.path, f.code) for f in result.findings] == [(f"{bare}/2026-06-01-v001-remat.md", "LAY003")]
    assert listed == ["gpu"]


def test_lay003_in_a_path_run_judges_the_lanes_of_its_targets_only(tmp_path, monkeypatch):
    """A PATH run reports only on its targets, and LAY003's finding lands on a lane's program or
    a page of it: a writer's run in a logged lane reads no lane log for the split date, while a
    run over the bare lane's page still reports it."""
    from wikiengine.lint.rules import wiki_layout

    logged, bare = "wiki/experiments/gemma4_autoresearch_optimization/tpu", "wiki/experiments/gemma4_autoresearch_optimization/gpu"
    write(tmp_path, {PROGRAM_ROOT: "# r\n", PROGRAM_MODEL: "# m\n", f"{logged}/log.md": "# log\n\n## [2026-05-01] start | a session\n",
                     f"{logged}/experiments/2026-06-01-v001-remat.md": PAGE, f"{bare}/experiments/2026-06-01-v001-remat.md": PAGE})
    split_asked = []
    real = wiki_layout.log_split_date
    monkeypatch.setattr(wiki_layout, "log_split_date", lambda ctx: split_asked.append(1) or real(ctx))
    config = LintConfig(select=["LAY003"])
    assert lint(tmp_path, [f"{logged}/experiments/2026-06-01-v001-remat.md"], config, base=None, use_cache=False).findings == []
    assert split_asked == []
    found = lint(tmp_path, [f"{bare}/experiments/2026-06-01-v001-remat.md"], config, base=None, use_cache=False).findings
    assert [(f.path, f.code) for f in found] == [(f"{bare}/experiments/2026-06-01-v001-remat.md", "LAY003")]
    assert split_asked == [1]
