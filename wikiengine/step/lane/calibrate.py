"""The lane's measured A/A noise band: runs of the unchanged frontier through the lane's backend.

Before the first dispatch against a frontier in a session (and again when the frontier
moves, or the band is older than ``noise_band_every_s``), the wake runs the frontier's
config against itself ``noise_band_runs`` times (default 3) on the tracks whose stubs wait
for it. Each run is journalled like a dispatch (``aa-dispatch``, committed before the
backend is asked; ``aa-kill``; ``aa-complete`` with the run's figure), and the run that
completes the set writes the ``band`` record and a ``noise-band`` entry in the lane log.
Every verdict of the session is judged by that band
(:func:`wikiengine.model.evidence.band_for_run`). A/A workloads are ``...-v000-aa...``:
no experiment has that id, so backfill and reconcile leave them alone.
"""

from __future__ import annotations

from wikiengine.core.clock import timestamp, utc_iso
from wikiengine.model import logbook
from wikiengine.model.evidence import (
    DEFAULT_AA_RUNS,
    aa_sample,
    aa_slug,
    calibration,
    measure_band,
    read_run_metrics,
)
from wikiengine.model.experiment import AA_NUMBER
from wikiengine.step.lane.decide import AaView, BandNeed, TrackDecision, TrackView


def band_key(run, records: list[dict], view: TrackView, page, frontier: str | None, now: float) -> tuple | None:
    """The (variant, frontier, round) band a ready stub waits for, or None (measured, fresh)."""
    variant = str(page.frontmatter.get("variant", ""))
    cal = calibration(records, run.state.session, variant, frontier)
    every = run.config.get("noise_band_every_s")
    if cal.band is None:
        return (variant, frontier, cal.round)
    if every and now - (timestamp(cal.band.get("at")) or now) > float(every):
        return (variant, frontier, cal.round + 1)
    return None


def band_needs(run, records: list[dict], keys: set[tuple]) -> dict[tuple, BandNeed]:
    """Where each wanted band's A/A runs stand (a new round starts from nothing)."""
    k = int(run.config.get("noise_band_runs", DEFAULT_AA_RUNS))
    needs = {}
    for variant, frontier, round_ in keys:
        cal = calibration(records, run.state.session, variant, frontier)
        if cal.round != round_:
            needs[(variant, frontier, round_)] = BandNeed(k)
            continue
        in_flight = len(set(cal.dispatched) - set(cal.completed))
        needs[(variant, frontier, round_)] = BandNeed(k, len(cal.succeeded), cal.failed, in_flight, cal.next_index())
    return needs


def open_aa_runs(records: list[dict], session: int, workloads: dict | None) -> dict[int, AaView]:
    """track -> the A/A run journalled on it in this session and not yet completed."""
    done = {r.get("workload") for r in records if r.get("op") == "aa-complete"}
    killed = {r.get("workload") for r in records if r.get("op") == "aa-kill"}
    found = {}
    for record in records:
        if record.get("op") != "aa-dispatch" or record.get("session") != session or record.get("workload") in done:
            continue
        name = record.get("workload")
        seen = (workloads or {}).get(name)
        found[int(record.get("track", 0))] = AaView(
            (record.get("variant"), record.get("frontier"), int(record.get("round", 1))), int(record.get("index", 0)),
            name, "unknown" if workloads is None else (seen.state if seen else None),
            timestamp(getattr(seen, "started", None)), timestamp(getattr(seen, "progress_at", None)), name in killed,
            getattr(seen, "elapsed_s", None))
    return found


def aa_name(run, key: tuple) -> str:
    """The workload name of A/A run ``key`` = (variant, frontier, round, index)."""
    from wikiengine.core.identity import workload_name

    variant, frontier, round_, index = key
    return workload_name(run.settings.user_prefix, run.lane.model_name, run.lane.name, AA_NUMBER,
                         aa_slug(run.state.session, variant, frontier, round_, index))


def aa_dispatch_record(run, decision: TrackDecision, spec, at: str) -> dict:
    variant, frontier, round_, index = decision.aa
    return {"op": "aa-dispatch", "session": run.state.session, "variant": variant, "frontier": frontier,
            "round": round_, "index": index, "track": decision.track, "workload": spec.name, "argv": spec.argv, "at": at}


def aa_kill_record(run, decision: TrackDecision, at: str) -> dict:
    variant, frontier, round_, index = decision.aa
    return {"op": "aa-kill", "session": run.state.session, "variant": variant, "frontier": frontier, "round": round_,
            "index": index, "workload": aa_name(run, decision.aa), "reason": decision.reason, "at": at}


def aa_complete(run, decision: TrackDecision, workload, at: str) -> dict:
    """The ``aa-complete`` record of an ended A/A run: its exit code and figure."""
    variant, frontier, round_, index = decision.aa
    arts = dict(run.backend.artifacts(workload.name)) if workload is not None else {}
    metrics = read_run_metrics(arts.get("metrics")).figures
    sample = aa_sample(metrics, run.settings.target_metric)
    return {"op": "aa-complete", "session": run.state.session, "variant": variant, "frontier": frontier,
            "round": round_, "index": index, "workload": aa_name(run, decision.aa),
            "exit_code": workload.exit_code if workload is not None else None, **run_times(workload),
            "sample": sample[0] if sample else None, "co_measured": sample[1] if sample else None,
            "value": metrics.get(run.settings.target_metric), "at": at}


def run_times(workload) -> dict:
    """The backend's own start and end times of a run and its chip count, for the completion
    record (what ``max_chip_hours`` burns, :mod:`wikiengine.model.budgets`)."""
    return {"started": getattr(workload, "started", None), "finished": getattr(workload, "finished", None),
            "chips": getattr(workload, "chips", None)}


def band_record(run, records: list[dict], key: tuple, at: str) -> dict | None:
    """The ``band`` record once the round of ``key`` = (variant, frontier, round) has its k
    successful runs (or k failures: a band that could not be measured), else None."""
    from wikiengine.core.median import median

    variant, frontier, round_ = key
    cal = calibration(records, run.state.session, variant, frontier)
    k = int(run.config.get("noise_band_runs", DEFAULT_AA_RUNS))
    if cal.round != round_ or cal.band is not None or (len(cal.succeeded) < k and cal.failed < k):
        return None
    co = all(r.get("co_measured") for r in cal.completed.values() if r.get("sample") is not None)
    band = measure_band(cal.succeeded, co) if len(cal.succeeded) >= k else None
    found = band.as_record() if band else {"band": None, "n": len(cal.succeeded), "why": f"{cal.failed} A/A runs failed"}
    values = [float(r["value"]) for r in cal.completed.values()
              if r.get("exit_code") == 0 and isinstance(r.get("value"), (int, float)) and r.get("sample") is not None]
    return {"op": "band", "session": run.state.session, "variant": variant, "frontier": frontier, "round": round_,
            "metric": run.settings.target_metric, **found,
            "value": median(values) if band and values else None, "at": at}


def band_log_entry(run, record: dict, date: str) -> str:
    """The lane log's ``noise-band`` entry of a measured (or unmeasurable) band."""
    against = record.get("frontier") or "the row's Baseline config"
    if record.get("band") is None:
        result = f"not measured: {record.get('why')}; every verdict against it is at most inconclusive"
    else:
        result = (f"±{record['band']:.4g} {record['metric']} (n={record['n']}, MAD {record['mad']:.3g}"
                  + (", co-measured deltas" if record.get("co_measured") else "") + ")")
    return logbook.render_entry(date, "noise-band", f"A/A band of {record['variant']} against {against}", {
        "Key result": result,
        "Notes": f"session {record['session']}, round {record['round']}: {record.get('n')} runs of the unchanged "
                 "frontier through the lane backend; supported needs a delta beyond it"
                 + (f"; the runs' median, {record['value']:.6g} {record['metric']}, is a measurement of the row's "
                    "Baseline config" if record.get("value") is not None and not record.get("frontier") else "")})


def stamp(now: float) -> str:
    import datetime as dt

    return utc_iso(dt.datetime.fromtimestamp(now, dt.UTC))
