"""`commit_paths`: exactly the named paths, with the fewest git processes (rows 35-37)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from wikiengine.core.git import GitCommitError, commit_paths, head_sha


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, text=True).stdout


@pytest.fixture
def repo(tmp_path):
    root = tmp_path / "r"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.email", "t@example.com")
    git(root, "config", "user.name", "t")
    for name in ("a.md", "b.md", "c.md"):
        (root / name).write_text(f"{name}\n")
    git(root, "add", ".")
    git(root, "commit", "-qm", "init")
    return root


def committed(root: Path) -> set[str]:
    return set(git(root, "show", "--name-only", "--format=", "HEAD").split())


def test_only_the_named_paths_are_committed_past_a_staged_stray(repo):
    (repo / "a.md").write_text("mine\n")
    (repo / "b.md").write_text("the user's, staged\n")
    git(repo, "add", "b.md")
    (repo / "c.md").write_text("the user's, unstaged\n")
    sha = commit_paths(repo, ["a.md"], "writer: a")
    assert committed(repo) == {"a.md"} and sha == git(repo, "rev-parse", "HEAD").strip()
    assert git(repo, "diff", "--cached", "--name-only").split() == ["b.md"]  # still staged, not swept in
    assert git(repo, "diff", "--name-only").split() == ["c.md"]


def test_with_nothing_else_staged_new_modified_and_deleted_paths_land_in_one_commit(repo):
    (repo / "a.md").write_text("changed\n")
    (repo / "new.md").write_text("new\n")
    (repo / "b.md").unlink()
    (repo / "c.md").write_text("stray\n")
    sha = commit_paths(repo, ["a.md", "new.md", "b.md", "absent.md"], "writer: three")
    assert committed(repo) == {"a.md", "new.md", "b.md"} and sha == git(repo, "rev-parse", "HEAD").strip()
    assert git(repo, "status", "--porcelain").split() == ["M", "c.md"]
    assert commit_paths(repo, ["a.md", "new.md"], "again") is None  # nothing changed: no commit


@pytest.mark.parametrize("new_file", [False, True])
def test_paths_git_knows_are_committed_by_one_git_process(repo, monkeypatch, new_file):
    """A write of modified and deleted pages git knows, nothing else staged: `commit --include`
    stages and commits them in one process; a new page needs `add` first. The same commit."""
    from wikiengine.core import git as git_module

    ran = []
    real = git_module._git
    monkeypatch.setattr(git_module, "_git", lambda root, *args, **kw: ran.append(args[0]) or real(root, *args, **kw))
    (repo / "a.md").write_text("changed\n")
    (repo / "b.md").unlink()
    (repo / "c.md").write_text("stray, unstaged\n")
    paths = ["a.md", "b.md", *(["new.md"] if new_file else [])]
    if new_file:
        (repo / "new.md").write_text("new\n")
    commit_paths(repo, paths, "writer: pages")
    assert ran == (["add", "commit"] if new_file else ["commit"])
    assert committed(repo) == set(paths) and git(repo, "show", "HEAD:a.md") == "changed\n"
    assert git(repo, "status", "--porcelain").split() == ["M", "c.md"]


def test_row37_an_unmerged_entry_is_refused_even_without_merge_head(repo):
    git(repo, "checkout", "-qb", "other")
    (repo / "a.md").write_text("other\n")
    git(repo, "commit", "-qam", "other")
    git(repo, "checkout", "-q", "main")
    (repo / "a.md").write_text("main\n")
    git(repo, "commit", "-qam", "main")
    subprocess.run(["git", "merge", "other"], cwd=repo, capture_output=True)
    (repo / ".git" / "MERGE_HEAD").unlink()  # as after a conflicted `git stash pop`: only the index says so
    (repo / "b.md").write_text("mine\n")
    before = git(repo, "rev-parse", "HEAD")
    with pytest.raises(GitCommitError, match="unresolved merge conflicts"):
        commit_paths(repo, ["b.md"], "writer: b")
    assert git(repo, "rev-parse", "HEAD") == before


def test_head_sha_in_a_linked_worktree_and_on_a_packed_ref(repo, tmp_path):
    tree = tmp_path / "wt"
    git(repo, "worktree", "add", "-q", "-b", "side", str(tree))
    (tree / "a.md").write_text("side\n")
    sha = commit_paths(tree, ["a.md"], "side: a")
    assert sha == git(tree, "rev-parse", "HEAD").strip() != git(repo, "rev-parse", "HEAD").strip()
    git(repo, "pack-refs", "--all")
    assert not (repo / ".git" / "refs" / "heads" / "main").exists()
    assert head_sha(repo) == git(repo, "rev-parse", "HEAD").strip()
    git(repo, "checkout", "-q", "--detach")
    assert head_sha(repo) == git(repo, "rev-parse", "HEAD").strip()


def _commit_many(root: str, index: int, commits: int) -> None:
    """One lane's writer in its own process: commit a file of its own ``commits`` times."""
    rel = f"lane{index}.md"
    for n in range(commits):
        (Path(root) / rel).write_text(f"note {n}\n")
        commit_paths(Path(root), [rel], f"lane {index}: note {n}")


def test_row112_writers_of_different_lanes_committing_at_once_all_land(repo):
    """Different lanes hold different lane locks; git alone refuses a second commit while the
    first holds index.lock. The commit lock queues them: every commit lands, none is lost."""
    import multiprocessing

    writers = [multiprocessing.Process(target=_commit_many, args=(str(repo), i, 3)) for i in range(4)]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join(timeout=120)
    assert [writer.exitcode for writer in writers] == [0, 0, 0, 0]
    assert len(git(repo, "log", "--format=%s").splitlines()) == 1 + 4 * 3
    assert git(repo, "status", "--porcelain") == ""
    assert all((repo / f"lane{i}.md").read_text() == "note 2\n" for i in range(4))
