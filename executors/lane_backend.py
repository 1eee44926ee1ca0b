"""Lane compute backends: what a lane's workloads are, as the backend sees them.

A lane backend lists this lane's workloads (named ``<USER_PREFIX>-<MODEL_NAME>-<LANE>-v<NNN>-<slug>[-<retry>]``)
with their v-id, state, exit code, times and a log tail. ``wiki backfill`` reads it to
find finished workloads that have no page. Two implementations:

- :class:`LocalLaneBackend`: local processes, each workload a folder
  ``.wiki/lane-runs/<model folder>/<lane>/<workload>/`` holding ``status.json``
  (``state``: ``running | succeeded | failed``, ``exit_code``, ``started``, ``finished``)
  and ``log.txt``;
- :class:`GkeLaneBackend`: JobSets through the ``kubernetes`` client
  (``executors/gke/kube.py``); a Completed JobSet succeeded, a Failed one failed.

A listing that cannot be read raises :class:`executors.compute.ComputeUnavailableError`:
unknown is never "no workloads".
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

FINISHED = ("succeeded", "failed")
_VID_RE = re.compile(r"-(?P<vid>v\d{3,})-(?P<slug>[a-z0-9][-a-z0-9]*?)(?:-(?P<retry>[b-z]))?$")


@dataclass(frozen=True)
class LaunchSpec:
    """What the lane mode asks a backend to run (launch is idempotent by ``name``)."""

    name: str
    vid: str
    slug: str
    track: int
    argv: list[str]
    env: dict[str, str]
    timeout_s: float


@dataclass(frozen=True)
class LaneWorkload:
    name: str
    vid: str  # v012, or v012b for a retry
    slug: str
    state: str  # running | succeeded | failed | unknown
    exit_code: int | None
    started: str | None
    finished: str | None
    log_tail: str
    progress_at: str | None = None  # the last progress signal (hung-run detection)

    @property
    def is_finished(self) -> bool:
        return self.state in FINISHED

    @property
    def crashed(self) -> bool:
        return self.state == "failed" or self.exit_code not in (None, 0)


def parse_workload_name(name: str, prefix: str) -> tuple[str, str] | None:
    """``(vid, slug)`` of a workload of this lane (``prefix`` is ``<USER_PREFIX>-<MODEL_NAME>-<LANE>``)."""
    if not name.startswith(prefix + "-"):
        return None
    match = _VID_RE.search(name[len(prefix) :])
    if match is None or match.start() != 0:
        return None
    return match.group("vid") + (match.group("retry") or ""), match.group("slug")


class LocalLaneBackend:
    """Local-process workloads of one lane, read from their state folders."""

    def __init__(self, root: Path, model_dir: str, lane: str):
        self.folder = Path(root) / ".wiki" / "lane-runs" / model_dir / lane

    def list_workloads(self, prefix: str) -> list[LaneWorkload]:
        found = []
        if not self.folder.is_dir():
            return found
        for entry in sorted(self.folder.iterdir()):
            parsed = parse_workload_name(entry.name, prefix)
            if parsed is None or not entry.is_dir():
                continue
            try:
                status = json.loads((entry / "status.json").read_text(encoding="utf-8"))
            except (OSError, ValueError):
                status = {"state": "unknown"}
            log = entry / "log.txt"
            tail = "\n".join(log.read_text(encoding="utf-8", errors="replace").splitlines()[-200:]) if log.is_file() else ""
            code = status.get("exit_code")
            found.append(LaneWorkload(
                entry.name, parsed[0], parsed[1], str(status.get("state", "unknown")),
                code if isinstance(code, int) and not isinstance(code, bool) else None,
                status.get("started"), status.get("finished"), tail,
            ))
        return found


class GkeLaneBackend:
    """This lane's JobSets on one cluster (``kube`` is an :class:`executors.gke.kube.Kube`)."""

    def __init__(self, kube, namespace: str = "default"):
        self.kube, self.namespace = kube, namespace

    def list_workloads(self, prefix: str) -> list[LaneWorkload]:
        found = []
        for jobset in self.kube.list_jobsets(self.namespace):
            name = (jobset.get("metadata") or {}).get("name", "")
            parsed = parse_workload_name(name, prefix)
            if parsed is None:
                continue
            state = _jobset_state(jobset)
            tail = ""
            if state in FINISHED:
                pods = self.kube.list_pod_names(self.namespace, f"jobset.sigs.k8s.io/jobset-name={name}")
                tail = self.kube.pod_log(self.namespace, pods[0], 200) if pods else ""
            meta = jobset.get("metadata") or {}
            found.append(LaneWorkload(name, parsed[0], parsed[1], state, None if state != "failed" else 1,
                                      meta.get("creationTimestamp"), None, tail))
        return found


def _jobset_state(jobset: dict) -> str:
    status = jobset.get("status") or {}
    terminal = status.get("terminalState")
    for cond in status.get("conditions") or []:
        if isinstance(cond, dict) and cond.get("status") == "True" and cond.get("type") in ("Completed", "Failed"):
            terminal = terminal or cond["type"]
    return {"Completed": "succeeded", "Failed": "failed"}.get(terminal, "running")
