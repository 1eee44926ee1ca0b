"""What one wake did, in every mode: one record, one text rendering, one JSON shape.

The shape every mode prints (``wiki step --json``): ``mode``, ``state``, ``decision`` (the
headline: the relay's decision, ``lane`` or ``kernel`` for a session's wake, ``locked``),
``decisions`` (one entry per decision taken: a track, a candidate, the relay's one),
``actions``, ``needs`` (the judgement the agent owes: ``kind``, ``inputs``, ``command``),
``next_wake_s``, ``commits`` and ``exit_code``. A mode adds the facts only it has: the
relay ``step`` and ``reasons``; a lane ``lane``, ``budgets``, ``tracks`` (its decisions, by that name
too), ``disagreements``, ``reground`` and ``queue`` (each track's ``active`` v-id and
``queued`` ones, and the ``lane`` queue no track has taken yet); a kernel family ``family``, ``findings``,
``disagreements`` and ``k9``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from wikiengine.core.errors import ExitCode

LOCKED = "locked"
LOCKED_REASON = "another wiki step holds the lock; nothing done"
MAX_TEXT_LINES = 40


@dataclass
class WakeResult:
    """What one ``wiki step`` did: its mode, decisions, actions and what it needs from the agent."""

    mode: str  # relay | lane | kernel
    state: str  # the run's or the session's status
    decision: str  # the headline
    decisions: list[dict] = field(default_factory=list)
    actions: list[str] = field(default_factory=list)
    needs: list[dict] = field(default_factory=list)
    next_wake_s: int | None = None
    commits: list[str] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)
    findings: list[str] = field(default_factory=list)
    disagreements: list[str] = field(default_factory=list)
    subject: str | None = None  # the lane (``model/lane``) or the kernel family the wake drove
    step: int | None = None  # relay: the checkpoint pointer it saw
    reground: dict = field(default_factory=dict)  # lane: frontier, last verdicts, open hypotheses
    budgets: dict = field(default_factory=dict)  # lane: name -> what the session burnt of it (model/budgets.py)
    k9: dict = field(default_factory=dict)  # kernel: what follows the last verdict
    queue: dict = field(default_factory=dict)  # lane: each track's v-id and what waits (model/lane_queue.py)

    @property
    def exit_code(self) -> int:
        return int(ExitCode.BLOCKED if self.decision == "blocked" else ExitCode.OK)

    def as_json(self) -> dict:
        doc = {"mode": self.mode, "state": self.state, "decision": self.decision, "decisions": self.decisions,
               "actions": self.actions, "needs": self.needs, "next_wake_s": self.next_wake_s,
               "commits": self.commits, "exit_code": self.exit_code}
        if self.mode == "relay":
            doc.update(step=self.step, reasons=self.reasons)
        elif self.mode == "lane":
            doc.update(lane=self.subject, tracks=self.decisions, disagreements=self.disagreements,
                       reground=self.reground, budgets=self.budgets, queue=self.queue)
        else:
            doc.update(family=self.subject, findings=self.findings, disagreements=self.disagreements, k9=self.k9)
        return doc

    def headline(self) -> str:
        if self.mode == "relay":
            pointer = f"latest -> {self.step}" if self.step is not None else "no pointer yet"
            return f"{self.decision}: {pointer} (run status: {self.state})"
        label = "lane" if self.mode == "lane" else "kernel family"
        wake = f"next wake in {self.next_wake_s} s" if self.next_wake_s else "no next wake"
        return f"{label} {self.subject}: {self.state}; {wake}"

    def text(self) -> str:
        """The human summary: the headline, then reasons, decisions, actions, what disagreed, what is owed."""
        if self.decision == LOCKED:
            return f"{LOCKED}: " + "; ".join(self.reasons or self.actions)
        lines = [self.headline()]
        lines += [f"  - {reason}" for reason in self.reasons]
        lines += [f"  {decision_line(d)}" for d in self.decisions if d.get("reason")]
        lines += [f"  * {action}" for action in self.actions]
        limited = {name: b for name, b in self.budgets.items() if b.get("limit") is not None}
        if limited:
            lines.append("  budgets: " + "; ".join(
                f"{name} {b['used']:.4g}/{b['limit']:g} {b['unit']}" + (" SPENT" if b["exhausted"] else "")
                for name, b in limited.items()))
        lines += queue_lines(self.queue)
        said = {d.get("reason") for d in self.decisions}
        lines += [f"  ! {note}" for note in self.findings + self.disagreements if note not in said]
        for need in self.needs:
            lines += need_lines(need)
        if len(lines) > MAX_TEXT_LINES:
            lines = lines[:MAX_TEXT_LINES - 1] + [f"  ... {len(lines) - MAX_TEXT_LINES + 1} more lines (--json has all)"]
        return "\n".join(lines)


def queue_lines(queue: dict) -> list[str]:
    """``queued: track 1 after v048: v050, v051`` and ``queued for the first idle track: v052``."""
    lines = [f"  queued: track {t['track']} after {t['active']}: {', '.join(t['queued'])}"
             for t in queue.get("tracks", []) if t.get("queued")]
    if queue.get("lane"):
        lines.append(f"  queued for the first idle track: {', '.join(queue['lane'])}")
    return lines


def decision_line(decision: dict) -> str:
    """``track 2: dispatch v043 — ready stub``; ``verify v001 cand1 — newest candidate without a receipt``."""
    where = f"track {decision['track']}: " if decision.get("track") is not None else ""
    what = " ".join(str(decision[k]) for k in ("decision", "vid", "cand") if decision.get(k))
    return f"{where}{what} — {decision['reason']}"


def need_lines(need: dict) -> list[str]:
    """``owed: verdict for v043: wiki exp file ...`` and the inputs a person reads first."""
    target = need.get("vid") or (f"track {need['track']}" if need.get("track") is not None else None)
    lines = [f"  owed: {need['kind']}{' for ' + target if target else ''}: {need['command']}"]
    inputs = need.get("inputs") or {}
    if inputs.get("lead"):
        lines.append(f"        rank-1 lead {inputs['lead']} ({inputs['source']}): {inputs['lead_text'] or '—'}")
    if inputs.get("resume_action"):
        lines.append(f"        rank-1 resume action: {inputs['resume_action']}")
    cap = inputs.get("cap")
    if cap:
        lines.append(f"        strongest verdict allowed: {cap['verdict']}")
        lines += [f"        - {reason}" for reason in cap["reasons"]]
    return lines


def locked_result(mode: str) -> WakeResult:
    """The answer of a wake that found another holding the lock: it read and did nothing."""
    return WakeResult(mode, "unknown", LOCKED, reasons=[LOCKED_REASON])
