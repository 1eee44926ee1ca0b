"""The one place where GKE executors talk to a Kubernetes API server.

:class:`Kube` wraps the real ``kubernetes`` client for one cluster. Every call carries
a deadline (``_request_timeout``) and no hidden retries, so a stalled server costs at
most the deadline (RELIABILITY row 17). Failures become typed one-line errors that
name the cluster and the call, never a header, token or response body (row 46):

- :class:`KubeNotFound` (404) and :class:`KubeConflict` (409) are real answers;
- :class:`KubeUnavailable` (5xx, 401/403, timeout, refused connection, malformed JSON,
  an unloadable kubeconfig context) means the state is unknown.

Nodes and bare pods serve the kernel lane's cluster pod; :meth:`Kube.exec_pod` runs a
command in a pod through the client's websocket exec (``kubernetes.stream``, the
``v5``/``v4.channel.k8s.io`` subprotocols), bounded by its own deadline.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Self

from wikiengine.executors.compute import ComputeError, ComputeUnavailableError

JOBSET_GROUP = "jobset.x-k8s.io"
JOBSET_VERSION = "v1alpha2"
JOBSET_PLURAL = "jobsets"
DEFAULT_DEADLINE_S = 20.0
LIST_PAGE_SIZE = 500  # kubectl's chunk size


class KubeNotFound(ComputeError):
    """The server said 404: the object does not exist."""


class KubeConflict(ComputeError):
    """The server said 409: an object of that name already exists."""


class KubeUnavailable(ComputeUnavailableError):
    """The server could not be asked or did not answer clearly: the state is unknown."""


@dataclass(frozen=True)
class ExecResult:
    """What a command run in a pod left: its exit code and its two streams."""

    returncode: int
    stdout: bytes
    stderr: bytes


_HANDSHAKE_RE = re.compile(r"Handshake status (\d{3})")


def _describe_transport(exc: Exception, deadline_s: float) -> str:
    import urllib3

    reason = getattr(exc, "reason", None)
    if isinstance(exc, urllib3.exceptions.MaxRetryError) and isinstance(reason, Exception):
        exc = reason
    if isinstance(exc, (urllib3.exceptions.ReadTimeoutError, urllib3.exceptions.ConnectTimeoutError, TimeoutError)):
        return f"no answer within the {deadline_s:g}s deadline"
    if isinstance(exc, urllib3.exceptions.NewConnectionError):
        return "connection refused or unreachable"
    if isinstance(exc, urllib3.exceptions.ProtocolError):
        return "connection dropped"
    return f"transport error ({type(exc).__name__})"


def require_client() -> None:
    """Raise a one-line :class:`ComputeUnavailableError` when the ``gke`` extra is not installed."""
    try:
        import kubernetes  # noqa: F401
    except ImportError:
        raise ComputeUnavailableError("the GKE backend needs the 'gke' extra: pip install 'wikiengine[gke]'") from None


class ClosedOnExit:
    """A client that a ``with`` block closes (``close()``) on the way out, whatever happened."""

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Kube(ClosedOnExit):
    """One cluster's API server, reached through the real ``kubernetes`` client."""

    def __init__(self, api_client: Any, cluster: str, deadline_s: float = DEFAULT_DEADLINE_S):
        self.api_client = api_client
        self.cluster = cluster
        self.deadline_s = deadline_s

    @classmethod
    def from_context(
        cls,
        context: str,
        *,
        cluster: str | None = None,
        kubeconfig: str | Path | None = None,
        deadline_s: float = DEFAULT_DEADLINE_S,
    ) -> Kube:
        """A client for a kubeconfig context (``$KUBECONFIG`` or ``~/.kube/config`` unless ``kubeconfig`` is given)."""
        require_client()
        from kubernetes import client, config

        configuration = client.Configuration()
        try:
            config.load_kube_config(
                config_file=str(kubeconfig) if kubeconfig else None,
                context=context,
                client_configuration=configuration,
                persist_config=False,
            )
        except (config.ConfigException, OSError, ValueError, TypeError) as exc:
            raise KubeUnavailable(
                f"{cluster or context}: cannot load kubeconfig context {context!r} ({type(exc).__name__}); "
                "fetch it with gcloud container clusters get-credentials"
            ) from None
        return cls.from_configuration(configuration, cluster=cluster or context, deadline_s=deadline_s)

    @classmethod
    def from_configuration(cls, configuration: Any, *, cluster: str, deadline_s: float = DEFAULT_DEADLINE_S) -> Kube:
        """A client for a ready ``kubernetes.client.Configuration`` (e.g. ``Configuration(host=...)``)."""
        from kubernetes import client

        configuration.retries = False  # the deadline is the whole budget of a call
        return cls(client.ApiClient(configuration), cluster, deadline_s)

    def close(self) -> None:
        self.api_client.close()

    def _call(self, what: str, fn, *args, **kwargs) -> Any:
        import urllib3
        from kubernetes.client.exceptions import ApiException

        timeout = self.deadline_s  # urllib3 Timeout(total=...): connect and read share the one budget
        try:
            return fn(*args, _request_timeout=timeout, **kwargs)
        except ApiException as exc:
            if exc.status == 404:
                raise KubeNotFound(f"{self.cluster}: {what}: not found") from None
            if exc.status == 409:
                raise KubeConflict(f"{self.cluster}: {what}: already exists") from None
            if exc.status in (401, 403):
                raise KubeUnavailable(
                    f"{self.cluster}: {what}: HTTP {exc.status} (check the cluster credentials)"
                ) from None
            status = f"HTTP {exc.status}" if exc.status else "TLS or request error"
            raise KubeUnavailable(f"{self.cluster}: {what}: {status}") from None
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise KubeUnavailable(f"{self.cluster}: {what}: {_describe_transport(exc, self.deadline_s)}") from None
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise KubeUnavailable(f"{self.cluster}: {what}: malformed response (not JSON)") from None

    def _custom(self):
        from kubernetes import client

        return client.CustomObjectsApi(self.api_client)

    def _core(self):
        from kubernetes import client

        return client.CoreV1Api(self.api_client)

    def list_jobsets(self, namespace: str | None = None, label_selector: str | None = None) -> list[dict]:
        """Every JobSet of a namespace, or of the whole cluster (``kubectl get jobset -A``), all pages."""
        items: list[dict] = []
        token = None
        seen_tokens: set[str] = set()
        what = f"list jobsets in {namespace}" if namespace else "list jobsets (all namespaces)"
        while True:
            kwargs: dict[str, Any] = {"limit": LIST_PAGE_SIZE}
            if token:
                kwargs["_continue"] = token
            if label_selector:
                kwargs["label_selector"] = label_selector
            if namespace:
                page = self._call(
                    what,
                    self._custom().list_namespaced_custom_object,
                    JOBSET_GROUP,
                    JOBSET_VERSION,
                    namespace,
                    JOBSET_PLURAL,
                    **kwargs,
                )
            else:
                page = self._call(
                    what,
                    self._custom().list_cluster_custom_object,
                    JOBSET_GROUP,
                    JOBSET_VERSION,
                    JOBSET_PLURAL,
                    **kwargs,
                )
            if not isinstance(page, dict) or not isinstance(page.get("items"), list):
                raise KubeUnavailable(f"{self.cluster}: {what}: malformed response (no items list)")
            if not all(isinstance(item, dict) for item in page["items"]):
                raise KubeUnavailable(f"{self.cluster}: {what}: malformed response (an item is not an object)")
            items.extend(page["items"])
            token = (page.get("metadata") or {}).get("continue")
            if not token:
                return items
            if token in seen_tokens:  # a server that pages in a circle would never end
                raise KubeUnavailable(f"{self.cluster}: {what}: malformed response (repeated continue token)")
            seen_tokens.add(token)

    def get_jobset(self, namespace: str, name: str) -> dict:
        return self._jobset(f"get jobset {namespace}/{name}", self._custom().get_namespaced_custom_object,
                            namespace, name)

    def create_jobset(self, namespace: str, manifest: dict) -> dict:
        return self._jobset(f"create jobset {namespace}/{manifest['metadata']['name']}",
                            self._custom().create_namespaced_custom_object, namespace, manifest)

    def _jobset(self, what: str, method, namespace: str, name_or_body) -> dict:
        """The JobSet object a namespaced custom-object call answers (get, create)."""
        obj = self._call(what, method, JOBSET_GROUP, JOBSET_VERSION, namespace, JOBSET_PLURAL, name_or_body)
        if not isinstance(obj, dict):
            raise KubeUnavailable(f"{self.cluster}: {what}: malformed response")
        return obj

    def delete_jobset(self, namespace: str, name: str) -> None:
        """Delete a JobSet and, in the background, its Jobs and pods (``kubectl delete jobset``).

        Raises :class:`KubeNotFound` when there is none (the caller decides if that is fine).
        """
        from kubernetes import client

        self._call(
            f"delete jobset {namespace}/{name}",
            self._custom().delete_namespaced_custom_object,
            JOBSET_GROUP,
            JOBSET_VERSION,
            namespace,
            JOBSET_PLURAL,
            name,
            body=client.V1DeleteOptions(propagation_policy="Background"),
        )

    def list_pods(self, namespace: str, label_selector: str) -> list[dict]:
        """The pods matching a label selector as the API spells them (``kubectl get pods -o json``), by name."""
        pods = self._call(
            f"list pods {label_selector}", self._core().list_namespaced_pod, namespace, label_selector=label_selector
        )
        items = [self.api_client.sanitize_for_serialization(p) for p in pods.items]
        return sorted(items, key=lambda pod: pod["metadata"]["name"])

    def list_pod_names(self, namespace: str, label_selector: str) -> list[str]:
        """Names of the pods matching a label selector, sorted."""
        return [pod["metadata"]["name"] for pod in self.list_pods(namespace, label_selector)]

    def pod_log(self, namespace: str, pod: str, tail_lines: int) -> str:
        """The last ``tail_lines`` lines of a pod's log."""
        text = self._call(
            f"read log of pod {namespace}/{pod}",
            self._core().read_namespaced_pod_log,
            pod,
            namespace,
            tail_lines=tail_lines,
        )
        return text if isinstance(text, str) else str(text)

    # -- nodes and bare pods (the kernel lane's cluster pod) ------------------------------

    def list_nodes(self, label_selector: str | None = None) -> list[dict]:
        """The nodes matching a label selector as the API spells them (``kubectl get nodes -o json``)."""
        kwargs = {"label_selector": label_selector} if label_selector else {}
        nodes = self._call(f"list nodes {label_selector or ''}".rstrip(), self._core().list_node, **kwargs)
        items = [self.api_client.sanitize_for_serialization(n) for n in nodes.items]
        return sorted(items, key=lambda node: node["metadata"]["name"])

    def get_pod(self, namespace: str, name: str) -> dict:
        pod = self._call(f"get pod {namespace}/{name}", self._core().read_namespaced_pod, name, namespace)
        return self.api_client.sanitize_for_serialization(pod)

    def create_pod(self, namespace: str, manifest: dict) -> dict:
        """Create a pod; :class:`KubeConflict` when one of that name exists."""
        what = f"create pod {namespace}/{manifest['metadata']['name']}"
        pod = self._call(what, self._core().create_namespaced_pod, namespace, manifest)
        return self.api_client.sanitize_for_serialization(pod)

    def delete_pod(self, namespace: str, name: str) -> None:
        """Delete a pod; :class:`KubeNotFound` when there is none (the caller decides if that is fine)."""
        from kubernetes import client

        self._call(f"delete pod {namespace}/{name}", self._core().delete_namespaced_pod, name, namespace,
                   body=client.V1DeleteOptions(grace_period_seconds=0))

    def exec_pod(self, namespace: str, pod: str, command: list[str], *, stdin: bytes = b"",
                 deadline_s: float) -> ExecResult:
        """Run ``command`` in the pod's first container (``kubectl exec -i``), feeding it ``stdin``.

        The websocket handshake has this client's deadline; the command, ``deadline_s``.
        A refused handshake is mapped like any answer (404: no such pod); a command still
        running at its deadline is :class:`KubeUnavailable` (the connection is closed).
        """
        import websocket
        from kubernetes.client.exceptions import ApiException

        what = f"exec in pod {namespace}/{pod}"
        try:
            ws = self._exec_connect(namespace, pod, command, bool(stdin))
        except ApiException as exc:
            reason = str(exc.reason or "")  # never echoed: it may carry the response headers
            found = _HANDSHAKE_RE.search(reason)
            status = int(found.group(1)) if found else exc.status
            if status == 404:
                raise KubeNotFound(f"{self.cluster}: {what}: not found") from None
            detail = (f"HTTP {status}" + (" (check the cluster credentials)" if status in (401, 403) else "")
                      if status else "connection refused or dropped")
            raise KubeUnavailable(f"{self.cluster}: {what}: {detail}") from None
        except TimeoutError:
            raise KubeUnavailable(f"{self.cluster}: {what}: no answer within the {self.deadline_s:g}s deadline") from None
        try:
            ws.sock.settimeout(deadline_s)
            if stdin:
                ws.write_stdin(stdin)
                if hasattr(ws, "close_channel"):  # clients before v5 support have none
                    ws.close_channel(0)  # end of input where the server speaks v5; a no-op on v4
            ws.run_forever(timeout=deadline_s)
            if ws.is_open():
                raise KubeUnavailable(f"{self.cluster}: {what}: the command ran past its {deadline_s:g}s deadline")
            stdout, stderr = ws.read_channel(1), ws.read_channel(2)
            returncode = _exec_returncode(ws.read_channel(3))
        except (OSError, websocket.WebSocketException) as exc:
            raise KubeUnavailable(f"{self.cluster}: {what}: {_describe_transport(exc, deadline_s)}") from None
        finally:
            ws.close()
        if returncode is None:
            raise KubeUnavailable(f"{self.cluster}: {what}: the connection ended without an exit status")
        return ExecResult(returncode, stdout or b"", stderr or b"")

    def _exec_connect(self, namespace: str, pod: str, command: list[str], stdin: bool):
        """The exec websocket, or TimeoutError past this client's deadline.

        ``kubernetes.stream`` gives its websocket no connect or handshake timeout, so the
        handshake runs in a thread; one that answers after the deadline is closed at once.
        """
        import threading

        from kubernetes.stream import stream

        box: dict = {}
        done, abandoned = threading.Event(), threading.Event()

        def connect() -> None:
            try:
                box["ws"] = stream(self._core().connect_get_namespaced_pod_exec, pod, namespace, command=command,
                                   stdin=stdin, stdout=True, stderr=True, tty=False, binary=True,
                                   _preload_content=False)
            except Exception as exc:  # noqa: BLE001 - handed to the caller's thread
                box["error"] = exc
            finally:
                done.set()
                if abandoned.is_set() and "ws" in box:
                    box["ws"].close()

        threading.Thread(target=connect, name=f"exec-{pod}", daemon=True).start()
        if not done.wait(self.deadline_s):
            abandoned.set()
            if done.is_set() and "ws" in box:
                box["ws"].close()
            raise TimeoutError
        if "error" in box:
            raise box["error"]
        return box["ws"]


def _exec_returncode(status_frame: bytes) -> int | None:
    """The exit code in the exec error channel's ``Status`` (None when there is none)."""
    try:
        status = json.loads(status_frame or b"null")
    except ValueError:
        return None
    if not isinstance(status, dict):
        return None
    if status.get("status") == "Success":
        return 0
    for cause in (status.get("details") or {}).get("causes") or []:
        if cause.get("reason") == "ExitCode" and str(cause.get("message", "")).isdigit():
            return int(cause["message"])
    return None
