"""The session planner against the seed's grid: S1 0->762, ..., S4 ->3,048, S5 ->3,814."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from wikiengine.training.plan import (
    PlanError,
    SessionPlan,
    cross_check,
    last_save_that_fits,
    next_save_fits,
    plan_session,
    session_grid,
)

SEED = {"max_steps": 3814, "save_steps": 127, "session_steps": 762}


@pytest.mark.parametrize(
    ("pointer", "boundary", "first_save", "saves"),
    [
        (0, 762, 127, 6),  # S1
        (762, 1524, 889, 6),  # S2
        (1524, 2286, 1651, 6),  # S3
        (2286, 3048, 2413, 6),  # S4
        (3048, 3814, 3175, 7),  # S5 absorbs the 4-step remainder: ..., 3810, 3814
        (635, 762, 762, 1),  # S1 killed by the platform at 635: resume there, same boundary
        (3810, 3814, 3814, 1),
    ],
)
def test_seed_session_grid(pointer, boundary, first_save, saves):
    plan = plan_session(pointer, **SEED)
    assert (plan.resume_step, plan.boundary, plan.steps_to_run) == (pointer, boundary, boundary - pointer)
    assert plan.save_points[0] == first_save and len(plan.save_points) == saves
    assert plan.save_points[-1] == boundary == plan.last_save
    assert cross_check(plan) == []


def test_seed_boundaries():
    assert session_grid(3814, 762) == [762, 1524, 2286, 3048, 3814]


def test_finished_run_plans_nothing():
    plan = plan_session(3814, **SEED)
    assert plan.finished and plan.steps_to_run == 0 and plan.save_points == ()
    assert cross_check(plan) == []


def test_pointer_beyond_max_steps_is_refused():
    with pytest.raises(PlanError):
        plan_session(3815, **SEED)


@pytest.mark.parametrize("bad", [-1, 1.0, True, "762"])
def test_non_integer_inputs_are_refused(bad):
    with pytest.raises(PlanError):
        plan_session(bad, **SEED)


def test_cross_check_flags_an_off_grid_pointer():
    plan = plan_session(700, **SEED)
    assert any("save grid" in problem for problem in cross_check(plan))


@pytest.mark.parametrize(
    "tamper",
    [
        {"boundary": 1524},
        {"steps_to_run": 761},
        {"save_points": (127, 254, 381, 508, 635)},
        {"resume_step": 127},
        {"last_save": 700},
    ],
)
def test_cross_check_catches_a_wrong_plan(tamper):
    good = plan_session(0, **SEED)
    bad = SessionPlan(**{**good.__dict__, **tamper})
    assert cross_check(bad)


def test_time_budget_stops_at_the_last_save_that_fits():
    # 10 s a step, 30 s a save, one hour: 3 saves of 127 steps need 3*1270+... > 3600
    plan = plan_session(0, **SEED, budget_s=3600, seconds_per_step=10, seconds_per_save=30)
    assert plan.last_save == 254
    assert cross_check(plan) == []
    assert last_save_that_fits(0, (127,), 100, 10, 0) == 0  # not even the first save fits


def test_next_save_fits():
    assert next_save_fits(127, 254, elapsed_s=100, budget_s=None, seconds_per_step=1, seconds_per_save=1)
    assert next_save_fits(127, 254, elapsed_s=100, budget_s=237, seconds_per_step=1, seconds_per_save=10)
    assert not next_save_fits(127, 254, elapsed_s=100, budget_s=236, seconds_per_step=1, seconds_per_save=10)


@given(
    session_steps=st.integers(1, 40).map(lambda k: k),
    saves_per_session=st.integers(1, 8),
    sessions=st.integers(1, 7),
    remainder=st.integers(0, 60),
    data=st.data(),
)
def test_plans_from_any_grid_pointer_agree_with_the_cross_check(session_steps, saves_per_session, sessions, remainder,
                                                                data):
    save_steps = session_steps
    session_steps = save_steps * saves_per_session
    max_steps = session_steps * sessions + remainder
    grid = sorted(set(range(0, max_steps + 1, save_steps)) | {max_steps})
    pointer = data.draw(st.sampled_from(grid))
    plan = plan_session(pointer, max_steps, save_steps, session_steps)
    assert cross_check(plan) == []
    if not plan.finished:
        assert plan.save_points[-1] == plan.boundary <= max_steps
        assert all(p % save_steps == 0 or p == max_steps for p in plan.save_points)
