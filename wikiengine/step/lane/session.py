"""The lane's session as its wake and its watcher read it: the resolved config, the newest
session's start record and pool, the backend that serves it, the time of its last wake.

Apart from :mod:`wikiengine.step.lane.wake` so that the watcher, which reads these and runs
a wake only to revive an idle session, imports none of the wake's deciding and writing.
"""

from __future__ import annotations

from pathlib import Path

from wikiengine.core.clock import timestamp
from wikiengine.core.errors import WikiError
from wikiengine.core.safe_read import read_optional
from wikiengine.model.journal import journal_records
from wikiengine.model.lanes import Lane
from wikiengine.model.state import LaneState, heartbeat_path
from wikiengine.step import lane_read


def lane_config(root: Path, lane: Lane) -> dict:
    """The lane's resolved program config (a lane without its own program.md inherits the model's)."""
    from wikiengine.model import cascade, targets

    return cascade.resolve(targets.target_for_model(root, lane.model_prefix, lane.name)).config or {}


def make_backend(kind: str, root: Path, lane: Lane, config: dict, tracks: list[dict] | None = None):
    """The lane backend named by the session: ``local`` (one slot per track, here), ``gke``
    (each track's cluster of the session's pool, through its kubeconfig context) or
    ``slurm`` (the partition, account and gres the session's pool recorded)."""
    if kind == "local":
        from wikiengine.executors.lane_local import LocalLaneBackend

        return LocalLaneBackend(root, lane.model_dir, lane.name)
    if kind == "gke":
        from wikiengine.executors.gke.clusters import discover_clusters
        from wikiengine.executors.gke.lane import GkeLaneBackend
        from wikiengine.executors.gke.occupancy import Me
        from wikiengine.executors.lane_pool import TrackPool

        image, storage = config.get("image"), config.get("storage_root")
        if not image or not storage:
            raise WikiError("backend gke needs image and storage_root in the lane program's ## Config")
        clusters = {c.name: c for c in discover_clusters(root / ".env")}
        settings = lane_read.lane_settings(root, lane, config)
        me = Me(settings.user_prefix, lane.model_name, lane.name)
        backends = {}
        for slot in tracks or []:
            cluster = clusters.get(slot.get("name"))
            if cluster is None:
                raise WikiError(f"track {slot.get('track')}: no cluster file for {slot.get('name')} in .env/")
            backends[int(slot["track"])] = GkeLaneBackend.connect(cluster, me, image, storage)
        return TrackPool(backends)
    if kind == "slurm":
        from wikiengine.executors.lane_slurm import SlurmLaneBackend

        slot = (tracks or [{}])[0]
        return SlurmLaneBackend.from_config({key: slot.get(key) or config.get(f"slurm_{key}")
                                             for key in ("partition", "account", "gres")}, root, lane.model_dir, lane.name)
    raise WikiError(f"unknown lane backend {kind!r} (local, gke or slurm)")


def session_start(root: Path, lane: Lane) -> dict:
    """The newest session's ``start`` record (its pool, and a launch command given to
    `wiki loop start`); {} before the first session."""
    records = journal_records(root, lane.journal)
    starts = [r for r in records if r.get("op") == "start"]
    return starts[-1] if starts else {}


def session_tracks(root: Path, lane: Lane) -> list[dict]:
    """The pool of the newest session (the journal's start record)."""
    return list(session_start(root, lane).get("tracks", []))


def last_wake(root: Path, state: LaneState) -> float | None:
    """The time of the last wake: this host's heartbeat, else STATE.md's last material wake."""
    path = heartbeat_path(root, state.lane_ref)
    beat_text = read_optional(path, kind="cursor")
    beat = timestamp(beat_text.strip()) if beat_text is not None else None
    recorded = timestamp(state.last_wake_at or state.started_at)
    return max(t for t in (beat, recorded) if t is not None) if (beat or recorded) else None
