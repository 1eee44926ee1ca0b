"""The CLI's small promises: one meaning of --root everywhere, messages that read right."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from wikiengine._cli import main as cli
from wikiengine.core.text import counted

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def repo(tmp_path):
    root = tmp_path / "repo"
    shutil.copytree(REPO / "wiki", root / "wiki")
    return root


def wiki(cwd: Path, *argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "wikiengine", *argv], cwd=cwd, capture_output=True, text=True,
                          env={"PATH": "/usr/bin:/bin", "HOME": str(cwd)})


@pytest.mark.parametrize("command", [["resolve", "--list"], ["lint", "--no-cache"], ["step", "--dry-run"],
                                     ["unblock", "--reason", "x"], ["clusters", "--list"],
                                     ["exp", "retry", "v001"], ["log", "add", "note", "x"], ["backfill"]])
def test_root_is_exact_in_every_command(repo, tmp_path, command):
    below = repo / "wiki" / "experiments"
    done = wiki(tmp_path, *command, "--root", str(below))
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == (f"error: {below}: --root must be the repository root itself (the directory "
                                   "holding wiki/); leave --root out to search upward from the current directory")


@pytest.mark.parametrize("command", [["resolve", "--list"], ["lint", "--no-cache"]])
def test_without_root_both_search_upward_from_the_current_directory(repo, command):
    done = wiki(repo / "wiki" / "experiments", *command)
    assert done.returncode == 0, done.stderr
    assert wiki(repo.parent, *command, "--root", str(repo)).stdout == done.stdout


def test_root_help_says_the_same_in_every_command():
    import argparse

    def parsers(parser):
        yield parser
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub in action.choices.values():
                    yield from parsers(sub)

    helps = {(p.prog, a.help) for p in parsers(cli.build_parser()) for a in p._actions if "--root" in a.option_strings}
    assert len(helps) >= 10  # resolve, lint, step, unblock, clusters, exp new/file/retry, log add, backfill
    assert len({h for _, h in helps}) == 1 and "exactly" in helps.pop()[1]


def test_a_bad_additive_marker_is_bad_input_not_a_bug(repo):
    done = wiki(repo, "resolve", "gemma4", "tpu", "--additive-marker", "(")
    assert done.returncode == 2
    assert done.stderr.startswith("error: additive-marker '(' is not a usable regular expression")
    assert "internal error" not in done.stderr and done.stderr.count("\n") == 1


def test_an_internal_error_names_a_module_level_exception_class():
    assert cli.exception_name(re.error("x")) == "re.error"
    assert cli.exception_name(KeyError("x")) == "KeyError"


def test_counts_are_pluralised():
    assert [counted(n, "candidate") for n in (0, 1, 2)] == ["0 candidates", "1 candidate", "2 candidates"]
    assert counted(1, "entry", "entries") == "1 entry" and counted(3, "entry", "entries") == "3 entries"


def test_the_pool_report_says_1_candidate(tmp_path):
    from wikiengine.executors.gke.clusters import ClusterFile
    from wikiengine.executors.gke.occupancy import ClusterState, Occupancy, Selection, format_pool

    cluster = ClusterFile(tmp_path / "c.md", "c1", None, "p", "us-east5", None, "ctx", False)
    free = Occupancy(cluster, ClusterState.FREE)
    report = format_pool(Selection(1, [free], [free]), "v5p (2x2x2)")
    assert report.splitlines()[0] == "v5p (2x2x2) cluster pool (1 candidate, 1 selected):"


def test_a_run_whose_store_does_not_exist_is_bad_input_not_a_bug(tmp_path):
    done = wiki(tmp_path, "init", "--memory", "r1")
    assert done.returncode == 0
    import shutil as sh

    sh.rmtree(tmp_path / "store")
    for args in (["init", "-q"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@t.invalid", "commit", "-qm", "x"]):
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True)
    step = wiki(tmp_path, "step", "--dry-run")
    assert step.returncode == 2, step.stderr
    assert step.stderr.startswith("error: ") and "store" in step.stderr and "internal error" not in step.stderr


def test_lint_json_is_format_json(repo):
    assert wiki(repo, "lint", "--json", "--no-cache").stdout == wiki(repo, "lint", "--format", "json", "--no-cache").stdout
    clash = wiki(repo, "lint", "--json", "--format", "sarif")
    assert clash.returncode == 2 and clash.stderr.strip() == "error: --json and --format sarif: choose one"


def test_every_command_has_json():
    import argparse

    def leaves(parser, path=()):
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not subs:
            yield path, parser
        for action in subs:
            for name, sub in action.choices.items():
                yield from leaves(sub, (*path, name))

    missing = [" ".join(path) for path, parser in leaves(cli.build_parser())
               if not any("--json" in a.option_strings for a in parser._actions)]
    assert missing == []
