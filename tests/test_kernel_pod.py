"""A kernel session on a cluster pod (issue 16; seed 003 Step 1, "If Cluster pod"), with the
real ``kubernetes`` client against the loopback API server (tests/fakes/fake_k8s.py), whose
websocket exec runs each command as a local subprocess in the pod's own scratch directory.

RELIABILITY rows 17 (every call has a deadline; an unknown answer is an error, not a
receipt), 22 (a start re-run after a crash attaches to the pod it created, never a second
pod), 26 (a pod of that name that is not this session's is left alone) and 46 (no
credential reaches the pod spec, the exec stream or the wiki).
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest

pytest.importorskip("kubernetes")

from tests.fakes.fake_k8s import FakeKubeApi  # noqa: E402
from tests.run_once import copy_of, once  # noqa: E402
from wikiengine._cli.main import main  # noqa: E402
from wikiengine.core.errors import ExitCode  # noqa: E402
from wikiengine.demos.kernel import CLASS_PAGE, FAMILY, OP_POINT, scaffold  # noqa: E402
from wikiengine.executors.gke import kernel_pod  # noqa: E402
from wikiengine.lint.runner import lint  # noqa: E402
from wikiengine.model.kernels import KernelFamily  # noqa: E402

FAM = KernelFamily(FAMILY)
CANARY_TOKEN = "canary-k8s-token-7d2e41aa"
CANARY_HF = "hf_canaryKernelPod0042"
IMAGE = "example-registry/kernel-tpu:2026-12"
POD = f"kernel-{FAMILY}-s1"
POD_ARGS = ("--pod", "--accelerator", "tpu-v6e-slice", "--topology", "2x2", "--hours", "2", "--image", IMAGE,
            "--artifacts", "gs://example-bucket/kernels")


def kernel(root: Path | None, capsys, *args: str) -> tuple[int, dict | str]:
    capsys.readouterr()
    status = main(["kernel", *args, *(["--root", str(root)] if root else []), "--json"])
    out, err = capsys.readouterr()
    return status, (json.loads(out) if status == 0 else err.strip())


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True).stdout.strip()


def tpu_cluster(api: FakeKubeApi, kubeconfig: Path, monkeypatch) -> None:
    """Two TPU nodepools (and a CPU node) on ``api``, reached through $KUBECONFIG."""
    for index in range(2):
        api.add_node(f"gke-v6e-pool-{index}", nodepool="v6e-2x2", accelerator="tpu-v6e-slice", topology="2x2",
                     machine_type="ct6e-standard-4t", chips=4)
    api.add_node("gke-v5p-pool-0", nodepool="v5p-2x2x1", accelerator="tpu-v5p-slice", topology="2x2x1",
                 machine_type="ct5p-hightpu-4t", chips=4)
    api.nodes["gke-cpu-0"] = {"apiVersion": "v1", "kind": "Node", "metadata": {
        "name": "gke-cpu-0", "labels": {"cloud.google.com/gke-nodepool": "default-pool"}}, "status": {}}
    api.write_kubeconfig(kubeconfig, ["tpu-cluster"])
    kubeconfig.write_text(kubeconfig.read_text().replace("fake-test-token", CANARY_TOKEN))
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
    monkeypatch.setenv("HF_TOKEN", CANARY_HF)


@pytest.fixture
def cluster(tmp_path, monkeypatch):
    """A cluster with two TPU nodepools (and a CPU node), reached through $KUBECONFIG."""
    with FakeKubeApi() as api:
        tpu_cluster(api, tmp_path / "kubeconfig", monkeypatch)
        yield api


def start_on_a_pod(root: Path, capsys) -> tuple[Path, dict, dict]:
    """A family bootstrapped on a pod (its hardware token from the pod's device query), one stub:
    the authoring folder, what start and stub answered."""
    root.mkdir()
    authoring = scaffold(root)
    status, started = kernel(root, capsys, "start", "bench_layernorm.py", *POD_ARGS, "--reference",
                             str(authoring / "reference.py"), "--op-point", OP_POINT, "--class-page", CLASS_PAGE)
    assert status == 0, started
    status, stub = kernel(root, capsys, "stub", FAMILY, "--slug", "fused-layernorm", "--proposal",
                          str(authoring / "single-pass-fusion.md"), "--op-point", OP_POINT, "--lever",
                          "single-pass-fusion", "--intervention-class", "fusion", "--category", "memory-bound",
                          "--plan", "the native fused pass")
    assert status == 0, stub
    return authoring, started, stub


@pytest.fixture
def pod_family(tmp_path, cluster, capsys):
    """:func:`start_on_a_pod` in this test's cluster: for the tests that read what start sent."""
    root = tmp_path / "repo"
    return root, *start_on_a_pod(root, capsys)


@pytest.fixture
def started_pod_family(tmp_path_factory, tmp_path, cluster, capsys):
    """:func:`start_on_a_pod` once per run (start and stub each run a device query on the pod, a
    process importing torch), copied; the copy's pod is created in this test's cluster from the
    body start sent, so it is the session's pod there (no request of its own is recorded)."""
    def build(folder: Path) -> dict:
        with FakeKubeApi() as api, pytest.MonkeyPatch.context() as monkeypatch:
            tpu_cluster(api, folder / "kubeconfig", monkeypatch)
            _authoring, started, stub = start_on_a_pod(folder / "repo", capsys)
            return {"pod": requests_to(api, "POST", "/api/v1/namespaces/default/pods")[0].body,
                    "started": started, "stub": stub}

    folder, built = once(tmp_path_factory, "kernel-pod-family", build)
    root = copy_of(folder / "repo", tmp_path / "repo")
    cluster.create_pod(built["pod"])
    return root, root / ".wiki" / "authoring", built["started"], built["stub"]


@pytest.fixture
def candidate_pod_family(tmp_path_factory, tmp_path, started_pod_family, cluster, capsys):
    """:func:`started_pod_family` with candidate 1 (``fused.py``) measured on the pod, once per run
    (the quick measurement is a process importing torch on the pod), copied: the family, and what
    ``cand`` answered."""
    def build(folder: Path) -> dict:
        started, authoring, *_ = started_pod_family
        root = copy_of(started, folder / "repo")
        status, cand = kernel(root, capsys, "cand", FAMILY, "1", "--note", "native fused pass", "--source",
                              str(authoring / "fused.py"))
        assert status == 0, cand
        return {"cand": cand}

    folder, built = once(tmp_path_factory, "kernel-pod-candidate", build)
    root = copy_of(folder / "repo", tmp_path / "candidate")
    return root, root / ".wiki" / "authoring", built["cand"]


def requests_to(api: FakeKubeApi, method: str, suffix: str) -> list:
    return [r for r in api.requests if r.method == method and r.path.endswith(suffix)]


# --- discover --------------------------------------------------------------------------------


def test_discover_groups_the_tpu_nodes_by_nodepool(cluster, capsys):
    status, found = kernel(None, capsys, "pod", "discover")
    assert status == 0 and found["context"] == "tpu-cluster", found
    assert found["nodepools"] == [
        {"nodepool": "v5p-2x2x1", "accelerator": "tpu-v5p-slice", "topology": "2x2x1", "machine_type": "ct5p-hightpu-4t",
         "nodes": 1, "chips_per_node": 4, "chips": 4},
        {"nodepool": "v6e-2x2", "accelerator": "tpu-v6e-slice", "topology": "2x2", "machine_type": "ct6e-standard-4t",
         "nodes": 2, "chips_per_node": 4, "chips": 8}]
    listed = requests_to(cluster, "GET", "/api/v1/nodes")
    assert listed and listed[0].query["labelSelector"] == kernel_pod.ACCELERATOR_LABEL
    capsys.readouterr()
    assert main(["kernel", "pod", "discover"]) == 0
    assert "v6e-2x2  tpu-v6e-slice  2x2  ct6e-standard-4t  2 node(s) x 4 chips" in capsys.readouterr().out
    status, err = kernel(None, capsys, "pod", "discover", "--context", "elsewhere")
    assert status == 2 and err == "error: the kubeconfig has no context 'elsewhere' (contexts: tpu-cluster)"


# --- up --------------------------------------------------------------------------------------


def test_start_brings_up_one_pod_with_its_ttl_selector_and_chips_and_a_second_start_attaches(pod_family, cluster,
                                                                                              capsys):
    root, _authoring, started, stub = pod_family
    assert started["pod"]["created"] and started["target"]["pod"] == POD
    assert started["run_target"] == f"cluster pod {POD} — tpu-v6e-slice/2x2, 4 chips, TTL 2h"
    assert f"**Run target**: cluster pod {POD} — tpu-v6e-slice/2x2, 4 chips, TTL 2h" in (root / FAM.log).read_text()
    created = requests_to(cluster, "POST", "/api/v1/namespaces/default/pods")
    assert len(created) == 1
    spec = created[0].body["spec"]
    assert spec["activeDeadlineSeconds"] == 7200 and spec["restartPolicy"] == "Never"
    assert spec["nodeSelector"] == {"cloud.google.com/gke-tpu-accelerator": "tpu-v6e-slice",
                                    "cloud.google.com/gke-tpu-topology": "2x2"}
    container = spec["containers"][0]
    assert container["command"] == ["sleep", "infinity"] and container["image"] == IMAGE
    assert container["resources"]["limits"] == {"google.com/tpu": "4"}  # a node's allocatable, discovered
    assert created[0].body["metadata"]["labels"] == {"app.kubernetes.io/managed-by": "wikiengine",
                                                     "wikiengine.io/kernel-family": FAMILY,
                                                     "wikiengine.io/kernel-session": "1"}
    # the family was bootstrapped on the pod: its hardware token came from the pod's device query
    assert stub["variant"].startswith(f"{OP_POINT}/cpu-") and requests_to(cluster, "GET", f"/pods/{POD}/exec")
    head = git(root, "rev-parse", "HEAD")
    status, again = kernel(root, capsys, "start", FAMILY, *POD_ARGS)
    assert status == 0 and again["attached"] and not again["pod"]["created"] and again["session"] == 1
    assert len(requests_to(cluster, "POST", "/api/v1/namespaces/default/pods")) == 2  # the create met its 409
    assert len(cluster.pods) == 1 and git(root, "rev-parse", "HEAD") == head
    assert lint(root, base=None, jobs=1, use_cache=False).findings == []


def test_start_refuses_capacity_the_cluster_does_not_report(tmp_path, cluster, capsys):
    root = tmp_path / "repo"
    root.mkdir()
    authoring = scaffold(root)
    bootstrap = ("--reference", str(authoring / "reference.py"), "--op-point", OP_POINT)
    args = [a if a != "tpu-v6e-slice" else "tpu7x" for a in POD_ARGS]
    status, err = kernel(root, capsys, "start", FAMILY, *args, *bootstrap)
    assert status == 2 and "no tpu7x/2x2 nodes (present: tpu-v5p-slice/2x2x1 (4 chips per node), " in err
    status, err = kernel(root, capsys, "start", FAMILY, *POD_ARGS, "--chips", "8", *bootstrap)
    assert status == 2 and "--chips 8: a tpu-v6e-slice/2x2 node has 4 allocatable chips" in err
    assert not requests_to(cluster, "POST", "/pods") and not (root / FAM.program).exists()


def test_row_22_a_start_killed_after_its_pod_came_up_attaches_to_it(tmp_path, cluster, capsys, monkeypatch):
    root = tmp_path / "repo"
    root.mkdir()
    authoring = scaffold(root)
    bootstrap = ("--reference", str(authoring / "reference.py"), "--op-point", OP_POINT)
    from wikiengine.step.kernel import run as kernel_run

    def crash(root, target):
        raise KeyboardInterrupt  # the process dies after the pod is up, before anything is committed

    monkeypatch.setattr(kernel_run, "device_token", crash)
    assert main(["kernel", "start", FAMILY, *POD_ARGS, *bootstrap, "--root", str(root)]) == 130
    monkeypatch.undo()
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "kubeconfig"))
    assert list(cluster.pods) == [("default", POD)] and not (root / FAM.journal).exists()
    status, started = kernel(root, capsys, "start", FAMILY, *POD_ARGS, *bootstrap)
    assert status == 0 and started["session"] == 1 and not started["pod"]["created"]
    assert list(cluster.pods) == [("default", POD)]


@pytest.mark.waits
def test_a_pod_that_never_schedules_is_deleted_and_nothing_is_recorded(tmp_path, cluster, capsys, monkeypatch):
    root = tmp_path / "repo"
    root.mkdir()
    authoring = scaffold(root)
    cluster.scheduling = False
    monkeypatch.setattr(kernel_pod, "UP_WAIT_S", 1.0)
    status, err = kernel(root, capsys, "start", FAMILY, *POD_ARGS, "--reference", str(authoring / "reference.py"),
                         "--op-point", OP_POINT)
    assert status == 2 and err.startswith(f"error: pod {POD} still Pending after 1s (Unschedulable: 0/4 nodes")
    assert err.endswith("deleted it") and "\n" not in err
    assert not cluster.pods and requests_to(cluster, "DELETE", f"/pods/{POD}")
    assert not (root / FAM.journal).exists()


def test_row_26_a_pod_name_held_by_something_else_is_refused(tmp_path, cluster, capsys):
    root = tmp_path / "repo"
    root.mkdir()
    authoring = scaffold(root)
    cluster.add_pod(POD, "someone-elses-jobset", "")
    status, err = kernel(root, capsys, "start", FAMILY, *POD_ARGS, "--reference", str(authoring / "reference.py"),
                         "--op-point", OP_POINT)
    assert status == 2 and f"pod {POD} exists and is not session 1 of {FAMILY}" in err
    assert (cluster.pods[("default", POD)]["metadata"]["labels"]
            == {"jobset.sigs.k8s.io/jobset-name": "someone-elses-jobset"})


# --- run on the pod --------------------------------------------------------------------------


def _local_receipt(tmp_path, capsys) -> dict:
    root = tmp_path / "local"
    root.mkdir()
    authoring = scaffold(root)
    assert kernel(root, capsys, "start", FAMILY, "--chip", "0", "--reference", str(authoring / "reference.py"),
                  "--op-point", OP_POINT, "--class-page", CLASS_PAGE)[0] == 0
    assert kernel(root, capsys, "stub", FAMILY, "--slug", "fused-layernorm", "--proposal",
                  str(authoring / "single-pass-fusion.md"), "--op-point", OP_POINT, "--lever", "single-pass-fusion",
                  "--intervention-class", "fusion", "--category", "memory-bound", "--plan", "fused")[0] == 0
    assert kernel(root, capsys, "cand", FAMILY, "1", "--note", "fused", "--source", str(authoring / "fused.py"))[0] == 0
    status, verified = kernel(root, capsys, "verify", FAMILY)
    assert status == 0, verified
    return json.loads((root / verified["receipt"]).read_text())


def test_verify_on_the_pod_gives_the_local_receipt_structure_and_verdicts(candidate_pod_family, cluster, tmp_path,
                                                                         capsys):
    from wikiengine.model import receipt as kernel_receipt

    root, authoring, cand = candidate_pod_family
    assert cand["quick"]["verdict"] == "PASS", cand
    status, verified = kernel(root, capsys, "verify", FAMILY)
    assert status == 0 and verified["verdict"] == "PASS", verified
    text = (root / verified["receipt"]).read_text()
    receipt, problem = kernel_receipt.validate(text)
    assert problem is None and receipt["run_target"]["pod"] == POD
    import hashlib

    assert receipt["sources"]["candidate"] == hashlib.sha256((authoring / "fused.py").read_bytes()).hexdigest()
    synced = sorted(p.name for p in (cluster.pod_dir(POD) / "wiki-kernel").iterdir())
    assert f"{receipt['sources']['candidate']}.py" in synced and f"{receipt['sources']['verifier']}.py" in synced
    local = _local_receipt(tmp_path, capsys)
    assert set(receipt) == set(local) and set(receipt["timing"]) == set(local["timing"])
    assert set(receipt["parity"]) == set(local["parity"]) and receipt["sources"] == local["sources"]
    assert receipt["firing"]["audit"] == local["firing"]["audit"] == "confirmed"
    # a silent no-op fails on the pod as it does locally
    assert kernel(root, capsys, "file", FAMILY, "--verdict", "supported")[0] == 0
    status, stub = kernel(root, capsys, "stub", FAMILY, "--slug", "device-fastpath", "--proposal",
                          str(authoring / "dispatch-fastpath.md"), "--op-point", OP_POINT, "--lever",
                          "dispatch-fastpath", "--intervention-class", "dispatch", "--category", "memory-bound",
                          "--plan", "a device fast path")
    assert status == 0, stub
    assert kernel(root, capsys, "cand", FAMILY, "1", "--note", "fast path", "--source",
                  str(authoring / "gpu-only.py"))[0] == 0
    status, failed = kernel(root, capsys, "verify", FAMILY)
    assert status == 0 and failed["verdict"] == "FAIL" and any("silent no-op" in r for r in failed["reasons"])
    assert lint(root, base=None, jobs=1, use_cache=False).findings == []


@pytest.mark.parametrize("fault", ["Evicted", "DeadlineExceeded", "gone", "exec 500", "get 500"])
def test_row_17_a_pod_failure_is_one_line_and_never_a_receipt(candidate_pod_family, cluster, capsys, fault):
    root, _authoring, _cand = candidate_pod_family
    head = git(root, "rev-parse", "HEAD")
    if fault in ("Evicted", "DeadlineExceeded"):
        cluster.set_pod_failed(POD, fault)
    elif fault == "gone":
        del cluster.pods[("default", POD)]
    elif fault == "exec 500":
        cluster.fail("GET", r"/exec$", "500")
    else:
        cluster.fail("GET", rf"/pods/{POD}$", "500")
    status, err = kernel(root, capsys, "verify", FAMILY)
    expected = {"Evicted": f"pod {POD} is not running: Failed (Evicted: ",
                "DeadlineExceeded": f"pod {POD} is not running: Failed (DeadlineExceeded: ",
                "gone": f"pod {POD} is gone: pause or close the session and start a new one",
                "exec 500": f"tpu-cluster: exec in pod default/{POD}: HTTP 500",
                "get 500": f"tpu-cluster: get pod default/{POD}: HTTP 500"}[fault]
    # a pod that ended or is gone is the session's state (2); an API that does not answer is the cluster's (69)
    unreachable = fault in ("exec 500", "get 500")
    assert status == (ExitCode.UNAVAILABLE if unreachable else ExitCode.BAD_INPUT)
    assert err.startswith("error: " + expected) and "\n" not in err and "Traceback" not in err
    assert git(root, "rev-parse", "HEAD") == head and not (root / FAM.receipts_dir).exists()


@pytest.mark.waits
def test_the_ttl_is_enforced_by_the_cluster_as_active_deadline_seconds(tmp_path, cluster, capsys):
    root = tmp_path / "repo"
    root.mkdir()
    authoring = scaffold(root)
    assert kernel(root, capsys, "start", FAMILY, "--chip", "0", "--reference", str(authoring / "reference.py"),
                  "--op-point", OP_POINT)[0] == 0  # bootstrapped locally: the pod start below queries no device
    assert kernel(root, capsys, "close", FAMILY, "--pause")[0] == 0
    args = [a if a != "2" else "0.0003" for a in POD_ARGS]  # a TTL of one second
    status, started = kernel(root, capsys, "start", FAMILY, *args)
    assert status == 0 and started["target"]["activeDeadlineSeconds"] == 1, started
    pod = started["target"]["pod"]
    deadline = time.monotonic() + 30
    while cluster.pod_phase(pod) != "Failed":  # the kubelet's second after the pod's start (seconds' timestamps)
        assert time.monotonic() < deadline, f"pod {pod} outlived its activeDeadlineSeconds"
        time.sleep(0.05)
    status, err = kernel(root, capsys, "stub", FAMILY, "--slug", "fused-layernorm", "--proposal",
                         str(authoring / "single-pass-fusion.md"), "--op-point", OP_POINT, "--lever",
                         "single-pass-fusion", "--intervention-class", "fusion", "--category", "memory-bound",
                         "--plan", "x")
    assert status == 2 and f"pod {pod} is not running: Failed (DeadlineExceeded" in err


def _pod(tmp_path, cluster, **kwargs) -> kernel_pod.ClusterPod:
    from wikiengine.step.kernel.run import resolve_pod_target

    target = resolve_pod_target({"kind": "pod", "pod": "kernel-probe-s1", "context": None, "namespace": "default",
                                 "accelerator": "tpu-v6e-slice", "topology": "2x2", "chips": None, "hours": 1,
                                 "activeDeadlineSeconds": 3600, "artifacts": "gs://b/k", "image": IMAGE})
    pod = kernel_pod.ClusterPod(target, **kwargs)
    assert pod.up("probe", 1)["created"]
    return pod


@pytest.mark.parametrize("protocols", [("v5.channel.k8s.io", "v4.channel.k8s.io"), ("v4.channel.k8s.io",)])
def test_sync_and_run_work_over_exec_v5_and_v4(tmp_path, cluster, protocols):
    """v4 cannot close stdin: the sync bundle is length-prefixed, so it needs no end of input."""
    import hashlib

    from wikiengine.step.kernel.run import verifier_bytes

    cluster.exec_protocols = protocols
    with _pod(tmp_path, cluster) as pod:
        paths = pod.sync([b"print('hi')\n", verifier_bytes()])
        assert sorted(paths) == sorted(hashlib.sha256(b).hexdigest() for b in (b"print('hi')\n", verifier_bytes()))
        answer = pod.run_verifier(hashlib.sha256(verifier_bytes()).hexdigest(), ["--device-token"], paths)
    assert answer["hardware"].startswith("cpu-")


def test_a_pods_device_token_is_kept_for_that_pod_and_its_verifier_and_asked_again_of_a_new_one(
        tmp_path, cluster, monkeypatch):
    """`wiki kernel start` and `stub` each need the pod's token: the second asks no device query
    (a process importing torch on the pod). A pod replaced under the same name (a new uid), or
    another verifier, is asked again; a pod that is gone is an error, never the kept answer."""
    from wikiengine.core.errors import WikiError
    from wikiengine.step.kernel import run as kernel_run

    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q")

    def token() -> str:
        return kernel_run.device_token(root, pod.target)

    def queries() -> int:
        return sum(1 for r in cluster.requests if r.path.endswith("/exec") and r.query.get("command") == "--device-token")

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    with _pod(tmp_path, cluster) as pod:
        first = token()
        assert first.startswith("cpu-") and queries() == 1
        assert token() == first and queries() == 1
        pod.delete()
        with pytest.raises(WikiError, match="is gone"):
            token()
        assert pod.up("probe", 1)["created"]  # the same name, another pod
        assert token() == first and queries() == 2
        assert token() == first and queries() == 2
        monkeypatch.setattr(kernel_run, "verifier_bytes", lambda: Path(kernel_run.kernel_verify.__file__).read_bytes()
                            + b"\n# another verifier\n")
        assert token() == first and queries() == 3


def test_a_forged_kept_token_and_a_row_added_by_hand_never_make_a_receipt_pass(tmp_path, cluster, capsys):
    """A careless agent edits the kept answer of its pod to another chip and adds that chip's row
    to the family page: the stub goes on the forged row, but the verifier on the pod reports the
    chip it ran on, so the receipt fails and a pasted `--verdict supported` is capped."""
    from wikiengine.step.kernel import run as kernel_run

    root = tmp_path / "repo"
    root.mkdir()
    authoring = scaffold(root)
    status, started = kernel(root, capsys, "start", "bench_layernorm.py", *POD_ARGS, "--reference",
                             str(authoring / "reference.py"), "--op-point", OP_POINT, "--class-page", CLASS_PAGE)
    assert status == 0, started
    uid = cluster.pods[("default", POD)]["metadata"]["uid"]
    [key] = [key for key in kernel_run._POD_TOKENS._added if uid in key]  # this pod's kept answer
    real = kernel_run._POD_TOKENS.get(key).decode()
    kernel_run._POD_TOKENS.put(key, b"tpu-v9x")  # what a hand-edited cache file hands the next process
    page = root / FAM.family_page
    text = page.read_text()
    row = next(line for line in text.splitlines() if line.startswith(f"| {OP_POINT} | {real} |"))
    page.write_text(text.replace(row, row + "\n" + row.replace(real, "tpu-v9x")))
    git(root, "commit", "-qam", "a row for the chip the agent says it has")
    status, stub = kernel(root, capsys, "stub", FAMILY, "--slug", "fused-layernorm", "--proposal",
                          str(authoring / "single-pass-fusion.md"), "--op-point", OP_POINT, "--lever",
                          "single-pass-fusion", "--intervention-class", "fusion", "--category", "memory-bound",
                          "--plan", "the native fused pass")
    assert status == 0, stub
    assert kernel(root, capsys, "cand", FAMILY, "1", "--note", "fused", "--source", str(authoring / "fused.py"))[0] == 0
    status, verified = kernel(root, capsys, "verify", FAMILY)
    assert status == 0 and verified["verdict"] == "FAIL", verified
    assert f"the chip reports {real!r}, not the page's 'tpu-v9x'" in verified["reasons"]
    status, filed = kernel(root, capsys, "file", FAMILY, "--verdict", "supported")
    assert status == 0 and filed["verdict"] == "inconclusive" and not filed["current_best_moved"], filed


@pytest.mark.waits
def test_row_17_exec_has_a_deadline_for_its_handshake_and_its_command(tmp_path, cluster):
    from wikiengine.core.errors import WikiError

    with _pod(tmp_path, cluster, deadline_s=1.0) as pod:
        cluster.fail("GET", r"/exec$", "stall")
        with pytest.raises(WikiError, match=r"^tpu-cluster: exec in pod default/kernel-probe-s1: no answer within the "
                                            r"1s deadline$"):
            pod.sync([b"x"])
        with pytest.raises(WikiError, match=r"the command ran past its 1s deadline$"):
            pod._exec(["python3", "-c", "import time; time.sleep(4)"], deadline_s=1.0)


# --- down ------------------------------------------------------------------------------------


def test_pause_deletes_the_pod_and_down_finds_it_gone(started_pod_family, cluster, capsys):
    root, _authoring, _started, _stub = started_pod_family
    status, paused = kernel(root, capsys, "close", FAMILY, "--pause")
    assert status == 0 and paused["pod_teardown"] == {"pod": POD, "deleted": True}
    assert not cluster.pods
    status, down = kernel(root, capsys, "pod", "down", FAMILY)
    assert status == 0 and down == {"family": FAMILY, "session": 1, "pod": POD, "deleted": False}
    deletes = len(requests_to(cluster, "DELETE", f"/pods/{POD}"))
    status, down = kernel(root, capsys, "pod", "down", FAMILY, "--dry-run")
    assert status == 0 and down["dry_run"] and len(requests_to(cluster, "DELETE", f"/pods/{POD}")) == deletes


def test_a_refused_close_keeps_the_pod_and_an_earned_close_deletes_it(started_pod_family, cluster, capsys, monkeypatch):
    from wikiengine.step.kernel import close as kernel_close

    root, _authoring, _started, _stub = started_pod_family
    assert kernel(root, capsys, "close", FAMILY)[0] == 3 and ("default", POD) in cluster.pods
    assert kernel(root, capsys, "file", FAMILY, "--verdict", "invalid", "--reason", "abandoned before a candidate")[0] == 0
    monkeypatch.setattr(kernel_close, "stop_rule", lambda facts: [])  # the stop rule itself: test_kernel_lane.py
    status, closed = kernel(root, capsys, "close", FAMILY)
    assert status == 0 and closed["stopped"] and closed["pod_teardown"] == {"pod": POD, "deleted": True}
    assert not cluster.pods


def test_a_failed_teardown_is_reported_and_exits_incomplete(started_pod_family, cluster, capsys):
    root, _authoring, _started, _stub = started_pod_family
    cluster.fail("DELETE", rf"/pods/{POD}$", "500")
    status, err = kernel(root, capsys, "close", FAMILY, "--pause")
    assert status == ExitCode.INCOMPLETE == 9
    assert f"delete pod default/{POD}: HTTP 500" in err and f"`wiki kernel pod down {FAMILY}`" in err
    assert "pause" in git(root, "log", "-1", "--format=%s")  # the pause is committed; the pod is not gone
    assert ("default", POD) in cluster.pods
    assert kernel(root, capsys, "pod", "down", FAMILY)[1]["deleted"] is True and not cluster.pods


# --- chip discipline and credentials -----------------------------------------------------------


def test_one_lock_per_pod(tmp_path):
    from wikiengine.core.errors import WikiError
    from wikiengine.step.kernel.chip import pod_lock

    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    with pod_lock(tmp_path, "ctx", "default", "kernel-a-s1"):
        with pytest.raises(WikiError, match="pod kernel-a-s1 is held by another measurement"):
            with pod_lock(tmp_path, "ctx", "default", "kernel-a-s1", timeout=0.1):
                pass
        with pod_lock(tmp_path, "ctx", "default", "kernel-b-s1", timeout=0.1):
            pass


def test_row_46_no_credential_reaches_the_pod_or_the_wiki(pod_family, cluster, capsys):
    root, authoring, _started, _stub = pod_family
    assert kernel(root, capsys, "cand", FAMILY, "1", "--note", "fused", "--source", str(authoring / "fused.py"))[0] == 0
    assert kernel(root, capsys, "verify", FAMILY)[0] == 0
    created = requests_to(cluster, "POST", "/api/v1/namespaces/default/pods")[0]
    assert created.headers["authorization"] == f"Bearer {CANARY_TOKEN}"  # the API call itself is authenticated
    spec = created.body["spec"]
    assert spec["automountServiceAccountToken"] is False
    assert spec["containers"][0]["env"] == [{"name": "WIKI_KERNEL_ARTIFACTS", "value": "gs://example-bucket/kernels"}]
    sent = [json.dumps(r.body) + json.dumps(r.query) for r in cluster.requests] + [
        s.decode(errors="replace") for s in cluster.exec_stdin]
    history = git(root, "log", "--all", "-p")
    for canary in (CANARY_TOKEN, CANARY_HF):
        assert not any(canary in text for text in sent) and canary not in history
        assert not any(canary in p.read_text(errors="replace") for p in (root / "wiki").rglob("*") if p.is_file())


def test_a_pod_target_recorded_before_pods_were_brought_up_is_a_clear_error():
    from wikiengine.core.errors import WikiError

    old = {"kind": "pod", "pod": "kx-1", "accelerator": "tpu-v6e-slice", "topology": "2x2", "chips": 4, "hours": 2,
           "activeDeadlineSeconds": 7200, "artifacts": "gs://b/k"}  # what `start --pod` recorded before issue 16's pod
    with pytest.raises(WikiError, match=r"records no context, image \(written before"):
        kernel_pod.ClusterPod(old)
