"""tests/run_once.py: a resource the suite shares across xdist workers is built once, by
whichever asks first, and a build that failed is tried again rather than read half-made."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.run_once import build_once, copy_of

REPO = Path(__file__).resolve().parents[1]
# a worker of its own: asks for the folder, says what it got and how many builds it saw
WORKER = """
import json, sys, time
from pathlib import Path
from tests.run_once import build_once

def build(folder):
    with open(Path(sys.argv[2]), "a") as log:  # one line per build, whoever builds
        log.write("built\\n")
    time.sleep(0.5)  # long enough that the other worker asks while this one builds
    (folder / "data.txt").write_text("made once")
    return {"pages": 3}

folder, result = build_once(Path(sys.argv[1]), build)
print(json.dumps([str(folder), result, (folder / "data.txt").read_text()]))
"""


def test_two_workers_asking_at_once_get_one_build(tmp_path):
    import json

    folder, log = tmp_path / "shared", tmp_path / "builds.log"
    workers = [subprocess.Popen([sys.executable, "-c", WORKER, str(folder), str(log)], cwd=REPO, text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(2)]
    answers = [w.communicate(timeout=120) for w in workers]
    assert [w.returncode for w in workers] == [0, 0], [err for _, err in answers]
    assert log.read_text() == "built\n"
    assert [json.loads(out) for out, _ in answers] == [[str(folder), {"pages": 3}, "made once"]] * 2


def test_a_failed_build_is_built_again_from_nothing(tmp_path):
    folder = tmp_path / "shared"

    def broken(where: Path) -> dict:
        (where / "half.txt").write_text("half")
        raise RuntimeError("the build broke")

    with pytest.raises(RuntimeError, match="the build broke"):
        build_once(folder, broken)
    made, result = build_once(folder, lambda where: {"files": sorted(p.name for p in where.iterdir())})
    assert made == folder and result == {"files": []}  # nothing of the broken build was kept
    assert build_once(folder, broken) == (folder, {"files": []})  # built: never built again


def test_a_copy_is_the_tree_without_the_marker(tmp_path):
    def build(where: Path) -> dict:
        (where / "page.md").write_text("x")
        return {}

    folder, _ = build_once(tmp_path / "shared", build)
    (folder / "link").symlink_to("page.md")
    copy = copy_of(folder, tmp_path / "copy")
    assert sorted(p.name for p in copy.iterdir()) == ["link", "page.md"]
    assert (copy / "link").is_symlink() and (copy / "link").read_text() == "x"


def test_a_copied_worktree_commits_to_the_copy_and_leaves_the_source_alone(tmp_path):
    """A kernel family keeps a git worktree inside the repository: in a copy, a commit made in
    that worktree lands in the copy's repository, and the source's links still name the source."""
    def git(where: Path, *args: str) -> str:
        return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args], cwd=where,
                              check=True, capture_output=True, text=True).stdout.strip()

    def build(where: Path) -> dict:
        git(where, "init", "-q", "-b", "main")
        git(where, "commit", "-q", "--allow-empty", "-m", "root")
        git(where, "worktree", "add", "-q", "-b", "side", str(where / ".wiki" / "tree"))
        return {}

    source, _ = build_once(tmp_path / "shared", build)
    links_before = (source / ".git/worktrees/tree/gitdir").read_text(), (source / ".wiki/tree/.git").read_text()
    copy = copy_of(source, tmp_path / "copy")
    git(copy / ".wiki" / "tree", "commit", "-q", "--allow-empty", "-m", "in the copy")
    assert git(copy, "log", "-1", "--format=%s", "side") == "in the copy"
    assert git(source, "log", "-1", "--format=%s", "side") == "root"
    assert (links_before == ((source / ".git/worktrees/tree/gitdir").read_text(),
                             (source / ".wiki/tree/.git").read_text()))
    assert git(copy, "worktree", "list", "--porcelain").count(str(copy / ".wiki" / "tree")) == 1
