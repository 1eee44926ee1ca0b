"""`wiki step` with the Hub store and Kaggle compute chosen by the run's config, end to end
through the real huggingface_hub and kagglesdk clients against the loopback fakes."""

from __future__ import annotations

import copy
import json

import pytest
from test_relay_support import CONFIG, Clock, checkpoint_files, git, make_wiki

from tests.fakes.fake_hub import Fault as HubFault
from tests.fakes.fake_kaggle import Fault as KaggleFault
from tests.fakes.fake_kaggle import Run
from tests.fakes.fake_kaggle import status_fault as kaggle_status_fault
from tests.fakes.fixtures import (  # noqa: F401 - pytest fixtures
    KAGGLE_TEST_USER,
    REPO_ID,
    fake_hub,
    fake_kaggle,
    hub_env,
    kaggle_env,
    loopback_only,
)
from wikiengine.executors.hub_store import HubStore
from wikiengine.model import memory
from wikiengine.model.state import RelayState
from wikiengine.step.relay.wake import run_step

pytestmark = pytest.mark.usefixtures("loopback_only")
SESSION1 = f"{KAGGLE_TEST_USER}/tiny-session1"


@pytest.fixture
def wiki(tmp_path, fake_hub, fake_kaggle):
    config = copy.deepcopy(CONFIG)
    config["session_timeout_s"] = 7200
    config["store"] = {"kind": "hub", "repo_id": REPO_ID, "repo_type": "dataset", "endpoint": fake_hub.url,
                       "cache_dir": ".wiki/hub-cache", "deadline_s": 20, "base_wait_s": 0.05}
    config["compute"] = {"kind": "kaggle", "owner": KAGGLE_TEST_USER, "slug_prefix": "tiny-session",
                         "accelerator": "gpu", "claims_file": ".wiki/kaggle-claims.json", "deadline_s": 20,
                         "base_wait_s": 0.05}
    root = tmp_path / "wiki-repo"
    root.mkdir()
    make_wiki(root, config)
    store = HubStore(REPO_ID, endpoint=fake_hub.url, cache_dir=tmp_path / "writer-cache")
    clock = Clock()
    fake_kaggle.clock = clock  # the server's Date headers follow the test's clock
    return root, store, clock


def save(store: HubStore, tmp_path, step: int) -> None:
    """The trainer's two commits for ``step``, through the Hub client."""
    folder = tmp_path / f"ckpt-{step}"
    folder.mkdir()
    for name, data in checkpoint_files(step).items():
        (folder / name).write_bytes(data)
    store.commit_pointer(step, store.commit_checkpoint(step, folder, store.head()))


@pytest.mark.waits
def test_wake_check_launch_and_next_session_through_hub_and_kaggle(wiki, fake_hub, fake_kaggle, tmp_path):
    root, store, clock = wiki
    fake_kaggle.next_runs.append(Run(statuses=["RUNNING"]))
    fake_hub.inject("refs", HubFault("drop"))  # the check survives a dropped connection
    first = run_step(root, clock=clock)  # backends built from the program's config by the registry
    assert first.decision == "launch", first.reasons
    assert [s["slug"] for s in fake_kaggle.saves] == [SESSION1]
    assert fake_kaggle.saves[0]["newTitle"] == "tiny-session1" and fake_kaggle.saves[0]["enableGpu"] is True
    (asset,) = memory.read_assets(root)
    assert asset.ref == SESSION1

    clock.advance(minutes=30)
    assert run_step(root, clock=clock).decision == "running"
    assert len(fake_kaggle.saves) == 1  # alive at Kaggle: no second launch

    save(store, tmp_path, 4)
    save(store, tmp_path, 8)
    version = fake_kaggle.kernels[SESSION1].versions[-1]
    version.run.statuses = ["COMPLETE"]
    version.run.log = [{"stream_name": "stdout", "time": 3500.0, "data": "saved checkpoint 8\n"}]
    clock.advance(hours=1)
    second = run_step(root, clock=clock)
    assert second.decision == "launch" and second.step == 8, second.reasons
    assert [s["slug"] for s in fake_kaggle.saves] == [SESSION1, f"{KAGGLE_TEST_USER}/tiny-session2"]
    assert 'os.environ["QUOTA_LEFT_HOURS"] = "22.50"' in fake_kaggle.saves[-1]["text"]
    assert RelayState.read(root).high_water_step == 8
    claims = json.loads((root / ".wiki" / "kaggle-claims.json").read_text())
    assert [c["state"] for c in claims] == ["closed", "pending"]
    assert "kaggle-claims" not in git(root, "ls-files")  # runtime state, not memory


@pytest.mark.waits
def test_unknown_kaggle_status_never_launches_through_wiki_step(wiki, fake_kaggle):
    root, store, clock = wiki
    fake_kaggle.next_runs.append(Run(statuses=["RUNNING"]))
    assert run_step(root, clock=clock).decision == "launch"
    fake_kaggle.inject("GetKernelSessionStatus", *[kaggle_status_fault(503)] * 40)
    clock.advance(hours=20)
    result = run_step(root, clock=clock)
    assert result.decision == "wait"
    assert any("status unknown" in reason for reason in result.reasons), result.reasons
    assert len(fake_kaggle.saves) == 1


def test_row25_capacity_refusal_through_wiki_step_closes_the_row_unspent_once(wiki, fake_kaggle):
    root, store, clock = wiki
    fake_kaggle.inject("SaveKernel", KaggleFault("capacity"))
    result = run_step(root, clock=clock)
    assert result.exit_code == 0
    assert fake_kaggle.calls.count("SaveKernel") == 1  # no retry storm
    assert [r.outcome for r in memory.read_ledger(root)] == ["booked", "unspent"]
    assert "capacity" in git(root, "log", "-1", "--format=%s")


def test_two_refusals_to_start_read_from_kaggle_logs_block_a_third_launch(wiki, fake_kaggle):
    """Kaggle's log timestamps place each session's 40 s run on the server clock; wiki step sees two
    fast exits with the same reason (from the log) and blocks instead of launching a third."""
    root, store, clock = wiki
    refusal = [{"stream_name": "stdout", "time": 1.0, "data": "bootstrap: checking free space\n"},
               {"stream_name": "stderr", "time": 40.0, "data": "REFUSED: free space 3.1 GB < 20 GB\n"}]
    for _ in range(2):
        fake_kaggle.next_runs.append(Run(statuses=["ERROR"], log=list(refusal), failure_message="Kernel failed"))
    assert run_step(root, clock=clock).decision == "launch"
    clock.advance(minutes=5)
    assert run_step(root, clock=clock).decision == "launch"
    clock.advance(minutes=5)
    result = run_step(root, clock=clock)
    assert result.decision == "blocked", result.reasons
    assert fake_kaggle.calls.count("SaveKernel") == 2
    (entry,) = memory.read_errors(root)
    assert entry.kind == "crash_loop" and "REFUSED: free space" in entry.evidence


@pytest.mark.waits
def test_row24_item9_an_unreadable_listing_never_closes_a_claim_through_wiki_step(wiki, fake_kaggle, monkeypatch):
    """Issue 13 item 9: the wake died after the push; the listing cannot be read. Past the claim TTL the
    claimed session is unknown, not gone: its booked row stays open and nothing is booked again."""
    from wikiengine.step.relay import act

    root, store, clock = wiki
    fake_kaggle.next_runs.append(Run(statuses=["RUNNING"]))

    class Killed(BaseException):
        pass

    def killed_record(*args, **kwargs):
        raise Killed()

    with monkeypatch.context() as patch, pytest.raises(Killed):
        patch.setattr(act, "record", killed_record)
        run_step(root, clock=clock)
    assert RelayState.read(root).claim is not None
    fake_kaggle.inject("ListKernels", *[kaggle_status_fault(503)] * 40)
    clock.advance(hours=2)  # well past the claim TTL
    result = run_step(root, clock=clock)
    assert result.decision == "wait", result.reasons
    assert any("unknown is not gone" in r for r in result.reasons)
    assert [r.outcome for r in memory.read_ledger(root)] == ["booked"]
    assert len(fake_kaggle.saves) == 1
