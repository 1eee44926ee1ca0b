"""Occupancy and selection of GKE clusters (seed Step 6).

For each candidate cluster the active JobSets (``kubectl get jobset -A``: no terminal
state Completed/Failed) are listed and each is attributed from its name alone:

============================================  ====================
workload name starts with                      attribution
============================================  ====================
``<USER_PREFIX>-<MODEL_NAME>-<LANE>-``        mine, this lane
``<USER_PREFIX>-<MODEL_NAME>-<other-lane>-``  mine, another lane
``<USER_PREFIX>-<other-model>-``              mine, another model
``<other-prefix>-``                           foreign
============================================  ====================

A name outside the ``<prefix>-<model>-<lane>-v<NNN>-<slug>`` convention (legacy or
hand-submitted) has its model and lane read from the image tag instead
(``<base>:<model>-<lane>-<date>-v<NNN>-<slug>``); ownership still comes from the name.

Any active workload makes a cluster occupied. A cluster whose listing failed (an HTTP
error, a timeout, a malformed answer) is *unknown*, which is never free. Selection takes
the first N free clusters in candidate order (``all``: every free one); zero free means
stop.
"""

from __future__ import annotations

import enum
import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

from wikiengine.core.errors import WikiError
from wikiengine.core.text import counted
from wikiengine.executors.gke.clusters import ClusterFile
from wikiengine.executors.gke.kube import DEFAULT_DEADLINE_S, Kube, KubeNotFound, KubeUnavailable

_CONVENTIONAL_RE = re.compile(r"[a-z][a-z0-9]*-[a-z0-9][-a-z0-9]*-[a-z0-9]+-v\d{3,}-[a-z0-9][-a-z0-9]*")
_BRANCH_RE = re.compile(
    r"(?P<model_lane>[a-z0-9][-a-z0-9._]*?)-(?P<date>\d{4}-?\d{2}-?\d{2})-v(?P<vid>\d{3,})-(?P<slug>.+)"
)
TERMINAL_STATES = ("Completed", "Failed")


class Attribution(str, enum.Enum):
    MINE_SAME_LANE = "mine-same-lane"
    MINE_OTHER_LANE = "mine-other-lane"
    MINE_OTHER_MODEL = "mine-other-model"
    FOREIGN = "foreign"


class ClusterState(str, enum.Enum):
    FREE = "free"
    OCCUPIED = "occupied"
    UNKNOWN = "unknown"  # could not be asked: never selected


@dataclass(frozen=True)
class Me:
    """Whose workloads count as mine, and for which model and lane."""

    user_prefix: str
    model: str
    lane: str


@dataclass(frozen=True)
class Workload:
    """One active JobSet and whom it is attributed to."""

    name: str
    namespace: str
    image: str | None
    attribution: Attribution
    basis: str  # "name" or "image tag"
    model: str | None = None
    lane: str | None = None

    def describe(self) -> str:
        """``my own jax-lane workload `alice-gemma4-jax-v204-x``` and the like."""
        how = " (per image tag)" if self.basis == "image tag" else ""
        if self.attribution is Attribution.MINE_SAME_LANE:
            return f"my own {self.lane}-lane workload `{self.name}`{how}"
        if self.attribution is Attribution.MINE_OTHER_LANE:
            lane = f"{self.lane}-lane" if self.lane else "other-lane"
            return f"my own {lane} workload `{self.name}`{how}"
        if self.attribution is Attribution.MINE_OTHER_MODEL:
            model = f" ({self.model})" if self.model else ""
            return f"my own workload for another model{model} `{self.name}`{how}"
        return f"another user's workload `{self.name}`{how}"

    def to_dict(self) -> dict:
        return asdict(self) | {"attribution": self.attribution.value}


def is_active(jobset: dict) -> bool:
    """True unless the JobSet reached a terminal state (Completed or Failed)."""
    status = jobset.get("status") or {}
    if status.get("terminalState") in TERMINAL_STATES:
        return False
    for cond in status.get("conditions") or []:
        if isinstance(cond, dict) and cond.get("type") in TERMINAL_STATES and cond.get("status") == "True":
            return False
    return True


def jobset_image(jobset: dict) -> str | None:
    """``.spec.replicatedJobs[0].template.spec.template.spec.containers[0].image``, if present."""
    try:
        return jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["containers"][0]["image"]
    except (KeyError, IndexError, TypeError):
        return None


def image_branch(image: str | None) -> str | None:
    """The tag of ``<base>:<tag>`` (a registry port is not a tag; a digest has none)."""
    if not image or "@" in image:
        return None
    base, sep, tag = image.rpartition(":")
    if not sep or "/" in tag or not base:
        return None
    return tag


def classify(name: str, image: str | None, me: Me) -> tuple[Attribution, str, str | None, str | None]:
    """(attribution, basis, model, lane) of one workload, per the seed's table and image-tag backstop."""
    mine = f"{me.user_prefix}-"
    model_head = f"{mine}{me.model}-"
    if name.startswith(f"{model_head}{me.lane}-"):
        by_name = (Attribution.MINE_SAME_LANE, "name", me.model, me.lane)
    elif name.startswith(model_head):
        lane = re.match(r"(.+?)-v\d{3,}-", name[len(model_head) :])
        by_name = (Attribution.MINE_OTHER_LANE, "name", me.model, lane.group(1) if lane else None)
    elif name.startswith(mine):
        by_name = (Attribution.MINE_OTHER_MODEL, "name", None, None)
    else:
        by_name = (Attribution.FOREIGN, "name", None, None)
    if _CONVENTIONAL_RE.fullmatch(name):
        return by_name
    branch = _BRANCH_RE.fullmatch(image_branch(image) or "")
    if not branch:
        return by_name
    model_lane = branch.group("model_lane")
    if model_lane == f"{me.model}-{me.lane}":
        scope, model, lane = Attribution.MINE_SAME_LANE, me.model, me.lane
    elif model_lane.startswith(f"{me.model}-"):
        scope, model, lane = Attribution.MINE_OTHER_LANE, me.model, model_lane[len(me.model) + 1 :]
    else:
        scope, model, lane = Attribution.MINE_OTHER_MODEL, model_lane, None
    return (scope if name.startswith(mine) else Attribution.FOREIGN), "image tag", model, lane


def active_workloads(jobsets: list[dict], me: Me) -> list[Workload]:
    """The active JobSets of a listing, attributed; a JobSet without a name is a malformed answer."""
    workloads = []
    for jobset in jobsets:
        meta = jobset.get("metadata") if isinstance(jobset.get("metadata"), dict) else {}
        name = meta.get("name")
        if not isinstance(name, str) or not name:
            raise KubeUnavailable("malformed response (a JobSet without a name)")
        if not is_active(jobset):
            continue
        image = jobset_image(jobset)
        attribution, basis, model, lane = classify(name, image, me)
        workloads.append(
            Workload(name, str(meta.get("namespace") or "default"), image, attribution, basis, model, lane)
        )
    return workloads


@dataclass
class Occupancy:
    """One candidate cluster's state and the attribution of what occupies it."""

    cluster: ClusterFile
    state: ClusterState
    workloads: list[Workload] = field(default_factory=list)
    error: str | None = None

    def describe(self) -> str:
        if self.state is ClusterState.UNKNOWN:
            return f"state unknown ({self.error}): not selected"
        if self.state is ClusterState.FREE:
            return "free"
        more = f" and {len(self.workloads) - 1} more" if len(self.workloads) > 1 else ""
        verb = "busy with" if self.workloads[0].attribution is Attribution.MINE_SAME_LANE else "occupied by"
        return f"{verb} {self.workloads[0].describe()}{more}"

    def to_dict(self) -> dict:
        c = self.cluster
        return {
            "cluster": c.name,
            "context": c.context,
            "file": str(c.path),
            "project": c.project,
            "region": c.region,
            "zone": c.zone,
            "tpu_type": c.tpu.xpk_type,
            "topology": c.tpu.topology,
            "chips": c.tpu.chips,
            "state": self.state.value,
            "workloads": [w.to_dict() for w in self.workloads],
            "error": self.error,
        }


def check_occupancy(
    cluster: ClusterFile, me: Me, *, kubeconfig: str | Path | None = None, deadline_s: float = DEFAULT_DEADLINE_S
) -> Occupancy:
    """List the cluster's JobSets in every namespace and attribute the active ones; UNKNOWN on any failure."""
    try:
        with Kube.from_context(
            cluster.context, cluster=cluster.name, kubeconfig=kubeconfig, deadline_s=deadline_s
        ) as kube:
            workloads = active_workloads(kube.list_jobsets(), me)
    except KubeUnavailable as exc:
        return Occupancy(cluster, ClusterState.UNKNOWN, error=str(exc).removeprefix(f"{cluster.name}: "))
    except KubeNotFound:  # the JobSet API is not served there: not a cluster xpk can use, and not known free
        return Occupancy(cluster, ClusterState.UNKNOWN, error="the JobSet API (jobset.x-k8s.io/v1alpha2) is not served")
    return Occupancy(cluster, ClusterState.OCCUPIED if workloads else ClusterState.FREE, workloads)


def check_all(
    clusters: list[ClusterFile],
    me: Me,
    *,
    kubeconfig: str | Path | None = None,
    deadline_s: float = DEFAULT_DEADLINE_S,
    max_workers: int = 4,
) -> list[Occupancy]:
    """:func:`check_occupancy` for every candidate, a few at a time, in candidate order."""
    if not clusters:
        return []
    with ThreadPoolExecutor(max_workers=min(max_workers, len(clusters))) as pool:
        return list(pool.map(lambda c: check_occupancy(c, me, kubeconfig=kubeconfig, deadline_s=deadline_s), clusters))


def parse_parallelism(value: str | int | None) -> int | None:
    """``all`` -> None (every free cluster); a positive integer otherwise."""
    if value is None or (isinstance(value, str) and value.strip().lower() == "all"):
        return None
    try:
        n = int(value)
    except (TypeError, ValueError):
        raise WikiError(f"parallelism must be a positive integer or 'all', not {value!r}") from None
    if n < 1:
        raise WikiError(f"parallelism must be a positive integer or 'all', not {value!r}")
    return n


@dataclass
class Selection:
    """The outcome of seed Step 6: which free clusters become tracks, and why."""

    requested: int | None  # None = all
    candidates: list[Occupancy]
    selected: list[Occupancy]

    @property
    def stop(self) -> bool:
        """Zero free clusters: report and stop; never start without targets."""
        return not self.selected

    @property
    def message(self) -> str:
        k = len(self.selected)
        if not k:
            return "No free cluster: stopping (an occupied or unknown cluster is never picked)."
        if self.requested is not None and k < self.requested:
            return f"requested {self.requested}, only {k} free, proceeding with {k}"
        return f"Proceeding with {k} parallel track{'s' if k != 1 else ''}."

    def track_of(self, occupancy: Occupancy) -> int | None:
        return next((i for i, o in enumerate(self.selected) if o is occupancy), None)

    def to_dict(self) -> dict:
        return {
            "requested": "all" if self.requested is None else self.requested,
            "candidates": [o.to_dict() | {"track": self.track_of(o)} for o in self.candidates],
            "selected": [
                {"track": i, "cluster": o.cluster.name, "context": o.cluster.context}
                for i, o in enumerate(self.selected)
            ],
            "stop": self.stop,
            "message": self.message,
        }


def select_clusters(occupancies: list[Occupancy], parallelism: int | None) -> Selection:
    """The first ``parallelism`` free clusters in candidate order (``None``: all free ones)."""
    free = [o for o in occupancies if o.state is ClusterState.FREE]
    return Selection(parallelism, list(occupancies), free if parallelism is None else free[:parallelism])


def format_pool(selection: Selection, title: str) -> str:
    """The seed's pool report: one line per candidate, then the decision."""
    rows = selection.candidates
    width = max((len(o.cluster.name) for o in rows), default=0) + 2
    lines = [f"{title} cluster pool ({counted(len(rows), 'candidate')}, {len(selection.selected)} selected):"]
    for occ in rows:
        track = selection.track_of(occ)
        if track is not None:
            mark, what = "✓", f"selected (track {track})"
        elif occ.state is ClusterState.FREE:
            mark, what = "✓", "free (not needed)"
        else:
            mark, what = ("?" if occ.state is ClusterState.UNKNOWN else "✗"), occ.describe()
        lines.append(f"  {mark} {occ.cluster.name.ljust(width)}→ {what}")
    lines.append(selection.message)
    return "\n".join(lines)
