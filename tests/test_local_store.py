"""LocalGitStore: the embedded checkpoint store (two commits per save, compare-and-swap)."""

from __future__ import annotations

import datetime as dt
import subprocess

import pytest
from relay_process import wait_for
from test_relay_support import stale_lock

from wikiengine.executors.local_store import LocalGitStore
from wikiengine.executors.store import (
    CheckpointStore,
    FileMissingError,
    Pointer,
    StaleParentError,
    StoreError,
    StoreFormatError,
    StoreUnavailableError,
)


@pytest.fixture()
def store(tmp_path):
    return LocalGitStore.create(tmp_path / "store")


def _folder(tmp_path, name, files):
    folder = tmp_path / name
    folder.mkdir()
    for file_name, data in files.items():
        (folder / file_name).write_bytes(data)
    return folder


def _save(store, tmp_path, step, parent):
    folder = _folder(tmp_path, f"local-{step}", {"model.safetensors": bytes([step]) * 10, "cursor.json": b"{}"})
    checkpoint = store.commit_checkpoint(step, folder, parent)
    return checkpoint, store.commit_pointer(step, checkpoint)


def test_store_satisfies_the_protocol(store):
    assert isinstance(store, CheckpointStore)


def test_fresh_store_has_a_head_and_no_pointer(store):
    head = store.head()
    assert len(head) == 40
    assert store.read_pointer(head) is None
    assert [c.title for c in store.list_commits(head)] == ["create checkpoint store"]


def test_a_new_store_keeps_objects_uncompressed_and_is_never_repacked(store, tmp_path):
    """The store's settings, as git reads them, and their effect: a checkpoint file's object is
    its bytes plus a header (compression level 0), not a deflated copy."""
    def setting(key):
        return subprocess.run(["git", "--git-dir", str(store.path), "config", "--get", key], capture_output=True,
                              text=True, check=True).stdout.strip()

    assert [setting(key) for key in ("core.looseCompression", "core.compression", "gc.auto")] == ["0", "0", "0"]
    data = b"\0" * 100_000  # deflate would make it a few hundred bytes
    checkpoint = store.commit_checkpoint(1, _folder(tmp_path, "zeros", {"model.safetensors": data}), store.head())
    blob = subprocess.run(["git", "--git-dir", str(store.path), "rev-parse", f"{checkpoint}:ckpt/checkpoint-1/model.safetensors"],
                          capture_output=True, text=True, check=True).stdout.strip()
    assert (store.path / "objects" / blob[:2] / blob[2:]).stat().st_size > len(data)


def test_save_is_two_commits_checkpoint_then_pointer(store, tmp_path):
    start = store.head()
    checkpoint, pointer = _save(store, tmp_path, 127, start)
    assert store.head() == pointer
    commits = store.list_commits(pointer)
    assert [c.title for c in commits[:2]] == ["latest -> 127", "checkpoint 127"]
    assert [c.id for c in commits[:2]] == [pointer, checkpoint]
    assert commits[1].date <= commits[0].date
    assert abs((dt.datetime.now(dt.UTC) - commits[0].date).total_seconds()) < 3600  # real times
    assert store.read_pointer(pointer) == Pointer(127, "ckpt/checkpoint-127")
    assert store.read_pointer(checkpoint) is None  # the folder commit alone does not move the pointer
    assert store.read_file("latest.json", pointer) == b'{"step": 127, "path_in_repo": "ckpt/checkpoint-127"}\n'


def test_reads_are_pinned_to_a_revision(store, tmp_path):
    _, first = _save(store, tmp_path, 4, store.head())
    _, second = _save(store, tmp_path, 8, first)
    assert store.read_pointer(first).step == 4
    assert store.read_pointer(second).step == 8
    assert store.list_files("ckpt/checkpoint-8", first) == []
    assert store.list_files("ckpt/checkpoint-8/", second) == ["ckpt/checkpoint-8/cursor.json",
                                                             "ckpt/checkpoint-8/model.safetensors"]
    assert store.read_file("ckpt/checkpoint-4/model.safetensors", second) == bytes([4]) * 10


def test_read_files_is_one_git_for_many_files_and_leaves_the_missing_out(store, tmp_path, monkeypatch):
    _, first = _save(store, tmp_path, 4, store.head())
    _, second = _save(store, tmp_path, 8, first)
    wanted = ["ckpt/checkpoint-8/cursor.json", "ckpt/checkpoint-4/model.safetensors", "ckpt/checkpoint-8/absent.json",
              "latest.json"]
    from wikiengine.core import git

    calls = []
    real_run = git.run
    monkeypatch.setattr(git, "run", lambda *a, **k: calls.append(a[1]) or real_run(*a, **k))
    found = store.read_files(wanted, second)
    assert calls == ["cat-file"]
    assert found == {path: store.read_file(path, second) for path in wanted if "absent" not in path}
    assert store.read_files(wanted, first) == {"ckpt/checkpoint-4/model.safetensors": bytes([4]) * 10,
                                               "latest.json": store.read_file("latest.json", first)}
    assert store.read_files([], second) == {}


def test_a_checkpoint_folder_is_hashed_by_one_git_process(store, tmp_path, monkeypatch):
    from wikiengine.core import git

    calls = []
    real_run = git.run
    monkeypatch.setattr(git, "run", lambda *a, **k: calls.append(a[1]) or real_run(*a, **k))
    files = {f"shard-{n}.bin": bytes([n]) * (n + 1) for n in range(5)} | {"with space.json": b"{}"}
    checkpoint = store.commit_checkpoint(3, _folder(tmp_path, "local", files), store.head())
    assert calls.count("hash-object") == 1
    assert store.read_files([f"ckpt/checkpoint-3/{name}" for name in files], checkpoint) == {
        f"ckpt/checkpoint-3/{name}": data for name, data in files.items()}


def test_a_folder_whose_path_holds_a_newline_is_refused_before_anything_is_written(store, tmp_path):
    head = store.head()
    with pytest.raises(StoreFormatError, match="newline"):
        store.commit_checkpoint(3, _folder(tmp_path, "local\nstep", {"model.bin": b"x"}), head)
    assert store.head() == head


@pytest.mark.parametrize("path", ["/etc/passwd", "../x", "HEAD:x", "a\nb", ""])
def test_read_files_refuses_a_bad_path_among_good_ones(store, path):
    with pytest.raises(StoreFormatError):
        store.read_files(["README.md", path], store.head())


def test_missing_file_raises_file_missing(store):
    with pytest.raises(FileMissingError):
        store.read_file("ckpt/checkpoint-9/cursor.json", store.head())


@pytest.mark.parametrize("path", ["/etc/passwd", "../x", "a/../../b", "HEAD:x", ""])
def test_bad_paths_are_refused(store, path):
    with pytest.raises(StoreFormatError):
        store.read_file(path, store.head())


@pytest.mark.parametrize("revision", ["main", "HEAD", "abc", "g" * 40, "HEAD~1"])
def test_revisions_must_be_full_commit_ids(store, revision):
    with pytest.raises(StoreFormatError):
        store.read_file("README.md", revision)


def test_second_writer_is_refused_not_merged(store, tmp_path):
    seen = store.head()
    _, winner = _save(store, tmp_path, 4, seen)
    folder = _folder(tmp_path, "loser", {"a": b"1"})
    with pytest.raises(StaleParentError):
        store.commit_checkpoint(8, folder, seen)
    with pytest.raises(StaleParentError):
        store.commit_pointer(8, seen)
    assert store.head() == winner
    assert store.read_pointer(winner).step == 4


def test_resaving_a_step_replaces_the_folder_and_keeps_history(store, tmp_path):
    first = store.commit_checkpoint(8, _folder(tmp_path, "a", {"old.bin": b"old", "keep": b"1"}), store.head())
    second = store.commit_checkpoint(8, _folder(tmp_path, "b", {"keep": b"2"}), first)
    assert store.list_files("ckpt/checkpoint-8", second) == ["ckpt/checkpoint-8/keep"]
    assert store.read_file("ckpt/checkpoint-8/old.bin", first) == b"old"  # nothing lost from history
    assert store.is_ancestor(first, second) and not store.is_ancestor(second, first)


def test_binary_bytes_round_trip_exactly(store, tmp_path):
    data = bytes(range(256)) * 40 + b"\r\n\x00tail"
    commit = store.commit_checkpoint(1, _folder(tmp_path, "bin", {"x.pt": data}), store.head())
    assert store.read_file("ckpt/checkpoint-1/x.pt", commit) == data


def test_malformed_pointer_is_a_format_error(store, tmp_path):
    head = store.head()
    for bad in (b'{"step": 4.0, "path_in_repo": "ckpt/checkpoint-4"}', b'{"step": true, "path_in_repo": "x"}',
                b'{"step": 4, "step": 5, "path_in_repo": "x"}', b'{"step": NaN, "path_in_repo": "x"}'):
        with pytest.raises(StoreFormatError):
            Pointer.from_bytes(bad)
    # a pointer written by hand into the repository is parsed strictly too
    blob = subprocess.run(["git", "--git-dir", str(store.path), "hash-object", "-w", "--stdin"],
                          input=b'{"step": 4.0, "path_in_repo": "ckpt/checkpoint-4"}', capture_output=True,
                          check=True).stdout.decode().strip()
    tree = store._build_tree(head, {"latest.json": blob}, remove_prefix=None)
    commit = store._advance(head, tree, "latest -> 4")
    with pytest.raises(StoreFormatError):
        store.read_pointer(commit)


def test_opening_a_non_store_is_unavailable(tmp_path):
    with pytest.raises(StoreUnavailableError):
        LocalGitStore(tmp_path)


def test_create_refuses_a_non_empty_directory(tmp_path):
    (tmp_path / "x").write_text("data")
    with pytest.raises(StoreError):
        LocalGitStore.create(tmp_path)


def test_concurrent_writers_on_one_parent_exactly_one_wins(store):
    """Real concurrency (one git process per writer): update-ref's compare-and-swap lets one through."""
    import threading

    parent = store.head()
    outcomes: dict[int, str] = {}
    barrier = threading.Barrier(6)

    def writer(step):
        barrier.wait()
        try:
            outcomes[step] = store.commit_pointer(step, parent)
        except StaleParentError:
            outcomes[step] = "refused"

    threads = [threading.Thread(target=writer, args=(step,)) for step in range(1, 7)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    winners = {step: commit for step, commit in outcomes.items() if commit != "refused"}
    assert len(outcomes) == 6 and len(winners) == 1
    (step, commit), = winners.items()
    assert store.head() == commit and store.read_pointer(commit).step == step
    assert [c.id for c in store.list_commits(commit)][1] == parent  # not merged: one linear step


@pytest.mark.parametrize("name", ["HEAD.lock", "refs/heads/main.lock"])
def test_row35_a_lock_a_killed_writer_left_is_removed_and_the_save_lands(store, tmp_path, name):
    """A session killed while its update-ref held the store's locks (the branch moved, HEAD.lock
    was left): the next session's saves land instead of failing as "main moved" forever."""
    stale_lock(store.path / name)
    checkpoint, pointer = _save(store, tmp_path, 8, store.head())
    assert store.head() == pointer and store.read_pointer(pointer).step == 8
    assert not (store.path / name).exists()


def test_row35_a_lock_a_live_git_holds_on_the_store_is_named_not_removed(store, tmp_path, monkeypatch):
    import wikiengine.core.git as core_git

    lock = store.path / "HEAD.lock"
    stale_lock(lock)
    holder = subprocess.Popen(["git", "--git-dir", str(store.path), "hash-object", "--stdin"], stdin=subprocess.PIPE,
                              stdout=subprocess.DEVNULL)  # a git alive on the store (waits on its input)
    try:
        assert wait_for(lambda: core_git.git_processes(store.path), 10, "the git to start") == [holder.pid]
        monkeypatch.setattr(core_git, "LOCK_WAIT_S", 0.3)
        head = store.head()
        with pytest.raises(StoreUnavailableError, match=r"HEAD\.lock is held: a git process is running"):
            store.commit_pointer(8, head)
    finally:
        holder.communicate(b"")
    assert lock.exists() and store.head() == head  # never removed while a git runs; nothing moved
