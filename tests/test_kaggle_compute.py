"""KaggleCompute through the real kagglesdk client against the loopback Kaggle API (tests/fakes/fake_kaggle.py)."""

from __future__ import annotations

import base64
import datetime as dt
import json

import pytest

from tests.fakes.fake_kaggle import Fault, Run, status_fault
from tests.fakes.fixtures import (  # noqa: F401 - pytest fixtures
    KAGGLE_TEST_KEY,
    KAGGLE_TEST_USER,
    fake_kaggle,
    fast_policy,
    kaggle_env,
    kaggle_json,
    loopback_only,
    sleeps,
)
from wikiengine.executors.compute import (
    CapacityError,
    ComputeError,
    ComputeUnavailableError,
    LaunchRequest,
    SessionState,
    SessionStatus,
)
from wikiengine.executors.kaggle_compute import KaggleCompute, LaunchBlockedError, classify_exit, split_ref

SLUG = f"{KAGGLE_TEST_USER}/ounce100m-p4-session2"
BOOTSTRAP = 'import os\nos.environ["QUOTA_LEFT_HOURS"] = "22.5"\nprint("bootstrap")\n'

pytestmark = pytest.mark.usefixtures("loopback_only")


class Clock:
    def __init__(self):
        self.now = dt.datetime(2026, 9, 21, 3, 0, tzinfo=dt.UTC)

    def __call__(self):
        return self.now


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def compute(fake_kaggle, tmp_path, sleeps, clock):
    return KaggleCompute(
        KAGGLE_TEST_USER, claims_path=tmp_path / "claims.json", policy=fast_policy(sleeps), clock=clock, claim_ttl_s=600
    )


def request(slug: str = SLUG) -> LaunchRequest:
    return LaunchRequest(slug=slug, script_text=BOOTSTRAP, session_timeout_s=25200)


def test_launch_sends_the_full_envelope_and_records_the_returned_ref(compute, fake_kaggle):
    record = compute.launch(request())
    body = fake_kaggle.saves[-1]
    assert body == {
        "slug": SLUG,
        "newTitle": "ounce100m-p4-session2",
        "text": BOOTSTRAP,
        "language": "python",
        "kernelType": "script",
        "isPrivate": True,
        "enableGpu": True,
        "enableTpu": False,
        "enableInternet": True,
        "sessionTimeoutSeconds": 25200,
        "machineShape": "NvidiaTeslaT4",
        "kernelExecutionType": "SAVE_AND_RUN_ALL",
    }
    assert record.ref == SLUG and record.version == 1
    assert record.kernel_id == str(fake_kaggle.kernels[SLUG].id)
    assert record.submitted_at.tzinfo is not None
    claims = json.loads((compute.claims.path).read_text())
    assert claims[0]["ref"] == SLUG and claims[0]["version"] == 1 and claims[0]["state"] == "pending"


def test_an_existing_kernel_never_gets_a_title(compute, fake_kaggle):
    fake_kaggle.add_kernel(SLUG, run=Run(statuses=["COMPLETE"]))
    record = compute.launch(request())
    assert "newTitle" not in fake_kaggle.saves[-1]
    assert record.ref == SLUG and record.version == 2
    assert list(fake_kaggle.kernels) == [SLUG]


def test_a_title_that_would_rename_the_slug_is_refused_before_any_push(compute, fake_kaggle):
    with pytest.raises(ComputeError, match="rename"):
        compute.launch(LaunchRequest(SLUG, BOOTSTRAP, 25200, title="Ounce session two"))
    assert fake_kaggle.saves == []


def test_status_life_and_log_tail_poll_the_returned_ref(compute, fake_kaggle):
    record = compute.launch(request())
    states = [compute.status(record.ref).state for _ in range(4)]
    assert states == [SessionState.QUEUED, SessionState.RUNNING, SessionState.COMPLETE, SessionState.COMPLETE]
    done = compute.status(record.ref)
    assert done.exit_code == 0 and done.failure_message is None
    assert (done.version, done.kernel_id) == (record.version, record.kernel_id)  # what an adopting wake records
    assert (done.ended_at - done.started_at).total_seconds() == 9000.0
    assert compute.log_tail(record.ref, lines=1) == "saved checkpoint 1524"
    report = compute.exit_report(record.ref)
    assert report.runtime_s == 9000.0 and not report.refused_to_start


def test_quota_reads_used_total_and_refresh(compute, fake_kaggle):
    quota = compute.quota()
    assert quota.used_hours == 7.5 and quota.total_hours == 30.0 and quota.left_hours == 22.5
    assert quota.refresh_at == dt.datetime(2026, 12, 5, tzinfo=dt.UTC)


def test_exit_inside_two_minutes_is_refused_to_start_with_the_reason_from_the_log(compute, fake_kaggle):
    fake_kaggle.next_runs.append(Run(
        statuses=["RUNNING", "ERROR"],
        log=[{"stream_name": "stdout", "time": 2.0, "data": "bootstrap: reading pointer\n"},
             {"stream_name": "stderr", "time": 41.0, "data": "REFUSED: free space 3.1 GB < 20 GB\n"}],
        failure_message="Your notebook tried to exit",
    ))
    record = compute.launch(request())
    assert compute.status(record.ref).state == SessionState.RUNNING
    status = compute.status(record.ref)
    assert status.state == SessionState.ERROR and status.exit_code == 1
    assert status.failure_message == "REFUSED: free space 3.1 GB < 20 GB"  # the log's reason, not the platform's
    assert status.started_at == record.submitted_at  # both on the server's clock
    assert (status.ended_at - status.started_at).total_seconds() == 41.0
    report = compute.exit_report(record.ref, status)
    assert report.refused_to_start and report.runtime_s == 41.0
    assert report.reason.endswith("REFUSED: free space 3.1 GB < 20 GB")


@pytest.mark.parametrize(
    "state, log, refused",
    [
        (SessionState.ERROR, [{"time": 119.0, "data": "x\n"}], True),
        (SessionState.COMPLETE, [{"time": 30.0, "data": "nothing to do\n"}], True),
        (SessionState.ERROR, [{"time": 121.0, "data": "oom\n"}], False),
        (SessionState.ERROR, [], True),
        (SessionState.COMPLETE, [], False),
        (SessionState.RUNNING, [{"time": 5.0, "data": "x\n"}], False),
    ],
)
def test_refused_to_start_classification_table(state, log, refused):
    assert classify_exit(SessionStatus(state), json.dumps(log)).refused_to_start is refused


def test_row23_launch_not_yet_visible_blocks_relaunch_until_seen_or_ttl(compute, fake_kaggle, clock):
    fake_kaggle.next_runs.append(Run(hidden_polls=3, statuses=["RUNNING", "COMPLETE"]))
    record = compute.launch(request())
    assert compute.status(record.ref).state == SessionState.QUEUED  # 404 for our version: not yet visible
    with pytest.raises(LaunchBlockedError, match="not yet|queued"):
        compute.launch(request())
    assert len(fake_kaggle.saves) == 1
    clock.now += dt.timedelta(seconds=601)  # past the TTL: a still-invisible launch is gone
    assert compute.status(record.ref).state == SessionState.GONE


def test_row23_the_previous_versions_status_is_not_read_as_ours(compute, fake_kaggle):
    fake_kaggle.add_kernel(SLUG, run=Run(statuses=["COMPLETE"]))
    fake_kaggle.next_runs.append(Run(hidden_polls=2, statuses=["RUNNING"]))
    record = compute.launch(request())
    assert record.version == 2
    assert compute.status(record.ref).state == SessionState.QUEUED  # v2 invisible; v1 COMPLETE ignored
    assert compute.status(record.ref).state == SessionState.QUEUED
    assert compute.status(record.ref).state == SessionState.RUNNING


def test_a_session_seen_alive_blocks_any_new_launch(compute, fake_kaggle):
    record = compute.launch(request())
    compute.status(record.ref)
    with pytest.raises(LaunchBlockedError):
        compute.launch(request(f"{KAGGLE_TEST_USER}/ounce100m-p4-session3"))
    assert len(fake_kaggle.saves) == 1


def test_after_a_complete_session_the_next_launch_goes_through(compute, fake_kaggle):
    first = compute.launch(request())
    while compute.status(first.ref).state.alive:
        pass
    second = compute.launch(request(f"{KAGGLE_TEST_USER}/ounce100m-p4-session3"))
    assert second.ref == f"{KAGGLE_TEST_USER}/ounce100m-p4-session3" and len(fake_kaggle.saves) == 2


def test_platform_failure_message_is_kept_when_there_is_no_log(compute, fake_kaggle):
    fake_kaggle.next_runs.append(Run(statuses=["ERROR"], log=[], failure_message="Kernel was killed"))
    record = compute.launch(request())
    status = compute.status(record.ref)
    assert status.state == SessionState.ERROR and status.failure_message == "Kernel was killed"
    assert compute.exit_report(record.ref, status).refused_to_start  # an error with no log never started


@pytest.mark.parametrize("fault", [status_fault(500), status_fault(503, retry_after=1), Fault("drop")],
                         ids=["500", "503", "drop"])
def test_row24_failed_status_call_is_unknown_never_gone(compute, fake_kaggle, fault):
    fake_kaggle.add_kernel(SLUG, run=Run(statuses=["COMPLETE"]))
    fake_kaggle.inject("GetKernelSessionStatus", *[fault] * 10)
    assert compute.status(SLUG).state == SessionState.UNKNOWN
    with pytest.raises(LaunchBlockedError, match="unknown"):
        compute.launch(request())
    assert fake_kaggle.saves == []


def test_row24_only_a_404_means_gone(compute, fake_kaggle):
    assert compute.status(f"{KAGGLE_TEST_USER}/never-pushed").state == SessionState.GONE


def test_row16_429_retry_after_on_a_read_is_honoured(compute, fake_kaggle, sleeps):
    fake_kaggle.inject("GetAcceleratorQuotaStatistics", status_fault(429, retry_after=9))
    assert compute.quota().total_hours == 30.0
    assert sleeps.waits == [9.0]


@pytest.mark.waits
def test_row17_quota_unreadable_is_unavailable_not_exhausted(fake_kaggle, tmp_path, sleeps, clock):
    compute = KaggleCompute(
        KAGGLE_TEST_USER, claims_path=tmp_path / "c.json", clock=clock,
        policy=fast_policy(sleeps, request_timeout_s=0.3, deadline_s=1.5, max_attempts=20),
    )
    fake_kaggle.inject("GetAcceleratorQuotaStatistics", *[Fault("stall", seconds=1.0)] * 20)
    with pytest.raises(ComputeUnavailableError, match="deadline"):
        compute.quota()


def test_row25_capacity_refusal_is_infrastructure_closed_and_not_retried(compute, fake_kaggle):
    fake_kaggle.inject("SaveKernel", Fault("capacity"))
    with pytest.raises(CapacityError, match="Maximum batch GPU session count"):
        compute.launch(request())
    assert len(fake_kaggle.saves) == 1
    claims = json.loads(compute.claims.path.read_text())
    assert claims[0]["state"] == "closed" and claims[0]["closed_reason"] == "capacity"


def test_row25_capacity_refusal_as_an_http_error_is_also_capacity(compute, fake_kaggle):
    fake_kaggle.inject("SaveKernel", Fault("capacity_http"))
    with pytest.raises(CapacityError, match="Maximum batch GPU session count"):
        compute.launch(request())
    assert fake_kaggle.calls.count("SaveKernel") == 1
    assert json.loads(compute.claims.path.read_text())[0]["closed_reason"] == "capacity"


def test_message_less_api_error_becomes_a_clear_error_naming_the_request(compute, fake_kaggle):
    fake_kaggle.inject("SaveKernel", Fault("empty_error"))
    with pytest.raises(ComputeError) as err:
        compute.launch(request())
    assert str(err.value).startswith(f"kaggle: SaveKernel {SLUG} refused with HTTP 400 and no message")


def test_row22_push_whose_answer_is_lost_blocks_relaunch(compute, fake_kaggle):
    fake_kaggle.inject("SaveKernel", Fault("land_then_drop"))
    with pytest.raises(ComputeUnavailableError, match="outcome unknown"):
        compute.launch(request())
    assert len(fake_kaggle.saves) == 1
    with pytest.raises(LaunchBlockedError):
        compute.launch(request())
    assert len(fake_kaggle.saves) == 1


def test_row26_foreign_kernel_running_on_the_account_blocks_launch(compute, fake_kaggle):
    fake_kaggle.add_kernel(f"{KAGGLE_TEST_USER}/someones-notebook", run=Run(statuses=["RUNNING"]))
    sessions = dict(compute.list_sessions())
    assert sessions[f"{KAGGLE_TEST_USER}/someones-notebook"] == SessionState.RUNNING
    with pytest.raises(LaunchBlockedError, match="someones-notebook"):
        compute.launch(request())
    assert fake_kaggle.saves == []


def test_credentials_from_kaggle_json_when_env_has_none(fake_kaggle, kaggle_env, monkeypatch, tmp_path, clock):
    monkeypatch.delenv("KAGGLE_USERNAME")
    monkeypatch.delenv("KAGGLE_KEY")
    kaggle_json(kaggle_env, KAGGLE_TEST_USER, KAGGLE_TEST_KEY)
    compute = KaggleCompute.from_config({}, tmp_path)
    assert compute.owner == KAGGLE_TEST_USER
    assert compute.quota().used_hours == 7.5


def test_wrong_key_is_refused_without_echoing_it(compute, fake_kaggle, monkeypatch):
    monkeypatch.setenv("KAGGLE_KEY", "wrong-key-value-424242")
    with pytest.raises(ComputeUnavailableError) as err:
        compute.quota()
    assert "wrong-key-value-424242" not in str(err.value)
    assert base64.b64encode(b"relaybot:wrong-key-value-424242").decode() not in str(err.value)


def test_config_never_holds_a_key(tmp_path, kaggle_env):
    with pytest.raises(ComputeError, match="KAGGLE_KEY"):
        KaggleCompute.from_config({"owner": "x", "key": "abc"}, tmp_path)
    compute = KaggleCompute.from_config({"owner": "someone", "claims_file": "state/claims.json"}, tmp_path)
    assert compute.claims.path == tmp_path / "state/claims.json" and compute.machine_shape == "NvidiaTeslaT4"


@pytest.mark.parametrize(
    "ref, parts",
    [("a/b", ("a", "b", None)), ("/code/a/b", ("a", "b", None)), ("a/b/3", ("a", "b", 3)),
     ("https://www.kaggle.com/code/a/b", ("a", "b", None))],
)
def test_split_ref(ref, parts):
    assert split_ref(ref) == parts


def test_message_less_error_on_a_read_names_the_request_and_status(compute, fake_kaggle):
    fake_kaggle.inject("GetAcceleratorQuotaStatistics", Fault("empty_error"))
    with pytest.raises(ComputeUnavailableError) as err:
        compute.quota()
    assert str(err.value) == "kaggle: GetAcceleratorQuotaStatistics: HTTP 400 with no message"


def test_row22_lost_push_on_an_existing_kernel_is_not_closed_by_the_previous_versions_status(compute, fake_kaggle):
    fake_kaggle.add_kernel(SLUG, run=Run(statuses=["COMPLETE"]))
    fake_kaggle.next_runs.append(Run(hidden_polls=5, statuses=["RUNNING"]))
    fake_kaggle.inject("SaveKernel", Fault("land_then_drop"))
    with pytest.raises(ComputeUnavailableError):
        compute.launch(request())
    assert compute.status(SLUG).state == SessionState.QUEUED  # v1 says COMPLETE, but v2 may be ours
    with pytest.raises(LaunchBlockedError):
        compute.launch(request())
    assert len(fake_kaggle.saves) == 1


@pytest.mark.parametrize(
    "slug, timeout, message",
    [(f"{KAGGLE_TEST_USER}/someone-else", 3600, "not one of this run's slugs"),
     (f"{KAGGLE_TEST_USER}/ounce100m-p4-session2", 13 * 3600, "outside"),
     ("otheruser/ounce100m-p4-session2", 3600, "slug must be"),
     (f"{KAGGLE_TEST_USER}/ounce100m-p4-session2", 0, "outside")],
)
def test_launch_refuses_slugs_and_timeouts_outside_the_run_before_any_call(fake_kaggle, tmp_path, slug, timeout,
                                                                          message):
    compute = KaggleCompute.from_config({"owner": KAGGLE_TEST_USER, "slug_prefix": "ounce100m-p4-session"}, tmp_path)
    with pytest.raises(ComputeError, match=message):
        compute.launch(LaunchRequest(slug, BOOTSTRAP, timeout))
    assert fake_kaggle.calls == []


@pytest.mark.parametrize(
    "content", ["{not json", '[{"slug": "a/b"}]', '[{"slug": "a/b", "requested_at": "x", "z": 1}]']
)
def test_a_damaged_claims_record_refuses_to_launch_with_one_line(compute, fake_kaggle, content):
    compute.claims.path.write_text(content)
    with pytest.raises(ComputeError) as err:
        compute.launch(request())
    assert "claims" in str(err.value) and "\n" not in str(err.value)
    assert fake_kaggle.saves == []


def test_missing_credentials_refuse_before_any_claim(compute, fake_kaggle, monkeypatch):
    monkeypatch.delenv("KAGGLE_KEY")
    with pytest.raises(ComputeError, match="no credentials"):
        compute.launch(request())
    assert fake_kaggle.saves == [] and compute.claims.load() == []


KAGGLE_CLI_CHILD = """
import json, os, sys
from kagglesdk import kaggle_env
kaggle_env._env_to_endpoint[kaggle_env.KaggleEnv.LOCAL] = os.environ["FAKE_KAGGLE_URL"]
from kaggle.api.kaggle_api_extended import KaggleApi
api = KaggleApi()
api.authenticate()
folder = sys.argv[1]
pushed = api.kernels_push(folder, timeout="3600", acc="NvidiaTeslaT4")
status = api.kernels_status(pushed.ref.replace("/code/", ""))
quota = api.quota_view()
print(json.dumps({"ref": pushed.ref, "version": pushed.version_number, "status": status.status.name,
                  "gpu_used_s": quota.gpu_quota.time_used.total_seconds()}))
"""


def test_the_kaggle_cli_api_speaks_to_the_same_fake(fake_kaggle, kaggle_env, tmp_path):
    """The fake is checked against the client's own KaggleApi (kernels push/status, quota) in a
    fresh process, and our envelope is compared with the CLI's for the same metadata."""
    import os
    import subprocess
    import sys

    # kaggle 2.2.5's KaggleApi imports `six` without declaring it (KaggleCompute needs only kagglesdk)
    pytest.importorskip("six", reason="the kaggle CLI API needs six, which kaggle 2.2.5 does not declare")
    folder = tmp_path / "kernel"
    folder.mkdir()
    (folder / "run.py").write_text(BOOTSTRAP)
    (folder / "kernel-metadata.json").write_text(json.dumps({
        "id": f"{KAGGLE_TEST_USER}/cli-session1", "title": "cli-session1", "code_file": "run.py",
        "language": "python", "kernel_type": "script", "is_private": True, "enable_gpu": True,
        "enable_internet": True,
    }))
    fake_kaggle.next_runs.append(Run(statuses=["QUEUED", "COMPLETE"]))  # ended before our own launch
    env = dict(os.environ, FAKE_KAGGLE_URL=fake_kaggle.url)
    result = subprocess.run([sys.executable, "-c", KAGGLE_CLI_CHILD, str(folder)], env=env, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    answer = json.loads(result.stdout.strip().splitlines()[-1])
    assert answer == {"ref": f"/code/{KAGGLE_TEST_USER}/cli-session1", "version": 1, "status": "QUEUED",
                      "gpu_used_s": 27000.0}
    cli_body = fake_kaggle.saves[-1]
    ours = KaggleCompute(KAGGLE_TEST_USER, claims_path=tmp_path / "claims.json")
    ours.launch(LaunchRequest(f"{KAGGLE_TEST_USER}/cli-session2", BOOTSTRAP, 3600))
    our_body = fake_kaggle.saves[-1]
    shared = {k: v for k, v in cli_body.items() if k not in ("slug", "newTitle")}
    assert {k: our_body[k] for k in shared} == shared  # everything the CLI sends, we send alike
    assert our_body["kernelExecutionType"] == "SAVE_AND_RUN_ALL"  # and the execution type on top
