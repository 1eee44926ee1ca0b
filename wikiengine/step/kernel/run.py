"""Where a kernel session measures: its local chip or its cluster pod (seed 003 Step 9·K).

The run target recorded by ``wiki kernel start`` decides it, once per session:

- ``{"kind": "local", "chip": N}``: the verifier in a fresh local process, under the
  chip's lock and a compile slot;
- ``{"kind": "pod", ...}``: the same verifier bytes sent to the session's pod and run
  there (:mod:`wikiengine.executors.gke.kernel_pod`), under the pod's lock and a compile
  slot.

Either way the measured part comes back as the same dict (the receipt is sealed locally
by ``wiki kernel verify``), naming the sha256 of the reference, candidate and verifier it
loaded, which must be the bytes sent. The device query (the hardware token) runs where
the measurements run.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from wikiengine.core.errors import WikiError
from wikiengine.step.kernel.chip import chip_lock, compile_slot, pod_lock
from wikiengine.step.kernel.verify import verifier_args

VERIFY_TIMEOUT_S = 900


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def is_pod(target: dict) -> bool:
    return target.get("kind") == "pod"


def measure(root: Path, target: dict, binding: dict, reference: str, candidate: str, op_point: str,
            mode: str) -> dict:
    """The verifier's measured part for one candidate, on the session's chip or pod."""
    atol, rtol = binding.get("atol", 1e-4), binding.get("rtol", 1e-4)
    sent = {"reference": _sha256(reference.encode()), "candidate": _sha256(candidate.encode()),
            "verifier": _sha256(verifier_bytes())}
    if is_pod(target):
        measured = _measure_on_pod(root, target, reference, candidate, op_point, mode, atol, rtol)
    else:
        measured = _measure_locally(root, int(target.get("chip", 0)), reference, candidate, op_point, mode, atol, rtol)
    if measured.get("sources") != sent:
        raise WikiError(f"the verifier measured other bytes than were sent ({measured.get('sources')} != {sent})")
    return measured


def device_token(root: Path, target: dict) -> str:
    """The hardware token of the session's chip, from a device query where it measures."""
    if not is_pod(target):
        from wikiengine.step.kernel.verify import device_token as local_token

        return local_token()
    from wikiengine.executors.gke.kernel_pod import ClusterPod

    with pod_lock(root, target.get("context") or "", target.get("namespace", "default"), target["pod"]), \
            ClusterPod(target) as pod:
        pod.require_running()
        verifier = verifier_bytes()
        answer = pod.run_verifier(_sha256(verifier), ["--device-token"], pod.sync([verifier]))
    token = answer.get("hardware")
    if not isinstance(token, str) or not token:
        raise WikiError(f"the device query on pod {target['pod']} answered no hardware token")
    return token


def verifier_bytes() -> bytes:
    from wikiengine.step.kernel import verify as kernel_verify

    return Path(kernel_verify.__file__).read_bytes()


def _measure_locally(root: Path, chip: int, reference: str, candidate: str, op_point: str, mode: str,
                     atol: float, rtol: float) -> dict:
    """The verifier in a fresh process, on the pinned chip, in a compile slot."""
    with tempfile.TemporaryDirectory(prefix="wiki-kernel-") as tmp:
        ref_path, cand_path = Path(tmp, "reference.py"), Path(tmp, "candidate.py")
        ref_path.write_text(reference, encoding="utf-8")
        cand_path.write_text(candidate, encoding="utf-8")
        # -P: the caller's working directory is not on the child's sys.path, so a stray
        # ``statistics.py`` there cannot shadow what the verifier imports
        command = [sys.executable, "-P", "-m", "wikiengine.step.kernel.verify",
                   *verifier_args(str(ref_path), str(cand_path), op_point, mode, atol, rtol)]
        with chip_lock(root, chip), compile_slot(root):
            done = subprocess.run(command, capture_output=True, text=True, timeout=VERIFY_TIMEOUT_S, check=False,
                                  env=_child_env())
    if done.returncode != 0:
        raise WikiError("the verifier failed: " + ((done.stderr.strip().splitlines() or ["no output"])[-1])[:300])
    return json.loads(done.stdout)


def _measure_on_pod(root: Path, target: dict, reference: str, candidate: str, op_point: str, mode: str,
                    atol: float, rtol: float) -> dict:
    """Sync the three files to the pod (hashed), run the verifier there, read its JSON."""
    from wikiengine.executors.gke.kernel_pod import ClusterPod

    files = [reference.encode(), candidate.encode(), verifier_bytes()]
    ref_sha, cand_sha = _sha256(files[0]), _sha256(files[1])
    with pod_lock(root, target.get("context") or "", target.get("namespace", "default"), target["pod"]), \
            compile_slot(root), ClusterPod(target) as pod:
        pod.require_running()
        paths = pod.sync(files)
        return pod.run_verifier(_sha256(files[2]), verifier_args(ref_sha, cand_sha, op_point, mode, atol, rtol), paths)


def _child_env() -> dict:
    """The verifier's environment: what Python and torch need, no credentials."""
    keep = ("PATH", "HOME", "LANG", "LC_ALL", "PYTHONPATH", "VIRTUAL_ENV", "TMPDIR")
    env = {k: os.environ[k] for k in keep if k in os.environ}
    env.update({"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"})
    return env


# --- the pod's life: up with the session, down with its close ---------------------------------


def resolve_pod_target(target: dict) -> dict:
    """The pod record with what the cluster says: the kubeconfig context used, and the chips
    (default: one node's allocatable) checked against the nodepools present (never assumed)."""
    from wikiengine.executors.gke.kernel_pod import choose_pool, discover, resolve_context

    context = resolve_context(target.get("context"))
    pool = choose_pool(discover(context), target["accelerator"], target["topology"], target.get("chips"))
    return {**target, "context": context, "nodepool": pool.nodepool,
            "chips": target.get("chips") or pool.chips_per_node}


def session_pod_name(family: str, session: int) -> str:
    from wikiengine.executors.gke.kernel_pod import pod_name

    return pod_name(family, session)


def bring_up(target: dict, family: str, session: int) -> dict:
    """Create (or attach to) the session's pod and wait until it runs."""
    from wikiengine.executors.gke.kernel_pod import ClusterPod

    with ClusterPod(target) as pod:
        return pod.up(family, session)


def teardown(target: dict) -> dict:
    """Delete the session's pod; a pod already gone is fine."""
    from wikiengine.executors.gke.kernel_pod import ClusterPod

    with ClusterPod(target) as pod:
        return {"pod": target["pod"], "deleted": pod.delete()}


def session_teardown(target: dict) -> dict:
    """``{"pod_teardown": ...}`` after a close or pause of a pod session (``{}`` on a local chip).

    Teardown is mandatory; when the cluster cannot be asked, the failure is reported (the
    caller exits 9, INCOMPLETE, and names `wiki kernel pod down`), and the pod's TTL still reaps it.
    """
    if not is_pod(target):
        return {}
    try:
        return {"pod_teardown": teardown(target)}
    except WikiError as err:
        return {"pod_teardown": {"pod": target["pod"], "deleted": False, "error": str(err)}}


def pod_down(root: Path, family, *, dry_run: bool = False) -> dict:
    """`wiki kernel pod down`: delete the pod of the family's latest pod session."""
    from wikiengine.model.journal import parse_journal

    path = root / family.journal
    records = parse_journal(path.read_text(encoding="utf-8") if path.is_file() else "", family.journal)
    starts = [r for r in records if r.get("op") == "start" and is_pod(r.get("target") or {})]
    if not starts:
        raise WikiError(f"kernel family {family.slug} has no session on a cluster pod")
    found = {"family": family.slug, "session": starts[-1].get("session")}
    if dry_run:
        return {**found, "pod": starts[-1]["target"]["pod"], "dry_run": True}
    return {**found, **teardown(starts[-1]["target"])}
