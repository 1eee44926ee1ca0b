"""Where a kernel session measures: its local chip or its cluster pod (seed 003 Step 9·K).

The run target recorded by ``wiki kernel start`` decides it, once per session:

- ``{"kind": "local", "chip": N}``: the verifier in a fresh local process, confined by the
  sandbox (:mod:`wikiengine.core.sandbox`: a scratch directory, a clean HOME and
  environment, rlimits, a deadline, Landlock where the kernel has it, nothing left
  running), under the chip's lock and a compile slot; the repository and ``.git`` are
  compared before and after (:mod:`wikiengine.core.repo_guard`): a change fails the
  measurement with :class:`RepositoryChanged` naming the paths, and nothing is committed
  (a planted hook would run at the writer's commit); a run cut at its deadline or by a
  limit is a FAIL measurement;
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
import importlib.util
import json
import os
import sys
from pathlib import Path

from wikiengine.core import repo_guard
from wikiengine.core.clock import now_iso
from wikiengine.core.errors import WikiError
from wikiengine.core.sandbox import Limits, Outcome, run_confined
from wikiengine.core.usercache import KeptMap, code_stamp
from wikiengine.step.kernel import verify as kernel_verify
from wikiengine.step.kernel.chip import chip_lock, compile_slot, pod_lock

VERIFY_TIMEOUT_S = 900
VERIFY_LIMITS = Limits(wall_s=VERIFY_TIMEOUT_S, cpu_s=VERIFY_TIMEOUT_S, address_space=16 << 30)
VERIFY_LANDLOCK = "try"  # Landlock where the kernel has it ("require" refuses to run without it)


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
        measured["sandbox"] = {"where": f"pod {target.get('pod')}"}
    else:
        measured = _measure_locally(root, int(target.get("chip", 0)), reference, candidate, op_point, mode, atol, rtol)
    if measured.get("sources") != sent:
        raise WikiError(f"the verifier measured other bytes than were sent ({measured.get('sources')} != {sent})")
    return measured


def device_token(root: Path, target: dict) -> str:
    """The hardware token of the session's chip, from a device query where it measures, or
    the answer kept for the same chip (:func:`_kept`)."""
    if not is_pod(target):
        return _kept(_LOCAL_TOKENS, _cpu_key(), kernel_verify.device_token)
    from wikiengine.executors.gke.kernel_pod import ClusterPod

    verifier = verifier_bytes()
    verifier_sha = _sha256(verifier)
    with pod_lock(root, target.get("context") or "", target.get("namespace", "default"), target["pod"]), \
            ClusterPod(target) as pod:
        uid = pod.require_running()
        key = repr((target.get("context") or "", pod.namespace, pod.name, uid, verifier_sha)) if uid else None
        return _kept(_POD_TOKENS, key, lambda: _pod_token(pod, verifier, verifier_sha))


def _pod_token(pod, verifier: bytes, verifier_sha: str) -> str:
    """The device query on the session's pod: the verifier synced and run with ``--device-token``."""
    token = pod.run_verifier(verifier_sha, ["--device-token"], pod.sync([verifier])).get("hardware")
    if not isinstance(token, str) or not token:
        raise WikiError(f"the device query on pod {pod.name} answered no hardware token")
    return token


def _kept(kept: KeptMap, key: str | None, query) -> str:
    """The answer ``kept`` holds under ``key``, else ``query()``'s, kept; ``key`` None: asked each time."""
    held = kept.get(key) if key is not None else None
    if held is not None:
        return held.decode()
    token = query()
    if key is not None:
        kept.put(key, token.encode())
    return token


# A pod's answer, kept per user for that pod's life: the query imports torch (or jax) on the pod,
# 1.3 s of CPU and more at each `wiki kernel start` and `stub`, and the answer follows from the
# pod's chips (one pod object: its uid; a pod replaced under the same name has another) and the
# verifier (its sha256). The pod is still asked whether it runs; a receipt carries its own answer.
_POD_TOKENS = KeptMap("kernel", "pod-device-tokens.marshal", stamp=lambda: "pod-uid-verifier-sha256", limit=32)

# The local chip's answer, kept per user: the query imports torch (about 1.3 s of CPU, at each
# `wiki kernel start` and `stub`) and its CPU answer follows from what _cpu_key names, torch
# and the verifier (the stamp). A receipt still carries the verifier's own answer, checked
# against the stub's row by `wiki kernel verify`.
_LOCAL_TOKENS = KeptMap("kernel", "device-tokens.marshal", limit=8,
                        stamp=lambda: code_stamp("torch", files=(kernel_verify.__file__,)))


def _cpu_key() -> str | None:
    """What torch's answer on this CPU follows from: the machine, the CPU's feature flags and
    torch's ``ATEN_CPU_CAPABILITY`` override. None where the query must run each time: a TPU
    stack is installed (jax answers first), or the CPU's features cannot be read."""
    if importlib.util.find_spec("jax") is not None:
        return None
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as cpuinfo:
            features = sorted({line.partition(":")[2].strip() for line in cpuinfo if line.startswith(("flags", "Features"))})
    except OSError:
        return None
    return repr((os.uname().machine, features, os.environ.get("ATEN_CPU_CAPABILITY"))) if features else None


def verifier_bytes() -> bytes:
    return Path(kernel_verify.__file__).read_bytes()


def _measure_locally(root: Path, chip: int, reference: str, candidate: str, op_point: str, mode: str,
                     atol: float, rtol: float) -> dict:
    """The verifier in the sandbox (:mod:`wikiengine.core.sandbox`), on the pinned chip, in a
    compile slot; the repository compared before and after (:mod:`wikiengine.core.repo_guard`)."""
    files = {"reference.py": reference.encode(), "candidate.py": candidate.encode(), "verify.py": verifier_bytes()}
    # -P: the scratch directory is not on the child's sys.path, so a ``statistics.py`` written
    # there cannot shadow what the verifier imports; the verifier runs as a file, so the child
    # imports nothing of wikiengine
    command = [sys.executable, "-P", "verify.py",
               *kernel_verify.verifier_args("reference.py", "candidate.py", op_point, mode, atol, rtol)]
    with chip_lock(root, chip), compile_slot(root):
        before = repo_guard.snapshot(root)
        outcome = run_confined(command, files=files, env=_child_env(), limits=VERIFY_LIMITS, read_paths=_torch_paths(),
                               landlock=VERIFY_LANDLOCK)
        changed = repo_guard.changed_paths(before, repo_guard.snapshot(root))
    if changed:
        raise RepositoryChanged(changed, bool(outcome.confinement.get("landlock")))
    measured = _measured(outcome, files, mode)
    measured["sandbox"] = {"where": "local", "landlock_abi": outcome.confinement.get("landlock", 0),
                           "subreaper": outcome.confinement.get("subreaper", False),
                           "nproc_enforced": outcome.confinement.get("nproc_enforced", False),
                           "killed_at_end": outcome.killed, "timed_out": outcome.timed_out}
    if outcome.survivors:
        measured["verdict"] = "FAIL"
        measured["reasons"] = [*measured.get("reasons", []), "processes of the run survived the warden's kill: "
                               + ", ".join(map(str, outcome.survivors))]
    return measured


class RepositoryChanged(WikiError):
    """The repository or ``.git`` changed while candidate code ran: the measurement fails and
    nothing is committed (a commit would run a planted hook); nothing is reverted either."""

    def __init__(self, changed: list[str], landlock: bool):
        self.changed = changed
        who = ("another process wrote there (the candidate could not, under Landlock)" if landlock else
               "the candidate ran with the user's file permissions")
        shown = ", ".join(changed[:20]) + (f" and {len(changed) - 20} more" if len(changed) > 20 else "")
        super().__init__(f"verifier FAIL: the repository changed during the run ({who}): {shown}; nothing was "
                         "committed and nothing reverted: inspect and restore these paths before any commit")


def _measured(outcome: Outcome, files: dict[str, bytes], mode: str) -> dict:
    """The verifier's JSON; a FAIL measurement when the run was cut (deadline, a limit's signal);
    WikiError when it ended without a report for another reason."""
    if outcome.ok:
        try:
            measured = json.loads(outcome.stdout)
        except ValueError:
            measured = None
        if isinstance(measured, dict):
            return measured
    cut = (f"killed at its deadline ({VERIFY_LIMITS.wall_s:g} s)" if outcome.timed_out else
           f"killed by signal {-outcome.returncode}" if (outcome.returncode or 0) < 0 else None)
    if cut is None:
        last = (outcome.stderr.strip().splitlines() or [outcome.confinement.get("error") or "no output"])[-1]
        raise WikiError("the verifier failed: " + last[:300])
    sent = {"reference": _sha256(files["reference.py"]), "candidate": _sha256(files["candidate.py"]),
            "verifier": _sha256(files["verify.py"])}
    return {"verdict": "FAIL", "reasons": [f"the verifier run was {cut}; nothing of it outlived it"], "probe": {},
            "parity": {"pass": False}, "firing": {"pass": False}, "timing": {}, "leads": [], "hardware": None,
            "mode": mode, "verifier": kernel_verify.VERIFIER, "sources": sent, "created": now_iso()}


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
        return pod.run_verifier(_sha256(files[2]), kernel_verify.verifier_args(ref_sha, cand_sha, op_point, mode, atol, rtol), paths)


def _torch_paths() -> list[str]:
    """The directory torch is imported from (its ``site-packages``), without importing it."""
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return []
    return [str(Path(next(iter(spec.submodule_search_locations))).parent)]


def _child_env() -> dict:
    """What the verifier adds to the sandbox's clean environment: where torch is, one thread."""
    env = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    if _torch_paths():
        env["PYTHONPATH"] = _torch_paths()[0]
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
    from wikiengine.model.journal import journal_records

    records = journal_records(root, family.journal)
    starts = [r for r in records if r.get("op") == "start" and is_pod(r.get("target") or {})]
    if not starts:
        raise WikiError(f"kernel family {family.slug} has no session on a cluster pod")
    found = {"family": family.slug, "session": starts[-1].get("session")}
    if dry_run:
        return {**found, "pod": starts[-1]["target"]["pod"], "dry_run": True}
    return {**found, **teardown(starts[-1]["target"])}
