"""A lane's budgets: what its session has burnt against the limits of its program's ``## Config``.

The limits are read from the resolved program (the cascade: set at the area root, the
model or the lane, the deepest wins); each is off when unset. They count the **newest
session** (from the journal's newest ``start`` record):

- ``max_experiments``: experiments dispatched (distinct v-ids with a ``dispatch`` record;
  A/A calibration runs are not experiments);
- ``max_wall_hours``: hours since the session's start;
- ``max_chip_hours``: hours x chips of every run that completed, from the backend's own
  start and end times that the wake journals at completion (``started``, ``finished``,
  ``chips``); A/A calibration runs count, and the burn says how much of it they were. A
  run with no backend times counts from its dispatch to its completion record (the
  engine's own times: an upper bound); a run whose backend reported no chip count counts
  one chip, and the burn says so.

A budget is exhausted when what is used reaches the limit: `wiki step` then dispatches
nothing new (a run in flight finishes; a dispatch already journalled is still re-asked).

``ceiling_s`` is the per-run limit of the same cascade (:func:`run_ceiling_s`): a run past
it is killed, and the backend is told it as the run's timeout.
"""

from __future__ import annotations

from dataclasses import dataclass

from wikiengine.core.clock import timestamp

DEFAULT_CEILING_S = 6 * 3600.0
LIMITS = ("max_experiments", "max_wall_hours", "max_chip_hours")
UNITS = {"max_experiments": "experiments", "max_wall_hours": "h", "max_chip_hours": "chip-h"}


@dataclass(frozen=True)
class Burn:
    """One budget: what is used, the limit (None: no limit set), and whether it is spent."""

    used: float
    limit: float | None
    unit: str
    note: str = ""  # what the figure includes or assumes (A/A runs, unknown chip counts)

    @property
    def exhausted(self) -> bool:
        return self.limit is not None and self.used >= self.limit

    def as_json(self) -> dict:
        return {"used": self.used, "limit": self.limit, "unit": self.unit, "exhausted": self.exhausted,
                "note": self.note}

    def describe(self, name: str) -> str:
        """``max_experiments: 3 of 3 experiments used``."""
        limit = "no limit" if self.limit is None else f"{self.limit:g}"
        return f"{name}: {self.used:.4g} of {limit} {self.unit} used" + (f" ({self.note})" if self.note else "")


def run_ceiling_s(config: dict) -> float:
    """The per-run ceiling: a run past it is killed (``ceiling_s``, default 6 h)."""
    return float(config.get("ceiling_s", DEFAULT_CEILING_S))


def session_records(records: list[dict]) -> list[dict]:
    """The records of the newest session, its ``start`` record first (all of them before any start)."""
    start = max((i for i, r in enumerate(records) if r.get("op") == "start"), default=0)
    return records[start:]


def run_chip_hours(record: dict, dispatched_at: float | None) -> tuple[float, bool, bool]:
    """``(chip-hours, chips known, backend times known)`` of one completion record."""
    begin, end = timestamp(record.get("started")), timestamp(record.get("finished"))
    backend_times = begin is not None and end is not None
    if not backend_times:
        begin, end = dispatched_at, timestamp(record.get("at"))
    hours = max(0.0, (end - begin) / 3600) if begin is not None and end is not None else 0.0
    chips = record.get("chips")
    known = isinstance(chips, int) and not isinstance(chips, bool) and chips > 0
    return hours * (chips if known else 1), known, backend_times


def burn(config: dict, records: list[dict], now: float) -> dict[str, Burn]:
    """Every budget of the lane's session: name -> :class:`Burn` (see the module docstring)."""
    session = session_records(records)
    started = timestamp(session[0].get("at")) if session and session[0].get("op") == "start" else None
    dispatched_at: dict[str, float | None] = {}
    for record in session:
        if record.get("op") in ("dispatch", "aa-dispatch"):
            dispatched_at.setdefault(record.get("vid") or record.get("workload"), timestamp(record.get("at")))
    experiments = {r["vid"] for r in session if r.get("op") == "dispatch" and r.get("vid")}
    total = aa = 0.0
    unknown_chips = engine_times = 0
    for record in session:
        if record.get("op") not in ("complete", "aa-complete"):
            continue
        key = record.get("vid") if record["op"] == "complete" else record.get("workload")
        hours, chips_known, backend_times = run_chip_hours(record, dispatched_at.get(key))
        total += hours
        aa += hours if record["op"] == "aa-complete" else 0.0
        unknown_chips += not chips_known
        engine_times += not backend_times
    notes = [f"{aa:.3g} of it A/A calibration runs"] if aa else []
    notes += [f"{unknown_chips} run(s) with no chip count, counted as 1 chip"] if unknown_chips else []
    notes += [f"{engine_times} run(s) timed from dispatch to completion (no backend times)"] if engine_times else []
    used = {"max_experiments": float(len(experiments)),
            "max_wall_hours": max(0.0, (now - started) / 3600) if started is not None else 0.0,
            "max_chip_hours": total}
    return {name: Burn(used[name], _limit(config, name), UNITS[name], "; ".join(notes) if name == "max_chip_hours" else "")
            for name in LIMITS}


def _limit(config: dict, name: str) -> float | None:
    value = config.get(name)
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def exhausted(burns: dict[str, Burn]) -> list[str]:
    """The budgets that stop new dispatches, in :data:`LIMITS` order."""
    return [name for name in LIMITS if name in burns and burns[name].exhausted]


def experiments_left(burns: dict[str, Burn]) -> int | None:
    """How many more experiments may be dispatched (None: no limit)."""
    found = burns.get("max_experiments")
    return None if found is None or found.limit is None else max(0, int(found.limit - found.used))
