"""The compute protocol's "unknown" (executors/compute.py), every backend against it (issue 13 item 9).

A failed status call is UNKNOWN, never GONE and never an exception; an unreadable listing raises
ComputeUnavailableError, never a stand-in row; an unreadable quota raises; every backend can be
asked to cancel. And the wake reads an unreadable listing as "unknown": a claimed session is
never taken for gone, so its ledger row is not closed and nothing is booked again."""

from __future__ import annotations

import json

import pytest

from tests.fakes.fake_kaggle import Run, status_fault
from tests.fakes.fixtures import (  # noqa: F401 - pytest fixtures
    KAGGLE_TEST_USER,
    fake_kaggle,
    fast_policy,
    kaggle_env,
    loopback_only,
    sleeps,
)
from wikiengine.executors.compute import ComputeBackend, ComputeUnavailableError, SessionState
from wikiengine.executors.kaggle_compute import KaggleCompute
from wikiengine.executors.local_compute import LocalProcessCompute
from wikiengine.step.relay.observe import claimed_view

pytest.importorskip("kubernetes")
from test_gke import fleet, gke_compute  # noqa: E402,F401 - the GKE loopback fleet fixture


class LocalCase:
    """The local backend with a session whose record is unreadable and a state dir that is not a directory."""

    def __init__(self, tmp_path):
        self.tmp_path = tmp_path
        self.compute = LocalProcessCompute(tmp_path / "state", quota_hours=2.0)
        session = self.compute.state_dir / "tiny-session1"
        session.mkdir(parents=True)
        (session / "session.json").write_text(json.dumps({"slug": "tiny-session1", "version": 1, "pid": None,
                                                          "submitted_at": "2026-09-21T03:00:00+00:00"}))
        self.ref = "tiny-session1"

    def break_status(self):
        (self.compute.state_dir / "tiny-session1" / "session.json").write_text("{not json")

    def break_listing(self):
        self.compute.state_dir = self.tmp_path / "a-file"
        self.compute.state_dir.write_text("not a directory")

    def break_quota(self):
        (self.compute.state_dir / "tiny-session1" / "started.json").write_text("{not json")


class KaggleCase:
    def __init__(self, tmp_path, fake, sleeps):
        self.fake = fake
        self.compute = KaggleCompute(KAGGLE_TEST_USER, claims_path=tmp_path / "claims.json",
                                     policy=fast_policy(sleeps))
        self.ref = f"{KAGGLE_TEST_USER}/tiny-session1"
        fake.add_kernel(self.ref, run=Run(statuses=["RUNNING"]))

    def break_status(self):
        self.fake.inject("GetKernelSessionStatus", *[status_fault(500)] * 10)

    def break_listing(self):
        self.fake.inject("ListKernels", *[status_fault(503)] * 10)

    def break_quota(self):
        self.fake.inject("GetAcceleratorQuotaStatistics", *[status_fault(500)] * 10)


class GkeCase:
    def __init__(self, tmp_path, fleet):
        self.fleet = fleet
        self.compute = gke_compute(fleet, tmp_path, deadline_s=2.0, quota_hours=30)
        self.ref = "ounce100m-session1"
        self.server = fleet["dave-v5p-16"]
        self.server.add_jobset(self.ref)

    def break_status(self):
        self.server.fail("GET", r"/jobsets/ounce100m-session1$", "500", times=10)

    def break_listing(self):
        self.server.fail("GET", r"/jobsets$", "500", times=10)

    def break_quota(self):
        self.server.fail("GET", r"/jobsets$", "500", times=10)


@pytest.fixture(params=["local-process", "kaggle", "gke"])
def case(request, tmp_path):
    if request.param == "local-process":
        return LocalCase(tmp_path)
    if request.param == "kaggle":
        return KaggleCase(tmp_path, request.getfixturevalue("fake_kaggle"), request.getfixturevalue("sleeps"))
    return GkeCase(tmp_path, request.getfixturevalue("fleet"))


def test_every_backend_satisfies_the_protocol(case):
    assert isinstance(case.compute, ComputeBackend)
    assert callable(case.compute.cancel)


def test_row24_a_failed_status_call_is_unknown_never_gone_never_raised(case):
    case.break_status()
    assert case.compute.status(case.ref).state == SessionState.UNKNOWN


def test_row24_an_unreadable_listing_raises_never_a_stand_in_row(case):
    case.break_listing()
    with pytest.raises(ComputeUnavailableError):
        case.compute.list_sessions()


def test_row29_an_unreadable_quota_raises(case):
    case.break_quota()
    with pytest.raises(ComputeUnavailableError):
        case.compute.quota()


def test_row24_a_claim_behind_an_unreadable_listing_is_unknown_not_gone(case):
    case.break_listing()
    view = claimed_view(case.compute, "session-1", case.ref)
    assert view.state == SessionState.UNKNOWN
