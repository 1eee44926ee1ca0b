"""The README works when pasted: configuration snippets load, links stay in the repository,
benchmark commands parse."""

from __future__ import annotations

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
TOML_BLOCKS = re.findall(r"^```toml\n(.*?)^```", README, re.S | re.M)
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


def test_relative_links_point_inside_the_repository():
    links = re.findall(r"\]\(([^)\s]+)\)", README)
    relative = [link for link in links if not re.match(r"[a-z]+:", link) and not link.startswith("#")]
    assert relative
    for link in relative:
        target = (REPO / link.split("#")[0]).resolve()
        assert REPO in (target, *target.parents), f"{link} leaves the repository"
        assert target.exists(), f"{link} does not exist"
    assert not re.findall(r"`\.\./[^`]*`", README), "a path outside the repository"


BENCH_LINES = [line.split("#")[0].strip() for line in README.splitlines() if line.startswith("python benchmarks/")]
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


def section(title: str) -> str:
    start = README.index(f"\n## {title}\n")
    end = README.find("\n## ", start + 1)
    return README[start:end]


def test_start_a_wiki_runs_as_pasted(tmp_path):
    """The "Start a wiki" commands, pasted into bash with `set -e`, in an empty directory."""
    block = re.search(r"```bash\n(.*?)```", section("Start a wiki"), re.S).group(1)
    wiki_bin = Path(sys.executable).with_name("wiki")
    env = {"PATH": f"{wiki_bin.parent}:/usr/bin:/bin", "HOME": str(tmp_path), "USER": "tester", "GIT_CONFIG_NOSYSTEM": "1"}
    done = subprocess.run(["bash", "-c", "set -euo pipefail\n" + block], cwd=tmp_path, capture_output=True, text=True,
                          env=env, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "All checks passed" in done.stdout
    root = tmp_path / "my-wiki"
    assert (root / "wiki/experiments/llama3_8B_autoresearch_optimization/tpu/RESULTS.tsv").is_file()
    assert (root / "wiki/kernel_experiments/flash_attention/pallas/program.md").is_file()
    assert (root / "wiki/runs/ounce100m/program.md").is_file() and (root / "memory/STATE.md").is_file()
