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
from dataclasses import dataclass
from pathlib import Path

from wikiengine.core.clock import utc_iso
from wikiengine.core.errors import BackendUnavailable, WikiError
from wikiengine.core.page import parse_page
from wikiengine.core.safe_read import repo_text
from wikiengine.model import experiment as ex
from wikiengine.model import kernel_page as kp
from wikiengine.model.journal import journal_records
from wikiengine.model.kernels import KernelFamily
from wikiengine.model.state import STATE_REL, KernelState, write_heartbeat
from wikiengine.step import engine
from wikiengine.step.kernel.decide import KernelDecision, KernelView, Lead, decide, next_wake_s
from wikiengine.step.result import WakeResult

_WAKE_RE = re.compile(r"^Wake: (?P<line>.*)$", re.M)


# --- observe ----------------------------------------------------------------------------------


@dataclass
class Observed:
    """What a kernel wake read: the family, its open page and its session binding."""

    view: KernelView
    open_page: object | None  # an ExperimentPage
    binding: dict  # the family binding ({} when the family has no session)


def _rank1(root: Path, family: KernelFamily, binding: dict, facts) -> Lead | None:
    """The first open lead of the family page, else the first lever of the class page not yet covered."""
    page = parse_page(repo_text(root, family.family_page) or "", family.family_page)
    leads = kp.lead_texts(page, kp.OPEN_LEADS)
    if leads:
        slug, text = next(iter(leads.items()))
        return Lead(slug, text, "family page")
    untried = [f.lever for f in facts.levers if not f.covered]
    if not untried:
        return None
    class_rel = binding.get("class_page")
    class_text = repo_text(root, class_rel) if class_rel else None
    texts = kp.lead_texts(parse_page(class_text, class_rel), (kp.LEVERS_VERIFIED,)) if class_text is not None else {}
    return Lead(untried[0], texts.get(untried[0], ""), "class page lever")


def observe(root: Path, family: KernelFamily, state: KernelState) -> Observed:
    from wikiengine.step.kernel.close import gather_facts
    from wikiengine.step.kernel.verdicts import k9_state, session_status, stop_rule
    from wikiengine.step.kernel.writers import family_pages, read_binding, verdict_evidence

    records = journal_records(root, family.journal)
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


def act_verify(root: Path, family: KernelFamily, decision: KernelDecision, result: WakeResult, clock=None) -> None:
    """K6 by the wake itself: the existing writer (a fresh process, the receipt, one commit). A
    pod that cannot be reached now is a wait (the next wake verifies), not a failed verify."""
    from wikiengine.core.clock import utcnow
    from wikiengine.step.kernel.writers import verify

    try:
        done = verify(root, family, vid=decision.vid, cand_name=decision.cand, mode="full", clock=clock or utcnow)
    except BackendUnavailable as exc:
        result.actions.append(f"verify of {decision.vid} {decision.cand} waits: {exc.message}; the next wake asks again")
        return
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
    value = binding.get("wake_interval_s", engine.MAX_WAKE_S)
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise WikiError(f"wake_interval_s {value!r} in the family binding is not a positive number of seconds",
                        family.program)
    return value


def wake(root: Path, *, dry_run: bool = False, clock=None, **_unused) -> WakeResult:
    """One kernel wake (the engine's skeleton, see the module docstring), without the lock."""
    return engine.wake(MODE, root, dry_run=dry_run, clock=clock)


@dataclass
class KernelWake:
    """What a kernel wake works on, phase by phase."""

    state: KernelState
    family: KernelFamily
    obs: Observed | None = None
    first: KernelDecision | None = None  # what the world asked for at the wake's start
    decision: KernelDecision | None = None  # and after its act


def _family(root: Path, state: KernelState) -> KernelFamily:
    family = state.family_ref
    if not (root / family.dir).is_dir():
        raise WikiError(f"memory/STATE.md names kernel family {state.family}, which has no folder {family.dir}")
    return family


def _recover(wake: engine.Wake) -> None:
    """A writer killed mid-commit (a killed wake's verify) is finished before anything is read."""
    from wikiengine.step.txn import LaneLock

    family = _family(wake.root, KernelState.read(wake.root))
    with LaneLock(wake.root, family.txn_lane) as lock:
        if lock.recovered:
            wake.result.actions.append(f"finished a killed writer first: its redo record replayed as commit "
                                       f"{lock.recovered[:12]}")
            wake.result.commits.append(lock.recovered)


def _load(wake: engine.Wake) -> None:
    state = KernelState.read(wake.root)
    wake.run = KernelWake(state, _family(wake.root, state))
    wake.result.subject, wake.result.state = wake.run.family.slug, state.status


def _owned_paths(wake: engine.Wake) -> list[str]:
    return [STATE_REL, wake.run.family.journal]


def _observe(wake: engine.Wake) -> None:
    kernel = wake.run
    kernel.obs = obs = observe(wake.root, kernel.family, kernel.state)
    wake.result.state = obs.view.session or "not started"
    if obs.view.session and obs.view.session != kernel.state.status:
        wake.result.disagreements.append(f"memory/STATE.md says {kernel.state.status} but the family journal says "
                                         f"{obs.view.session}: the journal is the record")


def _decide(wake: engine.Wake) -> None:
    wake.run.first = decide(wake.run.obs.view)


def _act(wake: engine.Wake) -> None:
    kernel, first = wake.run, wake.run.first
    if first.kind != "verify":
        return
    if wake.dry_run:
        wake.result.actions.append(f"(dry run) would verify {first.vid} {first.cand}")
        return
    act_verify(wake.root, kernel.family, first, wake.result, wake.clock)
    kernel.obs = observe(wake.root, kernel.family, kernel.state)  # the world after the act, read once


def _needs(wake: engine.Wake) -> None:
    kernel, result = wake.run, wake.result
    first, obs = kernel.first, kernel.obs
    kernel.decision = decision = decide(obs.view) if not wake.dry_run else first
    interval = wake_interval(kernel.family, obs.binding)
    result.decisions = ([first.as_json()] if first != decision else []) + [decision.as_json()]
    result.k9 = obs.view.k9
    result.next_wake_s = next_wake_s(first if first.kind == "verify" else decision, interval)
    if decision.kind == "stall":
        result.findings.append(decision.reason)
    need = owed(kernel.family, decision, obs)
    if need and not any(n["kind"] == "verify-failed" for n in result.needs):
        result.needs.append(need)


def _record(wake: engine.Wake) -> None:
    """STATE.md and the heartbeat, when the session is driven: an idle or paused session whose
    status did not change gets neither (as a lane wake of a session that is not running)."""
    from wikiengine.step.txn import LaneLock, LaneTxn

    kernel, result, root = wake.run, wake.result, wake.root
    state, family, decision = kernel.state, kernel.family, kernel.decision
    status = kernel.obs.view.session or state.status
    if decision.kind in ("idle", "paused") and status == state.status:
        return
    moment = wake.clock()
    write_heartbeat(root, family.txn_lane, moment)
    wake_line = " ".join(x for x in (decision.kind, decision.vid, decision.cand, decision.owed) if x)
    stall_after, stall_wakes = (decision.stall_after, decision.stall_wakes) if decision.kind == "stall" else (None, 0)
    if wake_line == _last_wake_line(root) and not result.actions and not stall_wakes and status == state.status:
        return
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


def _last_wake_line(root: Path) -> str | None:
    match = _WAKE_RE.search(repo_text(root, STATE_REL, "state") or "")
    return match.group("line") if match else None


MODE = engine.Mode("kernel", load=_load, observe=_observe, decide=_decide, act=_act, record=_record,
                   recover=_recover, owned_paths=_owned_paths, needs=_needs)
