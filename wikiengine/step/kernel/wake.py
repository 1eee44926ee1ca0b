"""The kernel mode of `wiki step`: one wake of a kernel session (seed 003, K9).

observe (the family's journal, its open stub and Candidate ledger, the branch's candidate
commits, receipts, K7's evidence, K9's state, the stop rule) ->
:func:`wikiengine.step.kernel.decide.decide` (pure) -> act:

- the one deterministic act: a newest candidate without a receipt is verified by the wake
  itself (:func:`wikiengine.step.kernel.writers.verify`: the verifier in a fresh process, the
  sealed receipt committed through the family's lock and redo record, so a killed wake
  leaves either nothing or a record the next writer replays);
- every judgement is a ``need`` with its inputs and the exact command: the candidate
  (the agent authors code), the verdict (with the strongest verdict the evidence allows,
  :func:`~wikiengine.step.kernel.verdicts.cap_kernel_verdict`), the next stub from the rank-1
  lead or the close, the resume of a paused session;
- ``memory/STATE.md`` is rewritten and committed when what the wake found changed (and
  counts the wakes a stall persists); the heartbeat in ``.git/wiki-lane/`` records every
  wake for the watcher.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field
from pathlib import Path

from wikiengine.model import experiment as ex
from wikiengine.model import kernel_page as kp
from wikiengine.core.errors import WikiError
from wikiengine.step.engine import Mode
from wikiengine.model.state import STATE_REL, KernelState
from wikiengine.step.kernel.decide import KernelDecision, KernelView, Lead, decide, next_wake_s
from wikiengine.step.engine import MAX_WAKE_S
from wikiengine.model.kernels import KernelFamily
from wikiengine.model.journal import parse_journal
from wikiengine.model.state import write_heartbeat
from wikiengine.core.clock import utc_iso
from wikiengine.core.page import parse_page

_WAKE_RE = re.compile(r"^Wake: (?P<line>.*)$", re.M)


@dataclass
class KernelWakeResult:
    """The summary of one kernel wake (``--json`` prints :meth:`as_json`)."""

    family: str
    status: str
    decisions: list[dict] = field(default_factory=list)
    actions: list[str] = field(default_factory=list)
    needs: list[dict] = field(default_factory=list)
    findings: list[str] = field(default_factory=list)
    disagreements: list[str] = field(default_factory=list)
    k9: dict = field(default_factory=dict)
    next_wake_s: int | None = None
    commits: list[str] = field(default_factory=list)
    decision: str = "kernel"

    def as_json(self) -> dict:
        return {"mode": "kernel", "family": self.family, "state": self.status, "decision": self.decision,
                "decisions": self.decisions, "actions": self.actions, "needs": self.needs, "findings": self.findings,
                "disagreements": self.disagreements, "k9": self.k9, "next_wake_s": self.next_wake_s,
                "commits": self.commits}

    @property
    def exit_code(self) -> int:
        return 0

    def text(self) -> str:
        if self.decision == "locked":
            return "locked: " + "; ".join(self.actions)
        wake = f"next wake in {self.next_wake_s} s" if self.next_wake_s else "no next wake"
        lines = [f"kernel family {self.family}: {self.status}; {wake}"]
        lines += [f"  {d['decision']}{' ' + d['vid'] if d['vid'] else ''}{' ' + d['cand'] if d['cand'] else ''} — "
                  f"{d['reason']}" for d in self.decisions]
        lines += [f"  * {a}" for a in self.actions]
        reasons = {d["reason"] for d in self.decisions}
        lines += [f"  ! {f}" for f in self.findings + self.disagreements if f not in reasons]
        for need in self.needs:
            lines.append(f"  owed: {need['kind']}{' for ' + need['vid'] if need.get('vid') else ''}: {need['command']}")
            inputs = need.get("inputs", {})
            if inputs.get("lead"):
                lines.append(f"        rank-1 lead {inputs['lead']} ({inputs['source']}): {inputs['lead_text'] or '—'}")
            if inputs.get("resume_action"):
                lines.append(f"        rank-1 resume action: {inputs['resume_action']}")
            cap = inputs.get("cap")
            if cap:
                lines.append(f"        strongest verdict allowed: {cap['verdict']}"
                             + "".join(f"\n        - {r}" for r in cap["reasons"]))
        return "\n".join(lines)


def locked_result() -> KernelWakeResult:
    result = KernelWakeResult("?", "unknown", decision="locked")
    result.actions.append("another wiki step holds the lock; nothing done")
    return result


# --- observe ----------------------------------------------------------------------------------


@dataclass
class Observed:
    view: KernelView
    open_page: object | None  # an ExperimentPage
    binding: dict  # the family binding ({} when the family has no session)


def _rank1(root: Path, family: KernelFamily, binding: dict, facts) -> Lead | None:
    """The first open lead of the family page, else the first lever of the class page not yet covered."""
    page = parse_page((root / family.family_page).read_text(encoding="utf-8"), family.family_page)
    leads = kp.lead_texts(page, kp.OPEN_LEADS)
    if leads:
        slug, text = next(iter(leads.items()))
        return Lead(slug, text, "family page")
    untried = [f.lever for f in facts.levers if not f.covered]
    if not untried:
        return None
    class_rel = binding.get("class_page")
    texts = (kp.lead_texts(parse_page((root / class_rel).read_text(encoding="utf-8"), class_rel), (kp.LEVERS_VERIFIED,))
             if class_rel and (root / class_rel).is_file() else {})
    return Lead(untried[0], texts.get(untried[0], ""), "class page lever")


def observe(root: Path, family: KernelFamily, state: KernelState) -> Observed:
    from wikiengine.step.kernel.close import gather_facts
    from wikiengine.step.kernel.verdicts import k9_state, session_status, stop_rule
    from wikiengine.step.kernel.writers import family_pages, read_binding, verdict_evidence

    journal = root / family.journal
    records = parse_journal(journal.read_text(encoding="utf-8") if journal.is_file() else "", family.journal)
    status = session_status(records)
    binding = read_binding(root, family) if status else {}
    open_pages = [p for p in family_pages(root, family) if ex.is_open(p.frontmatter)] if status else []
    open_page = open_pages[-1] if open_pages else None
    view = {"session": status, "k9": k9_state(records), "stall_after": state.stall_after,
            "stall_wakes": state.stall_wakes}
    if open_page is not None:
        ledger = kp.ledger(parse_page(open_page.text, open_page.rel))
        evidence, _rel = verdict_evidence(root, family, records, open_page, "supported")
        receipts = frozenset(r.get("cand") for r in records if r.get("op") == "verify" and r.get("vid") == open_page.exp_id
                             and r.get("receipt") and (root / r["receipt"]).is_file())
        view.update(open_vid=open_page.exp_id, ledger=tuple(row.cand for row in (ledger.rows if ledger else ())),
                    branch_commits=evidence.branch_commits, receipts=receipts, evidence=evidence)
    elif status == "running":
        facts, _extra = gather_facts(root, family, records)
        view.update(stop_reasons=tuple(stop_rule(facts)), rank1=_rank1(root, family, binding, facts))
    elif status == "paused":
        pause = next(r for r in reversed(records) if r.get("op") == "pause")
        view["resume_action"] = pause.get("resume")
    return Observed(KernelView(**view), open_page, binding)


# --- what the agent owes ------------------------------------------------------------------------


def _op_point(binding: dict) -> str:
    points = list(binding.get("op_points") or [])
    return points[0] if len(points) == 1 else "OP_POINT"


def owed(family: KernelFamily, decision: KernelDecision, obs: Observed) -> dict | None:
    """The need of a decision: its kind, the inputs the judgement rests on, the exact command."""
    slug, view, page = family.slug, obs.view, obs.open_page
    if decision.kind == "need_candidate":
        front = page.frontmatter
        plan = [{"cand": c, "what": w, "done": d} for c, w, d in kp.plan(parse_page(page.text, page.rel))]
        return {"kind": "candidate", "vid": decision.vid,
                "inputs": {"page": page.rel, "variant": front.get("variant"), "lever": front.get("lever"),
                           "speedup_bar": front.get("speedup_bar"), "plan": plan,
                           "candidate_file": obs.binding.get("candidate")},
                "command": f"wiki kernel cand {slug} 1 --note TEXT --source FILE"}
    if decision.kind == "need_verdict":
        evidence = view.evidence
        receipt = evidence.receipt or {}
        verdict, reasons = decision.cap
        return {"kind": "verdict", "vid": decision.vid,
                "inputs": {"page": page.rel, "receipt": page.frontmatter.get("verification_receipt"),
                           "receipt_verdict": receipt.get("verdict"), "receipt_reasons": receipt.get("reasons", []),
                           "receipt_problem": evidence.receipt_problem, "mode": receipt.get("mode"),
                           "speedup": receipt.get("timing", {}).get("speedup"), "speedup_bar": evidence.bar,
                           "ledger_rows": evidence.ledger_rows, "branch_commits": evidence.branch_commits,
                           "cap": {"verdict": verdict, "reasons": list(reasons)},
                           "or_another_candidate": f"wiki kernel cand {slug} {len(view.ledger) + 1} --note TEXT --source FILE"},
                "command": f"wiki kernel file {slug} --verdict {verdict} --reason TEXT"}
    if decision.kind == "paused":
        return {"kind": "resume", "vid": None, "inputs": {"resume_action": view.resume_action},
                "command": f"wiki kernel start {slug}"}
    if decision.kind == "need_stub" or decision.owed == "stub":
        lead = view.rank1
        lever = lead.slug if lead else "LEVER"
        inputs = {"lead": lead.slug if lead else None, "lead_text": lead.text if lead else None,
                  "source": lead.source if lead else None, "k9": view.k9, "stop_rule": list(view.stop_reasons)}
        if decision.kind == "stall":
            inputs["stall_wakes"] = decision.stall_wakes
        return {"kind": "stub", "vid": None, "inputs": inputs,
                "command": f"wiki kernel stub {slug} --slug SLUG --proposal FILE --op-point {_op_point(obs.binding)} "
                           f"--lever {lever} --intervention-class CLASS --category CATEGORY --plan TEXT"}
    if decision.owed == "close":
        return {"kind": "close", "vid": None, "inputs": {"k9": view.k9, "stall_wakes": decision.stall_wakes},
                "command": f"wiki kernel close {slug}"}
    if decision.owed == "stop-chain":
        return {"kind": "stop-chain", "vid": None,
                "inputs": {"stop_rule": list(view.stop_reasons), "k9": view.k9, "stall_wakes": decision.stall_wakes},
                "command": f"wiki kernel close {slug} --pause"}
    return None


# --- the wake -----------------------------------------------------------------------------------


def act_verify(root: Path, family: KernelFamily, decision: KernelDecision, result: KernelWakeResult) -> None:
    """K6 by the wake itself: the existing writer (a fresh process, the receipt, one commit)."""
    from wikiengine.step.kernel.writers import verify

    try:
        done = verify(root, family, vid=decision.vid, cand_name=decision.cand, mode="full")
    except WikiError as exc:
        result.actions.append(f"verify of {decision.vid} {decision.cand} failed: {exc.message}")
        result.needs.append({"kind": "verify-failed", "vid": decision.vid, "inputs": {"error": exc.message},
                             "command": f"wiki kernel verify {family.slug} --cand {decision.cand}"})
        return
    speedup = f", speedup {done['speedup']:.3g}x" if done.get("speedup") else ""
    result.actions.append(f"verified {done['vid']} {done['cand']}: {done['verdict']}{speedup} -> {done['receipt']}"
                          + "".join(f"; {r}" for r in done.get("reasons", [])))
    if done.get("commit"):
        result.commits.append(done["commit"])


def wake_interval(family: KernelFamily, binding: dict) -> int:
    """The family binding's ``wake_interval_s`` (default 600; clamped by the decide)."""
    value = binding.get("wake_interval_s", MAX_WAKE_S)
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise WikiError(f"wake_interval_s {value!r} in the family binding is not a positive number of seconds",
                        family.program)
    return value


def wake(root: Path, *, dry_run: bool = False, clock=None, **_unused) -> KernelWakeResult:
    """One kernel wake (see the module docstring); `wiki step` runs it under the engine's lock."""
    from wikiengine.step.txn import LaneLock, LaneTxn

    clock = clock or (lambda: dt.datetime.now(dt.timezone.utc))
    state = KernelState.read(root)
    family = state.family_ref
    if not (root / family.dir).is_dir():
        raise WikiError(f"memory/STATE.md names kernel family {state.family}, which has no folder {family.dir}")
    replayed = None
    if not dry_run:  # a writer killed mid-commit (a killed wake's verify) is finished before anything is read
        with LaneLock(root, family.txn_lane) as lock:
            replayed = lock.recovered
    obs = observe(root, family, state)
    result = KernelWakeResult(family.slug, obs.view.session or "not started")
    if replayed:
        result.actions.append(f"finished a killed writer first: its redo record replayed as commit {replayed[:12]}")
        result.commits.append(replayed)
    if obs.view.session and obs.view.session != state.status:
        result.disagreements.append(f"memory/STATE.md says {state.status} but the family journal says "
                                    f"{obs.view.session}: the journal is the record")
    first = decide(obs.view)
    if first.kind == "verify":
        if dry_run:
            result.actions.append(f"(dry run) would verify {first.vid} {first.cand}")
        else:
            act_verify(root, family, first, result)
            obs = observe(root, family, state)  # the world after the act, read once
    decision = decide(obs.view) if not dry_run else first
    interval = wake_interval(family, obs.binding)
    result.decisions = ([first.as_json()] if first != decision else []) + [decision.as_json()]
    result.k9 = obs.view.k9
    result.next_wake_s = next_wake_s(first if first.kind == "verify" else decision, interval)
    if decision.kind == "stall":
        result.findings.append(decision.reason)
    need = owed(family, decision, obs)
    if need and not any(n["kind"] == "verify-failed" for n in result.needs):
        result.needs.append(need)
    status = obs.view.session or state.status
    if dry_run or (decision.kind in ("idle", "paused") and status == state.status):
        return result  # nothing is driven: no heartbeat, no commit (as a lane wake of a session that is not running)
    moment = clock()
    write_heartbeat(root, family.txn_lane, moment)
    wake_line = " ".join(x for x in (decision.kind, decision.vid, decision.cand, decision.owed) if x)
    stall_after, stall_wakes = (decision.stall_after, decision.stall_wakes) if decision.kind == "stall" else (None, 0)
    if wake_line != _last_wake_line(root) or result.actions or stall_wakes or status != state.status:
        new = state.replace(status=status, last_wake_at=utc_iso(moment), updated_at=utc_iso(moment),
                            stall_after=stall_after, stall_wakes=stall_wakes,
                            next_check_at=utc_iso(moment + dt.timedelta(seconds=result.next_wake_s))
                            if result.next_wake_s else None)
        body = [f"Wake: {wake_line}", "", f"- {decision.reason}"]
        body += [f"- owed: {n['kind']}: `{n['command']}`" for n in result.needs]
        with LaneLock(root, family.txn_lane):
            txn = LaneTxn(root, family.txn_lane)
            txn.write(STATE_REL, new.text(new.body(body)))
            sha = txn.commit(f"step(kernel {family.slug}): {wake_line}", relint=False)
            if sha:
                result.commits.append(sha)
    return result


def _last_wake_line(root: Path) -> str | None:
    path = root / STATE_REL
    match = _WAKE_RE.search(path.read_text(encoding="utf-8")) if path.is_file() else None
    return match.group("line") if match else None


MODE = Mode("kernel", wake, locked_result)
