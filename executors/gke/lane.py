"""The GKE lane backend: a lane's workloads as JobSets on one cluster.

Launch goes through :mod:`wikiengine.executors.gke.dispatch` (the xpk-style manifest, the
occupancy re-check right before the submit, a lost or refused create settled by
re-reading). A name that is already on the cluster is adopted, never resubmitted.
``argv`` runs as given: it becomes ``bash -c <shlex-joined argv>``, so a command that
names ``$XPROF_PATH`` expands it only inside a shell it starts itself
(``["bash", "-c", "python train.py --xprof $XPROF_PATH --hlo $HLO_PATH"]``); dispatch
refuses a command that writes to neither path. ``timeout_s`` is the Job's
``activeDeadlineSeconds``: Kubernetes fails the run when it passes.

States: a Completed JobSet ``succeeded`` (exit code 0), a Failed one ``failed`` with
the exit code of its first failed container (None when no pod reported one, e.g. the
deadline struck before a pod started), a suspended or not yet active one ``queued``,
else ``running``. ``started`` is the first pod's start (else the creation time);
``progress_at`` the latest condition transition or pod start. Preemption is not failure
(:mod:`executors.preemption`): a JobSet the controller is restarting (``RestartingJobSet``, or
restarts with a disrupted pod) is ``retrying``; a Failed one whose failed pod carries a
``DisruptionTarget`` condition (exit code 42/143 or none) is ``preempted``; ``attempt`` is
its restarts + 1. The log is the failed
pod's (else the first pod's). Artifacts are the ``gs://`` paths in the container's
environment. Delete removes the JobSet with background propagation; its pods and their
logs go with it.
"""

from __future__ import annotations

import dataclasses
import re
import shlex
from pathlib import Path

from wikiengine.core.errors import WikiError
from wikiengine.executors import preemption
from wikiengine.executors.compute import ComputeError, SessionState
from wikiengine.executors.gke.clusters import ClusterFile
from wikiengine.executors.gke.dispatch import (
    DEFAULT_QUEUE,
    JOBSET_NAME_LABEL,
    DispatchConflict,
    Experiment,
    StoragePaths,
    ensure_free,
    experiment_manifest,
    gcs_paths,
    jobset_status,
    main_container,
    open_kube,
    same_workload,
    storage_paths,
    submit_jobset,
)
from wikiengine.executors.gke.kube import DEFAULT_DEADLINE_S, KubeNotFound, KubeUnavailable
from wikiengine.executors.gke.occupancy import Me
from wikiengine.executors.lane_backend import (
    ARTIFACT_ENV,
    FINISHED,
    LaneWorkload,
    LaunchConflict,
    LaunchSpec,
    WorkloadNotFound,
    check_spec,
    parse_workload_name,
    split_workload_name,
)

_STATE = {SessionState.QUEUED: "queued", SessionState.RUNNING: "running",
          SessionState.COMPLETE: "succeeded", SessionState.ERROR: "failed"}
_VID_RE = re.compile(r"v(\d{3,})([b-z]?)")


class GkeLaneBackend:
    """This lane's JobSets on one cluster (``kube`` is an :class:`executors.gke.kube.Kube`).

    Listing, status, logs and delete need only ``kube`` and ``namespace``; launch also
    needs the ``cluster`` file (its TPU slice), ``me`` (user prefix, model, lane),
    the ``image`` and the ``storage_root`` (``gs://bucket[/prefix]``).
    """

    def __init__(self, kube, namespace: str = "default", *, cluster: ClusterFile | None = None,
                 me: Me | None = None, image: str | None = None, storage_root: str | None = None,
                 queue: str = DEFAULT_QUEUE):
        self.kube, self.namespace = kube, namespace
        self.cluster, self.me, self.image, self.storage_root, self.queue = cluster, me, image, storage_root, queue

    @classmethod
    def connect(cls, cluster: ClusterFile, me: Me, image: str, storage_root: str, *,
                kubeconfig: str | Path | None = None, deadline_s: float = DEFAULT_DEADLINE_S,
                queue: str = DEFAULT_QUEUE) -> GkeLaneBackend:
        """The backend of one track's cluster, reached through its kubeconfig context."""
        return cls(open_kube(cluster, kubeconfig, deadline_s), cluster.namespace, cluster=cluster, me=me, image=image,
                   storage_root=storage_root, queue=queue)

    # ------------------------------------------------------------------ reading

    def list_workloads(self, prefix: str) -> list[LaneWorkload]:
        mine = []
        for jobset in self.kube.list_jobsets(self.namespace):
            name = str((jobset.get("metadata") or {}).get("name", ""))
            parsed = parse_workload_name(name, prefix)
            if parsed is not None:
                mine.append((jobset, parsed))
        pods: dict[str, list[dict]] = {}
        if mine:  # one listing for the pods of every JobSet, not one per workload
            for pod in self.kube.list_pods(self.namespace, JOBSET_NAME_LABEL):
                pods.setdefault(((pod.get("metadata") or {}).get("labels") or {}).get(JOBSET_NAME_LABEL), []).append(pod)
        found = [self._workload(jobset, vid, slug, pods.get(jobset["metadata"]["name"], []), crashed_log_only=True)
                 for jobset, (vid, slug) in mine]
        return sorted(found, key=lambda w: w.name)

    def status(self, name: str) -> LaneWorkload | None:
        jobset = self._get(name)
        if jobset is None:
            return None
        return self._workload(jobset, *split_workload_name(name), self._pods(name))

    def logs(self, name: str, tail: int = 200) -> str:
        pods = self._pods(name)
        if not pods and self._get(name) is None:
            raise WorkloadNotFound(f"{self.kube.cluster}: no workload {name}")
        return self._log(pods, tail)

    def artifacts(self, name: str) -> dict[str, str]:
        jobset = self._get(name)
        if jobset is None:
            raise WorkloadNotFound(f"{self.kube.cluster}: no workload {name}")
        env = {e.get("name"): e.get("value") for e in main_container(jobset).get("env") or [] if isinstance(e, dict)}
        return {key: str(env[var]) for key, var in ARTIFACT_ENV.items() if env.get(var)}

    def _get(self, name: str) -> dict | None:
        try:
            return self.kube.get_jobset(self.namespace, name)
        except KubeNotFound:
            return None

    def _pods(self, name: str) -> list[dict]:
        return self.kube.list_pods(self.namespace, f"{JOBSET_NAME_LABEL}={name}")

    def _log(self, pods: list[dict], tail: int) -> str:
        """The log of the pod that failed first (else the first pod); "" before any pod runs."""
        if not pods:
            return ""
        pod = next((p for p in pods if _exit_code(p) not in (None, 0)), pods[0])
        try:
            text = self.kube.pod_log(self.namespace, pod["metadata"]["name"], tail)
        except KubeNotFound:
            return ""  # the pod went away between the listing and the read
        return "\n".join(text.splitlines()[-tail:]) if tail > 0 else ""

    def _workload(self, jobset: dict, vid: str, slug: str, pods: list[dict], *,
                  crashed_log_only: bool = False) -> LaneWorkload:
        """The workload of ``jobset``, with the log tail of a finished one (one request each):
        a listing (``crashed_log_only``) reads it only for a crashed run, the one whose page is
        filed from its log (a lane keeps every finished JobSet: one log read each per wake)."""
        meta = jobset.get("metadata") or {}
        session = jobset_status(jobset)
        state = _STATE.get(session.state, "running")
        codes = [code for code in map(_exit_code, pods) if code is not None]
        exit_code = None
        if state == "succeeded":
            exit_code = 0
        elif state == "failed":
            exit_code = next((code for code in codes if code != 0), None)  # None: no pod reported one
        times = [c.get("lastTransitionTime") for c in (jobset.get("status") or {}).get("conditions") or []
                 if isinstance(c, dict) and isinstance(c.get("lastTransitionTime"), str)]
        starts = sorted(t for p in pods if isinstance(t := (p.get("status") or {}).get("startTime"), str))
        created = meta.get("creationTimestamp") if isinstance(meta.get("creationTimestamp"), str) else None
        command = main_container(jobset).get("command") or []
        reason = session.failure_message if state == "failed" else None
        restarts = _restarts(jobset)
        disruption = preemption.jobset(
            "Completed" if state == "succeeded" else "Failed" if state == "failed" else None, restarts,
            _condition(jobset, "RestartingJobSet") or _condition(jobset, "Restarting"),
            exit_code if state == "failed" else next((c for c in codes if c != 0), None),
            {reason for pod in pods for reason in _disruption_reasons(pod)})
        if disruption is not None:
            state = disruption
            reason = (f"the JobSet is restarting (restart {restarts}): the controller runs it again"
                      if disruption == preemption.RETRYING else
                      f"its pods were disrupted ({reason or 'failed'}): the cluster took it away, not the run's failure")
        workload = LaneWorkload(
            str(meta.get("name", "")), vid, slug, state, exit_code, starts[0] if starts else created,
            session.ended_at.isoformat() if session.ended_at else None, "",
            max(times + starts + ([created] if created else []), default=None), reason, None,
            command[2] if command[:2] == ["bash", "-c"] and len(command) == 3 else shlex.join(command) or None,
            chips=self.cluster.tpu.chips if self.cluster is not None else None, attempt=restarts + 1,
        )
        wanted = workload.crashed if crashed_log_only else state in (*FINISHED, preemption.PREEMPTED)
        return dataclasses.replace(workload, log_tail=self._log(pods, 200)) if wanted else workload

    # ------------------------------------------------------------------ acting

    def launch(self, spec: LaunchSpec) -> LaneWorkload:
        if None in (self.cluster, self.me, self.image, self.storage_root):
            raise ComputeError("the gke lane backend launches only with a cluster file, me, an image and a storage root")
        check_spec(spec)
        experiment = self._experiment(spec)
        paths = self._paths(spec, experiment)
        env = dict(spec.env) | {"ARTIFACT_DIR": paths.gcs_root, "METRICS_PATH": f"{paths.gcs_root}/metrics.json",
                                "TRACK": str(spec.track)}
        try:
            manifest, _ = experiment_manifest(self.cluster, experiment, self.image, shlex.join(spec.argv), paths,
                                              queue=self.queue, extra_env=env,
                                              active_deadline_s=max(1, int(spec.timeout_s)))
        except WikiError as exc:
            raise ComputeError(f"{spec.name}: {exc}") from None
        existing = self._get(spec.name)
        if existing is not None:
            if not same_workload(existing, manifest):
                raise LaunchConflict(f"{self.kube.cluster}: {spec.name} already runs another image or command: "
                                     "use the next retry suffix")
            return self._workload(existing, *split_workload_name(spec.name), self._pods(spec.name))  # adopt
        ensure_free(self.kube, self.me, spec.name)
        try:
            submit_jobset(self.kube, manifest)
        except DispatchConflict as exc:
            raise LaunchConflict(str(exc)) from None
        workload = self.status(spec.name)
        if workload is None:
            raise KubeUnavailable(f"{self.kube.cluster}: {spec.name} was created but is not visible yet: re-read it")
        return workload

    def delete(self, name: str) -> None:
        try:
            self.kube.delete_jobset(self.namespace, name)
        except KubeNotFound:
            pass  # already gone: deleting is idempotent

    def _experiment(self, spec: LaunchSpec) -> Experiment:
        match = _VID_RE.fullmatch(spec.vid)
        if match is None:
            raise ComputeError(f"{spec.name}: vid {spec.vid!r} is not v<NNN>[b-z]")
        experiment = Experiment(self.me.user_prefix, self.me.model, self.me.lane, int(match.group(1)), spec.slug,
                                match.group(2))
        if experiment.workload_name != spec.name:
            raise ComputeError(f"{spec.name}: the lane names this experiment {experiment.workload_name}")
        return experiment

    def _paths(self, spec: LaunchSpec, experiment: Experiment) -> StoragePaths:
        try:
            if spec.artifact_dir:
                return gcs_paths(spec.artifact_dir)
            return storage_paths(self.storage_root, experiment.exp_slug)
        except WikiError as exc:
            raise ComputeError(f"{spec.name}: {exc}") from None


def _restarts(jobset: dict) -> int:
    restarts = (jobset.get("status") or {}).get("restarts")
    return restarts if isinstance(restarts, int) and not isinstance(restarts, bool) and restarts > 0 else 0


def _condition(jobset: dict, kind: str) -> bool:
    """The JobSet has condition ``kind`` with status True."""
    return any(isinstance(c, dict) and c.get("type") == kind and c.get("status") == "True"
               for c in (jobset.get("status") or {}).get("conditions") or [])


def _disruption_reasons(pod: dict) -> set[str]:
    """The reasons of the pod's true ``DisruptionTarget`` conditions (evicted, preempted)."""
    return {str(c.get("reason")) for c in (pod.get("status") or {}).get("conditions") or []
            if isinstance(c, dict) and c.get("type") == "DisruptionTarget" and c.get("status") == "True"}


def _exit_code(pod: dict) -> int | None:
    """The exit code of the pod's first terminated container, None while none has ended."""
    for container in (pod.get("status") or {}).get("containerStatuses") or []:
        terminated = ((container or {}).get("state") or {}).get("terminated") or {}
        if isinstance(terminated.get("exitCode"), int):
            return terminated["exitCode"]
    return None
