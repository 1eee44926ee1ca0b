"""The folder listing a warm lint keeps for its walk (lint/folders.py): a folder's kept listing
is taken only while its lstat is what it was, so the walk always finds what ``os.walk`` finds;
a folder changed in the listing's clock tick, or holding a link, is listed every time; a
listing not signed with the user's key is not read; an unreadable folder or a bad name in a
kept folder is still exit 2."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from wikiengine.core.errors import WikiError
from wikiengine.lint import context
from wikiengine.lint.cache import CACHE_DIR
from wikiengine.lint.context import LINTED_DIRS, discover
from wikiengine.lint.folders import FOLDERS_FILE, FolderListing
from wikiengine.lint.runner import _file_list_facts

TICK = 0.012  # longer than the kernel's file-time granularity (a jiffy), so that each change has a new time


def os_walk_pages(root: Path) -> list[str]:
    """The pages as ``os.walk`` finds them: the walk before the listing, the reference."""
    found = []
    for top in LINTED_DIRS:
        base = root / top
        if not base.is_dir():
            continue
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
            rel = Path(dirpath).relative_to(root).as_posix()
            found.extend(f"{rel}/{name}" for name in filenames if name.endswith(".md"))
    return sorted(found)


def walked(root: Path) -> tuple[list[str], FolderListing]:
    """One run's walk with the kept listing, which it keeps anew; what the runner derives from
    the pages found (kept with the listing) is what it derives from them afresh."""
    (root / CACHE_DIR).mkdir(exist_ok=True)
    listing = FolderListing.open(root)
    found = discover(root, listing)
    assert listing.derived(_file_list_facts) == _file_list_facts(found)
    listing.save()
    time.sleep(TICK)
    return found, listing


@pytest.fixture
def settled(monkeypatch):
    """A clock 10 s ahead for the walk (lint/context.py's alone), so that a folder changed a
    moment ago counts as settled: every folder is kept, and only its lstat can tell a change."""
    real = time.time_ns
    monkeypatch.setattr(context, "time", SimpleNamespace(time_ns=lambda: real() + 10_000_000_000))


@pytest.mark.waits
def test_a_kept_listing_finds_what_os_walk_finds_after_every_change(tmp_path, settled):
    root = tmp_path / "wiki-root"
    (root / "wiki" / "a").mkdir(parents=True)
    (root / "memory").mkdir()
    rng = random.Random(20261203)
    taken = whole = 0
    for step in range(160):
        folders_now = [p for p in (root / "wiki").rglob("*") if p.is_dir() and not p.is_symlink()] + [root / "wiki",
                                                                                                     root / "memory"]
        files_now = [p for p in (root / "wiki").rglob("*") if p.is_file() or p.is_symlink()]
        where = rng.choice(folders_now)
        op = rng.choice(["page", "page", "other", "remove", "rename", "folder", "dot-folder", "link-file",
                         "link-folder", "rmdir", "file-to-folder", "nothing"])
        name = f"n{step}"
        if op == "page":
            (where / f"{name}.md").write_text("# p\n", encoding="utf-8")
        elif op == "other":
            (where / f"{name}.txt").write_text("x", encoding="utf-8")
        elif op == "remove" and files_now:
            rng.choice(files_now).unlink()
        elif op == "rename" and files_now:
            victim = rng.choice(files_now)
            victim.rename(where / f"{name}{rng.choice(['.md', '.txt', ''])}")
        elif op == "folder":
            (where / name).mkdir()
        elif op == "dot-folder":
            (where / f".{name}").mkdir()
            (where / f".{name}" / "hidden.md").write_text("# h\n", encoding="utf-8")
        elif op == "link-file" and files_now:
            (where / f"{name}.md").symlink_to(rng.choice(files_now))
        elif op == "link-folder":
            (where / f"{name}.md").symlink_to(root / "wiki" / "a", target_is_directory=True)
        elif op == "rmdir":
            empty = [p for p in folders_now if p not in (root / "wiki", root / "memory", root / "wiki" / "a")
                     and not any(p.iterdir())]
            if empty:
                rng.choice(empty).rmdir()
        elif op == "file-to-folder" and files_now:
            victim = rng.choice([p for p in files_now if not p.is_symlink()] or files_now)
            victim.unlink()
            victim.mkdir()
            (victim / "inside.md").write_text("# i\n", encoding="utf-8")
        found, listing = walked(root)
        assert found == os_walk_pages(root), (step, op)
        taken += listing.taken
        again, listing = walked(root)  # nothing changed since
        assert again == found, (step, op)
        whole += again is listing._kept_pages  # every folder taken as kept: the kept list itself
    assert taken > 300  # most walks took folders as kept
    assert whole  # walks before the first link (a folder holding one is listed every time)


def test_a_walk_that_takes_every_kept_folder_finds_the_kept_pages(tmp_path, settled):
    """The walk's outcome is kept whole: a walk that lists no folder takes the pages and what
    was derived from them; one that lists a folder finds the other folders' pages in that list;
    the pages of a folder that was not kept (it holds a link) are not kept either, so they are
    not found once that folder is gone and every other folder is as kept."""
    root = tmp_path / "wiki-root"
    for folder in ("wiki/a/b", "wiki/c", "memory"):
        (root / folder).mkdir(parents=True)
    for page in ("wiki/index.md", "wiki/a/x.md", "wiki/a/b/y.md", "wiki/c/z.md", "memory/m.md"):
        (root / page).write_text("# p\n", encoding="utf-8")
    (root / "memory" / "linked.md").symlink_to(root / "wiki" / "index.md")
    first, listing = walked(root)
    assert listing.listed == 5 and first == os_walk_pages(root)
    again, listing = walked(root)
    assert again == first and listing.listed == 1  # memory/, which holds a link, is listed again
    (root / "memory" / "linked.md").unlink()
    (root / "memory" / "m.md").unlink()
    (root / "memory").rmdir()
    gone, listing = walked(root)
    assert gone == os_walk_pages(root) == ["wiki/a/b/y.md", "wiki/a/x.md", "wiki/c/z.md", "wiki/index.md"]
    assert gone is listing._kept_pages and listing.listed == 0
    (root / "wiki" / "a" / "b" / "new.md").write_text("# n\n", encoding="utf-8")
    added, listing = walked(root)
    assert added == os_walk_pages(root) and "wiki/a/b/new.md" in added and listing.listed == 1
    kept, listing = walked(root)
    assert kept == added and kept is listing._kept_pages
    (root / "memory").mkdir()  # a top folder, kept, then gone: no folder of the walk changed
    (root / "memory" / "m.md").write_text("# m\n", encoding="utf-8")
    walked(root)
    assert "memory/m.md" in walked(root)[0]
    (root / "memory" / "m.md").unlink()
    (root / "memory").rmdir()
    assert walked(root)[0] == os_walk_pages(root) == kept


def test_a_folder_changed_in_its_listings_clock_tick_is_listed_again(tmp_path):
    """With the real clock: a folder changed a moment ago is not kept, so a change in the same
    tick of the file system's clock cannot hide behind an unchanged time."""
    root = tmp_path / "wiki-root"
    (root / "wiki").mkdir(parents=True)
    (root / "wiki" / "a.md").write_text("# a\n", encoding="utf-8")
    first, listing = walked(root)
    assert first == ["wiki/a.md"] and "wiki" not in listing._seen
    (root / "wiki" / "b.md").write_text("# b\n", encoding="utf-8")
    assert walked(root)[0] == ["wiki/a.md", "wiki/b.md"]


def test_a_folder_holding_a_link_is_never_kept(tmp_path, settled):
    """A link's target can turn from a file into a folder without its folder changing."""
    root = tmp_path / "wiki-root"
    (root / "wiki").mkdir(parents=True)
    target = tmp_path / "target.md"
    target.write_text("# t\n", encoding="utf-8")
    (root / "wiki" / "linked.md").symlink_to(target)
    (root / "wiki" / "sub").mkdir()
    (root / "wiki" / "sub" / "p.md").write_text("# p\n", encoding="utf-8")
    found, listing = walked(root)
    assert found == ["wiki/linked.md", "wiki/sub/p.md"] and set(listing._seen) == {"wiki/sub"}
    target.unlink()
    target.mkdir()  # the link now names a folder: os.walk lists it as one, and does not enter it
    assert walked(root)[0] == os_walk_pages(root) == ["wiki/sub/p.md"]


def test_a_listing_not_signed_with_the_users_key_is_not_read(tmp_path, settled):
    root = tmp_path / "wiki-root"
    (root / "wiki").mkdir(parents=True)
    (root / "wiki" / "a.md").write_text("# a\n", encoding="utf-8")
    walked(root)
    kept = root / CACHE_DIR / FOLDERS_FILE
    assert FolderListing.open(root)._kept
    kept.write_bytes(bytes(32) + kept.read_bytes()[32:])  # its tag forged
    assert not FolderListing.open(root)._kept
    assert walked(root)[0] == ["wiki/a.md"]


def test_a_bad_name_in_a_kept_folder_is_still_exit_2(tmp_path, settled):
    root = tmp_path / "wiki-root"
    (root / "wiki").mkdir(parents=True)
    (root / "wiki" / "a.md").write_text("# a\n", encoding="utf-8")
    assert walked(root)[1]._seen
    (root / "wiki" / os.fsdecode(b"bad\xff.md")).write_text("# b\n", encoding="utf-8")
    with pytest.raises(WikiError, match="file name is not valid UTF-8"):
        walked(root)


@pytest.mark.skipif(os.geteuid() == 0 and not Path("/usr/bin/setpriv").exists(), reason="no user to whom a folder is unreadable")
@pytest.mark.waits
def test_a_kept_folder_made_unreadable_is_still_exit_2(tmp_path):
    """chmod changes a folder's ctime: the kept listing is not taken, and the walk fails as before."""
    import tempfile

    base = Path(tempfile.mkdtemp(prefix="wiki-folders-"))
    try:
        base.chmod(0o755)
        root = base / "root"
        (root / "wiki" / "locked").mkdir(parents=True)
        (root / "wiki" / "locked" / "a.md").write_text("# a\n", encoding="utf-8")
        (base / "cache").mkdir()
        for path in (base / "cache", root, *root.rglob("*")):
            path.chmod(0o777 if path.is_dir() else 0o666)
        nobody = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"] if os.geteuid() == 0 else []
        argv = [*nobody, sys.executable, "-m", "wikiengine", "lint", "--select", "WK001"]
        env = {**os.environ, "HOME": str(base), "XDG_CACHE_HOME": str(base / "cache")}
        time.sleep(2.1)  # every folder settled: the next run keeps them
        for _ in range(2):
            proc = subprocess.run(argv, cwd=root, capture_output=True, text=True, timeout=60, env=env)
            assert proc.returncode == 0, proc.stderr
        assert (root / CACHE_DIR / FOLDERS_FILE).is_file()
        (root / "wiki" / "locked").chmod(0)
        proc = subprocess.run(argv, cwd=root, capture_output=True, text=True, timeout=60, env=env)
        assert proc.returncode == 2 and proc.stderr.strip() == "error: wiki/locked: cannot list directory: Permission denied"
    finally:
        for path in base.rglob("*"):
            if path.is_dir() and not path.is_symlink():
                path.chmod(0o755)
        import shutil

        shutil.rmtree(base)


@pytest.mark.waits
def test_a_lint_run_keeps_the_listing_and_reads_it_back(tmp_path, monkeypatch):
    """The runner's walk goes through the listing: once every folder has settled, a run lists
    no folder; a page added then is found (its folder's time moved) and linted."""
    from tests.lint_support import generated_git_wiki
    from wikiengine.lint import lint

    root = generated_git_wiki(tmp_path / "wiki", 12, seed=3)
    time.sleep(2.1)  # git's racy margin: older folders are kept
    lint(root)
    lint(root)
    listed = []
    real_put = FolderListing.put

    def counted(self, *args, **kw):
        listed.append(args[0])
        return real_put(self, *args, **kw)

    monkeypatch.setattr(FolderListing, "put", counted)
    quiet = lint(root)
    assert listed == []
    (root / "wiki" / "concepts").mkdir(exist_ok=True)
    (root / "wiki" / "concepts" / "new-idea.md").write_text("# New\n\nSee [gone](gone.md).\n", encoding="utf-8")
    time.sleep(TICK)
    after = lint(root)
    assert "wiki/concepts" in listed and any(f.path == "wiki/concepts/new-idea.md" for f in after.findings)
    assert [f.render() for f in after.findings] == [f.render() for f in lint(root, use_cache=False).findings]
    assert len(after.findings) > len(quiet.findings)


@pytest.mark.parametrize("plant", ["fifo", "dev-zero", "link-out"])
def test_a_planted_listing_that_is_no_regular_file_is_not_read(tmp_path, settled, plant):
    """A commit can put a pipe, a link to /dev/zero or a link out of the repository where the
    listing lives: it is read the lint cache's one safe way (a regular file inside the root), so
    the walk neither hangs nor reads without end, and lists the folders itself."""
    root = tmp_path / "wiki-root"
    (root / "wiki").mkdir(parents=True)
    (root / "wiki" / "a.md").write_text("# a\n", encoding="utf-8")
    walked(root)
    kept = root / CACHE_DIR / FOLDERS_FILE
    outside = tmp_path / "outside.marshal"
    kept.replace(outside)  # a listing signed with the user's key, now outside the root
    if plant == "fifo":
        os.mkfifo(kept)
    else:
        kept.symlink_to("/dev/zero" if plant == "dev-zero" else outside)
    assert not FolderListing.open(root)._kept
    found, listing = walked(root)
    assert found == ["wiki/a.md"] and listing.listed == 1 and listing.taken == 0
