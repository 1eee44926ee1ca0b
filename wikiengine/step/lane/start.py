"""`wiki loop start`: seed 001 Steps 1 to 9b as code.

Select the pool (local: N slots; GKE: the cluster files of ``.env/``, their occupancy and
the selection of ``wiki clusters``; Slurm: N tracks on one partition, checked with the
controller), record the session constants (USER_PREFIX,
MODEL_NAME, LANE, the tracks) as the journal's ``start`` record, delete a leftover
``.stop-authorized``, write the start marker at the top of the lane log in its full form,
point ``memory/STATE.md`` at the session, and commit it all at once. Zero free
clusters: nothing is written.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from wikiengine.core.clock import utc_date, utc_iso, utcnow
from wikiengine.core.errors import Busy, Refused, WikiError
from wikiengine.model import logbook
from wikiengine.model.journal import append_record, parse_journal
from wikiengine.model.lanes import Lane
from wikiengine.model.state import LaneState
from wikiengine.step import writers as lw
from wikiengine.step.lane.session import lane_config
from wikiengine.step.lane.wake import STATE_REL, check_launch_cmd
from wikiengine.step.txn import LaneLock, LaneTxn

STOP_AUTHORIZED = ".stop-authorized"
MAX_LOCAL_TRACKS = 8


class NoFreeClusters(Busy):
    """Every candidate cluster is busy or unknown (exit 7, nothing written)."""


@dataclass(frozen=True)
class Pool:
    """A lane session's tracks and the line that describes them."""

    slots: list[dict]  # [{"track": 1, "name": ..., "context": ...}]
    description: str


def parse_parallelism(value: str) -> int | str:
    if value == "all":
        return "all"
    try:
        number = int(value)
    except ValueError:
        raise WikiError(f"--parallelism {value!r} is not a number or 'all'") from None
    if number < 1:
        raise WikiError("--parallelism must be at least 1")
    return number


def local_pool(parallelism: int | str) -> Pool:
    count = MAX_LOCAL_TRACKS if parallelism == "all" else int(parallelism)
    if count > MAX_LOCAL_TRACKS:
        raise WikiError(f"--parallelism {count}: the local backend runs at most {MAX_LOCAL_TRACKS} tracks")
    slots = [{"track": t, "name": f"local-{t}", "context": "local"} for t in range(1, count + 1)]
    return Pool(slots, ", ".join(s["name"] for s in slots))


def slurm_pool(root: Path, lane: Lane, parallelism, config: dict, partition: str | None, account: str | None,
               gres: str | None) -> Pool:
    """N tracks on one Slurm partition (the flags, else the lane Config's ``slurm_*``); the
    controller must answer and know the partition, or nothing is written."""
    from wikiengine.executors.compute_errors import ComputeError
    from wikiengine.executors.lane_slurm import SlurmLaneBackend

    if parallelism == "all":
        raise WikiError("--parallelism all: a Slurm partition has no fixed pool; give --parallelism N")
    settings = {"partition": partition or config.get("slurm_partition"), "account": account or config.get("slurm_account"),
                "gres": gres or config.get("slurm_gres")}
    if not settings["partition"]:
        raise WikiError("backend slurm needs a partition: --partition P, or slurm_partition in the lane's ## Config")
    try:
        SlurmLaneBackend(root, lane.model_dir, lane.name, **settings).check_partition()
    except ComputeError as exc:
        raise WikiError(f"backend slurm: {exc}") from None
    slots = [{"track": t, "name": f"slurm-{settings['partition']}-{t}", "context": "slurm",
              **{k: v for k, v in settings.items() if v}} for t in range(1, int(parallelism) + 1)]
    extra = "".join(f", {k} {v}" for k, v in settings.items() if v and k != "partition")
    return Pool(slots, f"{len(slots)} track(s) on Slurm partition {settings['partition']}{extra}")


def gke_pool(root: Path, lane: Lane, parallelism, tpu: str | None, topology: str | None) -> Pool:
    """Free clusters, by the seed's occupancy rules (``wiki clusters``); none: NoFreeClusters."""
    from wikiengine.executors.gke.occupancy import check_all, format_pool, select_clusters
    from wikiengine.step.clusters import candidate_clusters, lane_owner

    me, _source = lane_owner(root, lane.model_dir, lane.name)
    candidates = candidate_clusters(root / ".env", tpu, topology)
    selection = select_clusters(check_all(candidates, me), None if parallelism == "all" else int(parallelism))
    if selection.stop:
        raise NoFreeClusters(format_pool(selection, candidates[0].tpu.label()).replace("\n", "; "))
    slots = [{"track": i, "name": occ.cluster.name, "context": occ.cluster.context}
             for i, occ in enumerate(selection.selected, start=1)]
    return Pool(slots, ", ".join(f"{s['name']} ({s['context']})" for s in slots))


class SessionLive(Refused):
    """A lane session is running: `wiki loop start` would orphan it (exit 3, nothing written)."""


def refuse_live_session(root: Path) -> None:
    """A running lane session in memory/STATE.md is stopped or paused before another starts."""
    from wikiengine.model.state import state_mode

    if state_mode(root) != "lane":
        return
    state = LaneState.read(root)
    if state.status == "running":
        raise SessionLive(f"session {state.session} of {state.lane} is running: stop it (`wiki loop stop`) or pause "
                          "it (`wiki loop stop --pause`) before a new `wiki loop start`")


def start_session(root: Path, lane: Lane, *, parallelism="1", backend: str = "local", tpu: str | None = None,
                  topology: str | None = None, first: str | None = None, launch_cmd: str | None = None,
                  partition: str | None = None, account: str | None = None, gres: str | None = None,
                  dry_run: bool = False, clock=None) -> dict:
    """Start a lane session (see the module docstring); the JSON result of `wiki loop start`.
    The lane's program is optional (the cascade resolves the model's); the launch command is
    the resolved Config's ``launch_cmd``, else ``launch_cmd`` (recorded in the start record)."""
    if backend not in ("local", "gke", "slurm"):
        raise WikiError(f"--backend {backend!r} is not local, gke or slurm")
    if backend != "slurm" and (partition or account or gres):
        raise WikiError("--partition, --account and --gres choose a Slurm pool: use them with --backend slurm")
    wanted = parse_parallelism(str(parallelism))
    refuse_live_session(root)
    config = lane_config(root, lane)
    if launch_cmd is not None and not launch_cmd.strip():
        raise WikiError("--launch-cmd is empty")
    if not config.get("launch_cmd") and not launch_cmd:
        raise WikiError(f"no launch_cmd: the resolved ## Config of {lane.model_prefix}/{lane.name} (`wiki resolve "
                        f"{lane.model_prefix} {lane.name}`) has none; add one there or pass --launch-cmd")
    check_launch_cmd(launch_cmd or config["launch_cmd"], "--launch-cmd" if launch_cmd else f"launch_cmd of {lane.program}")
    settings = lw.lane_settings(root, lane)
    if backend == "slurm":
        pool = slurm_pool(root, lane, wanted, config, partition, account, gres)
    else:
        pool = local_pool(wanted) if backend == "local" else gke_pool(root, lane, wanted, tpu, topology)
    now = (clock or utcnow)()
    with LaneLock(root, lane):
        txn = LaneTxn(root, lane)
        journal = txn.read(lane.journal)
        session = 1 + sum(1 for r in parse_journal(journal, lane.journal) if r.get("op") == "start")
        constants = {"user_prefix": settings.user_prefix, "model_name": lane.model_name, "lane": lane.name,
                     "tracks": pool.slots, "backend": backend, "parallelism": len(pool.slots)}
        txn.write(lane.journal, append_record(journal, {"op": "start", "session": session, **constants,
                                                        "first": first, "launch_cmd": launch_cmd, "at": utc_iso(now)}))
        entry = logbook.render_entry(utc_date(now), "start", "wiki loop start session begin", {
            "Cluster pool": pool.description, "Parallelism": str(len(pool.slots)),
            "First-pick hypothesis": first or "to be formulated at the first wake",
            "Notes": f"session {session}; USER_PREFIX {settings.user_prefix}, MODEL_NAME {lane.model_name}, "
                     f"LANE {lane.name}, backend {backend}",
        })
        txn.write(lane.log, logbook.insert_entry(txn.read(lane.log), entry))
        state = LaneState(lane=f"{lane.model_dir}/{lane.name}", status="running", session=session, backend=backend,
                          tracks=len(pool.slots), started_at=utc_iso(now), next_check_at=utc_iso(now),
                          updated_at=utc_iso(now))
        txn.write(STATE_REL, state.text(f"\n# {state.lane}: session {session} started\n\n"
                                        f"Pool: {pool.description}. Run `wiki step` at each wake.\n"))
        stale = root / lane.dir / STOP_AUTHORIZED
        result = {"lane": state.lane, "session": session, "constants": constants, "pool": pool.slots,
                  "removed_stale_stop_authorization": stale.exists(), "empty_baselines": lw.empty_baselines(root, lane)}
        if dry_run:
            return {**result, "dry_run": True, "would_write": txn.changed()}
        stale.unlink(missing_ok=True)
        result["commit"] = txn.commit(f"loop({lane.name}): start session {session} with {len(pool.slots)} track(s)")
    if result["commit"]:
        from wikiengine.step.audit import record_inherited

        # what the wiki's lint finds now is the wiki's past: the watcher does not count it against the session
        result["inherited_findings"] = record_inherited(root, result["commit"])
    return result
