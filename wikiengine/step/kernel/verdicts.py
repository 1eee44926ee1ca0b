"""The kernel lane's decisions, as pure functions (seed 003, K7 and the close).

:func:`cap_kernel_verdict` is K7's gate: the strongest verdict a kernel experiment may
be filed with, given its receipt and its ledger. :func:`stop_rule` is the close's stop
rule, checked from facts: each unmet condition is one reason, and the evidence and
lever-coverage tables of the closing retrospective are rendered from the same facts.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from wikiengine.model.verdicts import Capped


@dataclass(frozen=True)
class KernelEvidence:
    """What the engine recorded of a kernel experiment, against which a requested verdict is capped."""

    requested: str
    receipt: dict | None  # the validated receipt (None: none cited, or it did not validate)
    receipt_problem: str | None  # why the cited receipt does not count
    bar: float | None  # the page's pre-registered speedup bar
    ledger_rows: int
    branch_commits: int | None  # candidate commits on the branch (None: no branch)
    refusal: str | None = None  # the cited receipt is forged, re-sealed, borrowed or unbound: `file` refuses


def cap_kernel_verdict(evidence: KernelEvidence) -> tuple[str, list[str]]:
    """``(verdict, reasons)``: the verdict to file and why the request was capped."""
    capped = Capped(evidence.requested)
    cap = capped.cap
    receipt = evidence.receipt
    if receipt is None:
        cap("inconclusive", f"no valid receipt ({evidence.receipt_problem or 'none cited'})")
    elif receipt.get("verdict") != "PASS":
        cap("inconclusive", "the receipt says FAIL: " + "; ".join(receipt.get("reasons") or ["no reason given"]))
    else:
        ratio = receipt.get("timing", {}).get("speedup")
        if not isinstance(ratio, (int, float)):
            cap("inconclusive", "the receipt has no measured speedup")
        elif ratio <= 1.0:
            cap("refuted", f"the speedup {ratio:.3g}x is at or below 1.0x: the kernel is not faster than the reference")
        elif capped.verdict == "supported":
            if receipt.get("mode") != "full":
                cap("inconclusive", "the receipt is a quick-mode measurement; supported needs a full-mode receipt")
            elif evidence.bar is None:
                cap("inconclusive", "the page pre-registered no speedup bar")
            elif ratio <= evidence.bar:
                cap("inconclusive", f"the speedup {ratio:.3g}x is not above the pre-registered bar {evidence.bar:g}x")
    if evidence.branch_commits is not None and evidence.ledger_rows > evidence.branch_commits:
        cap("inconclusive", f"the ledger has {evidence.ledger_rows} authored rows but the branch has "
                            f"{evidence.branch_commits} candidate commits")
    elif evidence.branch_commits is None and evidence.ledger_rows:
        cap("inconclusive", f"the ledger has {evidence.ledger_rows} rows but the candidate branch does not exist")
    return capped.verdict, capped.reasons


@dataclass(frozen=True)
class LeverFact:
    """One lever of a kernel family: the experiment that tried it, or why it was ruled out."""

    lever: str
    page: str | None  # the experiment that tried it
    verdict: str | None
    receipt: str | None  # its receipt path, when it resolves
    ruled_out: str | None  # the reason on mechanism, when ruled out instead

    @property
    def covered(self) -> bool:
        return (self.page is not None and self.receipt is not None) or bool(self.ruled_out)


@dataclass(frozen=True)
class StopFacts:
    """What a kernel family's gated stop is judged on."""

    open_leads: list[str]  # leads still open on the family page
    latest_page_leads: list[str]  # leads of the latest experiment page missing from the family page's retired ones
    levers: list[LeverFact]
    retrospectives: list[tuple[str, str | None]]  # (path, frontier vid), oldest first
    experiments_since_last_retro: int
    frontier: str | None  # the family's Frontier exp
    frontier_receipt: dict | None  # the frontier's validated receipt
    reasons_extra: list[str] = field(default_factory=list)


def stop_rule(facts: StopFacts) -> list[str]:
    """The reasons the stop is not earned (empty: earned)."""
    reasons = list(facts.reasons_extra)
    if facts.open_leads:
        reasons.append("headroom leads are not dry on the family page: " + ", ".join(facts.open_leads))
    if facts.latest_page_leads:
        reasons.append("the latest experiment names leads the family page does not retire: "
                       + ", ".join(facts.latest_page_leads))
    untried = [f.lever for f in facts.levers if not f.covered]
    if untried:
        reasons.append("levers of the class page neither tried with a receipt nor ruled out on mechanism: "
                       + ", ".join(untried))
    if facts.frontier is None:
        reasons.append("the family has no frontier experiment")
    elif facts.frontier_receipt is None:
        reasons.append(f"the frontier {facts.frontier} has no valid receipt")
    elif facts.frontier_receipt.get("verdict") != "PASS" or facts.frontier_receipt.get("mode") != "full":
        reasons.append(f"the frontier {facts.frontier}'s receipt is not a full-mode PASS")
    if not facts.retrospectives:
        reasons.append("no retrospective yet: pause the session (`wiki kernel close --pause`) to file the first one")
    else:
        last_path, last_frontier = facts.retrospectives[-1]
        if last_frontier != facts.frontier:
            reasons.append(f"the frontier moved since {last_path} ({last_frontier} -> {facts.frontier}): "
                           "two retrospectives without frontier movement are needed")
        elif facts.experiments_since_last_retro == 0:
            reasons.append(f"no experiment was filed since {last_path}: the second retrospective must follow "
                           "at least one attempt that did not move the frontier")
    return reasons


def evidence_table(facts: StopFacts) -> str:
    """The closing retrospective's four-row evidence table."""
    last = facts.retrospectives[-1] if facts.retrospectives else (None, None)
    receipt = facts.frontier_receipt or {}
    rows = [
        ("Headroom leads dry", "yes" if not facts.open_leads and not facts.latest_page_leads else "no",
         "open on the family page: " + (", ".join(facts.open_leads) or "none")),
        ("Levers covered", "yes" if all(f.covered for f in facts.levers) else "no",
         f"{sum(f.covered for f in facts.levers)} of {len(facts.levers)} levers of the class page"),
        ("No frontier movement", "yes" if last[0] and last[1] == facts.frontier and facts.experiments_since_last_retro else "no",
         f"frontier {facts.frontier} at {last[0] or 'no earlier retrospective'}; "
         f"{facts.experiments_since_last_retro} experiment(s) since"),
        ("Frontier receipt", "PASS" if receipt.get("verdict") == "PASS" and receipt.get("mode") == "full" else "no",
         f"{receipt.get('mode', '—')} mode, speedup {receipt.get('timing', {}).get('speedup', 0) or 0:.3g}x"),
    ]
    out = ["| Condition | Met | Evidence |", "|---|---|---|"]
    out += [f"| {a} | {b} | {c} |" for a, b, c in rows]
    return "\n".join(out) + "\n"


def lever_table(facts: StopFacts) -> str:
    out = ["| Lever | Covered | By | Verdict | Receipt |", "|---|---|---|---|---|"]
    for f in facts.levers:
        by = f.page or (f"ruled out: {f.ruled_out}" if f.ruled_out else "—")
        out.append(f"| {f.lever} | {'yes' if f.covered else 'no'} | {by} | {f.verdict or '—'} | {f.receipt or '—'} |")
    return "\n".join(out) + "\n"


def session_status(records: list[dict]) -> str | None:
    """The journal's word on the session: running, paused or stopped by the last of its
    start, pause and stop records (None: never started)."""
    last = next((r.get("op") for r in reversed(records) if r.get("op") in ("start", "pause", "stop")), None)
    return {"start": "running", "pause": "paused", "stop": "stopped"}.get(last)


def k9_state(records: list[dict]) -> dict:
    """K9 from the family journal: after a filed verdict the family is in exactly one of two
    states, the next stub committed or the stop chain satisfied (a paused session is a
    third, explicit, state). Anything else is the stop-at-first-win stall."""
    last_file = max((i for i, r in enumerate(records) if r.get("op") == "file"), default=None)
    if last_file is None:
        return {"state": "no-verdict-yet"}
    filed = records[last_file]
    after = [r.get("op") for r in records[last_file + 1:]]
    if "stop" in after:
        return {"state": "stopped", "after": filed.get("vid")}
    if "pause" in after:
        return {"state": "paused", "after": filed.get("vid")}
    if "claim" in after:
        nxt = next(r for r in records[last_file + 1:] if r.get("op") == "claim")
        return {"state": "next-stub", "after": filed.get("vid"), "next": nxt.get("vid")}
    return {"state": "stall", "after": filed.get("vid"), "verdict": filed.get("verdict"),
            "message": f"{filed.get('vid')} was filed {filed.get('verdict')} and neither the next stub nor the stop "
                       "chain followed: the stop-at-first-win stall (stub the rank-1 lead, or close)"}
