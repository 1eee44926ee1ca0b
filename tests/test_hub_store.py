"""HubStore through the real huggingface_hub client against the loopback Hub (tests/fakes/fake_hub.py)."""

from __future__ import annotations

import json
import threading
import time

import pytest

from tests.fakes.fake_hub import Fault, status_fault
from tests.fakes.fixtures import (  # noqa: F401 - pytest fixtures
    REPO_ID,
    RecordingSleep,
    fake_hub,
    fast_policy,
    hub_env,
    hub_store,
    loopback_only,
    sleeps,
)
from wikiengine.executors.hub_store import HubStore
from wikiengine.executors.store import (
    FileMissingError,
    Pointer,
    StaleParentError,
    StoreError,
    StoreUnavailableError,
    checkpoint_path,
)

pytestmark = pytest.mark.usefixtures("loopback_only")


def write_checkpoint_dir(tmp_path, step: int) -> object:
    """A checkpoint directory written by the trainer's own writer (manifest included)."""
    from wikiengine.training.checkpoint import write_checkpoint

    files = {
        "model.safetensors": bytes(range(256)) * 8 + step.to_bytes(4, "little"),
        "trainer_state.json": f'{{"global_step": {step}}}\n'.encode(),
        "cursor.json": f'{{"step": {step}}}\n'.encode(),
        "optimizer.pt": b"optimizer state %d" % step,
        "scheduler.pt": b"scheduler state %d" % step,
    }
    return write_checkpoint(tmp_path / "out", step, files)


def save(store: HubStore, tmp_path, step: int) -> tuple[str, str]:
    """The trainer's save: checkpoint folder commit, then the pointer commit on top of it."""
    parent = store.head()
    ckpt = store.commit_checkpoint(step, write_checkpoint_dir(tmp_path, step), parent)
    pointer = store.commit_pointer(step, ckpt)
    return ckpt, pointer


def titles(fake_hub) -> list[str]:
    repo = fake_hub.repo(REPO_ID)
    return [c.title for c in repo.history(repo.resolve("main"))]


@pytest.mark.waits
def test_save_then_pinned_check_reads_back_through_the_real_client(hub_store, fake_hub, tmp_path):
    from wikiengine.training.checkpoint import read_verified_from_store

    ckpt, pointer = save(hub_store, tmp_path, 127)
    head = hub_store.head()
    assert head == pointer
    commits = hub_store.list_commits(head)
    assert [c.title for c in commits[:2]] == ["latest -> 127", "checkpoint 127"]
    assert commits[1].id == ckpt and commits[0].date.tzinfo is not None
    assert hub_store.read_pointer(head) == Pointer(127, "ckpt/checkpoint-127")
    files = hub_store.list_files(checkpoint_path(127) + "/", head)
    names = ("cursor.json", "manifest.json", "model.safetensors", "optimizer.pt", "scheduler.pt", "trainer_state.json")
    assert files == sorted(f"ckpt/checkpoint-127/{n}" for n in names)
    verified = read_verified_from_store(hub_store, 127, head)
    assert verified["cursor.json"] == b'{"step": 127}\n'
    # weights went through the LFS transfer (batch, PUT, verify); the pointer as a regular file
    routes = [route for route, _ in fake_hub.requests]
    assert routes.count("lfs_upload") == 3 and "lfs_verify" in routes
    assert sorted(fake_hub.lfs_blobs.values()) == sorted(
        verified[n] for n in ("model.safetensors", "optimizer.pt", "scheduler.pt"))
    assert hub_store.is_ancestor(ckpt, head) and not hub_store.is_ancestor(head, ckpt)


@pytest.mark.waits
def test_commit_list_follows_link_pagination(hub_store, fake_hub, tmp_path):
    for step in (127, 254, 381):
        save(hub_store, tmp_path, step)
    commits = hub_store.list_commits(hub_store.head())
    assert len(commits) == 7  # initial + 3 x (checkpoint, pointer), page size 2
    assert sum(1 for route, _ in fake_hub.requests if route == "commits") >= 4


def test_missing_pointer_and_missing_folder(hub_store):
    head = hub_store.head()
    assert hub_store.read_pointer(head) is None
    assert hub_store.list_files("ckpt/checkpoint-9/", head) == []
    for _ in range(2):  # the second miss is answered by the Hub again, not by a cached "no such file"
        with pytest.raises(FileMissingError):
            hub_store.read_file("ckpt/checkpoint-9/cursor.json", head)


def test_read_files_returns_what_exists_and_leaves_the_missing_out(hub_store, tmp_path):
    save(hub_store, tmp_path, 127)
    head = hub_store.head()
    wanted = ["latest.json", "ckpt/checkpoint-127/cursor.json", "ckpt/checkpoint-9/cursor.json"]
    assert hub_store.read_files(wanted, head) == {path: hub_store.read_file(path, head) for path in wanted[:2]}


def test_row5_two_writers_same_parent_exactly_one_wins_with_412(hub_store, fake_hub, tmp_path, sleeps):
    other = HubStore(REPO_ID, endpoint=fake_hub.url, cache_dir=tmp_path / "other-cache", policy=fast_policy(sleeps))
    parent = hub_store.head()
    won = hub_store.commit_pointer(5, parent)
    with pytest.raises(StaleParentError, match="412"):
        other.commit_pointer(6, parent)
    assert hub_store.head() == won
    assert titles(fake_hub)[:2] == ["latest -> 5", "initial commit"]
    # the loser re-reads and re-decides from the fresh head; it never forces
    fresh = other.head()
    assert other.read_pointer(fresh) == Pointer(5, "ckpt/checkpoint-5")


def test_row21_two_hosts_race_on_parent_commit_one_proceeds(fake_hub, tmp_path, hub_env):
    stores = [
        HubStore(REPO_ID, endpoint=fake_hub.url, cache_dir=tmp_path / f"c{i}", policy=fast_policy(RecordingSleep()))
        for i in range(2)
    ]
    parent = stores[0].head()
    barrier = threading.Barrier(2)
    outcome: list[str] = []

    def writer(store, step):
        barrier.wait()
        try:
            store.commit_pointer(step, parent)
            outcome.append("won")
        except StaleParentError:
            outcome.append("refused")

    threads = [threading.Thread(target=writer, args=(s, 10 + i)) for i, s in enumerate(stores)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert sorted(outcome) == ["refused", "won"]
    assert sum(1 for t in titles(fake_hub) if t.startswith("latest ->")) == 1


@pytest.mark.parametrize("fault", [Fault("land_then_status", status=500), Fault("land_then_drop")], ids=["500", "drop"])
def test_row6_commit_landed_but_answer_lost_is_not_made_twice(hub_store, fake_hub, fault):
    parent = hub_store.head()
    fake_hub.inject("commit", fault)
    new = hub_store.commit_pointer(3, parent)
    assert titles(fake_hub) == ["latest -> 3", "initial commit"]
    assert new == hub_store.head()
    assert fake_hub.commit_posts == 1


def test_row6_commit_refused_with_500_before_landing_is_retried_once(hub_store, fake_hub, sleeps):
    parent = hub_store.head()
    fake_hub.inject("commit", status_fault(503))
    hub_store.commit_pointer(4, parent)
    assert titles(fake_hub) == ["latest -> 4", "initial commit"]
    assert fake_hub.commit_posts == 1  # the 503 was answered before the commit handler ran
    assert len(sleeps.waits) == 1


def test_row6_lost_answer_while_another_writer_moved_is_a_refusal(hub_store, fake_hub):
    parent = hub_store.head()
    repo = fake_hub.repo(REPO_ID)
    foreign = lambda: fake_hub.apply_commit(repo, "main", "foreign", {"x": b"1"}, [])  # noqa: E731
    fake_hub.inject("commit", Fault("call", action=foreign))
    with pytest.raises(StaleParentError):
        hub_store.commit_pointer(8, parent)
    assert "latest -> 8" not in titles(fake_hub)


def test_row7_reads_stay_pinned_when_main_moves_mid_wake(hub_store, fake_hub, tmp_path):
    save(hub_store, tmp_path, 127)
    pinned = hub_store.head()
    repo = fake_hub.repo(REPO_ID)
    moved = {"latest.json": Pointer(254, "ckpt/checkpoint-254").to_bytes()}
    fake_hub.apply_commit(repo, "main", "latest -> 254", moved, [])
    assert hub_store.read_pointer(pinned) == Pointer(127, "ckpt/checkpoint-127")
    assert hub_store.read_pointer(hub_store.head()).step == 254
    # every download named a commit id, never the moving branch name
    resolves = [path for route, path in fake_hub.requests if route.startswith("resolve")]
    assert any(f"/resolve/{pinned}/" in p for p in resolves)
    assert not [p for p in resolves if "/resolve/main/" in p]


@pytest.mark.parametrize("name", ["model.safetensors", "cursor.json"], ids=["lfs-sha256", "regular-git-sha1"])
def test_row8_row18_bit_flip_of_same_size_is_caught_and_never_cached(hub_store, fake_hub, tmp_path, name):
    save(hub_store, tmp_path, 127)
    head = hub_store.head()
    path = f"ckpt/checkpoint-127/{name}"
    fake_hub.inject("resolve_get", Fault("corrupt"), Fault("corrupt"), Fault("corrupt"), Fault("corrupt"))
    with pytest.raises(StoreUnavailableError, match="content hash"):
        hub_store.read_file(path, head)
    good = hub_store.read_file(path, head)
    assert good == fake_hub.repo(REPO_ID).resolve(head).files[path]


@pytest.mark.waits
def test_row18_truncated_body_is_completed_or_refused(hub_store, fake_hub, tmp_path):
    save(hub_store, tmp_path, 127)
    head = hub_store.head()
    path = "ckpt/checkpoint-127/model.safetensors"
    fake_hub.inject("resolve_get", Fault("truncate"))
    assert hub_store.read_file(path, head) == fake_hub.repo(REPO_ID).resolve(head).files[path]


@pytest.mark.waits
def test_row18_dropped_connection_on_download_is_retried(hub_store, fake_hub, tmp_path):
    save(hub_store, tmp_path, 127)
    head = hub_store.head()
    fake_hub.inject("resolve_head", Fault("drop"))
    fake_hub.inject("resolve_get", Fault("drop"))
    assert hub_store.read_pointer(head) == Pointer(127, "ckpt/checkpoint-127")


def test_row16_429_retry_after_is_honoured(hub_store, fake_hub, sleeps):
    fake_hub.inject("refs", status_fault(429, retry_after=7))
    head = hub_store.head()
    assert head == fake_hub.repo(REPO_ID).branches["main"]
    assert sleeps.waits == [7.0]


@pytest.mark.waits
def test_row16_429_on_paginated_listing_uses_the_clients_own_backoff(hub_store, fake_hub, sleeps):
    fake_hub.inject("commits", status_fault(429, retry_after=0))
    assert [c.title for c in hub_store.list_commits("main")] == ["initial commit"]
    assert sum(1 for route, _ in fake_hub.requests if route == "commits") == 2


def test_row16_5xx_storm_ends_as_unknown_after_bounded_attempts(hub_store, fake_hub, sleeps):
    fake_hub.inject("refs", *[status_fault(500)] * 10)
    with pytest.raises(StoreUnavailableError, match="failed 4 times"):
        hub_store.head()
    assert sum(1 for route, _ in fake_hub.requests if route == "refs") == 4
    assert sleeps.waits == [0.05, 0.1, 0.2]


@pytest.mark.waits
def test_row17_stalled_server_hits_the_deadline_and_answers_unknown(fake_hub, tmp_path, sleeps):
    store = HubStore(
        REPO_ID,
        endpoint=fake_hub.url,
        cache_dir=tmp_path / "c",
        policy=fast_policy(sleeps, request_timeout_s=0.3, deadline_s=1.5, max_attempts=50),
    )
    fake_hub.inject("refs", *[Fault("stall", seconds=1.0)] * 50)
    with pytest.raises(StoreUnavailableError, match="deadline"):
        store.head()
    # each attempt timed out on its own; the deadline, not the attempt budget, ended the call
    assert 1 <= sum(1 for route, _ in fake_hub.requests if route == "refs") < 50


def test_row17_retry_after_past_the_deadline_gives_up_without_waiting(fake_hub, tmp_path, sleeps, monkeypatch):
    store = HubStore(
        REPO_ID, endpoint=fake_hub.url, cache_dir=tmp_path / "c", policy=fast_policy(sleeps, deadline_s=5)
    )
    library_sleeps: list[float] = []
    monkeypatch.setattr(time, "sleep", library_sleeps.append)  # the client's own backoff sleeps here
    fake_hub.inject("commits", status_fault(429, retry_after=3600))  # inside the client's own backoff loop
    with pytest.raises(StoreUnavailableError, match="deadline"):
        store.list_commits("main")
    assert sleeps.waits == [] and library_sleeps == []
    assert sum(1 for route, _ in fake_hub.requests if route == "commits") == 1


@pytest.mark.waits
def test_row34_stale_parent_is_refused_then_redecided_from_fresh_state(hub_store, fake_hub, tmp_path):
    seen = hub_store.head()
    ckpt, _ = save(hub_store, tmp_path, 127)  # another writer advanced the branch
    with pytest.raises(StaleParentError):
        hub_store.commit_checkpoint(254, write_checkpoint_dir(tmp_path, 254), seen)
    assert titles(fake_hub)[0] == "latest -> 127"
    fresh = hub_store.head()
    assert hub_store.read_pointer(fresh).step == 127
    hub_store.commit_checkpoint(254, write_checkpoint_dir(tmp_path, 254), fresh)
    assert titles(fake_hub)[:2] == ["checkpoint 254", "latest -> 127"]


def test_token_comes_from_the_environment_and_a_wrong_one_is_a_clear_error(hub_store, monkeypatch):
    assert hub_store.head()  # the fake requires the bearer token from HF_TOKEN
    monkeypatch.setenv("HF_TOKEN", "hf_wrongTokenValue987654321")
    with pytest.raises(StoreError) as err:
        hub_store.head()
    assert "hf_wrongTokenValue987654321" not in str(err.value)
    assert "not authorized" in str(err.value) or "not accessible" in str(err.value)


def test_config_never_holds_a_token(tmp_path, hub_env):
    with pytest.raises(StoreError, match="HF_TOKEN"):
        HubStore.from_config({"repo_id": REPO_ID, "token": "hf_x"}, tmp_path)
    with pytest.raises(StoreError, match="owner/name"):
        HubStore.from_config({"repo_id": "nope"}, tmp_path)
    store = HubStore.from_config(
        {"repo_id": REPO_ID, "endpoint": "http://127.0.0.1:9", "cache_dir": "cache", "deadline_s": 3}, tmp_path
    )
    assert store.repo_type == "dataset" and store.branch == "main" and store.cache_dir == tmp_path / "cache"
    assert store.policy.deadline_s == 3.0


def test_trainer_saves_and_relay_check_run_end_to_end_through_the_hub(hub_store, fake_hub, tmp_path):
    """The trainer's session saves to the Hub (with a lost commit answer and a 429 on the way)
    and the relay's section 1 check, pinned to one head, finds nothing wrong."""
    from wikiengine.step.relay.decide import Settings
    from wikiengine.step.relay.observe import read_snapshot, run_checks
    from wikiengine.training import session
    from wikiengine.training.demo import create_demo_run

    run = create_demo_run(tmp_path / "demo", max_steps=8, session_steps=8)
    fake_hub.inject("commit", Fault("call", action=lambda: None), Fault("land_then_status", status=502))
    fake_hub.inject("preupload", status_fault(429, retry_after=0))
    assert session.main(run.session_argv(), store=hub_store) == 0
    head = hub_store.head()
    assert [c.title for c in hub_store.list_commits(head)] == [  # final/ follows latest -> max_steps
        "final 8", "latest -> 8", "checkpoint 8", "latest -> 4", "checkpoint 4", "initial commit"
    ]
    assert sorted(p.split("/", 1)[1] for p in hub_store.list_files("final", head)) == [
        "cursor.json", "manifest.json", "model.safetensors", "trainer_state.json"]
    assert not fake_hub.faults["commit"] and not fake_hub.faults["preupload"]  # every fault was met
    from wikiengine.training.config import tiny_demo_config

    config = json.loads(run.config_path.read_text())
    demo = tiny_demo_config(max_steps=8, session_steps=8)
    settings = Settings(
        max_steps=demo.max_steps, save_steps=demo.save_steps, session_steps=demo.session_steps,
        tokens_per_step=demo.tokens_per_step, samples_per_step=demo.samples_per_step,
        dataset_files_sha=config.get("dataset_files_sha") or None,
        shuffle_perm_sha=config.get("shuffle_perm_sha") or None,
    )
    fake_hub.inject("refs", status_fault(429, retry_after=0))
    snapshot = read_snapshot(hub_store)
    assert snapshot.head == head and snapshot.pointer == Pointer(8, "ckpt/checkpoint-8")
    findings = run_checks(snapshot, settings)
    assert findings == (), findings


def test_row5_identical_write_on_a_moved_branch_is_refused_not_silently_accepted(hub_store, fake_hub, tmp_path,
                                                                                   sleeps):
    """Every file already on the Hub: the client skips the commit and answers with the head,
    without checking parent_commit. The store must not take that as its own write."""
    other = HubStore(REPO_ID, endpoint=fake_hub.url, cache_dir=tmp_path / "other-cache", policy=fast_policy(sleeps))
    parent = hub_store.head()
    hub_store.commit_checkpoint(10, write_checkpoint_dir(tmp_path, 10), hub_store.commit_pointer(5, parent))
    posts = fake_hub.commit_posts
    with pytest.raises(StaleParentError, match="not committed on it"):
        other.commit_pointer(5, parent)  # the same latest.json, from a parent two commits behind
    assert fake_hub.commit_posts == posts  # the client sent nothing: the refusal is the store's own check
    assert titles(fake_hub)[:3] == ["checkpoint 10", "latest -> 5", "initial commit"]


def test_row5_identical_write_already_made_on_the_same_parent_is_that_commit(hub_store, fake_hub, tmp_path, sleeps):
    """Two writers with one parent and the same bytes: one commit exists, both see it as theirs (idempotent)."""
    other = HubStore(REPO_ID, endpoint=fake_hub.url, cache_dir=tmp_path / "other-cache", policy=fast_policy(sleeps))
    parent = hub_store.head()
    first = hub_store.commit_pointer(5, parent)
    assert other.commit_pointer(5, parent) == first
    assert titles(fake_hub)[:2] == ["latest -> 5", "initial commit"]


def test_identical_write_on_the_current_head_is_a_no_op(hub_store, fake_hub):
    head = hub_store.commit_pointer(5, hub_store.head())
    assert hub_store.commit_pointer(5, head) == head
    assert titles(fake_hub)[:2] == ["latest -> 5", "initial commit"]


def test_token_from_the_usual_token_file_when_the_environment_has_none(hub_store, hub_env, monkeypatch):
    from tests.fakes.fixtures import HF_TEST_TOKEN

    monkeypatch.delenv("HF_TOKEN")
    with pytest.raises(StoreError, match="not authorized|not accessible"):
        hub_store.head()
    (hub_env / "token").write_text(HF_TEST_TOKEN)  # where `hf auth login` writes it (HF_HOME/token)
    assert hub_store.head()
