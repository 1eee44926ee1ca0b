"""`wiki loop stop`: the gated stop of a lane session, and `--pause`.

The stop is a gate that no agent can open by itself. It runs the closing audit now and
refuses (exit 3, with the reasons) unless it is clean and ``.stop-authorized`` is a
record of this session's clean closing audit, written by the watcher and not older than
the closing retrospective. Then it reaps the lane's workloads still on the backend
(listing them unless ``--yes``), files pages for finished dispatches that have none,
resolves the stubs still open by policy (never dispatched: ``invalid``; dispatched:
``inconclusive``), runs ``wiki lint``, writes the stop marker with a ``**Final audit**:``
line quoting the ALL-CLEAR verbatim, marks the session stopped, and commits.

``--pause`` writes a pause marker, leaves the lane open, and needs no authorization.
"""

from __future__ import annotations

from pathlib import Path

from wikiengine.core.clock import utc_date, utc_iso, utcnow
from wikiengine.core.errors import Refused, WikiError
from wikiengine.model import experiment as ex
from wikiengine.model import logbook
from wikiengine.model.journal import append_record, dispatch_expectations, journal_records
from wikiengine.step import writers as lw
from wikiengine.step.audit import (
    check_authorization,
    inherited_identities,
    run_audit,
    session_start_commit,
    watcher_files,
)
from wikiengine.step.lane.wake import STATE_REL, load_lane_run, settle
from wikiengine.step.txn import LaneLock, LaneTxn


class StopRefused(Refused):
    """The gate stays shut (exit 3)."""


def pause(root: Path, *, clock=None, dry_run: bool = False, backend=None) -> dict:
    if not dry_run:
        settle(root)
    run = load_lane_run(root, backend)
    clock = clock or utcnow
    now = clock()
    if run.state.status != "running":
        raise WikiError(f"the session is {run.state.status}, not running: nothing to pause")
    with LaneLock(root, run.lane):
        txn = LaneTxn(root, run.lane)
        entry = logbook.render_entry(utc_date(now), "pause", f"session {run.state.session} paused",
                                     {"Notes": "paused by wiki loop stop --pause; the lane stays open; "
                                               "no ceiling or stop claim is made"})
        txn.write(run.lane.log, logbook.insert_entry(txn.read(run.lane.log), entry))
        state = run.state.replace(status="paused", updated_at=utc_iso(now), next_check_at=None)
        txn.write(STATE_REL, state.text(f"\n# {state.lane}: paused (session {state.session})\n\n"
                                        "Resume with `wiki loop start`.\n"))
        if dry_run:
            return {"paused": True, "dry_run": True, "would_write": txn.changed()}
        return {"paused": True, "commit": txn.commit(f"loop({run.lane.name}): pause session {run.state.session}")}


def stop(root: Path, *, yes: bool = False, clock=None, dry_run: bool = False, backend=None) -> dict:
    """The gated stop (see the module docstring); raises StopRefused with the reasons.

    A stop killed inside its commit is finished first (its redo record replayed, row 76), and
    everything the gate checks (the closing audit, the authorization, ``wiki lint``) is
    checked before anything is reaped or filed."""
    recovered = None if dry_run else settle(root)
    run = load_lane_run(root, backend)
    clock = clock or utcnow
    now = clock()
    if run.state.status == "stopped":
        if recovered:
            return {"stopped": True, "final_audit": _final_audit(root, run), "commit": recovered,
                    "actions": [f"finished the stop a kill interrupted (commit {recovered[:12]})"]}
        raise WikiError("the session is already stopped")
    reasons, record = gate(root, run)
    if reasons:
        raise StopRefused("stop refused:\n  " + "\n  ".join(reasons))
    running = [w for w in run.backend.list_workloads(run.prefix) if not w.is_finished]
    if running and not yes:
        raise StopRefused("stop would kill these workloads of the lane; pass --yes to reap them:\n  "
                          + "\n  ".join(w.name for w in running))
    if dry_run:
        return {"stopped": False, "dry_run": True, "would_reap": [w.name for w in running],
                "final_audit": record["all_clear"]}
    actions = []
    for workload in running:
        run.backend.delete(workload.name)
        actions.append(f"reaped {workload.name}")
    done = lw.backfill(root, run.lane, run.backend, clock=clock)
    actions += [f"backfilled {b['vid']} ({b['verdict']})" for b in done["backfilled"]]
    dispatched = dispatch_expectations(_records(root, run))
    for page in lw.lane_pages(root, run.lane):
        if not ex.is_open(page.frontmatter):
            continue
        never_ran = page.exp_id not in dispatched
        lw.file_experiment(root, run.lane, page.exp_id, verdict="invalid" if never_ran else "inconclusive",
                           stopping=True,
                           reason=("never dispatched: resolved by wiki loop stop" if never_ran
                                   else "the session stopped before a verdict: resolved by wiki loop stop"),
                           clock=clock)
        actions.append(f"resolved open stub {page.exp_id} ({'invalid' if never_ran else 'inconclusive'})")
    with LaneLock(root, run.lane):
        txn = LaneTxn(root, run.lane)
        entry = logbook.render_entry(utc_date(now), "stop", f"wiki loop stop: session {run.state.session} closed",
                                     {"Final audit": record["all_clear"],
                                      "Notes": "; ".join(actions) or "nothing left to reap or resolve"})
        txn.write(run.lane.log, logbook.insert_entry(txn.read(run.lane.log), entry))
        txn.write(run.lane.journal, append_record(txn.read(run.lane.journal), {
            "op": "stop", "session": run.state.session, "final_audit": record["all_clear"], "at": utc_iso(now)}))
        state = run.state.replace(status="stopped", updated_at=utc_iso(now), next_check_at=None)
        txn.write(STATE_REL, state.text(f"\n# {state.lane}: stopped (session {state.session})\n\n"
                                        f"Final audit: {record['all_clear']}\n"))
        for rel in watcher_files(root, run.lane):
            txn.carry(rel)  # tracked by the wiki: committed as the watcher left them
        sha = txn.commit(f"loop({run.lane.name}): stop session {run.state.session} ({record['all_clear']})")
    return {"stopped": True, "final_audit": record["all_clear"], "actions": actions, "commit": sha}


def gate(root: Path, run) -> tuple[list[str], dict | None]:
    """Everything that keeps the stop's gate shut, checked before it acts: the closing audit
    now, the watcher's authorization of this session, and ``wiki lint`` (less what was there
    at the session's start, and the open stubs the stop itself resolves)."""
    from wikiengine.lint.runner import lint

    audit = run_audit(root, run.lane, closing=True, backend=run.backend, config=run.config)
    reasons = [f.render() for f in audit.findings]
    record, why = check_authorization(root, run.lane, run.state.session)
    if why:
        reasons.append(why)
    start = session_start_commit(root, run.lane, run.state.session)
    known = inherited_identities(root, start) if start else set()  # defects older than the session are not its own
    resolved = {page.rel for page in lw.lane_pages(root, run.lane) if ex.is_open(page.frontmatter)}
    left = [f.render() for f in lint(root, base=None, jobs=1).findings
            if f.identity() not in known and f.path not in resolved]
    if left:
        reasons.append("wiki lint is not clean:\n    " + "\n    ".join(left[:10]))
    return reasons, record


def _records(root: Path, run) -> list[dict]:
    return journal_records(root, run.lane.journal)


def _final_audit(root: Path, run) -> str | None:
    stops = [r for r in _records(root, run) if r.get("op") == "stop"]
    return stops[-1].get("final_audit") if stops else None
