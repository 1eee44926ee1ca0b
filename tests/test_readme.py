"""The README and the pages under docs/ work when pasted: every ```bash block runs in an empty
directory, configuration snippets load, links and anchors resolve inside the repository,
benchmark commands parse, and the tables drawn from the code (exit codes, lint rules) match it.

The convention: a fence of ``bash`` (three or more backticks, four when the block holds a
fence of its own) is run, the blocks of one page in order in one empty directory, each in a
fresh ``bash -euo pipefail`` started there; ``sh`` blocks are shown, not run (they install,
take minutes or need a cluster). The README's first block, the install commands, is checked
against ``.ci/run`` instead."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from wikiengine.core.errors import WikiError
from wikiengine.lint.config import load_config
from wikiengine.lint.registry import REGISTRY

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text(encoding="utf-8")
PAGES = {path.relative_to(REPO).as_posix(): path.read_text(encoding="utf-8")
         for path in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]}
FENCE = re.compile(r"^(?P<fence>`{3,})(?P<lang>[a-z]*)\n(?P<body>.*?)^(?P=fence)$", re.S | re.M)


def blocks(text: str, lang: str) -> list[str]:
    return [m["body"] for m in FENCE.finditer(text) if m["lang"] == lang]


TOML_BLOCKS = [block for text in PAGES.values() for block in blocks(text, "toml")]
RUNNABLE = {rel: blocks(text, "bash")[1 if rel == "README.md" else 0:] for rel, text in PAGES.items()}
TABLE_HEADER = re.compile(r"^\[(?!\[)(\s*)", re.M)


def as_pyproject(snippet: str) -> str:
    """The ``[tool.wiki]`` spelling of a wiki.toml snippet (what the README tells a user to do)."""
    return "[tool.wiki]\n" + TABLE_HEADER.sub(r"[\1tool.wiki.", snippet)


def as_wiki_toml(snippet: str) -> str:
    return re.sub(r"^\[tool\.wiki\]\s*$", "", snippet.replace("[tool.wiki.", "["), flags=re.M)


def test_the_readme_has_configuration_snippets():
    assert len(TOML_BLOCKS) >= 1


@pytest.mark.parametrize("snippet", TOML_BLOCKS, ids=[f"toml{i}" for i in range(len(TOML_BLOCKS))])
def test_every_configuration_snippet_loads_as_wiki_toml_and_as_tool_wiki(snippet, tmp_path):
    in_pyproject = "[tool.wiki" in snippet
    wiki_toml = as_wiki_toml(snippet) if in_pyproject else snippet
    pyproject = snippet if in_pyproject else as_pyproject(snippet)
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "wiki.toml").write_text(wiki_toml)
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "pyproject.toml").write_text('[project]\nname = "x"\n\n' + pyproject)
    from_wiki_toml = load_config(tmp_path / "a")
    from_pyproject = load_config(tmp_path / "b")
    assert from_wiki_toml.source == tmp_path / "a" / "wiki.toml"
    assert from_pyproject.source == tmp_path / "b" / "pyproject.toml"
    assert from_wiki_toml.fingerprint() == from_pyproject.fingerprint()
    assert from_wiki_toml.per_file_ignores == from_pyproject.per_file_ignores
    from_wiki_toml.check_codes(sorted(REGISTRY))  # every code it names is a rule


def test_the_pyproject_form_pasted_into_wiki_toml_says_how_to_fix_it(tmp_path):
    (tmp_path / "wiki.toml").write_text('[tool.wiki]\nselect = ["EXP"]\n')
    with pytest.raises(WikiError, match=r"in wiki.toml the keys sit at top level"):
        load_config(tmp_path)


def anchors(text: str) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation but '-' and '_' dropped, spaces as '-'."""
    prose = FENCE.sub("", text)
    return {re.sub(r"[^\w\- ]", "", title.strip().lower()).replace(" ", "-")
            for title in re.findall(r"^#{1,6} (.+)$", prose, re.M)}


@pytest.mark.parametrize("rel", sorted(PAGES))
def test_relative_links_and_anchors_resolve_inside_the_repository(rel):
    text = PAGES[rel]
    links = re.findall(r"\]\(([^)\s]+)\)", FENCE.sub("", text))
    relative = [link for link in links if not re.match(r"[a-z]+:", link)]
    assert relative or rel != "README.md"
    for link in relative:
        path, _, anchor = link.partition("#")
        target = ((REPO / rel).parent / path).resolve() if path else REPO / rel
        assert REPO in (target, *target.parents), f"{rel}: {link} leaves the repository"
        assert target.exists(), f"{rel}: {link} does not exist"
        if anchor and target.suffix == ".md":
            assert anchor in anchors(target.read_text(encoding="utf-8")), f"{rel}: {link}: no such heading"
    assert not re.findall(r"`\.\./[^`]*`", text), "a path outside the repository"


# seed step numbers ("Step 2b"), the kernel fast path's K0-K9 labels, issue numbers; `k9` (a JSON key) and "at step 24"
# (a training step) pass
OUTSIDE_NUMBERING = re.compile(r"(?i:\bseeds?\b.{0,20}\b(?:Steps?|\d{3})\b|\bissue \d+)|\bSteps? \d|\bK\d\b")


@pytest.mark.parametrize("rel", sorted(PAGES))
def test_no_page_cites_numbering_that_lives_outside_the_repository(rel):
    assert not OUTSIDE_NUMBERING.findall(PAGES[rel]), "say what the thing is, not its number elsewhere"


BENCH_LINES = sorted({match.split("#")[0].strip() for text in PAGES.values()
                      for match in re.findall(r"^(python benchmarks/[^`\n]+)|`(python benchmarks/[^`]+)`", text, re.M)
                      for match in match if match})
# Run a script with parse_args patched to stop right after parsing (argparse exits 2 on a bad argv).
PARSE_ONLY = (
    "import argparse, runpy, sys\n"
    "real_parse = argparse.ArgumentParser.parse_args\n"
    "def parse_then_stop(self, args=None, namespace=None):\n"
    "    real_parse(self, args, namespace)\n"
    "    print('parsed', flush=True)\n"
    "    raise SystemExit(0)\n"
    "argparse.ArgumentParser.parse_args = parse_then_stop\n"
    "sys.argv = sys.argv[1:]\n"
    "runpy.run_path(sys.argv[0], run_name='__main__')\n"
)


@pytest.mark.parametrize("line", BENCH_LINES)
def test_benchmark_commands_as_written_parse(line):
    """Each `python benchmarks/...` line of the README, argparse only (exit 2 on a bad argv)."""
    argv = shlex.split(line)[1:]
    done = subprocess.run([sys.executable, "-c", PARSE_ONLY, *argv], cwd=REPO, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0 and "parsed" in done.stdout, done.stderr[-500:]


def test_the_install_commands_are_the_ones_ci_runs():
    """The README's opening block: its test command is, character for character, what .ci/run runs."""
    first = blocks(README, "bash")[0]
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    test_line = next(line for line in first.splitlines() if line.startswith("pip install") and "[test]" in line)
    assert test_line in ci.splitlines()
    assert "pip install -e '.[all]' && wiki demo" in first


def paste(rel: str, scratch: Path) -> list[subprocess.CompletedProcess]:
    """The page's runnable blocks, in order, in one empty directory: each in a fresh bash started there."""
    wiki_bin = Path(sys.executable).with_name("wiki")
    env = {"PATH": f"{wiki_bin.parent}:/usr/bin:/bin", "HOME": str(scratch), "USER": "tester", "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_AUTHOR_NAME": "tester", "GIT_AUTHOR_EMAIL": "tester@example.invalid", "GIT_COMMITTER_NAME": "tester",
           "GIT_COMMITTER_EMAIL": "tester@example.invalid", "XDG_CACHE_HOME": str(scratch / ".cache")}
    if "PYTHONPATH" in os.environ:  # a checkout under test, not the installed copy
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    done = []
    for block in RUNNABLE[rel]:
        run = subprocess.run(["bash", "-c", "set -euo pipefail\n" + block], cwd=scratch, capture_output=True, text=True,
                             env=env, timeout=600)
        assert run.returncode == 0, f"{rel}:\n{block}\n---\n{run.stdout[-2000:]}{run.stderr[-2000:]}"
        done.append(run)
    return done


def test_every_page_with_commands_has_runnable_blocks():
    assert {rel for rel, found in RUNNABLE.items() if found} >= {"README.md", "docs/lanes.md"}


def readme_outcome(out: str, scratch: Path) -> None:
    """The quick start filed v001 supported from the run's own figures; "Start a wiki" built its wiki."""
    lab = scratch / "lab"
    assert "v001: filed supported" in out and "Current best moved" in out
    row = (lab / "wiki/experiments/mlp_autoresearch_optimization/cpu/RESULTS.tsv").read_text().splitlines()[-1]
    assert row.startswith("v001\t") and "lr=0.1" in row
    assert "v001-lr-0p1" in (lab / "wiki/models/mlp-cpu.md").read_text()
    assert "All checks passed" in out
    root = scratch / "my-wiki"
    assert (root / "wiki/experiments/llama3_8B_autoresearch_optimization/tpu/RESULTS.tsv").is_file()
    assert (root / "wiki/kernel_experiments/flash_attention/pallas/program.md").is_file()
    assert (root / "wiki/runs/ounce100m/program.md").is_file() and (root / "memory/STATE.md").is_file()
    assert json.loads((root / ".claude/settings.json").read_text())["hooks"]["Stop"]


def lanes_outcome(out: str, scratch: Path) -> None:
    """The lane walkthrough: the stub, then a verdict capped by what the engine recorded, then the pause."""
    assert "v001: stub" in out and "splash-q-blocks" in out
    assert "v001: filed inconclusive" in out and "capped at inconclusive: no Profile" in out
    assert "paused" in out


OUTCOMES = {"README.md": readme_outcome, "docs/lanes.md": lanes_outcome}


@pytest.mark.slow  # each page's walkthrough end to end: half a minute and more
@pytest.mark.parametrize("rel", sorted(rel for rel, found in RUNNABLE.items() if found))
@pytest.mark.waits
def test_each_page_runs_as_pasted(rel, tmp_path):
    out = "".join(run.stdout for run in paste(rel, tmp_path))
    OUTCOMES.get(rel, lambda *_: None)(out, tmp_path)


def test_the_exit_code_table_is_the_exit_codes():
    from wikiengine.core.errors import ExitCode

    table = README[README.index("| status | meaning |"):]
    rows = [int(code) for code in re.findall(r"^\| (\d+) \|", table.split("\n\n")[0], re.M)]
    assert rows == sorted(code.value for code in ExitCode)


def test_the_rule_table_is_the_registry():
    from wikiengine.lint.docs import readme_with_table

    assert readme_with_table(README) == README, "run `python -m wikiengine.lint.docs` to regenerate the README's rule table"
