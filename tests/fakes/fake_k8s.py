"""A loopback Kubernetes API server that speaks enough of the real API for JobSets and pod logs.

It serves discovery (``/version``, ``/api``, ``/api/v1``, ``/apis``,
``/apis/jobset.x-k8s.io/v1alpha2``), JobSets (list cluster-wide and namespaced with
``labelSelector``/``limit``/``continue``, get, create with 409 on a duplicate, delete
with 404 on a missing one, which also removes its pods as background propagation would), pods
(list by label selector) and pod logs (``tailLines``). Objects live in memory.

For the kernel lane's cluster pod it also serves nodes (``add_node``: a TPU nodepool's
labels and allocatable ``google.com/tpu``), bare pods (create with 409 on a duplicate,
get, delete) scheduled as the kube-scheduler would (a node matching the nodeSelector with
the requested chips free, else ``Pending``/``Unschedulable``; ``activeDeadlineSeconds``
enforced on read as the kubelet would), and exec over a websocket (RFC 6455 with the
``v5``/``v4.channel.k8s.io`` subprotocols). Exec is the honest stand-in for a pod: the
command runs as a local subprocess in that pod's own scratch directory (its ``TMPDIR``
and working directory), with an environment holding nothing of the caller's, and
``python3`` meaning this interpreter (the image's Python).

Faults are injected per route: :meth:`FakeKubeApi.fail` makes the next ``times``
matching requests answer 500, stall past the client's deadline, send malformed JSON, or
take effect and then answer 500 (``lost``: the answer of a landed create is lost).
Every request is recorded (method, path, query, JSON body) for assertions.
Only ever binds 127.0.0.1.
"""

from __future__ import annotations

import base64
import copy
import datetime as dt
import hashlib
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
import uuid
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import yaml

GROUP = "jobset.x-k8s.io"
VERSION = "v1alpha2"
JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"
TPU_RESOURCE = "google.com/tpu"
WS_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
EXEC_PROTOCOLS = ("v5.channel.k8s.io", "v4.channel.k8s.io")  # the server's preference, as kube-apiserver 1.30+


@dataclass
class Fault:
    method: str
    path_re: re.Pattern
    kind: str  # "500", "stall", "malformed"
    times: int


@dataclass
class Request:
    method: str
    path: str
    query: dict
    body: object
    headers: dict


def _selector_matches(selector: str, labels: dict) -> bool:
    for term in filter(None, (t.strip() for t in selector.split(","))):
        key, op, value = re.match(r"([^=!]+)(==|=|!=)?(.*)", term).groups()
        if op is None:
            if key not in labels:
                return False
        elif op == "!=":
            if labels.get(key) == value:
                return False
        elif labels.get(key) != value:
            return False
    return True


def _status(code: int, reason: str, message: str) -> dict:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }


class FakeKubeApi:
    """An in-memory API server on 127.0.0.1:<ephemeral port>; use as a context manager."""

    def __init__(self, stall_s: float = 5.0):
        self.jobsets: dict[tuple[str, str], dict] = {}
        self.pods: dict[tuple[str, str], dict] = {}
        self.logs: dict[tuple[str, str], str] = {}
        self.requests: list[Request] = []
        self.faults: list[Fault] = []
        self.stall_s = stall_s
        self.nodes: dict[str, dict] = {}
        self.scheduling = True  # False: every new pod stays Pending (no capacity comes free)
        self.exec_stdin: list[bytes] = []  # what each exec received on stdin, for assertions
        self.exec_protocols = EXEC_PROTOCOLS  # ("v4.channel.k8s.io",): a server before websocket v5
        self._scratch = tempfile.mkdtemp(prefix="fake-k8s-pods-")
        self._release = threading.Event()
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> FakeKubeApi:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._release.set()
        self._server.shutdown()
        self._server.server_close()
        shutil.rmtree(self._scratch, ignore_errors=True)

    # -- test set-up ---------------------------------------------------------------

    def fail(self, method: str, path_pattern: str, kind: str, times: int = 1) -> None:
        """Make the next ``times`` requests whose path matches ``path_pattern`` fail with ``kind``."""
        assert kind in ("500", "stall", "malformed", "lost")
        self.faults.append(Fault(method.upper(), re.compile(path_pattern), kind, times))

    def add_jobset(
        self,
        name: str,
        *,
        namespace: str = "default",
        image: str = "example-registry/app:main",
        terminal_state: str | None = None,
        conditions: list | None = None,
        labels: dict | None = None,
    ) -> dict:
        """Seed one JobSet as a cluster would hold it."""
        obj = {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": "JobSet",
            "metadata": {"name": name, "namespace": namespace, "labels": labels or {"xpk.google.com/workload": name}},
            "spec": {
                "replicatedJobs": [
                    {
                        "name": "slice-job",
                        "replicas": 1,
                        "template": {
                            "spec": {"template": {"spec": {"containers": [{"name": "main", "image": image}]}}}
                        },
                    }
                ]
            },
            "status": {},
        }
        self._stamp(obj)
        self.set_state(name, namespace=namespace, terminal_state=terminal_state, conditions=conditions, obj=obj)
        return obj

    def set_state(
        self,
        name: str,
        *,
        namespace: str = "default",
        terminal_state: str | None = None,
        conditions: list | None = None,
        active: int = 0,
        obj: dict | None = None,
    ) -> None:
        """Set a JobSet's status: terminal state, condition types that are True, active jobs."""
        obj = obj or self.jobsets[(namespace, name)]
        status: dict = {
            "replicatedJobsStatus": [
                {"name": "slice-job", "active": active, "ready": active, "succeeded": 0, "failed": 0, "suspended": 0}
            ]
        }
        now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        conds = [
            {"type": c, "status": "True", "reason": c, "message": f"jobset {c.lower()}", "lastTransitionTime": now}
            for c in (conditions or [])
        ]
        if terminal_state:
            status["terminalState"] = terminal_state
            if terminal_state not in (conditions or []):
                reason = "AllJobsCompleted" if terminal_state == "Completed" else "FailedJobs"
                conds.append(
                    {
                        "type": terminal_state,
                        "status": "True",
                        "reason": reason,
                        "message": f"jobset {terminal_state.lower()}",
                        "lastTransitionTime": now,
                    }
                )
        if conds:
            status["conditions"] = conds
        obj["status"] = status
        with self._lock:
            self.jobsets[(namespace, name)] = obj

    def add_pod(
        self, name: str, jobset: str, log: str, *, namespace: str = "default", exit_code: int | None = None
    ) -> None:
        """Seed a pod of a JobSet with its log text; ``exit_code`` makes its container terminated with it."""
        now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        status: dict = {"phase": "Succeeded", "startTime": now}
        if exit_code is not None:
            status["phase"] = "Succeeded" if exit_code == 0 else "Failed"
            terminated = {"exitCode": exit_code, "reason": "Completed" if exit_code == 0 else "Error",
                          "startedAt": now, "finishedAt": now}
            status["containerStatuses"] = [{"name": "main", "image": "x", "imageID": "", "ready": False,
                                            "restartCount": 0, "state": {"terminated": terminated}}]
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "labels": {JOBSET_NAME_LABEL: jobset}},
            "spec": {"containers": [{"name": "main", "image": "x"}]},
            "status": status,
        }
        self._stamp(pod)
        with self._lock:
            self.pods[(namespace, name)] = pod
            self.logs[(namespace, name)] = log

    def create_pod(self, body: dict, *, namespace: str = "default") -> None:
        """Seed a pod as a create request with ``body`` makes it (scheduled where it fits); no
        request is recorded."""
        code, answer, _ = self._create_pod(namespace, body)
        assert code == 201, answer

    def add_node(self, name: str, *, nodepool: str, accelerator: str, topology: str, machine_type: str,
                 chips: int) -> dict:
        """Seed one GKE TPU node as the cluster reports it (labels, allocatable ``google.com/tpu``)."""
        node = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": {
                "cloud.google.com/gke-nodepool": nodepool, "cloud.google.com/gke-tpu-accelerator": accelerator,
                "cloud.google.com/gke-tpu-topology": topology, "node.kubernetes.io/instance-type": machine_type,
                "kubernetes.io/hostname": name}},
            "spec": {"taints": [{"key": TPU_RESOURCE, "value": "present", "effect": "NoSchedule"}]},
            "status": {"capacity": {TPU_RESOURCE: str(chips), "cpu": "200"},
                       "allocatable": {TPU_RESOURCE: str(chips), "cpu": "200"}},
        }
        self._stamp(node)
        with self._lock:
            self.nodes[name] = node
        return node

    def set_pod_failed(self, name: str, reason: str, *, namespace: str = "default") -> None:
        """Make a pod end as the kubelet ends it: ``Evicted``, ``DeadlineExceeded``, ..."""
        with self._lock:
            self.pods[(namespace, name)]["status"].update(
                {"phase": "Failed", "reason": reason, "message": f"The pod was {reason.lower()} (injected)"})

    def pod_phase(self, name: str, *, namespace: str = "default") -> str | None:
        """The phase a read of the pod answers now (None: there is no such pod)."""
        with self._lock:
            pod = self.pods.get((namespace, name))
            return self._observe(pod)["status"].get("phase") if pod else None

    def pod_dir(self, name: str, namespace: str = "default") -> Path:
        """The scratch directory standing in for the pod's filesystem."""
        return Path(self._scratch, namespace, name)

    def _schedule(self, pod: dict) -> None:
        spec, status = pod["spec"], pod["status"]
        wanted = int(((spec["containers"][0].get("resources") or {}).get("limits") or {}).get(TPU_RESOURCE, 0))
        used: dict[str, int] = {}
        for other in self.pods.values():
            node = other["spec"].get("nodeName")
            if node and other["status"].get("phase") in ("Pending", "Running"):
                limits = (other["spec"]["containers"][0].get("resources") or {}).get("limits") or {}
                used[node] = used.get(node, 0) + int(limits.get(TPU_RESOURCE, 0))
        selector = spec.get("nodeSelector") or {}
        fits = [n for n in sorted(self.nodes) if self.scheduling
                and all(self.nodes[n]["metadata"]["labels"].get(k) == v for k, v in selector.items())
                and int(self.nodes[n]["status"]["allocatable"].get(TPU_RESOURCE, 0)) - used.get(n, 0) >= wanted]
        now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        if not fits:
            status.update({"phase": "Pending", "conditions": [{
                "type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                "message": f"0/{len(self.nodes)} nodes are available: insufficient {TPU_RESOURCE} or node(s) "
                           "didn't match Pod's node affinity/selector"}]})
            return
        spec["nodeName"] = fits[0]
        container = spec["containers"][0]
        status.update({"phase": "Running", "startTime": now, "conditions": [
            {"type": "PodScheduled", "status": "True"}, {"type": "Ready", "status": "True"}],
            "containerStatuses": [{"name": container["name"], "image": container["image"], "imageID": "",
                                   "ready": True, "restartCount": 0, "state": {"running": {"startedAt": now}}}]})
        self.pod_dir(pod["metadata"]["name"], pod["metadata"]["namespace"]).mkdir(parents=True, exist_ok=True)

    def _observe(self, pod: dict) -> dict:
        """The kubelet's view on read: a pod past its activeDeadlineSeconds has failed."""
        deadline, start = pod["spec"].get("activeDeadlineSeconds"), pod["status"].get("startTime")
        if deadline is not None and start and pod["status"].get("phase") == "Running":
            started = dt.datetime.strptime(start, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=dt.UTC)
            if (dt.datetime.now(dt.UTC) - started).total_seconds() > int(deadline):
                pod["status"].update({"phase": "Failed", "reason": "DeadlineExceeded",
                                      "message": "Pod was active on the node longer than the specified deadline"})
        return pod

    def write_kubeconfig(self, path: Path, contexts: list[str], *, others: dict[str, str] | None = None) -> Path:
        """Write a kubeconfig whose ``contexts`` all point at this server (``others``: context -> url)."""
        entries = {ctx: self.url for ctx in contexts} | (others or {})
        doc = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": f"c-{ctx}", "cluster": {"server": url}} for ctx, url in entries.items()],
            "users": [{"name": "tester", "user": {"token": "fake-test-token"}}],
            "contexts": [{"name": ctx, "context": {"cluster": f"c-{ctx}", "user": "tester"}} for ctx in entries],
            "current-context": next(iter(entries)),
        }
        path.write_text(yaml.safe_dump(doc))
        return path

    @staticmethod
    def _stamp(obj: dict) -> None:
        meta = obj["metadata"]
        meta.setdefault("uid", str(uuid.uuid4()))
        meta.setdefault("creationTimestamp", dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))
        meta["resourceVersion"] = str(uuid.uuid4().int % 10**9)

    # -- serving ----------------------------------------------------------------------

    def _take_fault(self, method: str, path: str) -> str | None:
        with self._lock:
            for fault in self.faults:
                if fault.times > 0 and fault.method == method and fault.path_re.search(path):
                    fault.times -= 1
                    return fault.kind
        return None

    def _handler_class(self):
        api = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # as Go's net/http: headers and body, written apart, go out at once

            def log_message(self, *args) -> None:  # keep test output quiet
                pass

            def _send(self, code: int, payload, content_type: str = "application/json") -> None:
                data = (
                    payload
                    if isinstance(payload, bytes)
                    else (payload if isinstance(payload, str) else json.dumps(payload)).encode()
                )
                self.send_response(code)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _handle(self, method: str) -> None:
                parts = urlsplit(self.path)
                query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
                body = None
                length = int(self.headers.get("Content-Length") or 0)
                if length:
                    raw = self.rfile.read(length)
                    try:
                        body = json.loads(raw)
                    except ValueError:
                        body = raw.decode(errors="replace")
                api.requests.append(
                    Request(method, parts.path, query, body, {k.lower(): v for k, v in self.headers.items()})
                )
                fault = api._take_fault(method, parts.path)
                if fault == "stall":
                    api._release.wait(api.stall_s)  # the client gave up long ago: just hang up
                    self.close_connection = True
                    return None
                if fault == "500":
                    return self._send(500, _status(500, "InternalError", "injected failure"))
                if fault == "malformed":
                    return self._send(200, b'{"kind": "JobSetList", "items": [')
                exec_match = re.fullmatch(r"/api/v1/namespaces/([^/]+)/pods/([^/]+)/exec", parts.path)
                if exec_match and method == "GET":
                    with api._lock:
                        pod = api.pods.get((exec_match.group(1), exec_match.group(2)))
                        pod = api._observe(pod) if pod is not None else None
                    if pod is None:
                        return self._send(404, _status(404, "NotFound", f'pods "{exec_match.group(2)}" not found'))
                    if pod["status"].get("phase") != "Running":
                        return self._send(400, _status(400, "BadRequest", "container not found (pod is not running)"))
                    return self.upgrade_exec(pod, parse_qs(parts.query).get("command", []))
                code, payload, ctype = api._route(method, parts.path, query, body)
                if fault == "lost":  # the request took effect but its answer is an error
                    return self._send(500, _status(500, "InternalError", "answer lost"))
                self._send(code, payload, ctype)

            def do_GET(self) -> None:
                self._handle("GET")

            def do_POST(self) -> None:
                self._handle("POST")

            def do_DELETE(self) -> None:
                self._handle("DELETE")

            def upgrade_exec(self, pod: dict, commands: list[str]) -> None:
                """Accept the websocket and run the command as the pod would."""
                offered = [p.strip() for p in self.headers.get("Sec-WebSocket-Protocol", "").split(",")]
                protocol = next((p for p in api.exec_protocols if p in offered), None)
                key = self.headers.get("Sec-WebSocket-Key", "")
                if protocol is None or not key:
                    return self._send(400, _status(400, "BadRequest", "not a websocket exec request"))
                accept = base64.b64encode(hashlib.sha1((key + WS_GUID).encode()).digest()).decode()
                self.send_response(101, "Switching Protocols")
                for name, value in (("Upgrade", "websocket"), ("Connection", "Upgrade"),
                                    ("Sec-WebSocket-Accept", accept), ("Sec-WebSocket-Protocol", protocol)):
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.flush()
                self.close_connection = True
                api._run_exec(self.rfile, self.wfile, pod, commands)

        return Handler

    def _route(self, method: str, path: str, query: dict, body) -> tuple[int, object, str]:
        j = "application/json"
        if path == "/version":
            return 200, {"major": "1", "minor": "32", "gitVersion": "v1.32.0-fake", "platform": "linux/amd64"}, j
        if path == "/api":
            return (
                200,
                {
                    "kind": "APIVersions",
                    "versions": ["v1"],
                    "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}],
                },
                j,
            )
        if path == "/api/v1":
            return (
                200,
                {
                    "kind": "APIResourceList",
                    "groupVersion": "v1",
                    "resources": [
                        {
                            "name": "pods",
                            "singularName": "pod",
                            "namespaced": True,
                            "kind": "Pod",
                            "verbs": ["get", "list"],
                            "shortNames": ["po"],
                        },
                        {"name": "pods/log", "singularName": "", "namespaced": True, "kind": "Pod", "verbs": ["get"]},
                    ],
                },
                j,
            )
        if path == "/apis":
            gv = {"groupVersion": f"{GROUP}/{VERSION}", "version": VERSION}
            return (
                200,
                {
                    "kind": "APIGroupList",
                    "apiVersion": "v1",
                    "groups": [{"name": GROUP, "versions": [gv], "preferredVersion": gv}],
                },
                j,
            )
        if path == f"/apis/{GROUP}/{VERSION}":
            return (
                200,
                {
                    "kind": "APIResourceList",
                    "apiVersion": "v1",
                    "groupVersion": f"{GROUP}/{VERSION}",
                    "resources": [
                        {
                            "name": "jobsets",
                            "singularName": "jobset",
                            "namespaced": True,
                            "kind": "JobSet",
                            "verbs": ["create", "get", "list", "patch", "update", "delete", "watch"],
                        },
                        {
                            "name": "jobsets/status",
                            "singularName": "",
                            "namespaced": True,
                            "kind": "JobSet",
                            "verbs": ["get", "patch", "update"],
                        },
                    ],
                },
                j,
            )
        if m := re.fullmatch(rf"/apis/{re.escape(GROUP)}/{VERSION}(?:/namespaces/([^/]+))?/jobsets(?:/([^/]+))?", path):
            return self._jobsets(method, m.group(1), m.group(2), query, body)
        if path == "/api/v1/nodes":
            with self._lock:
                items = [copy.deepcopy(n) for _, n in sorted(self.nodes.items())
                         if _selector_matches(query.get("labelSelector", ""), n["metadata"]["labels"])]
            return 200, {"kind": "NodeList", "apiVersion": "v1", "metadata": {"resourceVersion": "1"}, "items": items}, j
        if method == "POST" and (m := re.fullmatch(r"/api/v1/namespaces/([^/]+)/pods", path)):
            return self._create_pod(m.group(1), body)
        if m := re.fullmatch(r"/api/v1/namespaces/([^/]+)/pods/([^/]+)", path):
            return self._one_pod(method, m.group(1), m.group(2))
        if m := re.fullmatch(r"/api/v1/namespaces/([^/]+)/pods", path):
            with self._lock:
                items = [
                    copy.deepcopy(p)
                    for (ns, _), p in sorted(self.pods.items())
                    if ns == m.group(1) and _selector_matches(query.get("labelSelector", ""), p["metadata"]["labels"])
                ]
            return 200, {"kind": "PodList", "apiVersion": "v1", "metadata": {"resourceVersion": "1"}, "items": items}, j
        if m := re.fullmatch(r"/api/v1/namespaces/([^/]+)/pods/([^/]+)/log", path):
            key = (m.group(1), m.group(2))
            if key not in self.logs:
                return 404, _status(404, "NotFound", f'pods "{key[1]}" not found'), j
            lines = self.logs[key].splitlines(keepends=True)
            if "tailLines" in query:
                lines = lines[-int(query["tailLines"]) :] if int(query["tailLines"]) else []
            return 200, "".join(lines), "text/plain"
        return 404, _status(404, "NotFound", "the server could not find the requested resource"), j

    def _jobsets(
        self, method: str, namespace: str | None, name: str | None, query: dict, body
    ) -> tuple[int, object, str]:
        j = "application/json"
        if method == "POST":
            if not namespace or name or not isinstance(body, dict):
                return 400, _status(400, "BadRequest", "bad create"), j
            obj = copy.deepcopy(body)
            obj["metadata"]["namespace"] = namespace
            key = (namespace, obj["metadata"]["name"])
            with self._lock:
                if key in self.jobsets:
                    return 409, _status(409, "AlreadyExists", f'jobsets.{GROUP} "{key[1]}" already exists'), j
                self._stamp(obj)
                obj["status"] = {}
                self.jobsets[key] = obj
            return 201, obj, j
        if method == "DELETE":
            if not (namespace and name):
                return 405, _status(405, "MethodNotAllowed", "delete one jobset by name"), j
            with self._lock:
                obj = self.jobsets.pop((namespace, name), None)
                if obj is None:
                    return 404, _status(404, "NotFound", f'jobsets.{GROUP} "{name}" not found'), j
                for key in [k for k, p in self.pods.items() if k[0] == namespace and
                            p["metadata"]["labels"].get(JOBSET_NAME_LABEL) == name]:
                    del self.pods[key]  # what background propagation does, settled at once
                    self.logs.pop(key, None)
            return 200, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                         "details": {"name": name, "group": GROUP, "kind": "jobsets", "uid": obj["metadata"]["uid"]}}, j
        if name:
            obj = self.jobsets.get((namespace, name))
            if obj is None:
                return 404, _status(404, "NotFound", f'jobsets.{GROUP} "{name}" not found'), j
            return 200, obj, j
        with self._lock:
            items = [copy.deepcopy(o) for (ns, _), o in sorted(self.jobsets.items()) if namespace in (None, ns)]
        selector = query.get("labelSelector", "")
        items = [o for o in items if _selector_matches(selector, o["metadata"].get("labels", {}))]
        start = int(query.get("continue") or 0)
        limit = int(query.get("limit") or 0) or len(items)
        page, rest = items[start : start + limit], items[start + limit :]
        meta = {"resourceVersion": "1"}
        if rest:
            meta["continue"] = str(start + limit)
        return 200, {"apiVersion": f"{GROUP}/{VERSION}", "kind": "JobSetList", "metadata": meta, "items": page}, j

    def _create_pod(self, namespace: str, body) -> tuple[int, object, str]:
        j = "application/json"
        if not isinstance(body, dict) or not (body.get("metadata") or {}).get("name"):
            return 400, _status(400, "BadRequest", "bad create"), j
        pod = copy.deepcopy(body)
        pod["metadata"]["namespace"] = namespace
        pod["metadata"].setdefault("labels", {})
        pod["status"] = {}
        key = (namespace, pod["metadata"]["name"])
        with self._lock:
            if key in self.pods:
                return 409, _status(409, "AlreadyExists", f'pods "{key[1]}" already exists'), j
            self._stamp(pod)
            self._schedule(pod)
            self.pods[key] = pod
            self.logs[key] = ""
            return 201, copy.deepcopy(pod), j

    def _one_pod(self, method: str, namespace: str, name: str) -> tuple[int, object, str]:
        j = "application/json"
        with self._lock:
            pod = self.pods.get((namespace, name))
            if pod is None:
                return 404, _status(404, "NotFound", f'pods "{name}" not found'), j
            if method == "DELETE":
                del self.pods[(namespace, name)]
                self.logs.pop((namespace, name), None)
                shutil.rmtree(self.pod_dir(name, namespace), ignore_errors=True)
            return 200, copy.deepcopy(self._observe(pod)), j

    # -- exec: the pod's command as a local subprocess ------------------------------------------

    def _run_exec(self, rfile, wfile, pod: dict, commands: list[str]) -> None:
        scratch = self.pod_dir(pod["metadata"]["name"], pod["metadata"]["namespace"])
        argv = [sys.executable if commands[:1] == ["python3"] else commands[0], *commands[1:]] if commands else []
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(scratch), "TMPDIR": str(scratch),
               "LANG": "C.UTF-8", "OMP_NUM_THREADS": "1"}
        send_lock = threading.Lock()

        def send(channel: int, data: bytes, opcode: int = 2) -> None:
            payload = bytes([channel]) + data if opcode == 2 else data
            header = bytes([0x80 | opcode])
            size = len(payload)
            header += bytes([size]) if size < 126 else (bytes([126]) + struct.pack(">H", size) if size < 65536
                                                         else bytes([127]) + struct.pack(">Q", size))
            with send_lock:
                wfile.write(header + payload)
                wfile.flush()

        try:
            proc = subprocess.Popen(argv, cwd=scratch, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE)
        except OSError as exc:
            send(3, json.dumps({"metadata": {}, "status": "Failure", "reason": "InternalError",
                                "message": f"exec failed: {exc}"}).encode())
            send(0, b"", opcode=8)
            return
        received = bytearray()

        def feed() -> None:  # the client's frames: stdin, and (v5) the close of stdin
            try:
                while True:
                    opcode, payload = _read_frame(rfile)
                    if opcode == 8 or opcode is None:
                        break
                    if payload[:1] == b"\x00":
                        received.extend(payload[1:])
                        proc.stdin.write(payload[1:])
                        proc.stdin.flush()
                    elif payload[:2] == b"\xff\x00":
                        proc.stdin.close()
            except (OSError, ValueError):
                pass

        def pump(stream, channel: int) -> None:
            for chunk in iter(lambda: stream.read1(65536), b""):
                send(channel, chunk)

        threading.Thread(target=feed, daemon=True).start()
        pumps = [threading.Thread(target=pump, args=(s, c), daemon=True) for s, c in ((proc.stdout, 1), (proc.stderr, 2))]
        for thread in pumps:
            thread.start()
        code = proc.wait()
        for thread in pumps:
            thread.join()
        self.exec_stdin.append(bytes(received))
        status = ({"metadata": {}, "status": "Success"} if code == 0 else {
            "metadata": {}, "status": "Failure", "reason": "NonZeroExitCode",
            "message": f"command terminated with non-zero exit code: exit status {code}",
            "details": {"causes": [{"reason": "ExitCode", "message": str(code)}]}})
        try:
            send(3, json.dumps(status).encode())
            send(0, struct.pack(">H", 1000), opcode=8)
        except OSError:
            pass


def _read_frame(rfile) -> tuple[int | None, bytes]:
    """One client frame (masked, as RFC 6455 requires of clients): ``(opcode, payload)``."""
    head = rfile.read(2)
    if len(head) < 2:
        return None, b""
    opcode, size = head[0] & 0x0F, head[1] & 0x7F
    if size == 126:
        size = struct.unpack(">H", rfile.read(2))[0]
    elif size == 127:
        size = struct.unpack(">Q", rfile.read(8))[0]
    mask = rfile.read(4) if head[1] & 0x80 else b"\0\0\0\0"
    data = rfile.read(size)
    return opcode, bytes(b ^ mask[i % 4] for i, b in enumerate(data))
