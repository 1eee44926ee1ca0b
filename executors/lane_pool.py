"""One lane backend over a pool of tracks, each with its own backend (a GKE session runs
one cluster per track: seed 001's CLUSTER_POOL).

Listing merges every track's listing (any track that cannot be read makes the whole
listing unknown: unknown is never "none"); launch goes to the spec's track; the other
calls go to the track whose backend holds the workload.
"""

from __future__ import annotations

from wikiengine.executors.compute_errors import ComputeUnavailableError
from wikiengine.executors.lane_backend import LaneWorkload, LaunchSpec, WorkloadNotFound


class TrackPool:
    def __init__(self, backends: dict[int, object]):
        if not backends:
            raise ValueError("a pool needs at least one track")
        self.backends = dict(backends)

    def list_workloads(self, prefix: str) -> list[LaneWorkload]:
        found: dict[str, LaneWorkload] = {}
        for track in sorted(self.backends):
            for workload in self.backends[track].list_workloads(prefix):  # raises when unknown
                found.setdefault(workload.name, workload)
        return [found[name] for name in sorted(found)]

    def launch(self, spec: LaunchSpec) -> LaneWorkload:
        backend = self.backends.get(spec.track)
        if backend is None:
            raise ComputeUnavailableError(f"track {spec.track} is not in the session's pool ({sorted(self.backends)})")
        return backend.launch(spec)

    def _holder(self, name: str):
        for track in sorted(self.backends):
            if self.backends[track].status(name) is not None:
                return self.backends[track]
        return None

    def status(self, name: str) -> LaneWorkload | None:
        holder = self._holder(name)
        return holder.status(name) if holder is not None else None

    def logs(self, name: str, tail: int = 200) -> str:
        holder = self._holder(name)
        if holder is None:
            raise WorkloadNotFound(f"no workload {name} on any track")
        return holder.logs(name, tail)

    def delete(self, name: str) -> None:
        for track in sorted(self.backends):
            self.backends[track].delete(name)

    def artifacts(self, name: str) -> dict[str, str]:
        holder = self._holder(name)
        if holder is None:
            raise WorkloadNotFound(f"no workload {name} on any track")
        return holder.artifacts(name)
