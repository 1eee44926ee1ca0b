"""benchmarks/bench_scale.py's ``gke`` mode, small: a lane's stubs over loopback GKE clusters
(one fake API server per track, tests/fakes/fake_k8s.py) are each dispatched once and each
completion is seen once; the counts the benchmark reports would show it if they were not."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

pytest.importorskip("kubernetes")

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_scale.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_scale", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.waits
def test_gke_scale_dispatches_every_stub_once_and_sees_every_completion_once(bench, capsys, monkeypatch):
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    result = bench.gke_scale(["--tracks", "4", "--stubs", "20", "--sleep", "0.1", "--lost", "3",
                              "--growth", "1,4", "--held", "8", "--repeats", "2"])
    out = capsys.readouterr().out
    assert result["duplicates"] == 0 and result["lost"] == 0
    assert result["jobs"] == 20 and result["creates"] == 20  # the 6 re-asked launches adopted, never re-created
    assert len(result["launch_s"]) == 20 and result["wake_count"] >= 20 // 4
    assert [row[0] for row in result["growth"]] == [1, 4]
    assert "duplicate dispatches: 0 (of 20 jobs); lost completions: 0 (of 20 stubs)" in out
    assert "JobSet create requests: 20" in out


def test_a_stub_the_clusters_hold_twice_is_counted_a_duplicate(bench):
    """The duplicate count is what the clusters hold, not the driver's own bookkeeping."""
    from wikiengine.executors.lane_pool import TrackPool

    class Args:
        tracks, stubs, lost = 2, 4, 100

    with bench.fake_clusters(2) as tracks:
        apis = [api for api, _ in tracks.values()]
        kubelet = bench.Kubelet(apis, 0.05)
        kubelet.start()
        try:
            held = lambda: [name for api in apis for _, name in list(api.jobsets)]  # noqa: E731
            result = bench.drive(TrackPool({t: b for t, (_, b) in tracks.items()}), Args, bench.GKE_LANE,
                                 ["bash", "-c", 'touch "$XPROF_PATH" "$HLO_PATH"'], lambda: None,
                                 lambda: [*held(), held()[0]], lambda: None)  # one stub held on a second cluster
        finally:
            kubelet.halt.set()
            kubelet.join()
    assert result["jobs"] == 4 and result["lost"] == 0
    assert result["duplicates"] == 1
