"""The verdict an experiment may be filed with: the caps of seeds 001/003, as a pure function.

The agent asks for a verdict; :func:`cap_verdict` returns the strongest verdict the
evidence allows and why anything was capped:

- a crashed run (a non-zero exit, a kill), or one whose parity check failed (it broke
  numerics), is ``invalid``;
- a backfilled page, or a run the engine did not launch (``--external``), is at most
  ``inconclusive``; so is a run whose exit code the engine never recorded;
- no Profile, no HLO Dump, or no hypothesis-firing audit line caps at ``inconclusive``
  (a run that never executed needs no Profile, but then it can only be ``invalid``);
- a firing audit that says ``silent no-op`` caps at ``inconclusive``;
- ``supported`` needs a measured noise band (the lane's A/A runs) and a delta beyond it in
  the direction the lane's target metric improves.
"""

from __future__ import annotations

from dataclasses import dataclass

from wikiengine.model.experiment import VERDICTS

STRONG = ("supported", "refuted")


@dataclass(frozen=True)
class Evidence:
    """What the engine recorded of a run, against which a requested verdict is capped."""

    requested: str
    crashed: bool = False
    crash_reason: str = "the run crashed"
    external: bool = False  # the engine did not launch the run: its figures are the agent's
    exit_unrecorded: bool = False  # the run completed but no exit code was recorded
    band_measured: bool = True  # the noise band is the lane's own A/A figure
    parity_failed: bool = False  # the run's numerics differ from the reference beyond tolerance
    backfilled: bool = False
    has_profile: bool = True
    has_hlo: bool = True
    firing: str | None = "confirmed"  # confirmed | silent no-op | partial | None (no audit line)
    delta: float | None = None  # this run minus baseline, in metric units
    noise_band: float | None = None  # half-width, in metric units
    higher_is_better: bool = True


class Capped:
    """A requested verdict and the caps the evidence puts on it, each with its reason (lane and
    kernel verdicts alike): ``invalid`` always wins, any other cap only lowers a strong verdict,
    and ``refuted`` only replaces ``supported``."""

    def __init__(self, requested: str):
        if requested not in VERDICTS:
            raise ValueError(f"verdict {requested!r} is not one of {', '.join(VERDICTS)}")
        self.verdict, self.reasons = requested, []

    def cap(self, to: str, why: str) -> None:
        verdict = self.verdict
        if verdict != to and (to == "invalid" or verdict in STRONG) and not (to == "refuted" and verdict != "supported"):
            self.reasons.append(f"{verdict} capped at {to}: {why}")
            self.verdict = to


def cap_verdict(evidence: Evidence) -> tuple[str, list[str]]:
    """``(verdict, reasons)``: the verdict to file and why the request was capped."""
    capped = Capped(evidence.requested)
    cap = capped.cap
    if evidence.crashed:
        cap("invalid", evidence.crash_reason)
    if evidence.parity_failed:
        cap("invalid", "the parity check failed: the change broke numerics")
    if evidence.backfilled:
        cap("inconclusive", "a backfilled page had no analyzer")
    if evidence.external:
        cap("inconclusive", "the engine did not launch the run: its figures are the agent's")
    if evidence.exit_unrecorded:
        cap("inconclusive", "the engine recorded no exit code for the run")
    if not evidence.has_profile:
        cap("inconclusive", "no Profile")
    if not evidence.has_hlo:
        cap("inconclusive", "no HLO Dump")
    if evidence.firing is None:
        cap("inconclusive", "no hypothesis-firing audit line in the HLO Dump")
    elif evidence.firing == "silent no-op":
        cap("inconclusive", "the firing audit says silent no-op")
    if capped.verdict == "supported":
        if evidence.delta is None:
            cap("inconclusive", "no measured delta against the baseline")
        elif not evidence.band_measured:
            cap("inconclusive", "no measured A/A noise band for the frontier it ran against")
        else:
            band = evidence.noise_band or 0.0
            gain = evidence.delta if evidence.higher_is_better else -evidence.delta
            if gain <= band:
                cap("inconclusive", f"the delta {evidence.delta:+g} is not beyond the noise band ±{band:g} in the improving direction")
    return capped.verdict, capped.reasons


def is_better(value: float, than: float | None, higher_is_better: bool) -> bool:
    """Is ``value`` better than ``than`` (None: nothing to beat)?"""
    if than is None:
        return True
    return value > than if higher_is_better else value < than


@dataclass(frozen=True)
class Comparison:
    """How a run's target metric compares with its reference, and the figure the page records.

    The band is the caller's (the lane's measured A/A figure); a run's own ``noise_band``
    metric is only ever a detail. With a frontier co-measured in the same process
    (``frontier_<metric>`` in the run's metrics) the delta is against it, so machine load
    cancels, and the recorded figure is
    rescaled to the frontier's recorded one (``recorded_frontier x value / co-measured``),
    so recorded figures of one row stay comparable across runs made under other loads.
    Without one, the delta is against the row's Baseline and the figure is recorded as
    measured.
    """

    value: float | None  # as measured
    reference: float | None  # what the delta is against
    reference_label: str
    delta: float | None
    recorded: float | None  # what the page and Current best record
    noise_band: float
    noise_source: str
    co_measured: bool


def compare(metric: str, metrics: dict[str, float], baseline: float | None, frontier_recorded: float | None,
            band: float, band_source: str) -> Comparison:
    """The :class:`Comparison` of a run (pure)."""
    value = metrics.get(metric)
    co = metrics.get(f"frontier_{metric}")
    if value is None:
        return Comparison(None, baseline, "the row's Baseline", None, None, band, band_source, False)
    if co is not None and co > 0:
        scale = frontier_recorded if frontier_recorded is not None else baseline
        return Comparison(value, co, "the frontier, co-measured in the same process", value - co,
                          scale * value / co if scale is not None else value, band, band_source, True)
    delta = value - baseline if baseline is not None else None
    return Comparison(value, baseline, "the row's Baseline", delta, value, band, band_source, False)
