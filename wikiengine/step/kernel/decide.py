"""What one kernel wake does: a pure function of the family's observed facts (seed 003, K9).

From the session's status, the open stub, its Candidate ledger against the branch's
candidate commits, which candidates have a receipt, the K7 evidence, the state after the
last filed verdict (:func:`~wikiengine.step.kernel.verdicts.k9_state`) and the stop rule's
reasons:

=================================================  ==================  ======================================
facts                                              decision            what the wake does or says is owed
=================================================  ==================  ======================================
no session, or the session is stopped              ``idle``            nothing (exit 0, says so)
the session is paused                              ``paused``          the recorded rank-1 resume action
running, no stub yet, or resumed after a pause     ``need_stub``       stub the rank-1 lead (K3)
open stub, empty ledger                            ``need_candidate``  the agent authors ``cand 1`` (K4)
open stub, the newest candidate has no receipt     ``verify``          the wake runs the verifier itself (K6)
open stub, the ledger has more rows than the       ``need_verdict``    a verdict, capped (the verifier would
branch has candidate commits                                           not measure what the ledger says)
open stub, the newest candidate has a receipt      ``need_verdict``    a verdict, with the cap preview (K7)
filed, the next stub committed                     (its stub's row)    K9 holds
filed, neither next stub nor stop chain: stall     ``stall``           stub the rank-1 lead; ``close`` when
                                                                       the stop rule has no reasons left; else
                                                                       the stop chain's next step (``--pause``)
=================================================  ==================  ======================================

The stall is counted: a wake that finds it after the same filed experiment as the wake
before adds one to ``stall_wakes`` (kept in ``memory/STATE.md``), so a stall that
persists says so. :func:`next_wake_s` clamps the next wake to the lane window.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from wikiengine.step.engine import MAX_WAKE_S, MIN_WAKE_S
from wikiengine.step.kernel.verdicts import KernelEvidence, cap_kernel_verdict


@dataclass(frozen=True)
class Lead:
    """The rank-1 lead: the first open lead of the family page, else the first untried lever."""

    slug: str
    text: str
    source: str  # "family page" | "class page lever"


@dataclass(frozen=True)
class KernelView:
    """What one wake observed of the family (plain data)."""

    session: str | None  # running | paused | stopped | None (never started)
    open_vid: str | None = None
    ledger: tuple[str, ...] = ()  # the open stub's ledger rows (cand1, cand2, ...)
    branch_commits: int | None = None  # candidate commits on its branch (None: no branch)
    receipts: frozenset[str] = frozenset()  # candidates of the open stub with a receipt on disk
    evidence: KernelEvidence | None = None  # K7's evidence for the open stub (requested: supported)
    k9: dict = field(default_factory=lambda: {"state": "no-verdict-yet"})
    stop_reasons: tuple[str, ...] = ()
    rank1: Lead | None = None
    resume_action: str | None = None  # the pause record's
    stall_after: str | None = None  # STATE.md's count so far
    stall_wakes: int = 0


@dataclass(frozen=True)
class KernelDecision:
    """What a kernel wake decided, and why."""

    kind: str  # idle | paused | need_stub | need_candidate | verify | need_verdict | stall
    reason: str
    vid: str | None = None
    cand: str | None = None
    owed: str | None = None  # stall: stub | close | stop-chain
    cap: tuple[str, tuple[str, ...]] | None = None  # need_verdict: the strongest verdict allowed, and why
    stall_after: str | None = None
    stall_wakes: int = 0

    def as_json(self) -> dict:
        data = {"decision": self.kind, "vid": self.vid, "cand": self.cand, "reason": self.reason}
        if self.owed:
            data["owed"] = self.owed
        if self.cap:
            data["cap"] = {"verdict": self.cap[0], "reasons": list(self.cap[1])}
        if self.kind == "stall":
            data["stall_wakes"] = self.stall_wakes
        return data


def _cap(view: KernelView) -> tuple[str, tuple[str, ...]] | None:
    if view.evidence is None:
        return None
    verdict, reasons = cap_kernel_verdict(view.evidence)
    return verdict, tuple(reasons)


def _stall(view: KernelView) -> KernelDecision:
    after = view.k9.get("after")
    wakes = view.stall_wakes + 1 if view.stall_after == after else 1
    persists = f"; it persists: {wakes} wakes in a row" if wakes > 1 else ""
    head = f"{after} was filed {view.k9.get('verdict')} and neither the next stub nor the stop chain followed: " \
           f"the stop-at-first-win stall{persists}"
    if not view.stop_reasons:
        return KernelDecision("stall", f"{head}; the stop rule has no reasons left: close", after, owed="close",
                              stall_after=after, stall_wakes=wakes)
    if view.rank1 is not None:
        return KernelDecision("stall", f"{head}; stub the rank-1 lead {view.rank1.slug} ({view.rank1.source})", after,
                              owed="stub", stall_after=after, stall_wakes=wakes)
    return KernelDecision("stall", f"{head}; no lead is left but the stop rule is not met: {view.stop_reasons[0]}",
                          after, owed="stop-chain", stall_after=after, stall_wakes=wakes)


def decide(view: KernelView) -> KernelDecision:
    """The decision of one wake (the table in the module docstring)."""
    if view.session in (None, "stopped"):
        said = "no kernel session was started" if view.session is None else "the session is stopped"
        return KernelDecision("idle", f"{said}: nothing to drive (`wiki kernel start` begins one)")
    if view.session == "paused":
        return KernelDecision("paused", f"the session is paused; rank-1 resume action: {view.resume_action or 'none recorded'}")
    vid = view.open_vid
    if vid is not None:
        if not view.ledger:
            return KernelDecision("need_candidate", f"{vid} is a committed stub with no candidate: the agent authors cand1",
                                  vid, "cand1")
        newest = view.ledger[-1]
        if view.branch_commits is None or len(view.ledger) > view.branch_commits:
            commits = "no candidate branch" if view.branch_commits is None else f"{view.branch_commits} candidate commit(s)"
            return KernelDecision("need_verdict", f"{vid}'s ledger has {len(view.ledger)} row(s) but its branch has "
                                                  f"{commits}: nothing to verify that the ledger vouches for", vid, newest,
                                  cap=_cap(view))
        if newest not in view.receipts:
            return KernelDecision("verify", f"{vid} {newest} has no receipt: the verifier runs now, in a fresh process",
                                  vid, newest)
        return KernelDecision("need_verdict", f"{vid} {newest} has a receipt and the page is not filed: a verdict is owed",
                              vid, newest, cap=_cap(view))
    state = view.k9.get("state")
    if state == "stall":
        return _stall(view)
    if state == "no-verdict-yet":
        return KernelDecision("need_stub", "the session has no experiment yet: stub the first pick (K3)")
    if state in ("paused", "stopped"):
        return KernelDecision("need_stub", f"a new session follows the {state} one: stub the rank-1 resume action (K3)")
    return KernelDecision("need_stub", f"{view.k9.get('next')} was claimed after {view.k9.get('after')} but has no open "
                                       "page: reconcile, then stub the rank-1 lead")


def next_wake_s(decision: KernelDecision, interval_s: int = MAX_WAKE_S) -> int | None:
    """None when nothing is driven (idle, paused); soon after the wake acted (a receipt was
    written: the verdict is owed now); else the interval; always within 120..600 s."""
    if decision.kind in ("idle", "paused"):
        return None
    wanted = MIN_WAKE_S if decision.kind == "verify" else interval_s
    return max(MIN_WAKE_S, min(MAX_WAKE_S, int(wanted)))
