"""GKE executor: cluster files, occupancy, selection and JobSet dispatch through the real
``kubernetes`` client against loopback API servers (tests/fakes/fake_k8s.py).

Seed 003 Steps 4-6 and 2(c)(iv)-(vi); RELIABILITY rows 17 (deadline on every call, unknown
-> no dispatch), 34 (a conflict is re-read, never overwritten) and 46 (no credential in output).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

pytest.importorskip("kubernetes")

from tests.fakes.fake_k8s import FakeKubeApi  # noqa: E402
from wikiengine._cli import main as cli  # noqa: E402
from wikiengine.core.errors import ExitCode, WikiError  # noqa: E402
from wikiengine.core.identity import NAME_RE  # noqa: E402
from wikiengine.executors.compute import (  # noqa: E402
    CapacityError,
    ComputeError,
    ComputeUnavailableError,
    LaunchRequest,
    SessionState,
)
from wikiengine.executors.gke import kube as kube_module  # noqa: E402
from wikiengine.executors.gke.clusters import discover_clusters, parse_cluster_file, parse_tpu  # noqa: E402
from wikiengine.executors.gke.compute import GkeCompute  # noqa: E402
from wikiengine.executors.gke.dispatch import (  # noqa: E402
    ClusterBusy,
    DispatchConflict,
    Experiment,
    dispatch,
    finished_workloads,
    jobset_status,
    log_tail,
    status,
    storage_paths,
)
from wikiengine.executors.gke.kube import KubeNotFound, KubeUnavailable  # noqa: E402
from wikiengine.executors.gke.occupancy import (  # noqa: E402
    Attribution,
    ClusterState,
    Me,
    check_all,
    classify,
    format_pool,
    is_active,
    parse_parallelism,
    select_clusters,
)

ENV_DIR = Path(__file__).parent / "data" / "env"
ME = Me("alice", "gemma4", "tpu")
CANARY_TOKEN = "canary-k8s-token-5b1f0c9e"
# a stalled server holds 5 s; a healthy one must answer within the deadline even on a loaded
# 2-core machine running two test workers (0.5 s was missed there once)
STALL_DEADLINE_S = 2.0
V5P_8CHIP = ["alice-v5p-16", "bob-v5p-16", "carol-pw-v5p-16-2", "dave-v5p-16"]


# -- cluster files (seed Steps 4-5) -------------------------------------------------------


@pytest.mark.parametrize(
    "file, name, xpk_type, chips, region, zone, context, derived",
    [
        (
            "gke-v5p-2x2x2-alice.md",
            "alice-v5p-16",
            "v5p-16",
            8,
            "europe-west4",
            "europe-west4-b",
            "gke_example-tpu-project_europe-west4_alice-v5p-16",
            False,
        ),
        ("gke-v5p-2x2x2-bob.md", "bob-v5p-16", "v5p-16", 8, "europe-west4", "europe-west4-b", "bob-ctx", False),
        (
            "gke-v5p-2x2x2-carol.md",
            "carol-pw-v5p-16-2",
            "v5p-16",
            8,
            "europe-west4",
            "europe-west4-b",
            "gke_example-tpu-project_europe-west4_carol-pw-v5p-16-2",
            False,
        ),
        (
            "gke-v5p-2x2x2-dave.md",
            "dave-v5p-16",
            "v5p-16",
            8,
            "europe-west4",
            None,
            "gke_example-tpu-project_europe-west4_dave-v5p-16",
            True,
        ),
        ("gke-v5p-2x2x1-frank.md", "frank-v5p-8", "v5p-8", 4, "us-east5", "us-east5-a", "frank-ctx", False),
        (
            "gke-v6e-2x4-erin.md",
            "erin-v6e-8",
            "v6e-8",
            8,
            "us-east5",
            "us-east5-b",
            "gke_example-tpu-project_us-east5_erin-v6e-8",
            False,
        ),
    ],
)
def test_cluster_file_fields(file, name, xpk_type, chips, region, zone, context, derived):
    cluster = parse_cluster_file(ENV_DIR / file)
    assert (cluster.name, cluster.tpu.xpk_type, cluster.tpu.chips) == (name, xpk_type, chips)
    assert (cluster.region, cluster.zone, cluster.project) == (region, zone, "example-tpu-project")
    assert (cluster.context, cluster.context_derived) == (context, derived)


@pytest.mark.parametrize(
    "line, xpk_type, chips, vms",
    [
        ("v5p, 2x2x2 topology = 8 chips per slice", "v5p-16", 8, 2),  # xpk v5p-16 = 16 TensorCores = 8 chips
        ("v5p, 2x2x1 topology = 4 chips per slice", "v5p-8", 4, 1),
        ("v5p, 4x4x4 topology = 64 chips per slice", "v5p-128", 64, 16),
        ("v6e, 2x4 = 8 chips", "v6e-8", 8, 1),  # v6e counts chips; 8 chips fit one host
        ("v6e, 4x4 = 16 chips", "v6e-16", 16, 4),
        ("v5e, 2x2 = 4 chips", "v5litepod-4", 4, 1),
        ("v4 2x2x2", "v4-16", 8, 2),
    ],
)
def test_xpk_tpu_type_tensorcores_versus_chips(line, xpk_type, chips, vms):
    tpu = parse_tpu(line, Path("x.md"), 1)
    assert (tpu.xpk_type, tpu.chips, tpu.vms) == (xpk_type, chips, vms)


GOOD_FILE = """# gke-v5p-2x2x2-zed

## Topology

- **Cluster**: zed-v5p-16
- **TPU**: v5p, 2x2x2 topology = 8 chips per slice
- **Zone**: europe-west4-b
- **Project**: example-tpu-project
"""


@pytest.mark.parametrize(
    "content, message, line",
    [
        (GOOD_FILE.replace("= 8 chips", "= 16 chips"), "topology 2x2x2 is 8 chips but the line says 16", 6),
        (GOOD_FILE + "- **TPU**: v5p, 2x2x1 topology = 4 chips per slice\n", "ambiguous tpu", 9),
        (GOOD_FILE.replace("v5p, 2x2x2", "v9z, 2x2x2"), "unknown TPU generation 'v9z'", 6),
        (GOOD_FILE.replace("v5p, 2x2x2", "v5p, 2x4"), "v5p topology must be AxBxC", 6),
        (GOOD_FILE.replace("- **TPU**: v5p, 2x2x2 topology = 8 chips per slice\n", ""), "no **TPU**: line", None),
        (GOOD_FILE.replace("- **Project**: example-tpu-project\n", ""), "no **Project**: line", None),
        (GOOD_FILE + "- **Region**: us-east5\n", "zone europe-west4-b is not in region us-east5", 9),
        (
            GOOD_FILE
            + "\n## Connection\n\ngcloud container clusters get-credentials other-v5p-16 --location=europe-west4\n",
            "ambiguous cluster",
            12,
        ),
        ("# nothing here\n\nJust prose.\n", "no Topology, Connection or Cluster section", 1),
    ],
)
def test_unreadable_or_ambiguous_cluster_file_names_file_and_line(tmp_path, content, message, line):
    path = tmp_path / "gke-v5p-2x2x2-zed.md"
    path.write_text(content)
    with pytest.raises(WikiError) as err:
        parse_cluster_file(path)
    assert message in str(err.value)
    assert str(err.value).startswith(f"{path}:{line}: " if line else f"{path}: ")


def test_cluster_file_that_is_not_utf8_is_an_error_with_its_line(tmp_path):
    path = tmp_path / "gke-v5p-2x2x2-zed.md"
    path.write_bytes(GOOD_FILE.encode().replace(b"example", b"ex\xffample"))
    with pytest.raises(WikiError, match=r"gke-v5p-2x2x2-zed\.md:8: not valid UTF-8"):
        discover_clusters(tmp_path)


def test_discover_filters_by_shape_and_skips_pages_that_are_not_cluster_files():
    everything = discover_clusters(ENV_DIR)
    assert "README" not in {c.path.stem for c in everything}
    assert len(everything) == 6
    assert [c.name for c in discover_clusters(ENV_DIR, "v5p", "2x2x2")] == V5P_8CHIP
    assert [c.name for c in discover_clusters(ENV_DIR, "v6e")] == ["erin-v6e-8"]
    assert discover_clusters(ENV_DIR, "v6e", "2x2x2") == []


def test_the_same_cluster_in_two_files_is_refused(tmp_path):
    shutil.copy(ENV_DIR / "gke-v5p-2x2x2-alice.md", tmp_path / "gke-v5p-2x2x2-alice.md")
    shutil.copy(ENV_DIR / "gke-v5p-2x2x2-alice.md", tmp_path / "gke-v5p-2x2x2-alice-copy.md")
    with pytest.raises(WikiError, match="also described by"):
        discover_clusters(tmp_path)


# -- attribution (seed Step 6 table), pure ------------------------------------------------


@pytest.mark.parametrize(
    "name, image, attribution, basis, lane",
    [
        ("alice-gemma4-tpu-v012-remat", None, Attribution.MINE_SAME_LANE, "name", "tpu"),
        (
            "alice-gemma4-tpu-v012-remat-b",
            "r/app:gemma4-jax-20260101-v012-x",
            Attribution.MINE_SAME_LANE,
            "name",
            "tpu",
        ),
        ("alice-gemma4-jax-v204-attn-fus", None, Attribution.MINE_OTHER_LANE, "name", "jax"),
        ("alice-llama3-8b-tpu-v003-tp", None, Attribution.MINE_OTHER_MODEL, "name", None),
        ("bob-gemma4-tpu-v001-remat", None, Attribution.FOREIGN, "name", None),
        # outside the convention: the image tag tells model and lane, the name tells the owner
        (
            "alice-manual-test",
            "registry.example/gemma4:gemma4-jax-2026-07-01-v009-sel",
            Attribution.MINE_OTHER_LANE,
            "image tag",
            "jax",
        ),
        (
            "alice-debug",
            "registry.example:5000/gemma4:gemma4-tpu-20260701-v010-ho",
            Attribution.MINE_SAME_LANE,
            "image tag",
            "tpu",
        ),
        (
            "alice-gemma4-tpu-scratch",
            "r/app:gemma4-jax-20260701-v011-x",
            Attribution.MINE_OTHER_LANE,
            "image tag",
            "jax",
        ),
        ("alice-old", "r/app:llama3-8b-tpu-20260701-v002-x", Attribution.MINE_OTHER_MODEL, "image tag", None),
        ("legacy-job", "r/app:gemma4-tpu-20260701-v002-x", Attribution.FOREIGN, "image tag", "tpu"),
        ("alice-debug", "r/app:latest", Attribution.MINE_OTHER_MODEL, "name", None),
        ("somebody-else", "r/app@sha256:abcd", Attribution.FOREIGN, "name", None),
    ],
)
def test_classify_by_name_with_image_tag_backstop(name, image, attribution, basis, lane):
    got_attribution, got_basis, _model, got_lane = classify(name, image, ME)
    assert (got_attribution, got_basis, got_lane) == (attribution, basis, lane)


@pytest.mark.parametrize(
    "status, active",
    [
        ({}, True),
        ({"terminalState": "Completed"}, False),
        ({"terminalState": "Failed"}, False),
        ({"conditions": [{"type": "Completed", "status": "True"}]}, False),
        ({"conditions": [{"type": "Failed", "status": "False"}]}, True),
        ({"conditions": [{"type": "Suspended", "status": "True"}]}, True),  # queued still occupies the cluster
    ],
)
def test_active_means_no_terminal_state(status, active):
    assert is_active({"metadata": {"name": "x"}, "status": status}) is active


@pytest.mark.parametrize("value, parsed", [("1", 1), ("3", 3), ("all", None), ("ALL", None), (2, 2)])
def test_parallelism(value, parsed):
    assert parse_parallelism(value) == parsed


@pytest.mark.parametrize("value", ["0", "-1", "many", "1.5"])
def test_parallelism_refuses_bad_values(value):
    with pytest.raises(WikiError, match="parallelism"):
        parse_parallelism(value)


# -- loopback fleet -----------------------------------------------------------------------


class Fleet:
    """One fake API server per candidate cluster and a kubeconfig naming them all."""

    def __init__(self, tmp_path: Path, servers: dict[str, FakeKubeApi]):
        self.servers = servers
        self.clusters = discover_clusters(ENV_DIR, "v5p", "2x2x2")
        by_name = {c.name: c for c in self.clusters}
        self.kubeconfig = tmp_path / "kubeconfig"
        first = servers[self.clusters[0].name]
        first.write_kubeconfig(self.kubeconfig, [], others={by_name[n].context: s.url for n, s in servers.items()})
        text = self.kubeconfig.read_text().replace("fake-test-token", CANARY_TOKEN)
        self.kubeconfig.write_text(text)

    def __getitem__(self, name: str) -> FakeKubeApi:
        return self.servers[name]

    def cluster(self, name: str):
        return next(c for c in self.clusters if c.name == name)


@pytest.fixture
def fleet(tmp_path, monkeypatch):
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.delenv("KUBECONFIG", raising=False)
    servers = {name: FakeKubeApi(stall_s=5.0) for name in V5P_8CHIP}
    for server in servers.values():
        server.__enter__()
    try:
        yield Fleet(tmp_path, servers)
    finally:
        for server in servers.values():
            server.__exit__(None, None, None)


def occupancy(fleet: Fleet, parallelism, me: Me = ME, deadline_s: float = 5.0):
    occupancies = check_all(fleet.clusters, me, kubeconfig=fleet.kubeconfig, deadline_s=deadline_s)
    return select_clusters(occupancies, parallelism)


def seed_busy_fleet(fleet: Fleet) -> None:
    """alice: only finished work; bob: my own jax lane; carol: foreign; dave: idle."""
    fleet["alice-v5p-16"].add_jobset("alice-gemma4-tpu-v001-base", terminal_state="Completed")
    fleet["alice-v5p-16"].add_jobset("bob-gemma4-tpu-v002-x", terminal_state="Failed", namespace="team")
    fleet["bob-v5p-16"].add_jobset("alice-gemma4-jax-v204-attn-fus", conditions=["Suspended"])
    fleet["carol-pw-v5p-16-2"].add_jobset("carol-llama3-8b-tpu-v003-tp", namespace="carol")


def test_occupancy_end_to_end_through_the_real_client(fleet):
    seed_busy_fleet(fleet)
    selection = occupancy(fleet, 3)
    states = {o.cluster.name: o.state for o in selection.candidates}
    assert states == {
        "alice-v5p-16": ClusterState.FREE,
        "bob-v5p-16": ClusterState.OCCUPIED,
        "carol-pw-v5p-16-2": ClusterState.OCCUPIED,
        "dave-v5p-16": ClusterState.FREE,
    }
    assert [o.cluster.name for o in selection.selected] == ["alice-v5p-16", "dave-v5p-16"]
    assert selection.message == "requested 3, only 2 free, proceeding with 2"
    report = format_pool(selection, "v5p (2x2x2)")
    assert re.search(r"✓ alice-v5p-16 +→ selected \(track 0\)", report)
    assert re.search(r"✗ bob-v5p-16 +→ occupied by my own jax-lane workload `alice-gemma4-jax-v204-attn-fus`", report)
    assert re.search(
        r"✗ carol-pw-v5p-16-2 +→ occupied by another user's workload `carol-llama3-8b-tpu-v003-tp`", report
    )
    assert re.search(r"✓ dave-v5p-16 +→ selected \(track 1\)", report)
    # each candidate was asked cluster-wide (kubectl get jobset -A), with the kubeconfig's credentials
    for name in V5P_8CHIP:
        listed = [r for r in fleet[name].requests if r.path == "/apis/jobset.x-k8s.io/v1alpha2/jobsets"]
        assert listed and listed[0].headers.get("authorization") == f"Bearer {CANARY_TOKEN}"


@pytest.mark.parametrize(
    "parallelism, selected",
    [(1, ["alice-v5p-16"]), (2, ["alice-v5p-16", "dave-v5p-16"]), (None, ["alice-v5p-16", "dave-v5p-16"])],
)
def test_selection_takes_the_first_n_free_in_file_order(fleet, parallelism, selected):
    seed_busy_fleet(fleet)
    selection = occupancy(fleet, parallelism)
    assert [o.cluster.name for o in selection.selected] == selected
    assert not selection.stop


def test_selection_all_free_with_all(fleet):
    selection = occupancy(fleet, None)
    assert [o.cluster.name for o in selection.selected] == V5P_8CHIP
    assert selection.message == "Proceeding with 4 parallel tracks."


def test_list_follows_continue_tokens(fleet, monkeypatch):
    monkeypatch.setattr(kube_module, "LIST_PAGE_SIZE", 2)
    server = fleet["dave-v5p-16"]
    for i in range(4):
        server.add_jobset(f"bob-gemma4-tpu-v{i:03d}-x", terminal_state="Completed")
    server.add_jobset("zed-other-tpu-v001-late")  # the only active one, on the last page
    selection = occupancy(fleet, None)
    dave = next(o for o in selection.candidates if o.cluster.name == "dave-v5p-16")
    assert dave.state is ClusterState.OCCUPIED and [w.name for w in dave.workloads] == ["zed-other-tpu-v001-late"]
    assert [r.query.get("continue") for r in server.requests if r.path.endswith("/jobsets")] == [None, "2", "4"]


def test_row17_a_server_paging_in_a_circle_is_unknown(fleet):
    server = fleet["bob-v5p-16"]

    def circular(method, namespace, name, query, body):
        page = {"kind": "JobSetList", "metadata": {"continue": "again"}, "items": []}
        return 200, page, "application/json"

    server._jobsets = circular
    bob = check_all([fleet.cluster("bob-v5p-16")], ME, kubeconfig=fleet.kubeconfig)[0]
    assert bob.state is ClusterState.UNKNOWN and "repeated continue token" in bob.error
    assert len(server.requests) == 2


def test_a_cluster_without_the_jobset_api_is_unknown(fleet):
    server = fleet["carol-pw-v5p-16-2"]
    server._jobsets = lambda *args: (404, {"kind": "Status", "code": 404, "reason": "NotFound"}, "application/json")
    carol = check_all([fleet.cluster("carol-pw-v5p-16-2")], ME, kubeconfig=fleet.kubeconfig)[0]
    assert carol.state is ClusterState.UNKNOWN and "JobSet API" in carol.error


def test_row17_http_500_makes_a_cluster_unknown_never_free(fleet):
    fleet["alice-v5p-16"].fail("GET", r"/jobsets$", "500")
    selection = occupancy(fleet, 1)
    alice = selection.candidates[0]
    assert alice.state is ClusterState.UNKNOWN and "HTTP 500" in alice.error
    assert [o.cluster.name for o in selection.selected] == ["bob-v5p-16"]
    assert re.search(
        r"\? alice-v5p-16 +→ state unknown \(list jobsets \(all namespaces\): HTTP 500\): not selected",
        format_pool(selection, "v5p"),
    )


@pytest.mark.waits
def test_row17_stall_past_the_deadline_is_unknown_never_free(fleet):
    fleet["alice-v5p-16"].fail("GET", r"/jobsets$", "stall")
    selection = occupancy(fleet, None, deadline_s=STALL_DEADLINE_S)
    alice = selection.candidates[0]
    assert alice.state is ClusterState.UNKNOWN
    assert f"no answer within the {STALL_DEADLINE_S:g}s deadline" in alice.error
    assert "alice-v5p-16" not in [o.cluster.name for o in selection.selected]
    assert len(selection.selected) == 3


def test_row17_malformed_json_is_unknown_never_free(fleet):
    fleet["bob-v5p-16"].fail("GET", r"/jobsets$", "malformed")
    selection = occupancy(fleet, None)
    bob = selection.candidates[1]
    assert bob.state is ClusterState.UNKNOWN and "malformed" in bob.error
    assert bob not in selection.selected


def test_row17_no_kubeconfig_context_is_unknown(fleet, tmp_path):
    kubeconfig = tmp_path / "other-kubeconfig"
    fleet["alice-v5p-16"].write_kubeconfig(kubeconfig, ["unrelated-context"])
    selection = select_clusters(check_all(fleet.clusters, ME, kubeconfig=kubeconfig, deadline_s=5.0), None)
    assert {o.state for o in selection.candidates} == {ClusterState.UNKNOWN}
    assert "get-credentials" in selection.candidates[0].error
    assert selection.stop


def test_row17_zero_free_means_stop_and_report_each_attribution(fleet):
    seed_busy_fleet(fleet)
    fleet["alice-v5p-16"].add_jobset("alice-gemma4-tpu-v013-sel")
    fleet["dave-v5p-16"].fail("GET", r"/jobsets$", "500")
    selection = occupancy(fleet, 2)
    assert selection.stop and selection.selected == []
    report = format_pool(selection, "v5p (2x2x2)")
    assert "busy with my own tpu-lane workload `alice-gemma4-tpu-v013-sel`" in report
    assert "No free cluster: stopping" in report


# -- dispatch (seed Step 2(c)(iv)-(vi)) ---------------------------------------------------


LAUNCH = 'python -m train --profile_dir="$XPROF_PATH" --xla_dump_to="$HLO_PATH"'
IMAGE = "registry.example/gemma4-container:gemma4-tpu-20260701-v007-remat"


def test_workload_name_shortens_only_the_slug():
    exp = Experiment("alice", "gemma4", "tpu", 7, "deepseek-sparsecore-attention-fusion-host-offload")
    name = exp.workload_name
    assert len(name) < 40 and NAME_RE.fullmatch(name)
    assert name.startswith("alice-gemma4-tpu-v007-ds-sc-attn")
    assert Experiment("alice", "gemma4", "tpu", 7, "remat", "b").workload_name == "alice-gemma4-tpu-v007-remat-b"
    with pytest.raises(WikiError, match="leaves no room"):
        _ = Experiment("averyveryverylongprefix", "llama3-70b-instruct", "tpu", 7, "x").workload_name


def test_storage_paths_are_explicit_under_the_root():
    paths = storage_paths("gs://example-bucket/", "gemma4-tpu-v007-remat")
    assert paths.gcs_root == "gs://example-bucket/autoresearch/gemma4-tpu-v007-remat"
    assert (paths.xprof, paths.hlo) == (paths.gcs_root + "/xprof", paths.gcs_root + "/hlo")
    with pytest.raises(WikiError, match="not a gs://"):
        storage_paths("/tmp/somewhere", "x")


def test_dispatch_submits_an_xpk_style_jobset(fleet):
    cluster = fleet.cluster("dave-v5p-16")
    exp = Experiment("alice", "gemma4", "tpu", 7, "remat-policy-selective")
    result = dispatch(cluster, exp, IMAGE, LAUNCH, "gs://example-bucket", kubeconfig=fleet.kubeconfig, deadline_s=5.0)
    assert result.created and result.workload_name == "alice-gemma4-tpu-v007-remat-policy-sel"
    assert result.paths.xprof == "gs://example-bucket/autoresearch/gemma4-tpu-v007-remat-policy-selective/xprof"
    posts = [r for r in fleet["dave-v5p-16"].requests if r.method == "POST"]
    assert [r.path for r in posts] == ["/apis/jobset.x-k8s.io/v1alpha2/namespaces/default/jobsets"]
    body = posts[0].body
    assert body["apiVersion"] == "jobset.x-k8s.io/v1alpha2" and body["kind"] == "JobSet"
    assert body["metadata"]["labels"]["xpk.google.com/workload"] == result.workload_name
    job = body["spec"]["replicatedJobs"][0]
    assert job["name"] == "slice-job" and job["template"]["spec"]["parallelism"] == 2  # 8 v5p chips = 2 VMs of 4
    pod = job["template"]["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {
        "cloud.google.com/gke-tpu-accelerator": "tpu-v5p-slice",
        "cloud.google.com/gke-tpu-topology": "2x2x2",
    }
    container = pod["containers"][0]
    assert container["image"] == IMAGE and container["command"] == ["bash", "-c", LAUNCH]
    assert container["resources"]["limits"]["google.com/tpu"] == 4
    env = {e["name"]: e["value"] for e in container["env"]}
    assert env["XPROF_PATH"] == result.paths.xprof and env["HLO_PATH"] == result.paths.hlo
    # the submitted JobSet now makes the cluster busy with my own workload in this lane
    dave = next(o for o in occupancy(fleet, None).candidates if o.cluster.name == "dave-v5p-16")
    assert dave.state is ClusterState.OCCUPIED and dave.workloads[0].attribution is Attribution.MINE_SAME_LANE


def test_dispatch_refuses_a_launch_command_that_ignores_the_paths(fleet):
    exp = Experiment("alice", "gemma4", "tpu", 7, "remat")
    with pytest.raises(
        WikiError, match=r"does not write to gs://example-bucket/autoresearch/gemma4-tpu-v007-remat/hlo"
    ):
        dispatch(
            fleet.cluster("dave-v5p-16"),
            exp,
            IMAGE,
            'python -m train --profile_dir="$XPROF_PATH"',
            "gs://example-bucket",
            kubeconfig=fleet.kubeconfig,
        )
    assert not [r for r in fleet["dave-v5p-16"].requests if r.method == "POST"]


def _dispatch_remat_to_dave(fleet, **options):
    return dispatch(fleet.cluster("dave-v5p-16"), Experiment("alice", "gemma4", "tpu", 7, "remat"), IMAGE, LAUNCH,
                    "gs://example-bucket", kubeconfig=fleet.kubeconfig, **options)


def test_dispatch_refuses_a_cluster_that_became_busy(fleet):
    fleet["dave-v5p-16"].add_jobset("carol-llama3-8b-tpu-v003-tp", namespace="carol")
    with pytest.raises(ClusterBusy, match="occupied by another user's workload `carol-llama3-8b-tpu-v003-tp`"):
        _dispatch_remat_to_dave(fleet)
    assert not [r for r in fleet["dave-v5p-16"].requests if r.method == "POST"]


@pytest.mark.parametrize("fault", ["500", "stall", "malformed"])
@pytest.mark.waits
def test_row17_unknown_occupancy_never_dispatches(fleet, fault):
    fleet["dave-v5p-16"].fail("GET", r"/jobsets$", fault)
    with pytest.raises(KubeUnavailable):
        _dispatch_remat_to_dave(fleet, deadline_s=STALL_DEADLINE_S)
    assert not [r for r in fleet["dave-v5p-16"].requests if r.method == "POST"]


def test_row34_a_name_conflict_is_reread_never_overwritten(fleet):
    cluster = fleet.cluster("alice-v5p-16")
    exp = Experiment("alice", "gemma4", "tpu", 8, "remat")
    first = dispatch(cluster, exp, IMAGE, LAUNCH, "gs://example-bucket", kubeconfig=fleet.kubeconfig)
    again = dispatch(cluster, exp, IMAGE, LAUNCH, "gs://example-bucket", kubeconfig=fleet.kubeconfig)
    assert first.created and not again.created  # the same JobSet already there: dispatched, once
    with pytest.raises(DispatchConflict, match="next retry suffix"):
        dispatch(cluster, exp, IMAGE + "-other", LAUNCH, "gs://example-bucket", kubeconfig=fleet.kubeconfig)
    methods = {r.method for r in fleet["alice-v5p-16"].requests}
    assert methods <= {"GET", "POST"}  # never a delete or a replace
    assert len(fleet["alice-v5p-16"].jobsets) == 1


def test_row17_a_create_whose_answer_is_lost_is_reread(fleet):
    cluster = fleet.cluster("bob-v5p-16")
    exp = Experiment("alice", "gemma4", "tpu", 9, "remat")
    fleet["bob-v5p-16"].fail("POST", r"/jobsets$", "lost")
    result = dispatch(cluster, exp, IMAGE, LAUNCH, "gs://example-bucket", kubeconfig=fleet.kubeconfig)
    assert not result.created and len(fleet["bob-v5p-16"].jobsets) == 1


def test_row17_a_failed_create_is_unknown_not_retried(fleet):
    cluster = fleet.cluster("bob-v5p-16")
    fleet["bob-v5p-16"].fail("POST", r"/jobsets$", "500")
    with pytest.raises(KubeUnavailable, match="HTTP 500.*re-check before resubmitting"):
        dispatch(
            cluster,
            Experiment("alice", "gemma4", "tpu", 9, "remat"),
            IMAGE,
            LAUNCH,
            "gs://example-bucket",
            kubeconfig=fleet.kubeconfig,
        )
    assert len([r for r in fleet["bob-v5p-16"].requests if r.method == "POST"]) == 1


@pytest.mark.parametrize(
    "terminal, conditions, active, state",
    [
        ("Completed", None, 0, SessionState.COMPLETE),
        ("Failed", None, 0, SessionState.ERROR),
        (None, ["Completed"], 0, SessionState.COMPLETE),
        (None, ["Suspended"], 0, SessionState.QUEUED),
        (None, None, 2, SessionState.RUNNING),
        (None, None, 0, SessionState.QUEUED),
    ],
)
def test_status_through_the_client(fleet, terminal, conditions, active, state):
    server = fleet["carol-pw-v5p-16-2"]
    server.add_jobset("alice-gemma4-tpu-v010-x")
    server.set_state("alice-gemma4-tpu-v010-x", terminal_state=terminal, conditions=conditions, active=active)
    got = status(fleet.cluster("carol-pw-v5p-16-2"), "alice-gemma4-tpu-v010-x", kubeconfig=fleet.kubeconfig)
    assert got.state is state
    if state is SessionState.ERROR:
        assert got.failure_message == "jobset failed" and got.ended_at is not None


@pytest.mark.waits
def test_row17_status_is_gone_on_404_and_unknown_on_500_or_stall(fleet):
    cluster = fleet.cluster("carol-pw-v5p-16-2")
    assert status(cluster, "alice-gemma4-tpu-v404-x", kubeconfig=fleet.kubeconfig).state is SessionState.GONE
    fleet["carol-pw-v5p-16-2"].fail("GET", r"/jobsets/", "500")
    assert status(cluster, "alice-gemma4-tpu-v404-x", kubeconfig=fleet.kubeconfig).state is SessionState.UNKNOWN
    fleet["carol-pw-v5p-16-2"].fail("GET", r"/jobsets/", "stall")
    stalled = status(cluster, "alice-gemma4-tpu-v404-x", kubeconfig=fleet.kubeconfig, deadline_s=STALL_DEADLINE_S)
    assert stalled.state is SessionState.UNKNOWN and "deadline" in stalled.failure_message


def test_jobset_status_reads_the_terminal_condition_message():
    failed = {
        "metadata": {"creationTimestamp": "2026-07-01T10:00:00Z"},
        "status": {
            "terminalState": "Failed",
            "conditions": [
                {
                    "type": "Failed",
                    "status": "True",
                    "reason": "ReachedMaxRestarts",
                    "message": "jobset failed due to reaching max number of restarts",
                    "lastTransitionTime": "2026-07-01T11:00:00Z",
                }
            ],
        },
    }
    got = jobset_status(failed)
    assert got.state is SessionState.ERROR and "max number of restarts" in got.failure_message
    assert (got.ended_at - got.started_at).total_seconds() == 3600


def test_log_tail_of_a_finished_workload_for_backfill(fleet):
    server = fleet["dave-v5p-16"]
    server.add_jobset("alice-gemma4-tpu-v005-remat", terminal_state="Completed")
    log = "".join(f"step {i} loss {5 - i * 0.01:.2f}\n" for i in range(300)) + "MFU 41.2%\n"
    server.add_pod("alice-gemma4-tpu-v005-remat-slice-job-0-0-abcde", "alice-gemma4-tpu-v005-remat", log)
    server.add_pod("alice-gemma4-tpu-v005-remat-slice-job-0-1-fghij", "alice-gemma4-tpu-v005-remat", "other host\n")
    server.add_pod("someone-else-pod", "other-jobset", "nope\n")
    tail = log_tail(fleet.cluster("dave-v5p-16"), "alice-gemma4-tpu-v005-remat", 200, kubeconfig=fleet.kubeconfig)
    assert tail.splitlines() == log.splitlines()[-200:]
    assert tail.endswith("MFU 41.2%\n")
    with pytest.raises(KubeNotFound, match="has no pods"):
        log_tail(fleet.cluster("dave-v5p-16"), "alice-gemma4-tpu-v099-none", kubeconfig=fleet.kubeconfig)


def test_finished_workloads_of_this_lane(fleet):
    server = fleet["alice-v5p-16"]
    server.add_jobset("alice-gemma4-tpu-v012-b", terminal_state="Completed")
    server.add_jobset("alice-gemma4-tpu-v003-a", terminal_state="Failed", namespace="exp")
    server.add_jobset("alice-gemma4-tpu-v013-running")
    server.add_jobset("alice-gemma4-jax-v001-other-lane", terminal_state="Completed")
    server.add_jobset("bob-gemma4-tpu-v002-foreign", terminal_state="Completed")
    found = finished_workloads(fleet.cluster("alice-v5p-16"), ME, kubeconfig=fleet.kubeconfig)
    assert [(w.vid, w.name, w.namespace, w.state) for w in found] == [
        (3, "alice-gemma4-tpu-v003-a", "exp", SessionState.ERROR),
        (12, "alice-gemma4-tpu-v012-b", "default", SessionState.COMPLETE),
    ]


# -- GkeCompute: a relay session as a JobSet -----------------------------------------------


def gke_compute(fleet, tmp_path, **extra) -> GkeCompute:
    shutil.copy(ENV_DIR / "gke-v5p-2x2x2-dave.md", tmp_path / "cluster.md")
    config = {
        "cluster_file": "cluster.md",
        "image": "registry.example/trainer:main",
        "kubeconfig": str(fleet.kubeconfig),
        "secret_name": "relay-secrets",
        "deadline_s": 5.0,
        **extra,
    }
    return GkeCompute.from_config(config, tmp_path)


def test_gke_compute_launches_once_and_reports(fleet, tmp_path):
    compute = gke_compute(fleet, tmp_path, quota_hours=30)
    request = LaunchRequest(
        slug="ounce100m-session3", script_text="print('hello from the bootstrap')\n", session_timeout_s=3600
    )
    record = compute.launch(request)
    assert record.ref == "ounce100m-session3" and record.kernel_id
    body = next(r.body for r in fleet["dave-v5p-16"].requests if r.method == "POST")
    container = body["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["containers"][0]
    assert container["command"] == ["python3", "-c", request.script_text]
    assert container["envFrom"] == [{"secretRef": {"name": "relay-secrets"}}]
    assert body["spec"]["replicatedJobs"][0]["template"]["spec"]["activeDeadlineSeconds"] == 3600
    assert compute.status(record.ref).state is SessionState.QUEUED
    fleet["dave-v5p-16"].set_state(record.ref, active=1)
    assert compute.status(record.ref).state is SessionState.RUNNING
    assert ("ounce100m-session3", SessionState.RUNNING) in compute.list_sessions()
    assert 0 <= compute.quota().used_hours < 1 and compute.quota().total_hours == 30
    with pytest.raises(ComputeError, match="already launched"):
        compute.launch(request)
    fleet["dave-v5p-16"].set_state(record.ref, terminal_state="Completed")
    fleet["dave-v5p-16"].add_pod("ounce100m-session3-slice-job-0-0-x", record.ref, "a\nb\nsaved checkpoint 400\n")
    assert compute.status(record.ref).state is SessionState.COMPLETE
    assert compute.log_tail(record.ref, 1) == "saved checkpoint 400\n"
    assert len([r for r in fleet["dave-v5p-16"].requests if r.method == "POST"]) == 1


@pytest.mark.waits
def test_gke_compute_refuses_a_busy_or_unknown_cluster(fleet, tmp_path):
    compute = gke_compute(fleet, tmp_path)
    request = LaunchRequest(slug="ounce100m-session4", script_text="print(1)\n", session_timeout_s=600)
    fleet["dave-v5p-16"].fail("GET", r"/jobsets$", "stall")
    compute.deadline_s = STALL_DEADLINE_S
    with pytest.raises(ComputeUnavailableError, match="deadline"):
        compute.launch(request)
    assert compute.status("ounce100m-session4").state is SessionState.GONE
    fleet["dave-v5p-16"].add_jobset("bob-gemma4-tpu-v001-x")
    with pytest.raises(CapacityError, match="occupied by bob-gemma4-tpu-v001-x"):
        compute.launch(request)
    with pytest.raises(ComputeUnavailableError, match="no accelerator quota API"):
        compute.quota()
    assert not [r for r in fleet["dave-v5p-16"].requests if r.method == "POST"]


def test_gke_compute_is_built_by_the_registry(tmp_path):
    from wikiengine.executors.compute import ComputeBackend
    from wikiengine.executors.registry import make_compute

    shutil.copy(ENV_DIR / "gke-v6e-2x4-erin.md", tmp_path / "cluster.md")
    compute = make_compute({"kind": "gke", "cluster_file": "cluster.md", "image": "registry.example/t:1"}, root=tmp_path)
    assert isinstance(compute, GkeCompute) and isinstance(compute, ComputeBackend)
    assert compute.cluster.tpu.xpk_type == "v6e-8"


def test_gke_compute_config_refuses_secrets_and_missing_fields(tmp_path):
    with pytest.raises(ComputeError, match="'token' must not be in the config"):
        GkeCompute.from_config({"cluster_file": "x.md", "image": "i", "token": "abc"}, tmp_path)
    with pytest.raises(ComputeError, match="needs 'image'"):
        GkeCompute.from_config({"cluster_file": "x.md"}, tmp_path)


# -- `wiki clusters` ----------------------------------------------------------------------


@pytest.fixture
def wiki(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)  # no wiki/ here: identity comes from --user-prefix

    def run(*argv: str) -> int:
        return cli.main(list(argv))

    return run


def pool_argv(fleet, *extra: str) -> tuple[str, ...]:
    """`wiki clusters` for alice's gemma4/tpu lane on the v5p 2x2x2 candidates of ENV_DIR."""
    return (
        "clusters", "gemma4", "tpu", "--user-prefix", "alice", "--env-dir", str(ENV_DIR),
        "--tpu", "v5p", "--topology", "2x2x2", "--kubeconfig", str(fleet.kubeconfig), *extra,
    )


def test_cli_json_reports_candidates_and_selection(fleet, wiki, capsys):
    seed_busy_fleet(fleet)
    code = wiki(*pool_argv(fleet, "-n", "all", "--json"))
    out = capsys.readouterr().out
    doc = json.loads(out)
    assert code == 0
    assert doc["tpu_type"] == "v5p-16" and doc["requested"] == "all"
    assert [c["state"] for c in doc["candidates"]] == ["free", "occupied", "occupied", "free"]
    assert doc["candidates"][1]["workloads"][0]["attribution"] == "mine-other-lane"
    assert doc["candidates"][2]["workloads"][0]["attribution"] == "foreign"
    assert doc["selected"] == [
        {"track": 0, "cluster": "alice-v5p-16", "context": "gke_example-tpu-project_europe-west4_alice-v5p-16"},
        {"track": 1, "cluster": "dave-v5p-16", "context": "gke_example-tpu-project_europe-west4_dave-v5p-16"},
    ]
    assert CANARY_TOKEN not in out


@pytest.mark.waits
def test_cli_text_and_exit_busy_when_nothing_is_free(fleet, wiki, capsys):
    for name in V5P_8CHIP:
        fleet[name].add_jobset(f"bob-gemma4-tpu-v00{len(name) % 10}-x")
    fleet["dave-v5p-16"].fail("GET", r"/jobsets$", "stall")
    code = wiki(*pool_argv(fleet, "--timeout", str(STALL_DEADLINE_S)))
    out = capsys.readouterr().out
    assert code == ExitCode.BUSY == 7
    assert "v5p (2x2x2) cluster pool (4 candidates, 0 selected):" in out
    assert re.search(r"\? dave-v5p-16 +→ state unknown \(.*deadline\): not selected", out)
    assert "No free cluster: stopping" in out


@pytest.mark.waits
def test_row46_no_credential_in_any_output(fleet, wiki, capsys, tmp_path):
    fleet["alice-v5p-16"].fail("GET", r"/jobsets$", "500")
    fleet["bob-v5p-16"].fail("GET", r"/jobsets$", "malformed")
    fleet["carol-pw-v5p-16-2"].fail("GET", r"/jobsets$", "stall")
    texts = []
    for as_json in ((), ("--json",)):
        wiki(*pool_argv(fleet, "--timeout", str(STALL_DEADLINE_S), *as_json))
        captured = capsys.readouterr()
        texts += [captured.out, captured.err]
    for call in (
        lambda: status(fleet.cluster("alice-v5p-16"), "x", kubeconfig=fleet.kubeconfig).failure_message,
        lambda: dispatch(
            fleet.cluster("alice-v5p-16"),
            Experiment("alice", "gemma4", "tpu", 1, "x"),
            IMAGE,
            LAUNCH,
            "gs://b-1",
            kubeconfig=fleet.kubeconfig,
        ),
    ):
        fleet["alice-v5p-16"].fail("GET", r"/jobsets", "500", times=2)
        fleet["alice-v5p-16"].fail("POST", r"/jobsets", "500")
        try:
            texts.append(str(call()))
        except Exception as exc:  # noqa: BLE001 - the message is what is checked
            texts.append(f"{exc!r} {exc}")
    joined = "\n".join(texts)
    assert "HTTP 500" in joined and "malformed" in joined and "deadline" in joined
    assert CANARY_TOKEN not in joined and "Bearer" not in joined and "Authorization" not in joined


@pytest.mark.parametrize(
    "extra, message",
    [
        (("--tpu", "v5p"), "several TPU shapes"),
        (("--tpu", "v6e", "--topology", "2x2x2"), "no v6e 2x2x2 clusters"),
        (("--tpu", "v5p", "--topology", "2x2x2", "-n", "0"), "parallelism must be a positive integer"),
    ],
)
def test_cli_bad_input_exits_2_with_one_line(wiki, capsys, extra, message):
    code = wiki("clusters", "gemma4", "tpu", "--user-prefix", "alice", "--env-dir", str(ENV_DIR), *extra)
    err = capsys.readouterr().err
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_cli_unreadable_cluster_file_exits_2_naming_file_and_line(wiki, capsys, tmp_path):
    env = tmp_path / "env"
    env.mkdir()
    shutil.copy(ENV_DIR / "gke-v5p-2x2x2-alice.md", env)
    (env / "gke-v5p-2x2x2-zed.md").write_text(GOOD_FILE.replace("= 8 chips", "= 9 chips"))
    code = wiki("clusters", "gemma4", "tpu", "--user-prefix", "alice", "--env-dir", str(env))
    err = capsys.readouterr().err
    assert code == 2
    assert (
        err.strip()
        == f"error: {env / 'gke-v5p-2x2x2-zed.md'}:6: ambiguous TPU line: topology 2x2x2 is 8 chips but the line says 9"
    )


def test_cli_defaults_from_the_wiki_root(fleet, wiki, capsys, tmp_path, monkeypatch):
    model_dir = tmp_path / "repo" / "wiki" / "experiments" / "gemma4_autoresearch_optimization"
    (model_dir / "tpu").mkdir(parents=True)
    (model_dir / "program.md").write_text("# gemma4\n\n## Setup\n\nUSER_PREFIX = alice\n")
    shutil.copytree(ENV_DIR, tmp_path / "repo" / ".env")
    monkeypatch.setenv("USER", "someone_else")
    fleet["alice-v5p-16"].add_jobset("alice-gemma4-tpu-v020-mine")
    code = wiki(
        "clusters",
        "gemma4",
        "tpu",
        "--root",
        str(tmp_path / "repo"),
        "--tpu",
        "v5p",
        "--topology",
        "2x2x2",
        "--kubeconfig",
        str(fleet.kubeconfig),
        "--json",
    )
    doc = json.loads(capsys.readouterr().out)
    assert code == 0 and (doc["user_prefix"], doc["user_prefix_source"]) == ("alice", "program")
    assert doc["candidates"][0]["workloads"][0]["attribution"] == "mine-same-lane"
    assert doc["selected"][0]["cluster"] == "bob-v5p-16"


def test_cli_list_shows_shapes(wiki, capsys):
    assert wiki("clusters", "--list", "--env-dir", str(ENV_DIR), "--json") == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["shapes"] == ["v5p 2x2x1 (4 chips)", "v5p 2x2x2 (8 chips)", "v6e 2x4 (8 chips)"]
    assert {c["tpu_type"] for c in doc["clusters"]} == {"v5p-8", "v5p-16", "v6e-8"}


# -- the fake speaks the real API: kubectl agrees with it ----------------------------------


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not installed")
def test_real_kubectl_lists_jobsets_from_the_fake(fleet, tmp_path):
    fleet["carol-pw-v5p-16-2"].add_jobset("carol-llama3-8b-tpu-v003-tp", namespace="carol")
    fleet["carol-pw-v5p-16-2"].add_jobset("alice-gemma4-tpu-v001-base", terminal_state="Completed")
    env = {**os.environ, "HOME": str(tmp_path), "KUBECACHEDIR": str(tmp_path / "cache"), "NO_PROXY": "127.0.0.1"}
    context = fleet.cluster("carol-pw-v5p-16-2").context
    out = subprocess.run(
        [
            "kubectl",
            "--kubeconfig",
            str(fleet.kubeconfig),
            "--context",
            context,
            "get",
            "jobset",
            "-A",
            "--no-headers",
            "--request-timeout=20s",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=True,
    ).stdout
    assert [line.split()[:2] for line in out.splitlines()] == [
        ["carol", "carol-llama3-8b-tpu-v003-tp"],
        ["default", "alice-gemma4-tpu-v001-base"],
    ]
