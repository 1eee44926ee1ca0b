"""The verdict an experiment may be filed with: the caps of seeds 001/003, as a pure function.

The agent asks for a verdict; :func:`cap_verdict` returns the strongest verdict the
evidence allows and why anything was capped:

- a crashed run, or one whose parity check failed (it broke numerics), is ``invalid``;
- a backfilled page is ``invalid`` or ``inconclusive`` (no analyzer ran);
- no Profile, no HLO Dump, or no hypothesis-firing audit line caps at ``inconclusive``
  (a run that never executed needs no Profile, but then it can only be ``invalid``);
- a firing audit that says ``silent no-op`` caps at ``inconclusive``;
- ``supported`` needs a delta beyond the noise band in the direction the lane's target
  metric improves.
"""

from __future__ import annotations

from dataclasses import dataclass

from wikiengine.experiment import VERDICTS

STRONG = ("supported", "refuted")


@dataclass(frozen=True)
class Evidence:
    requested: str
    crashed: bool = False
    parity_failed: bool = False  # the run's numerics differ from the reference beyond tolerance
    backfilled: bool = False
    has_profile: bool = True
    has_hlo: bool = True
    firing: str | None = "confirmed"  # confirmed | silent no-op | partial | None (no audit line)
    delta: float | None = None  # this run minus baseline, in metric units
    noise_band: float | None = None  # half-width, in metric units
    higher_is_better: bool = True


def cap_verdict(evidence: Evidence) -> tuple[str, list[str]]:
    """``(verdict, reasons)``: the verdict to file and why the request was capped."""
    if evidence.requested not in VERDICTS:
        raise ValueError(f"verdict {evidence.requested!r} is not one of {', '.join(VERDICTS)}")
    verdict, reasons = evidence.requested, []

    def cap(to: str, why: str) -> None:
        nonlocal verdict
        if verdict != to and (to == "invalid" or verdict in STRONG):
            reasons.append(f"{verdict} capped at {to}: {why}")
            verdict = to

    if evidence.crashed:
        cap("invalid", "the run crashed")
    if evidence.parity_failed:
        cap("invalid", "the parity check failed: the change broke numerics")
    if evidence.backfilled:
        cap("inconclusive", "a backfilled page had no analyzer")
    if not evidence.has_profile:
        cap("inconclusive", "no Profile")
    if not evidence.has_hlo:
        cap("inconclusive", "no HLO Dump")
    if evidence.firing is None:
        cap("inconclusive", "no hypothesis-firing audit line in the HLO Dump")
    elif evidence.firing == "silent no-op":
        cap("inconclusive", "the firing audit says silent no-op")
    if verdict == "supported":
        if evidence.delta is None:
            cap("inconclusive", "no measured delta against the baseline")
        else:
            band = evidence.noise_band or 0.0
            gain = evidence.delta if evidence.higher_is_better else -evidence.delta
            if gain <= band:
                cap("inconclusive", f"the delta {evidence.delta:+g} is not beyond the noise band ±{band:g} in the improving direction")
    return verdict, reasons


def is_better(value: float, than: float | None, higher_is_better: bool) -> bool:
    """Is ``value`` better than ``than`` (None: nothing to beat)?"""
    if than is None:
        return True
    return value > than if higher_is_better else value < than
