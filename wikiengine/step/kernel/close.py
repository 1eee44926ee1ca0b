"""`wiki kernel close`: the stop rule of a kernel family, checked from facts, and `--pause`.

The facts (:class:`~wikiengine.step.kernel.verdicts.StopFacts`) come from the wiki itself: the
family page's open and retired leads, the latest experiment page's leads, the class
page's ``## Levers (verified)`` against the family's filed pages (their ``lever:`` and a
receipt that resolves) and the family page's ``## Ruled-out levers``, the family's
retrospectives (each records the ``frontier`` it saw) and the frontier's receipt.

A close that is not earned is refused (exit 3) with every reason and writes nothing.
An earned close writes the closing retrospective (the evidence table and the
lever-coverage table, generated from the facts, and the class page's levers diffed
against the levers the family tried), runs the closing audit (``wiki lint`` on the
family), writes ``.stop-authorized`` as the closing audit's record, the stop marker
quoting its ALL-CLEAR line, and removes the family's worktrees (branches are kept).
``--pause`` files a pause retrospective that records the rank-1 resume action and makes
no ceiling claim. Both ends mark the session in ``memory/STATE.md`` (paused, stopped)
when it points at this family, so `wiki step` stops driving it, and end a pod session by
deleting its pod (teardown is mandatory).
"""

from __future__ import annotations

from pathlib import Path

from wikiengine.core.clock import Clock, utc_date, utc_iso, utcnow
from wikiengine.core.errors import Refused, WikiError
from wikiengine.core.git import out as git_out
from wikiengine.core.page import parse_page
from wikiengine.core.safe_read import repo_text
from wikiengine.model import experiment as ex
from wikiengine.model import kernel_page as kp
from wikiengine.model import logbook
from wikiengine.model.journal import append_record
from wikiengine.model.kernels import KernelFamily
from wikiengine.model.state import stage_end
from wikiengine.model.variant_matrix import FRONTIER_EXP, cell_text, parse_matrix
from wikiengine.step.kernel import git as kernel_git
from wikiengine.step.kernel import run as kernel_run
from wikiengine.step.kernel.verdicts import LeverFact, StopFacts, evidence_table, k9_state, lever_table, stop_rule
from wikiengine.step.kernel.writers import family_pages, journal_records, read_binding, resolve_receipt
from wikiengine.step.txn import LaneLock, LaneTxn
from wikiengine.step.writers import frontmatter_yaml


class CloseRefused(Refused):
    """The stop rule is not met (exit 3, nothing written)."""


def _page(root: Path, rel: str):
    text = repo_text(root, rel)
    return parse_page(text, rel) if text is not None else None


def gather_facts(root: Path, family: KernelFamily, records: list[dict]) -> tuple[StopFacts, dict]:
    """The stop rule's facts, and what the retrospective needs besides them."""
    binding = read_binding(root, family)
    family_page = _page(root, family.family_page)
    if family_page is None:
        raise WikiError("the family has no family page", family.family_page)
    pages = family_pages(root, family)
    filed = [p for p in pages if ex.is_filed(p.frontmatter)]
    class_rel = binding.get("class_page")
    class_page = _page(root, class_rel) if class_rel else None
    extra = []
    if class_page is None:
        extra.append(f"the class page {class_rel or '(none in the family binding)'} does not exist: its "
                     "'## Levers (verified)' are the close's lever list")
    levers = kp.levers_verified(class_page) if class_page else []
    ruled = kp.ruled_out(family_page)
    lever_facts = []
    for lever in levers:
        tried = [p for p in filed if p.frontmatter.get("lever") == lever]
        with_receipt = [(p, resolve_receipt(root, p.rel, p.frontmatter.get("verification_receipt"))) for p in tried]
        good = next(((p, r) for p, r in with_receipt if r[1] is not None), None)
        page_ref = good[0] if good else (tried[-1] if tried else None)
        lever_facts.append(LeverFact(lever, page_ref.exp_id if page_ref else None,
                                     page_ref.frontmatter.get("verdict") if page_ref else None,
                                     good[1][0] if good else None, ruled.get(lever)))
    matrix = parse_matrix(family_page)
    frontiers = [cell_text(r.cell(FRONTIER_EXP)) for r in (matrix.rows if matrix else ())]
    frontier_name = next((f for f in frontiers if f and f not in ("—", "-")), None)
    frontier_vid = ex.canonical_id(frontier_name.split("-", 1)[0]) if frontier_name else None
    frontier_page = next((p for p in pages if p.exp_id == frontier_vid), None)
    frontier_receipt = (resolve_receipt(root, frontier_page.rel, frontier_page.frontmatter.get("verification_receipt"))[1]
                        if frontier_page else None)
    retros = []
    for rel in family.retrospective_rels(root):
        front = _page(root, rel).frontmatter
        retros.append((rel, front.get("frontier") or None))
    last_retro = max((i for i, r in enumerate(records) if r.get("op") == "retrospective"), default=-1)
    since = sum(1 for r in records[last_retro + 1:] if r.get("op") == "file")
    latest = max(filed, key=lambda p: p.exp_id, default=None)
    retired = kp.leads_in(family_page, (kp.RETIRED_LEADS,))
    latest_leads = sorted(set(kp.experiment_leads(parse_page(latest.text))) - set(retired)) if latest else []
    facts = StopFacts(open_leads=sorted(kp.open_leads(family_page)), latest_page_leads=latest_leads,
                      levers=lever_facts, retrospectives=retros, experiments_since_last_retro=since,
                      frontier=frontier_vid, frontier_receipt=frontier_receipt, reasons_extra=extra)
    tried_levers = sorted({str(p.frontmatter.get("lever")) for p in filed if p.frontmatter.get("lever")})
    return facts, {"class_page": class_rel, "levers": levers, "tried_levers": tried_levers,
                   "latest": latest.exp_id if latest else None, "filed": len(filed)}


def _retro_rel(root: Path, family: KernelFamily, date: str) -> str:
    base = f"{family.dir}/{date}-retrospective"
    if not (root / f"{base}.md").exists():
        return f"{base}.md"
    n = 2
    while (root / f"{base}-{n}.md").exists():
        n += 1
    return f"{base}-{n}.md"


def resume_action(facts: StopFacts) -> str:
    """The rank-1 action a resumed session starts with."""
    if facts.open_leads:
        return f"stub the open lead `{facts.open_leads[0]}` (`wiki kernel stub --lever {facts.open_leads[0]}`)"
    untried = [f.lever for f in facts.levers if not f.covered]
    if untried:
        return f"stub the untried lever `{untried[0]}` (`wiki kernel stub --lever {untried[0]}`)"
    return "re-verify the frontier in full mode, then close"


def render_retrospective(family: KernelFamily, facts: StopFacts, extra: dict, *, closing: bool, session: int,
                         date: str, action: str | None) -> str:
    front = {"title": f"{family.slug} retrospective ({'closing' if closing else 'pause'}, session {session})",
             "type": "analysis", "family": family.slug, "lane": family.name, "session": session,
             "frontier": facts.frontier, "closing": closing, "created": date, "updated": date}
    class_levers, tried = set(extra["levers"]), set(extra["tried_levers"])
    diff = []
    for lever in sorted(tried - class_levers):
        diff.append(f"- `{lever}` was tried but is not a verified lever of the class page: add it there or say why not.")
    for lever in sorted(class_levers - tried):
        ruled = next((f.ruled_out for f in facts.levers if f.lever == lever), None)
        diff.append(f"- `{lever}` is on the class page and was not tried" + (f" (ruled out: {ruled})." if ruled else "."))
    body = [f"# {family.slug}: {'closing' if closing else 'pause'} retrospective, session {session}", "",
            "## Evidence", "", evidence_table(facts), "## Lever coverage", "", lever_table(facts),
            "## Class page diff", "", "\n".join(diff) or f"The levers tried are exactly the class page's ({extra['class_page']}).",
            ""]
    if closing:
        body += ["## Conclusion", "", f"Stop earned at frontier {facts.frontier}: every condition of the stop rule "
                 "holds (table above); this is the family's ceiling on the levers of its class page.", ""]
    else:
        body += ["## Resume", "", f"Rank-1 resume action: {action}.", "",
                 "This pause makes no ceiling claim.", ""]
    return "---\n" + frontmatter_yaml(front) + "---\n" + "\n".join(body)


def status(root: Path, family: KernelFamily) -> dict:
    """`wiki kernel status`: the session, the open stub, K9's state and the stop rule's reasons (read-only)."""
    from wikiengine.model.journal import journal_records

    records = journal_records(root, family.journal)
    facts, _extra = gather_facts(root, family, records)
    starts = [r for r in records if r.get("op") == "start"]
    return {"family": family.slug, "session": len(starts), "target": starts[-1]["target"] if starts else None,
            "open": [p.exp_id for p in family_pages(root, family) if ex.is_open(p.frontmatter)],
            "k9": k9_state(records), "frontier": facts.frontier, "resume_action": resume_action(facts),
            "stop_rule": stop_rule(facts)}


def close(root: Path, family: KernelFamily, *, pause: bool = False, dry_run: bool = False, date: str | None = None,
          clock: Clock = utcnow) -> dict:
    """The gated close (see the module docstring); raises CloseRefused with the reasons.

    ``clock``: the time its journal records, log entries and ``.stop-authorized`` carry."""
    from wikiengine.lint.runner import lint
    from wikiengine.step.audit import Audit, drift_findings, head_sha, write_authorization

    now = clock()
    date = date or utc_date(now)
    with LaneLock(root, family.txn_lane) as lock:
        txn = LaneTxn(root, family.txn_lane)
        records = journal_records(txn, family)
        session = sum(1 for r in records if r.get("op") == "start")
        if session == 0:
            raise WikiError("the family has no session: run `wiki kernel start` first")
        last = next((r for r in reversed(records) if r.get("op") in ("start", "stop", "pause")), {})
        if last.get("op") != "start":
            raise WikiError(f"the session is already {last.get('op')}ped: `wiki kernel start` opens a new one")
        open_pages = [p.exp_id for p in family_pages(root, family) if ex.is_open(p.frontmatter)]
        facts, extra = gather_facts(root, family, records)
        action = resume_action(facts)
        if not pause:
            reasons = stop_rule(facts)
            if open_pages:
                reasons.append(f"open stubs: {', '.join(open_pages)} (file them first)")
            reasons += [f.render() for f in drift_findings(root, family.journal, records)]
            if reasons:
                raise CloseRefused("close refused:\n  " + "\n  ".join(reasons))
            findings = [f.render() for f in lint(root, [*family.page_rels(root), family.log, family.family_page],
                                                 base=None, jobs=1).findings]
            if findings:
                raise CloseRefused("close refused: the closing audit (wiki lint on the family) is not clean:\n  "
                                   + "\n  ".join(findings[:10]))
        retro = _retro_rel(root, family, date)
        txn.write(retro, render_retrospective(family, facts, extra, closing=not pause, session=session, date=date,
                                              action=action))
        result = {"family": family.slug, "session": session, "retrospective": retro, "frontier": facts.frontier,
                  "evidence": evidence_table(facts), "levers": lever_table(facts), "recovered": lock.recovered}
        journal = append_record(txn.read(family.journal), {"op": "retrospective", "path": retro,
                                                           "frontier": facts.frontier, "at": utc_iso(now)})
        if pause:
            entry = logbook.render_entry(date, "pause", f"session {session} of kernel family {family.slug} paused", {
                "Pages created": retro, "Key result": f"frontier {facts.frontier or 'none'}",
                "Notes": f"rank-1 resume action: {action}; no ceiling claim"})
            txn.write(family.log, logbook.insert_entry(txn.read(family.log), entry))
            txn.write(family.journal, append_record(journal, {"op": "pause", "session": session, "resume": action,
                                                              "at": utc_iso(now)}))
            stage_end(txn, family, status="paused", at=utc_iso(now), lines=[f"Rank-1 resume action: {action}."])
            result.update({"paused": True, "resume_action": action})
            if dry_run:
                return {**result, "dry_run": True, "would_write": txn.changed()}
            result["commit"] = txn.commit(f"kernel({family.slug}): pause session {session} — resume: {action}")
            return {**result, **kernel_run.session_teardown(last["target"])}
        if dry_run:
            return {**result, "stopped": False, "dry_run": True, "would_write": txn.changed()}
        txn.write(family.journal, journal)
        result["retrospective_commit"] = txn.commit(f"kernel({family.slug}): closing retrospective, session {session}")
        code = kernel_git.branch_sha(root, read_binding(root, family).get("integration_branch",
                                                                          family.integration_branch)) or head_sha(root)
        audit = Audit(lane=family, session=session, wiki_sha=head_sha(root), code_sha=code, since=None, closing=True)
        write_authorization(root, audit, now)
        txn = LaneTxn(root, family.txn_lane)
        entry = logbook.render_entry(date, "stop", f"wiki kernel close: session {session} of {family.slug} closed", {
            "Final audit": audit.all_clear, "Pages created": retro,
            "Notes": f"stop rule met at frontier {facts.frontier}; {extra['filed']} experiment(s) filed"})
        txn.write(family.log, logbook.insert_entry(txn.read(family.log), entry))
        txn.write(family.journal, append_record(txn.read(family.journal), {
            "op": "stop", "session": session, "final_audit": audit.all_clear, "at": utc_iso(now)}))
        stage_end(txn, family, status="stopped", at=utc_iso(now), lines=[f"Closed: {audit.all_clear}."])
        result["commit"] = txn.commit(f"kernel({family.slug}): stop session {session} ({audit.all_clear})")
    removed = []
    for record in records:
        if record.get("op") == "branch":
            if kernel_git.remove_worktree(root, family.worktree(root, record["branch"])):
                removed.append(record["branch"])
    git_out(root, "worktree", "prune")
    return {**result, "stopped": True, "final_audit": audit.all_clear, "worktrees_removed": removed,
            **kernel_run.session_teardown(last["target"])}
