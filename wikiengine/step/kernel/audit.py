"""The watcher's audit of a kernel family (seed 003 Step 9·0, kernel mode).

The battery is ``wiki lint`` on the family's files changed since ``<family>/.audit-cursor``
(plus the family page and the family log; every family file on a full audit), and the
family checks: a stub idle past the configured age (24 h, from git time), thrashing (K
consecutive invalid or inconclusive results on one mechanism), a filed page that is no
longer the text its filing record keeps (EXP014, on every audit), and K9's
stop-at-first-win stall (a verdict followed by neither the next stub nor the stop
chain for more than ``stall_minutes``, default 30). Each finding carries its correction; the audit then moves the cursor. The
findings and the cursor are those of the lane watcher (:mod:`wikiengine.step.audit`),
whose helpers take a :class:`~wikiengine.model.kernels.KernelFamily` as they take a lane.
"""

from __future__ import annotations

from pathlib import Path

from wikiengine.core.clock import timestamp, utcnow
from wikiengine.core.git import out as git_out
from wikiengine.model import experiment as ex
from wikiengine.model.journal import journal_records
from wikiengine.model.kernels import KernelFamily
from wikiengine.step.audit import (
    DEFAULT_STALE_HOURS,
    DEFAULT_THRASH_K,
    DRIFT_CODE,
    Audit,
    AuditFinding,
    drift_findings,
    first_commit_times,
    head_sha,
    read_cursor,
    session_start,
    thrashing,
)
from wikiengine.step.kernel.verdicts import k9_state


def _battery(root: Path, family: KernelFamily, since: str | None) -> list[AuditFinding]:
    from wikiengine.lint.gitview import changed_view
    from wikiengine.lint.runner import lint

    mine = lambda rel: rel.startswith(family.dir + "/") or rel == family.family_page  # noqa: E731
    paths = {p for p in (family.log, family.family_page) if (root / p).is_file()}
    view = None
    if since is None:
        paths |= {p.relative_to(root).as_posix() for p in (root / family.dir).glob("*.md")}
    else:
        view = changed_view(root, since)
        paths |= {p for p in view.changed_pages() if mine(p)}
    result = lint(root, sorted(paths), base=since, jobs=1, view=view, reuse=True)
    return [AuditFinding(f.code, f.path, f.line, f.message, f"wiki lint --explain {f.code}; then fix {f.path}:{f.line}")
            for f in result.findings]


DEFAULT_STALL_MINUTES = 30.0


def run_family_audit(root: Path, family: KernelFamily, *, now: float | None = None,
                     stale_hours: float = DEFAULT_STALE_HOURS, thrash_k: int = DEFAULT_THRASH_K,
                     stall_minutes: float = DEFAULT_STALL_MINUTES) -> Audit:
    from wikiengine.step.kernel.writers import family_pages

    records = journal_records(root, family.journal)
    cursor, why_full = read_cursor(root, family)
    code = git_out(root, "rev-parse", "--verify", "--quiet", f"refs/heads/{family.integration_branch}").strip()
    audit = Audit(family, session_start(records), head_sha(root), code or head_sha(root),
                  cursor["wiki"] if cursor else None, False)
    if why_full:
        audit.notes.append(why_full)  # a full audit is news, not a finding
    audit.findings += [f for f in _battery(root, family, audit.since) if f.check != DRIFT_CODE]
    audit.findings += drift_findings(root, family.journal, records)
    pages = {p.exp_id: p for p in family_pages(root, family)}
    now = now if now is not None else utcnow().timestamp()
    open_pages = {vid: page for vid, page in pages.items() if ex.is_open(page.frontmatter)}
    added = first_commit_times(root, sorted(page.rel for page in open_pages.values()), family.dir)  # one walk, kept
    for vid, page in sorted(open_pages.items()):
        committed = added.get(page.rel)
        if committed is not None and now - committed > stale_hours * 3600:
            hours = (now - committed) / 3600
            audit.findings.append(AuditFinding(
                "stale-stub", page.rel, 1, f"{vid} has been in progress for {hours:.0f} h (more than {stale_hours:g} h)",
                f"wiki kernel file {family.slug} --vid {vid} --verdict invalid --reason \"stub idle {hours:.0f} h\""))
    audit.findings += thrashing(family, records, pages, thrash_k)
    state = k9_state(records)
    filed_at = timestamp(next((r.get("at") for r in reversed(records) if r.get("op") == "file"), None))
    if state["state"] == "stall" and filed_at is not None and now - filed_at >= stall_minutes * 60:
        audit.findings.append(AuditFinding("stall", family.log, 1, state["message"],
                                           f"wiki kernel status {family.slug}; then stub its resume action, or "
                                           f"wiki kernel close {family.slug}"))
    return audit
