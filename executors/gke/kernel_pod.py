"""A kernel session's cluster pod (seed 003 Step 1, "If Cluster pod": kexec discover, up, sync, run).

- **discover**: the TPU capacity the cluster reports, nodes grouped by nodepool with
  their accelerator and topology labels, machine type and allocatable ``google.com/tpu``:
  never assumed (:func:`discover`, :func:`nodepools`).
- **up**: one persistent pod per family session (``sleep infinity``), a nodeSelector on
  the chosen accelerator and topology, ``google.com/tpu`` limits = chips, the TTL as
  ``activeDeadlineSeconds`` (the cluster reaps it even if every software path fails),
  labels naming the family and session, no service-account token (no credential reaches
  the pod). Idempotent by name: a second ``up`` attaches to the pod of that session.
- **sync**: the reference, candidate and verifier bytes reach the pod explicitly, over
  exec stdin, each stored under its sha256, which the pod checks before it writes.
- **run**: the verifier on the pod (exec); the receipt's measured part comes back on
  stdout and names the hashes of the files it loaded, which must be the ones sent.
- **down**: delete the pod; a pod already gone is fine.

Pure parts (:func:`nodepools`, :func:`pod_manifest`, :func:`pod_state`) take and return
plain data; :class:`ClusterPod` makes the calls, all through :class:`~.kube.Kube`. Every
failure is one :class:`~wikiengine.core.errors.WikiError` line, never a traceback: the
pod's own state (gone, ended, pending past its wait) exits 2, a cluster API that cannot be
reached (:class:`~.kube.KubeUnavailable`) exits 69.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from wikiengine.core.errors import WikiError
from wikiengine.executors.gke.kube import DEFAULT_DEADLINE_S, ClosedOnExit, ExecResult, Kube, KubeConflict, KubeNotFound

ACCELERATOR_LABEL = "cloud.google.com/gke-tpu-accelerator"
TOPOLOGY_LABEL = "cloud.google.com/gke-tpu-topology"
NODEPOOL_LABEL = "cloud.google.com/gke-nodepool"
MACHINE_LABELS = ("node.kubernetes.io/instance-type", "beta.kubernetes.io/instance-type")
TPU_RESOURCE = "google.com/tpu"
FAMILY_LABEL = "wikiengine.io/kernel-family"
SESSION_LABEL = "wikiengine.io/kernel-session"
MANAGED_BY = {"app.kubernetes.io/managed-by": "wikiengine"}
ARTIFACTS_ENV = "WIKI_KERNEL_ARTIFACTS"
UP_WAIT_S = 300.0
RUN_DEADLINE_S = 900.0
_DNS_LABEL_RE = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")
_IMAGE_FAILURES = ("ErrImagePull", "ImagePullBackOff", "InvalidImageName", "CreateContainerConfigError",
                   "CreateContainerError")

# Runs on the pod: reads one length-prefixed JSON bundle {sha256: base64} from stdin (no EOF
# needed, so it works on v4 exec too), checks each file's hash, writes it as <sha256>.py.
SYNC_SCRIPT = r"""
import base64, hashlib, json, os, sys, tempfile
size = int(sys.stdin.buffer.readline())
bundle = json.loads(sys.stdin.buffer.read(size))
base = os.path.join(tempfile.gettempdir(), "wiki-kernel")
os.makedirs(base, exist_ok=True)
files = {}
for sha, text in bundle.items():
    data = base64.b64decode(text)
    if hashlib.sha256(data).hexdigest() != sha:
        sys.exit("sync: the bytes of %s arrived altered" % sha[:12])
    path = os.path.join(base, sha + ".py")
    with open(path + ".tmp", "wb") as out:
        out.write(data)
    os.replace(path + ".tmp", path)
    files[sha] = path
print(json.dumps({"dir": base, "files": files}))
"""


@dataclass(frozen=True)
class NodePool:
    """One nodepool's TPU capacity, as its nodes report it."""

    nodepool: str
    accelerator: str
    topology: str
    machine_type: str
    nodes: int
    chips_per_node: int

    def as_json(self) -> dict:
        return {**asdict(self), "chips": self.nodes * self.chips_per_node}


def nodepools(nodes: list[dict]) -> list[NodePool]:
    """Nodes carrying a TPU accelerator label, grouped by (nodepool, accelerator, topology, machine type)."""
    groups: dict[tuple[str, str, str, str], list[int]] = {}
    for node in nodes:
        labels = (node.get("metadata") or {}).get("labels") or {}
        if ACCELERATOR_LABEL not in labels:
            continue
        machine = next((labels[k] for k in MACHINE_LABELS if k in labels), "unknown")
        key = (labels.get(NODEPOOL_LABEL, "unknown"), labels[ACCELERATOR_LABEL], labels.get(TOPOLOGY_LABEL, "unknown"),
               machine)
        allocatable = ((node.get("status") or {}).get("allocatable") or {}).get(TPU_RESOURCE, "0")
        groups.setdefault(key, []).append(int(allocatable) if str(allocatable).isdigit() else 0)
    return [NodePool(*key, nodes=len(chips), chips_per_node=min(chips)) for key, chips in sorted(groups.items())]


def choose_pool(pools: list[NodePool], accelerator: str, topology: str, chips: int | None) -> NodePool:
    """The pool the pod lands on; chips beyond one node's allocatable are refused (it would never schedule)."""
    present = ", ".join(f"{p.accelerator}/{p.topology} ({p.chips_per_node} chips per node)" for p in pools) or "none"
    matching = [p for p in pools if p.accelerator == accelerator and p.topology == topology]
    if not matching:
        raise WikiError(f"the cluster has no {accelerator}/{topology} nodes (present: {present}); "
                        "see `wiki kernel pod discover`")
    best = max(matching, key=lambda p: p.chips_per_node)
    if chips is not None and not 0 < chips <= best.chips_per_node:
        raise WikiError(f"--chips {chips}: a {accelerator}/{topology} node has {best.chips_per_node} allocatable chips")
    return best


def pod_name(family: str, session: int) -> str:
    """``kernel-<family>-s<N>``, a DNS label (family slugs may hold ``_``; long ones are cut)."""
    suffix = f"-s{session}"
    stem = re.sub(r"[^a-z0-9-]+", "-", f"kernel-{family.lower()}").strip("-")[: 63 - len(suffix)].rstrip("-")
    return stem + suffix


def check_pod_name(name: str) -> str:
    if not _DNS_LABEL_RE.fullmatch(name):
        raise WikiError(f"--pod {name!r} is not a pod name (lower-case letters, digits and '-', at most 63)")
    return name


def pod_manifest(target: dict, family: str, session: int) -> dict:
    """The session pod: ``sleep infinity`` under a hard TTL, on the chosen TPU nodes, no credentials."""
    chips = str(target["chips"])
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": target["pod"], "namespace": target["namespace"],
                     "labels": {**MANAGED_BY, FAMILY_LABEL: family, SESSION_LABEL: str(session)}},
        "spec": {
            "restartPolicy": "Never",
            "activeDeadlineSeconds": int(target["activeDeadlineSeconds"]),
            "automountServiceAccountToken": False,
            "terminationGracePeriodSeconds": 10,
            "nodeSelector": {ACCELERATOR_LABEL: target["accelerator"], TOPOLOGY_LABEL: target["topology"]},
            "tolerations": [{"key": TPU_RESOURCE, "operator": "Exists", "effect": "NoSchedule"}],
            "containers": [{
                "name": "kernel",
                "image": target["image"],
                "command": ["sleep", "infinity"],
                "env": [{"name": ARTIFACTS_ENV, "value": target["artifacts"]}],
                "resources": {"requests": {TPU_RESOURCE: chips}, "limits": {TPU_RESOURCE: chips}},
            }],
        },
    }


def _clip(text: object) -> str:
    return " ".join(str(text or "").split())[:200]


def pod_state(pod: dict) -> tuple[str, str]:
    """``(running | pending | ended, why)`` from the pod's status."""
    status = pod.get("status") or {}
    phase = status.get("phase") or "Pending"
    if phase == "Running":
        return "running", "running"
    if phase == "Pending":
        for container in status.get("containerStatuses") or status.get("container_statuses") or []:
            waiting = (container.get("state") or {}).get("waiting") or {}
            if waiting.get("reason") in _IMAGE_FAILURES:
                return "ended", f"cannot start its container ({waiting['reason']}: {_clip(waiting.get('message'))})"
        unscheduled = next((c for c in status.get("conditions") or [] if c.get("type") == "PodScheduled"
                            and c.get("status") == "False"), None)
        return "pending", (f"{unscheduled.get('reason')}: {_clip(unscheduled.get('message'))}" if unscheduled
                           else "Pending")
    reason = status.get("reason") or phase
    return "ended", f"{phase} ({reason}{': ' + _clip(status.get('message')) if status.get('message') else ''})"


def kubeconfig_path(kubeconfig: str | Path | None = None) -> str | None:
    """``kubeconfig``, else ``$KUBECONFIG`` read now (the client reads it once, at its import)."""
    return str(kubeconfig) if kubeconfig else os.environ.get("KUBECONFIG") or None


def resolve_context(context: str | None, kubeconfig: str | Path | None = None) -> str:
    """The kubeconfig context to record: the one named, else the current one."""
    from wikiengine.executors.compute import ComputeUnavailableError
    from wikiengine.executors.gke.kube import require_client

    try:
        require_client()
    except ComputeUnavailableError as exc:  # a missing extra is an install problem (2), not an outage (69)
        raise WikiError(str(exc)) from None
    from kubernetes import config

    try:
        contexts, active = config.list_kube_config_contexts(config_file=kubeconfig_path(kubeconfig))
    except (config.ConfigException, OSError, ValueError, TypeError) as exc:
        raise WikiError(f"cannot read the kubeconfig ({type(exc).__name__}); fetch it with "
                        "gcloud container clusters get-credentials") from None
    names = [c["name"] for c in contexts or []]
    if context is None:
        if not active:
            raise WikiError("the kubeconfig has no current context: pass --context")
        return active["name"]
    if context not in names:
        raise WikiError(f"the kubeconfig has no context {context!r} (contexts: {', '.join(names) or 'none'})")
    return context


def open_kube(context: str, kubeconfig: str | Path | None = None, deadline_s: float = DEFAULT_DEADLINE_S) -> Kube:
    return Kube.from_context(context, cluster=context, kubeconfig=kubeconfig_path(kubeconfig), deadline_s=deadline_s)


def discover(context: str, kubeconfig: str | Path | None = None) -> list[NodePool]:
    """The TPU nodepools of the cluster behind ``context`` (``kexec.sh discover``)."""
    with open_kube(context, kubeconfig) as kube:
        return nodepools(kube.list_nodes(ACCELERATOR_LABEL))


class ClusterPod(ClosedOnExit):
    """The pod of one kernel session, as recorded in its run target."""

    def __init__(self, target: dict, *, kubeconfig: str | Path | None = None, deadline_s: float = DEFAULT_DEADLINE_S):
        missing = sorted({"pod", "context", "image", "accelerator", "topology", "chips", "activeDeadlineSeconds",
                          "artifacts"} - {k for k, v in target.items() if v not in (None, "")})
        if missing:
            raise WikiError(f"the session's pod target records no {', '.join(missing)} (written before `wiki kernel "
                            "start` brought pods up): pause the session and start it again")
        self.target = target
        self.name = target["pod"]
        self.namespace = target.get("namespace", "default")
        self.kube = open_kube(target["context"], kubeconfig, deadline_s)

    def close(self) -> None:
        self.kube.close()

    def up(self, family: str, session: int, *, wait_s: float | None = None, poll_s: float = 0.5) -> dict:
        """Create the session's pod (or attach to it) and wait until it runs.

        A pod of that name that is not this session's is refused; one still Pending at the
        deadline is deleted (it would hold chips nobody measures on); one that ended
        (evicted, past its TTL, image not pullable) is an error naming why.
        """
        manifest = pod_manifest(self.target, family, session)
        wait_s = UP_WAIT_S if wait_s is None else wait_s
        try:
            pod = self.kube.create_pod(self.namespace, manifest)
            created = True
        except KubeConflict:
            pod, created = self.kube.get_pod(self.namespace, self.name), False
            labels = (pod.get("metadata") or {}).get("labels") or {}
            if labels.get(FAMILY_LABEL) != family or labels.get(SESSION_LABEL) != str(session):
                raise WikiError(f"pod {self.name} exists and is not session {session} of {family}: "
                                "pass another --pod") from None
        deadline = time.monotonic() + wait_s
        while True:
            state, why = pod_state(pod)
            if state == "running":
                return {"pod": self.name, "created": created, "node": (pod.get("spec") or {}).get("nodeName")}
            if state == "ended":
                raise WikiError(f"pod {self.name} {why}: the session's pod is gone; pause or close the session "
                                "and start a new one")
            if time.monotonic() > deadline:
                self.delete()
                raise WikiError(f"pod {self.name} still Pending after {wait_s:g}s ({why}): deleted it")
            time.sleep(poll_s)
            pod = self.kube.get_pod(self.namespace, self.name)

    def delete(self) -> bool:
        """Delete the pod; False when it was already gone."""
        try:
            self.kube.delete_pod(self.namespace, self.name)
        except KubeNotFound:
            return False
        return True

    def require_running(self) -> str | None:
        """Refuse a pod that is gone or not running; the running pod's uid (None if it names none)."""
        try:
            pod = self.kube.get_pod(self.namespace, self.name)
        except KubeNotFound:
            raise WikiError(f"pod {self.name} is gone: pause or close the session and start a new one") from None
        state, why = pod_state(pod)
        if state != "running":
            raise WikiError(f"pod {self.name} is not running: {why}")
        uid = (pod.get("metadata") or {}).get("uid")
        return uid if isinstance(uid, str) and uid else None

    def _exec(self, command: list[str], stdin: bytes = b"", deadline_s: float = RUN_DEADLINE_S) -> ExecResult:
        try:
            return self.kube.exec_pod(self.namespace, self.name, command, stdin=stdin, deadline_s=deadline_s)
        except KubeNotFound:
            raise WikiError(f"pod {self.name} is gone: pause or close the session and start a new one") from None

    def sync(self, files: list[bytes]) -> dict[str, str]:
        """Send ``files`` to the pod; their paths on the pod, by sha256."""
        bundle = json.dumps({hashlib.sha256(b).hexdigest(): base64.b64encode(b).decode() for b in files}).encode()
        done = self._exec(["python3", "-c", SYNC_SCRIPT], stdin=str(len(bundle)).encode() + b"\n" + bundle,
                          deadline_s=self.kube.deadline_s * 3)
        if done.returncode != 0:
            raise WikiError(f"sync to pod {self.name} failed: {_last_line(done.stderr)}")
        try:
            return json.loads(done.stdout)["files"]
        except (ValueError, KeyError, TypeError):
            raise WikiError(f"sync to pod {self.name}: the pod answered no file list") from None

    def run_verifier(self, verifier_sha: str, args: list[str], paths: dict[str, str]) -> dict:
        """``python3 <verifier> ARGS`` on the pod; files are named by sha256 (replaced by their synced paths)."""
        if verifier_sha not in paths:
            raise WikiError(f"the verifier was not synced to pod {self.name}")
        done = self._exec(["python3", paths[verifier_sha], *[paths.get(a, a) for a in args]])
        if done.returncode != 0:
            raise WikiError(f"the verifier failed on pod {self.name}: {_last_line(done.stderr)}")
        try:
            measured = json.loads(done.stdout)
        except ValueError:
            raise WikiError(f"the verifier on pod {self.name} printed no JSON") from None
        if not isinstance(measured, dict):
            raise WikiError(f"the verifier on pod {self.name} printed no JSON object")
        return measured


def _last_line(stderr: bytes) -> str:
    lines = stderr.decode(errors="replace").strip().splitlines()
    return _clip(lines[-1] if lines else "no output")
