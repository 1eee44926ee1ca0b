"""A relay training session as a one-replica JobSet: :class:`GkeCompute` is a ComputeBackend.

The session's name is the JobSet's name, so the API server's unique names are the launch
claim: a second launch of the same name is refused (409), and a launch whose answer was
lost is settled by re-reading it (see :func:`executors.gke.dispatch.submit_jobset`).
The container runs the rendered bootstrap with ``python3 -c``; secrets reach it only
through a Kubernetes Secret named in the config (``envFrom``), never in the manifest.

GKE has no accelerator-hours quota API: :meth:`GkeCompute.quota` raises
:class:`ComputeUnavailableError` unless the config sets ``quota_hours``, in which case
the quota is modelled from the wall time of this backend's own sessions on the cluster
in a rolling window.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from pathlib import Path

from wikiengine.core.clock import parse_utc, utcnow
from wikiengine.core.identity import MAX_WORKLOAD_LEN, NAME_RE
from wikiengine.executors.compute import (
    CapacityError,
    ComputeError,
    ComputeUnavailableError,
    LaunchRecord,
    LaunchRequest,
    Quota,
    SessionState,
    SessionStatus,
)
from wikiengine.executors.gke import dispatch as gke_dispatch
from wikiengine.executors.gke.clusters import ClusterFile, parse_cluster_file
from wikiengine.executors.gke.kube import DEFAULT_DEADLINE_S, KubeNotFound
from wikiengine.executors.gke.occupancy import is_active

SESSION_LABEL = "wikiengine.dev/relay-session"
_SECRET_KEYS = ("token", "key", "password", "hf_token", "kaggle_key")


class GkeCompute:
    """Relay sessions on one GKE TPU cluster described by a ``.env`` cluster file."""

    def __init__(
        self,
        cluster: ClusterFile,
        image: str,
        *,
        kubeconfig: str | Path | None = None,
        deadline_s: float = DEFAULT_DEADLINE_S,
        secret_name: str | None = None,
        queue: str = gke_dispatch.DEFAULT_QUEUE,
        quota_hours: float | None = None,
        quota_window_days: float = 7.0,
    ):
        self.cluster = cluster
        self.image = image
        self.kubeconfig = kubeconfig
        self.deadline_s = deadline_s
        self.secret_name = secret_name
        self.queue = queue
        self.quota_hours = quota_hours
        self.quota_window_days = quota_window_days

    @classmethod
    def from_config(cls, config: Mapping, root: Path) -> GkeCompute:
        """From a run's ``compute`` block: ``cluster_file`` (relative to ``root``), ``image``,
        optional ``kubeconfig``, ``deadline_s``, ``secret_name`` (a Kubernetes Secret whose keys
        become the session's environment), ``queue``, ``quota_hours``, ``quota_window_days`` (default 7)."""
        for name in _SECRET_KEYS:
            if name in config:
                raise ComputeError(
                    f"gke: '{name}' must not be in the config; put secrets in a Kubernetes Secret (secret_name)"
                )
        for required in ("cluster_file", "image"):
            if not config.get(required):
                raise ComputeError(f"gke: the compute config needs '{required}'")
        cluster = parse_cluster_file(Path(root) / str(config["cluster_file"]))
        kubeconfig = config.get("kubeconfig")
        return cls(
            cluster,
            str(config["image"]),
            kubeconfig=Path(root) / str(kubeconfig) if kubeconfig else None,
            deadline_s=float(config.get("deadline_s", DEFAULT_DEADLINE_S)),
            secret_name=config.get("secret_name"),
            queue=str(config.get("queue", gke_dispatch.DEFAULT_QUEUE)),
            quota_hours=float(config["quota_hours"]) if config.get("quota_hours") is not None else None,
            quota_window_days=float(config.get("quota_window_days", 7.0)),
        )

    def _kube(self):
        return gke_dispatch.open_kube(self.cluster, self.kubeconfig, self.deadline_s)

    def session_manifest(self, name: str, request: LaunchRequest) -> dict:
        """One replica of one pod on the slice running the bootstrap; the Job ends at the session timeout."""
        tpu = self.cluster.tpu
        container = {
            "name": "session",
            "image": self.image,
            "command": ["python3", "-c", request.script_text],
            "env": [{"name": "PYTHONUNBUFFERED", "value": "1"}, {"name": "SESSION_NAME", "value": name}],
            "resources": {"limits": {"google.com/tpu": tpu.chips_per_vm}},
        }
        if self.secret_name:
            container["envFrom"] = [{"secretRef": {"name": self.secret_name}}]
        labels = {gke_dispatch.QUEUE_LABEL: self.queue, gke_dispatch.WORKLOAD_LABEL: name, SESSION_LABEL: "true"}
        pod = {
            "restartPolicy": "Never",
            "nodeSelector": {
                "cloud.google.com/gke-tpu-accelerator": tpu.spec.accelerator,
                "cloud.google.com/gke-tpu-topology": tpu.topology,
            },
            "containers": [container],
        }
        job = {
            "parallelism": 1,
            "completions": 1,
            "backoffLimit": 0,
            "activeDeadlineSeconds": int(request.session_timeout_s),
            "template": {"metadata": {"labels": {gke_dispatch.WORKLOAD_LABEL: name}}, "spec": pod},
        }
        return {
            "apiVersion": "jobset.x-k8s.io/v1alpha2",
            "kind": "JobSet",
            "metadata": {
                "name": name,
                "namespace": self.cluster.namespace,
                "labels": labels,
                "annotations": {f"{gke_dispatch.ANNOTATION_PREFIX}title": request.title or name},
            },
            "spec": {
                "failurePolicy": {"maxRestarts": 0},
                "replicatedJobs": [{"name": "slice-job", "replicas": 1, "template": {"spec": job}}],
            },
        }

    def launch(self, request: LaunchRequest) -> LaunchRecord:
        """Submit the session; refuse a busy cluster, a reused name, or an unknown state."""
        name = request.slug
        if not NAME_RE.fullmatch(name) or len(name) >= MAX_WORKLOAD_LEN:
            raise ComputeError(
                f"gke: session name {name!r} must match [a-z]([-a-z0-9]*[a-z0-9])? and be under {MAX_WORKLOAD_LEN} characters"
            )
        if not request.script_text.strip():
            raise ComputeError("gke: the bootstrap script is empty")
        manifest = self.session_manifest(name, request)
        with self._kube() as kube:
            jobsets = kube.list_jobsets()
            names = {(j.get("metadata") or {}).get("name") for j in jobsets}
            if name in names:
                raise ComputeError(f"gke: {name} was already launched")
            busy = sorted(str((j.get("metadata") or {}).get("name")) for j in jobsets if is_active(j))
            if busy:
                raise CapacityError(
                    f"gke: {self.cluster.name} is occupied by {', '.join(busy[:3])}{' ...' if len(busy) > 3 else ''}"
                )
            gke_dispatch.submit_jobset(kube, manifest)
            created = kube.get_jobset(self.cluster.namespace, name)
        meta = created.get("metadata") or {}
        submitted = parse_utc(meta.get("creationTimestamp")) or utcnow()
        return LaunchRecord(ref=name, version=None, kernel_id=meta.get("uid"), submitted_at=submitted)

    def status(self, ref: str) -> SessionStatus:
        return gke_dispatch.status(self.cluster, ref, kubeconfig=self.kubeconfig, deadline_s=self.deadline_s)

    def log_tail(self, ref: str, lines: int = 200) -> str:
        try:
            return gke_dispatch.log_tail(
                self.cluster, ref, lines, kubeconfig=self.kubeconfig, deadline_s=self.deadline_s
            )
        except KubeNotFound:
            return ""

    def cancel(self, ref: str) -> None:
        """Delete the session's JobSet (a block stops everything); one already gone is fine."""
        with self._kube() as kube:
            try:
                kube.delete_jobset(self.cluster.namespace, ref)
            except KubeNotFound:
                return

    def list_sessions(self) -> list[tuple[str, SessionState]]:
        """Every JobSet on the cluster (all namespaces) with its state."""
        with self._kube() as kube:
            jobsets = kube.list_jobsets()
        return [(str((j.get("metadata") or {}).get("name")), gke_dispatch.jobset_status(j).state) for j in jobsets]

    def quota(self) -> Quota:
        """Wall hours of this backend's sessions started in the last ``quota_window_days``, against
        ``quota_hours``; GKE itself has no accelerator quota API, so without ``quota_hours`` this raises."""
        if self.quota_hours is None:
            raise ComputeUnavailableError(
                "GKE has no accelerator quota API: set quota_hours in the compute config to model one"
            )
        used = 0.0
        with self._kube() as kube:
            jobsets = kube.list_jobsets(self.cluster.namespace, label_selector=f"{SESSION_LABEL}=true")
        now = utcnow()
        since = now - dt.timedelta(days=self.quota_window_days)
        for jobset in jobsets:
            state = gke_dispatch.jobset_status(jobset)
            start = state.started_at
            if start is None or start < since:
                continue
            end = state.ended_at or (now if state.state.alive else start)
            used += max(0.0, (end - start).total_seconds()) / 3600
        return Quota(used_hours=round(used, 4), total_hours=self.quota_hours, refresh_at=None)
