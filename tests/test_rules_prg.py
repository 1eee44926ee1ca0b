"""PRG001-PRG004: program.md rules, a failing and a passing cascade for each."""

from __future__ import annotations

import pytest

from tests.lint_support import PROGRAM_LANE, PROGRAM_MODEL, PROGRAM_ROOT, write
from wikiengine.lint import lint
from wikiengine.lint.config import LintConfig

ROOT_TEXT = "# root\n\n## Setup\n\nroot setup\n\n## Branching model — per-experiment forks\n\nforks\n\n## What you CAN do\n\nthings\n"


def run(root, select, paths=None, **config):
    return lint(root, paths, LintConfig(select=select, **config), base=None, use_cache=False)


def found(result):
    return [(f.path, f.line, f.code) for f in result.findings]


def only_finding(root, code: str, path: str, line: int) -> str:
    """Rule ``code`` finds one thing, at ``path``:``line``: its message."""
    result = run(root, [code])
    assert found(result) == [(path, line, code)]
    return result.findings[0].message


def test_prg001_duplicate_titles_in_one_program(tmp_path):
    write(tmp_path, {PROGRAM_ROOT: "# r\n\n## Setup\n\na\n\n##   setup \n\nb\n"})
    assert "first on line 3" in only_finding(tmp_path, "PRG001", PROGRAM_ROOT, 7)


def test_prg001_passes_distinct_titles(tmp_path):
    write(tmp_path, {PROGRAM_ROOT: "# r\n\n## Setup\n\na\n\n## Setup notes\n\nb\n\n```\n## Setup\n```\n"})
    assert found(run(tmp_path, ["PRG001"])) == []


CONFIG = "## Config\n\n```yaml\n{}\n```\n"


def test_prg002_resolved_config_breaks_its_schema(tmp_path):
    write(tmp_path, {
        PROGRAM_ROOT: "# r\n\n" + CONFIG.format("wake_interval_s: 600"),
        PROGRAM_MODEL: "# m\n\n" + CONFIG.format("parallelism: 1\nwake_interval_s: 30"),
        PROGRAM_LANE: "# l\n\n## Setup\n\nx\n",
    })
    assert "wake_interval_s" in only_finding(tmp_path, "PRG002", PROGRAM_MODEL, 7)


def test_prg002_reports_an_unknown_key_and_bad_yaml(tmp_path):
    write(tmp_path, {
        PROGRAM_ROOT: "# r\n\n" + CONFIG.format("wake_interval_s: 600\nsurprise: 1"),
        PROGRAM_MODEL: "# m\n\n" + CONFIG.format("parallelism: [1"),
    })
    result = run(tmp_path, ["PRG002"])
    assert [(f.path, f.line, f.code) for f in result.findings] == [(PROGRAM_MODEL, 7, "PRG002"), (PROGRAM_ROOT, 7, "PRG002")]
    assert "invalid YAML" in result.findings[0].message and "surprise" in result.findings[1].message


def test_prg002_passes_a_valid_config(tmp_path):
    write(tmp_path, {
        PROGRAM_ROOT: "# r\n\n" + CONFIG.format("wake_interval_s: 600"),
        PROGRAM_LANE: "# l\n\n" + CONFIG.format("parallelism: 2"),
    })
    assert found(run(tmp_path, ["PRG002"])) == []


def test_prg003_additive_section_led_by_a_parent_title(tmp_path):
    write(tmp_path, {
        PROGRAM_ROOT: ROOT_TEXT,
        PROGRAM_MODEL: "# m\n\n## What you CAN do — Gemma4-specific CAN additions\n\nmore\n",
    })
    assert "What you CAN do" in only_finding(tmp_path, "PRG003", PROGRAM_MODEL, 3)


def test_prg003_same_title_with_different_additivity(tmp_path):
    # a case-sensitive marker: the parent's title is additive, the child's is not
    write(tmp_path, {
        PROGRAM_ROOT: "# r\n\n## Gemma4-specific CAN additions\n\na\n",
        PROGRAM_MODEL: "# m\n\n## Gemma4-specific can additions\n\nb\n",
    })
    result = run(tmp_path, ["PRG003"], additive_marker=r"-specific CAN additions$")
    assert found(result) == [(PROGRAM_MODEL, 3, "PRG003")]


def test_prg003_passes_additive_sections_that_concatenate(tmp_path):
    write(tmp_path, {
        PROGRAM_ROOT: ROOT_TEXT,
        PROGRAM_MODEL: "# m\n\n## Gemma4-specific CAN additions\n\nmore\n",
        PROGRAM_LANE: "# l\n\n## Gemma4-specific CAN additions\n\nlane more\n",
    })
    assert found(run(tmp_path, ["PRG003"])) == []


def test_prg004_leading_title_without_suffix(tmp_path):
    write(tmp_path, {PROGRAM_ROOT: ROOT_TEXT, PROGRAM_LANE: "# l\n\n## Branching model — branch naming\n\nnames\n"})
    assert "Branching model — per-experiment forks" in only_finding(tmp_path, "PRG004", PROGRAM_LANE, 3)


def test_prg004_bare_title_under_a_suffixed_parent_and_only_targets(tmp_path):
    write(tmp_path, {PROGRAM_ROOT: ROOT_TEXT, PROGRAM_MODEL: "# m\n\n## Branching model\n\nmine\n"})
    assert found(run(tmp_path, ["PRG004"])) == [(PROGRAM_MODEL, 3, "PRG004")]
    assert found(run(tmp_path, ["PRG004"], paths=[PROGRAM_ROOT])) == []


def test_prg004_passes_an_exact_replacement(tmp_path):
    write(tmp_path, {
        PROGRAM_ROOT: ROOT_TEXT,
        PROGRAM_LANE: "# l\n\n## Branching model — per-experiment forks\n\nreplaced\n\n## Setup\n\nlane\n",
    })
    assert found(run(tmp_path, ["PRG004"])) == []


def test_prg002_is_reported_when_wiki_lint_runs_from_a_subdirectory(tmp_path):
    """Cascade errors name paths relative to the root; they must not be resolved against
    the current directory (``cd wiki && wiki lint`` used to say "All checks passed")."""
    from tests.lint_support import cli_process

    write(tmp_path, {
        PROGRAM_ROOT: "# r\n\n" + CONFIG.format("wake_interval_s: 600"),
        PROGRAM_MODEL: "# m\n\n" + CONFIG.format("wake_interval_s: 30"),
    })
    for cwd in (tmp_path / "wiki", tmp_path / "wiki" / "experiments"):
        proc = cli_process(tmp_path, "--select", "PRG002", "--no-cache", cwd=cwd)
        assert proc.returncode == 1, proc.stdout + proc.stderr
        assert f"{PROGRAM_MODEL}:6:1: PRG002 config block: wake_interval_s" in proc.stdout


def test_prg002_path_run_checks_the_programs_at_or_below_a_target_program(tmp_path):
    write(tmp_path, {
        PROGRAM_ROOT: "# r\n\n" + CONFIG.format("wake_interval_s: 600\nsurprise: 1"),
        PROGRAM_MODEL: "# m\n\n" + CONFIG.format("wake_interval_s: 30"),
        PROGRAM_LANE: "# l\n\n## Setup\n\nx\n",
    })
    assert found(run(tmp_path, ["PRG002"], [PROGRAM_ROOT])) == [(PROGRAM_ROOT, 7, "PRG002")]
    assert found(run(tmp_path, ["PRG002"], [PROGRAM_MODEL])) == [(PROGRAM_MODEL, 6, "PRG002")]
    assert found(run(tmp_path, ["PRG002"], [PROGRAM_LANE, "wiki/notes/none.md"])) == []


@pytest.mark.parametrize("child", [
    "## Branching model — inherits the root pattern\n\nlane branches are named exp/<vid>\n",
    "## Branching model — lane naming\n\nInherits the root's per-experiment forks; names them exp/<vid>.\n",
])
def test_prg004_a_child_that_says_it_inherits_is_not_shadowing(tmp_path, child):
    write(tmp_path, {PROGRAM_ROOT: ROOT_TEXT, PROGRAM_LANE: "# l\n\n" + child})
    assert found(run(tmp_path, ["PRG004"])) == []
