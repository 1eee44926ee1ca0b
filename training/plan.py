"""The session planner: pure arithmetic from the pointer to what a session will do.

A run of ``max_steps`` is cut into sessions of ``session_steps``; the last session
absorbs a remainder shorter than a session (the seed: 3,814 steps, sessions of 762:
S1 0->762, ..., S4 ->3,048, S5 ->3,814). A session resumes from the pointer (wherever a
platform kill left it), runs to the next boundary of that grid, saves every
``save_steps`` (and at the boundary), and stops at the last save that fits its time.

:func:`plan_session` makes the plan; :func:`cross_check` recomputes it a second way
(from the whole session grid, not from the resume step) and lists every disagreement:
a session refuses to start when the list is not empty.
"""

from __future__ import annotations

from dataclasses import dataclass

from wikiengine.core.errors import WikiError


@dataclass(frozen=True)
class SessionPlan:
    """What one session will do, from the pointer it found."""

    pointer_step: int  # 0 when the store has no pointer yet
    resume_step: int
    boundary: int  # the step this session stops at unless time runs out first
    steps_to_run: int  # boundary - resume_step
    save_points: tuple[int, ...]  # steps after which a checkpoint is saved, ascending
    last_save: int  # the last save point that fits the time budget (== boundary without a budget)
    max_steps: int
    save_steps: int
    session_steps: int

    @property
    def finished(self) -> bool:
        """The run is complete: nothing to train."""
        return self.resume_step >= self.max_steps


class PlanError(WikiError, ValueError):
    """The inputs of a plan are inconsistent (a refusal to start)."""


def session_grid(max_steps: int, session_steps: int) -> list[int]:
    """The session boundaries of the whole run: ``session_steps * k`` then ``max_steps``.

    A last remainder shorter than one session is absorbed by the last session.
    """
    count = max(1, max_steps // session_steps)
    return [session_steps * k for k in range(1, count)] + [max_steps]


def next_boundary(resume_step: int, max_steps: int, session_steps: int) -> int:
    """The boundary the session that resumes at ``resume_step`` stops at."""
    boundary = (resume_step // session_steps + 1) * session_steps
    if boundary + session_steps > max_steps:
        boundary = max_steps
    return boundary


def save_points(resume_step: int, boundary: int, save_steps: int) -> tuple[int, ...]:
    """Multiples of ``save_steps`` in ``(resume_step, boundary]``, plus the boundary itself."""
    first = (resume_step // save_steps + 1) * save_steps
    points = list(range(first, boundary + 1, save_steps))
    if boundary > resume_step and (not points or points[-1] != boundary):
        points.append(boundary)
    return tuple(points)


def last_save_that_fits(resume_step: int, points: tuple[int, ...], budget_s: float | None,
                        seconds_per_step: float | None, seconds_per_save: float) -> int:
    """The last save point reachable within ``budget_s`` (``resume_step`` when none is).

    Without a budget or a speed estimate every point fits.
    """
    if not points:
        return resume_step
    if budget_s is None or seconds_per_step is None:
        return points[-1]
    last = resume_step
    for count, point in enumerate(points, start=1):
        needed = (point - resume_step) * seconds_per_step + count * seconds_per_save
        if needed > budget_s:
            break
        last = point
    return last


def plan_session(pointer_step: int, max_steps: int, save_steps: int, session_steps: int,
                 budget_s: float | None = None, seconds_per_step: float | None = None,
                 seconds_per_save: float = 0.0) -> SessionPlan:
    """Plan one session from the pointer step (0 when there is no pointer yet)."""
    for name, value in (("pointer_step", pointer_step), ("max_steps", max_steps), ("save_steps", save_steps),
                        ("session_steps", session_steps)):
        if type(value) is not int or value < 0:
            raise PlanError(f"{name} must be a non-negative integer, got {value!r}")
    if min(max_steps, save_steps, session_steps) == 0:
        raise PlanError("max_steps, save_steps and session_steps must be positive")
    if pointer_step > max_steps:
        raise PlanError(f"the pointer step {pointer_step} is beyond max_steps {max_steps}")
    resume = pointer_step
    if resume >= max_steps:
        return SessionPlan(pointer_step, resume, resume, 0, (), resume, max_steps, save_steps, session_steps)
    boundary = next_boundary(resume, max_steps, session_steps)
    points = save_points(resume, boundary, save_steps)
    last = last_save_that_fits(resume, points, budget_s, seconds_per_step, seconds_per_save)
    return SessionPlan(pointer_step, resume, boundary, boundary - resume, points, last, max_steps, save_steps,
                       session_steps)


def cross_check(plan: SessionPlan) -> list[str]:
    """Recompute the plan from the session grid and list every disagreement (empty = agree)."""
    problems = []
    grid = session_grid(plan.max_steps, plan.session_steps)
    save_grid = set(range(plan.save_steps, plan.max_steps + 1, plan.save_steps)) | {plan.max_steps}
    if plan.pointer_step and plan.pointer_step not in save_grid:
        problems.append(f"the pointer step {plan.pointer_step} is not on the save grid of {plan.save_steps}")
    if plan.resume_step != plan.pointer_step:
        problems.append(f"resume step {plan.resume_step} != pointer step {plan.pointer_step}")
    if plan.finished:
        if plan.steps_to_run or plan.save_points:
            problems.append("a finished run plans steps")
        return problems
    expected_boundary = min(b for b in grid if b > plan.resume_step)
    if plan.boundary != expected_boundary:
        problems.append(f"boundary {plan.boundary} != next session-grid step {expected_boundary}")
    if plan.steps_to_run != plan.boundary - plan.resume_step:
        problems.append(f"steps_to_run {plan.steps_to_run} != {plan.boundary} - {plan.resume_step}")
    if not 0 < plan.steps_to_run <= plan.session_steps * 2:
        problems.append(f"steps_to_run {plan.steps_to_run} is not within one session of {plan.session_steps}")
    expected_points = tuple(sorted(s for s in save_grid | {plan.boundary} if plan.resume_step < s <= plan.boundary))
    if plan.save_points != expected_points:
        problems.append(f"save points {plan.save_points} != grid points {expected_points}")
    if plan.last_save != plan.resume_step and plan.last_save not in plan.save_points:
        problems.append(f"last save {plan.last_save} is not a save point")
    return problems


def next_save_fits(step: int, next_save: int, elapsed_s: float, budget_s: float | None,
                   seconds_per_step: float, seconds_per_save: float) -> bool:
    """Whether training from ``step`` to ``next_save`` and saving it fits in ``budget_s``."""
    if budget_s is None:
        return True
    return elapsed_s + (next_save - step) * seconds_per_step + seconds_per_save <= budget_s
