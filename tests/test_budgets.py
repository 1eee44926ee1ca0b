"""Budgets, thrash and stall as pure decisions (issue 27 part B, RELIABILITY rows 120-124):
what a session burnt of each budget of its program, which new dispatches a spent budget
stops, when a mechanism thrashes, and when a lane stalls. Tables, no processes."""

from __future__ import annotations

import datetime as dt

import pytest

from wikiengine.model import budgets, progress
from wikiengine.model.journal import Expectation
from wikiengine.step.lane.decide import AaView, BandNeed, BudgetGate, LaneLimits, TrackView, decide

T0 = "2026-06-13T10:00:00Z"
START = {"op": "start", "session": 2, "at": T0}
OLD = [{"op": "start", "session": 1, "at": "2026-06-01T00:00:00Z"},
       {"op": "dispatch", "vid": "v001", "at": "2026-06-01T00:00:00Z"},
       {"op": "complete", "vid": "v001", "started": "2026-06-01T00:00:00Z", "finished": "2026-06-01T10:00:00Z",
        "chips": 8, "at": "2026-06-01T10:00:00Z"}]
NOW = dt.datetime(2026, 6, 13, 12, tzinfo=dt.UTC).timestamp()  # two hours into session 2


def at(hour: int, minute: int = 0) -> str:
    return f"2026-06-13T{hour:02d}:{minute:02d}:00Z"


def run(vid: str, begin: str, end: str, chips: int | None = 4, op: str = "complete") -> list[dict]:
    """A dispatch and its completion with the backend's times."""
    key = {"vid": vid} if op == "complete" else {"workload": vid}
    return [{"op": "dispatch" if op == "complete" else "aa-dispatch", **key, "at": begin},
            {"op": op, **key, "started": begin, "finished": end, "chips": chips, "at": end}]


BURN_TABLE = [
    # (config, session records, budget, used, exhausted, note contains)
    ({}, [START], "max_experiments", 0, False, ""),
    ({"max_experiments": 2}, [START, *run("v010", at(10), at(11)), *run("v011", at(10), at(10, 30))],
     "max_experiments", 2, True, ""),
    # a re-asked dispatch is one experiment; an A/A run is none
    ({"max_experiments": 2}, [START, *run("v010", at(10), at(11)), {"op": "dispatch", "vid": "v010", "at": at(11)},
                              *run("demo-v000-aa1", at(10), at(11), op="aa-complete")], "max_experiments", 1, False, ""),
    ({"max_wall_hours": 2}, [START], "max_wall_hours", 2.0, True, ""),
    ({"max_wall_hours": 2.5}, [START], "max_wall_hours", 2.0, False, ""),
]
CHIP_TABLE = [
    # 1 h x 4 chips + 0.5 h x 4 chips = 6 chip-hours
    ({"max_chip_hours": 6}, [START, *run("v010", at(10), at(11)), *run("v011", at(10), at(10, 30))],
     "max_chip_hours", 6.0, True, ""),
    # A/A runs burn chip hours and the burn says how much
    ({"max_chip_hours": 10}, [START, *run("v010", at(10), at(11)), *run("w-aa1", at(10), at(11), op="aa-complete")],
     "max_chip_hours", 8.0, False, "4 of it A/A calibration runs"),
    # no chip count: one chip, said
    ({}, [START, *run("v010", at(10), at(12), chips=None)], "max_chip_hours", 2.0, False, "counted as 1 chip"),
    # no backend times: from the dispatch record to the completion record (the engine's own times)
    ({}, [START, {"op": "dispatch", "vid": "v010", "at": at(10)},
          {"op": "complete", "vid": "v010", "started": None, "finished": None, "chips": 2, "at": at(11, 30)}],
     "max_chip_hours", 3.0, False, "timed from dispatch to completion"),
]


@pytest.mark.parametrize("config,session,name,used,exhausted,note", BURN_TABLE)
def test_row120_burn_counts_the_newest_session_against_the_program_limits(config, session, name, used, exhausted, note):
    check_burn(config, session, name, used, exhausted, note)


@pytest.mark.parametrize("config,session,name,used,exhausted,note", CHIP_TABLE)
def test_row124_chip_hours_are_the_backends_times_x_chips_and_say_what_they_assume(config, session, name, used,
                                                                                   exhausted, note):
    check_burn(config, session, name, used, exhausted, note)
    agent = [{**r, "metrics": {"chip_hours": 0.0}, "hours": 0} for r in session]  # what else a record says is not read
    assert budgets.burn(config, OLD + agent, NOW)[name].used == pytest.approx(used)


def check_burn(config, session, name, used, exhausted, note):
    found = budgets.burn(config, OLD + session, NOW)[name]
    assert found.used == pytest.approx(used)
    assert found.exhausted is exhausted
    assert found.limit == (float(config[name]) if name in config else None)
    assert note in found.note and (note or found.note == "")


def test_row120_no_limit_never_stops_and_every_budget_is_reported():
    burns = budgets.burn({}, OLD + [START], NOW)
    assert sorted(burns) == sorted(budgets.LIMITS)
    assert budgets.exhausted(burns) == [] and budgets.experiments_left(burns) is None
    limited = budgets.burn({"max_experiments": 3}, OLD + [START, *run("v010", at(10), at(11))], NOW)
    assert budgets.experiments_left(limited) == 2
    assert limited["max_experiments"].describe("max_experiments") == "max_experiments: 1 of 3 experiments used"


def test_the_per_run_ceiling_is_one_key_of_the_same_cascade():
    assert budgets.run_ceiling_s({}) == 6 * 3600
    assert budgets.run_ceiling_s({"ceiling_s": 900}) == 900.0


SENT = Expectation("dispatch", "demo-gemma4-tpu-v048-x")
LIMITS = LaneLimits()
READY = TrackView(1, vid="v048", page_state="open")
REASK = TrackView(2, vid="v049", page_state="open", expected=SENT, backend_state=None)
AA_NEW = TrackView(3, vid="v050", page_state="open", band_key=("2B", None, 1))
AA_LOST = TrackView(4, vid="v051", page_state="open", aa=AaView(("2B", None, 1), 1, "demo-v000-aa1"))
SPENT = BudgetGate(("max_chip_hours: 6 of 6 chip-h used",))

GATE_TABLE = [
    # (views, gate, expected decisions)
    ([READY], BudgetGate(), ["dispatch"]),
    ([READY], SPENT, ["budget"]),
    ([REASK], SPENT, ["dispatch"]),  # journalled before the budget was spent: asked again by the same name
    ([AA_NEW], SPENT, ["budget"]),  # a new A/A run burns chips too
    ([AA_LOST], SPENT, ["aa_dispatch"]),  # a journalled A/A run is re-asked
    ([READY, TrackView(2, vid="v049", page_state="open")], BudgetGate((), 1), ["dispatch", "budget"]),
    ([READY, REASK], BudgetGate((), 0), ["budget", "dispatch"]),
    ([READY, AA_NEW], BudgetGate((), 0), ["budget", "aa_dispatch"]),  # A/A runs are not experiments
]


@pytest.mark.parametrize("views,gate,expected", GATE_TABLE)
def test_row121_a_spent_budget_stops_new_dispatches_only(views, gate, expected):
    needs = {("2B", None, 1): BandNeed(3)}
    decided = decide(views, 1_800_000_000.0, LIMITS, needs=needs, gate=gate)
    assert [d.kind for d in decided.tracks] == expected
    for d in decided.tracks:
        if d.kind == "budget":
            assert "past the budget" in d.reason and (not gate.spent or gate.spent[0] in d.reason)


MECH = {"v045": "m-a", "v045b": "m-a", "v045c": "m-a", "v046": "m-b", "v047": "m-a", "v048": "m-c", "v048b": "m-d",
        "v048c": "m-e"}


def filed(*pairs: tuple[str, str]) -> list[dict]:
    return [{"op": "file", "vid": vid, "verdict": verdict} for vid, verdict in pairs]


THRASH_TABLE = [
    # (filings, k, mechanism, vid, thrashing kind or None)
    (filed(("v045", "invalid"), ("v045b", "inconclusive"), ("v045c", "invalid")), 3, "m-a", "", "mechanism"),
    (filed(("v045", "invalid"), ("v045b", "inconclusive")), 3, "m-a", "", None),
    (filed(("v045", "invalid"), ("v045b", "inconclusive")), 2, "m-a", "", "mechanism"),
    # a supported or refuted result on the mechanism ends its streak
    (filed(("v045", "invalid"), ("v045b", "refuted"), ("v045c", "invalid"), ("v047", "invalid")), 3, "m-a", "", None),
    # other mechanisms in between do not
    (filed(("v045", "invalid"), ("v046", "supported"), ("v045b", "invalid"), ("v047", "inconclusive")), 3, "m-a", "",
     "mechanism"),
    # the letters of one v-id thrash whatever their mechanisms say
    (filed(("v048", "invalid"), ("v048b", "invalid"), ("v048c", "inconclusive")), 3, "m-z", "v048b", "v-id"),
    (filed(("v048", "invalid"), ("v048b", "invalid"), ("v048c", "inconclusive")), 3, "m-z", "", None),
    # a filing of a page not in the lane (deleted) is not counted
    (filed(("v045", "invalid"), ("v999", "invalid"), ("v045b", "invalid")), 3, "m-a", "", None),
]


@pytest.mark.parametrize("records,k,mechanism,vid,kind", THRASH_TABLE)
def test_row122_thrash_is_k_weak_results_in_a_row_on_one_mechanism_or_vid(records, k, mechanism, vid, kind):
    found = progress.thrash_of(records, MECH, k, mechanism=mechanism, vid=vid)
    assert (found.kind if found else None) == kind
    watched = progress.thrashing(records, MECH, k)  # the watcher's finding: the same computation
    if kind == "mechanism":
        assert any(s.kind == "mechanism" and s.value == mechanism for s in watched)


HYP = {"v010": "h1", "v011": "h1", "v012": "h1", "v013": "h2", "v014": "h2"}


def claim(vid: str) -> dict:
    return {"op": "claim", "vid": vid}


STALL_TABLE = [
    # (records, N, stalled, filings in the window)
    ([START, claim("v010"), *filed(("v010", "refuted"))], 2, False, ["v010"]),
    ([START, *filed(("v010", "refuted"), ("v011", "inconclusive"))], 2, True, ["v010", "v011"]),
    # a frontier move empties the window
    ([START, *filed(("v010", "refuted")), {"op": "file", "vid": "v011", "verdict": "supported", "moved": True},
      *filed(("v012", "refuted"))], 2, False, ["v012"]),
    # supported but not beating the frontier is no move
    ([START, {"op": "file", "vid": "v010", "verdict": "supported", "moved": False}, *filed(("v011", "refuted"))], 2,
     True, ["v010", "v011"]),
    # a record written before `moved` existed: supported counts as a move
    ([START, *filed(("v010", "refuted"), ("v011", "supported"))], 1, False, []),
    # an earlier session's filings do not count
    ([*filed(("v010", "refuted"), ("v011", "refuted")), START, *filed(("v012", "refuted"))], 2, False, ["v012"]),
    # a claim of a hypothesis the stalled filings did not test rotates the stall
    ([START, *filed(("v010", "refuted"), ("v011", "refuted")), claim("v013")], 2, False, []),
    # a claim of the same hypothesis does not
    ([START, *filed(("v010", "refuted"), ("v011", "refuted")), claim("v012")], 2, True, ["v010", "v011"]),
]


@pytest.mark.parametrize("records,after,stalled,window", STALL_TABLE)
def test_row123_a_stall_is_n_filings_without_a_frontier_move(records, after, stalled, window):
    found = progress.stall(records, HYP, after)
    assert found.stalled is stalled and list(found.filings) == window
    assert list(found.hypotheses) == list(dict.fromkeys(HYP[v] for v in window))


def test_defaults_come_from_the_config_keys():
    assert progress.thrash_k({}) == 3 and progress.thrash_k({"thrash_k": 5}) == 5
    assert progress.stall_after({}) == 8 and progress.stall_after({"stall_after_filings": 2}) == 2
