"""`wiki lint` through the real pre-commit framework, in a temporary git repository:
a bad page is refused at commit, a good one passes."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parent.parent
WIKI = Path(sys.executable).with_name("wiki")
PRE_COMMIT = Path(sys.executable).with_name("pre-commit")


def _hook(path: Path, hook_id: str) -> dict:
    data = yaml.safe_load(path.read_text())
    hooks = data if isinstance(data, list) else [h for repo in data["repos"] for h in repo["hooks"]]
    return next(h for h in hooks if h["id"] == hook_id)


def test_own_config_uses_the_published_hook():
    published = _hook(REPO / ".pre-commit-hooks.yaml", "wiki-lint")
    own = _hook(REPO / ".pre-commit-config.yaml", "wiki-lint")
    for key in ("entry", "files", "require_serial"):
        assert own[key] == published[key], key


def _git(cwd: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}
    proc = subprocess.run(["git", "-c", "commit.gpgsign=false", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300, env=env)
    if check:
        assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


@pytest.fixture
def wiki_repo(tmp_path, monkeypatch):
    if not PRE_COMMIT.exists() or not WIKI.exists():
        pytest.skip("pre-commit or wiki is not installed beside this Python")
    monkeypatch.setenv("PRE_COMMIT_HOME", str(tmp_path / "pre-commit-home"))
    monkeypatch.setenv("PATH", f"{WIKI.parent}{os.pathsep}{os.environ['PATH']}")
    repo = tmp_path / "repo"
    (repo / "wiki" / "notes").mkdir(parents=True)
    (repo / "wiki" / "notes" / "index.md").write_text("# Notes\n\nSee [the setup](setup.md).\n")
    (repo / "wiki" / "notes" / "setup.md").write_text("# Setup\n")
    (repo / "README.md").write_text("not linted: outside wiki/\n\n[nowhere](nowhere.md)\n")
    _git(repo, "init", "-q")
    return repo


def _install(repo: Path, hook: dict) -> None:
    (repo / ".pre-commit-config.yaml").write_text(yaml.safe_dump({"repos": [{"repo": "local", "hooks": [hook]}]}))
    _git(repo, "add", ".")
    proc = subprocess.run([str(PRE_COMMIT), "install"], cwd=repo, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr


def _local_hook() -> dict:
    """The published hook, run with the wiki command of this environment."""
    hook = dict(_hook(REPO / ".pre-commit-hooks.yaml", "wiki-lint"))
    hook.update(language="system", entry=f"{WIKI} lint")
    hook.pop("minimum_pre_commit_version", None)
    return hook


def test_precommit_refuses_a_bad_page_and_accepts_a_good_one(wiki_repo):
    _install(wiki_repo, _local_hook())
    assert _git(wiki_repo, "commit", "-q", "-m", "a good wiki").returncode == 0

    bad = wiki_repo / "wiki" / "notes" / "bad.md"
    bad.write_text("---\nstatus: a\nstatus: b\n---\n# Bad\n\n[gone](gone.md)\n")
    _git(wiki_repo, "add", "wiki/notes/bad.md")
    refused = _git(wiki_repo, "commit", "-m", "a bad page", check=False)
    assert refused.returncode != 0
    output = refused.stdout + refused.stderr
    assert "wiki/notes/bad.md:3:1: WK001" in output and "duplicate key 'status'" in output
    assert len(_git(wiki_repo, "log", "--oneline").stdout.splitlines()) == 1

    bad.write_text("---\nstatus: a\n---\n# Fixed\n\n[back](index.md)\n")
    _git(wiki_repo, "add", "wiki/notes/bad.md")
    assert _git(wiki_repo, "commit", "-q", "-m", "the page, fixed").returncode == 0
    assert len(_git(wiki_repo, "log", "--oneline").stdout.splitlines()) == 2


def test_precommit_passes_only_staged_pages_but_rules_see_the_wiki(wiki_repo):
    _install(wiki_repo, _local_hook())
    _git(wiki_repo, "commit", "-q", "-m", "start")
    # an unstaged broken page elsewhere does not block an unrelated commit
    (wiki_repo / "wiki" / "notes" / "draft.md").write_text("# Draft\n\n[gone](gone.md)\n")
    (wiki_repo / "wiki" / "notes" / "new.md").write_text("# New\n\n[draft](draft.md)\n")
    _git(wiki_repo, "add", "wiki/notes/new.md")
    assert _git(wiki_repo, "commit", "-q", "-m", "new page").returncode == 0


@pytest.mark.skipif(os.environ.get("WIKI_TEST_PRECOMMIT_INSTALL") != "1",
                    reason="installs wikiengine from PyPI-resolved dependencies; set WIKI_TEST_PRECOMMIT_INSTALL=1")
def test_published_hook_installs_and_runs_through_try_repo(wiki_repo, tmp_path):
    """pre-commit builds its own environment from .pre-commit-hooks.yaml (language: python)."""
    clone = tmp_path / "engine"
    shutil.copytree(REPO, clone, ignore=shutil.ignore_patterns(".git", ".wiki_cache", "*.pyc", ".ci-venv"))
    _git(clone, "init", "-q")
    _git(clone, "add", ".")
    _git(clone, "commit", "-q", "-m", "engine")
    bad = wiki_repo / "wiki" / "notes" / "bad.md"
    bad.write_text("# Bad\n\n[gone](gone.md)\n")
    _git(wiki_repo, "add", ".")
    proc = subprocess.run([str(PRE_COMMIT), "try-repo", str(clone), "wiki-lint", "--files", "wiki/notes/bad.md"],
                          cwd=wiki_repo, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "wiki/notes/bad.md:3:1: LNK001" in proc.stdout
