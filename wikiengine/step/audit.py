"""The watcher's audit of a lane (seed 003 Step 9·0): what changed since ``.audit-cursor``.

The battery is ``wiki lint`` on what changed since the cursor (plus the lane's model
page and log, whose rules read the whole lane), and the lane checks that need the
journal, git history and the backend:

- an in-flight workload with no stub committed before it;
- a stub idle longer than the configured age (default 24 h, from git time);
- thrashing: K consecutive invalid or inconclusive results on one mechanism, or on the
  letters of one v-id;
- a stop or at-ceiling claim (and, in a closing audit, the stop about to be made) with
  no retrospective of the lane committed after the session's start;
- a filed page whose text is no longer what its journal's filing record keeps (EXP014,
  RELIABILITY row 73), on every audit, delta or full, until it is repaired.

The audit judges the session, not the wiki's past: a lint finding that was already there
at the session's start commit (the same identity: code, path and subject, never a line
number) is *inherited*. Inherited findings are listed once, on the session's first audit
(or a full one), and counted after that; they never make an audit unclean, so a closing
audit can pass in a lane with defects older than the session when the session added none,
and says so. What was there is found by linting the start commit once, in a temporary
worktree, and kept in ``.git/wiki-lane/inherited-<sha>-<engine>.json``. A drift of a filed page
(EXP014) is never inherited: it must be repaired.

Each finding carries the correction to apply. The watcher writes only the cursor
(``<lane>/.audit-cursor``: ``wiki=<sha>`` and ``code=<sha>``) and, after a clean closing
audit, ``<lane>/.stop-authorized``: the ALL-CLEAR line, the shas and a signature made
with the per-user key that signs lint caches (outside the repository), so a hand-written
or copied record is recognised as such.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from wikiengine.core.atomic import atomic_write_text
from wikiengine.core.clock import timestamp, today, utc_iso, utcnow
from wikiengine.core.errors import PageError, WikiError
from wikiengine.core.git import GitCommitError, current_head, is_ancestor
from wikiengine.core.git import out as git_out
from wikiengine.core.git import run as git_run
from wikiengine.core.history_record import read_record, record_path, write_record
from wikiengine.core.safe_read import load_json, read_text, repo_text
from wikiengine.model import progress
from wikiengine.model.experiment import AA_VID
from wikiengine.model.filings import committed_drifts
from wikiengine.model.journal import journal_records
from wikiengine.model.lanes import Lane

TYPE_CHECKING = False  # typing's constant, without importing typing
if TYPE_CHECKING:
    from typing import Any

CURSOR = ".audit-cursor"
STOP_AUTHORIZED = ".stop-authorized"
DEFAULT_STALE_HOURS = 24.0
DEFAULT_THRASH_K = progress.DEFAULT_THRASH_K
_SHA_RE = re.compile(r"[0-9a-f]{40}")
_CEILING_RE = re.compile(r"(?i)\bat[- ]ceiling\b")


@dataclass(frozen=True)
class AuditFinding:
    """One problem a lane audit found, and its correction."""

    check: str
    path: str
    line: int
    message: str
    correction: str
    identity: tuple | None = field(default=None, compare=False)  # a lint finding's (code, path, subject)

    def as_json(self) -> dict:
        return {"check": self.check, "path": self.path, "line": self.line, "message": self.message,
                "correction": self.correction}

    def render(self) -> str:
        return f"{self.path}:{self.line}: {self.check} {self.message}\n    fix: {self.correction}"


@dataclass
class Audit:
    """A lane audit: what it read (the session, the shas, the cursor) and what it found."""

    lane: Lane
    session: int
    wiki_sha: str
    code_sha: str
    since: str | None  # the cursor's wiki sha (None: a full audit)
    closing: bool
    findings: list[AuditFinding] = field(default_factory=list)
    inherited: list[AuditFinding] = field(default_factory=list)  # lint findings older than the session
    inherited_from: str | None = None  # the session's start commit
    list_inherited: bool = False  # the session's first (or a full) audit lists them; later ones count them
    notes: list[str] = field(default_factory=list)  # what the reader should know that is no finding

    @property
    def clean(self) -> bool:
        return not self.findings

    @property
    def all_clear(self) -> str:
        return (f"ALL-CLEAR {self.lane.model_name}/{self.lane.name} session {self.session} "
                f"wiki={self.wiki_sha[:12]} code={self.code_sha[:12]}")

    def as_json(self) -> dict:
        return {"lane": f"{self.lane.model_prefix}/{self.lane.name}", "session": self.session,
                "wiki": self.wiki_sha, "code": self.code_sha, "since": self.since, "full": self.since is None,
                "closing": self.closing, "clean": self.clean, "all_clear": self.all_clear if self.clean else None,
                "findings": [f.as_json() for f in self.findings],
                "notes": list(self.notes),
                "inherited": {"count": len(self.inherited), "since": self.inherited_from,
                              "findings": [f.as_json() for f in self.inherited] if self.list_inherited else []}}


def head_sha(root: Path) -> str:
    """HEAD's commit, read from its ref file where git left it loose ("" outside git or before
    the first commit)."""
    try:
        return current_head(root) or ""
    except GitCommitError:
        return ""


def code_sha(root: Path, config: dict, wiki_sha: str | None = None) -> str:
    """HEAD of the model-code repository (``code_repo`` in the lane's config), else the wiki's
    (``wiki_sha``, when the caller has it)."""
    repo = config.get("code_repo")
    if repo:
        path = Path(repo) if Path(repo).is_absolute() else root / repo
        sha = git_out(path, "rev-parse", "HEAD").strip()
        if sha:
            return sha
    return wiki_sha or head_sha(root)


def read_cursor(root: Path, lane: Lane, head: str = "HEAD") -> tuple[dict | None, str | None]:
    """``({"wiki": sha, "code": sha}, None)``, or ``(None, why a full audit is needed)``
    (``head``: HEAD's sha, when the caller has it)."""
    text = repo_text(root, f"{lane.dir}/{CURSOR}", "cursor")
    if text is None:
        return None, f"no {CURSOR}: full audit"
    values = {}
    for line in text.splitlines():
        key, eq, value = line.partition("=")
        if eq:
            values[key.strip()] = value.strip()
    if set(values) != {"wiki", "code"} or not all(_SHA_RE.fullmatch(v) for v in values.values()):
        return None, f"{CURSOR} is malformed (two lines wiki=<sha>, code=<sha>): full audit"
    if not is_ancestor(root, values["wiki"], head):
        return None, f"{CURSOR} names wiki={values['wiki'][:12]}, which is not in this history: full audit"
    return values, None


def write_cursor(root: Path, lane: Lane, wiki: str, code: str) -> None:
    """Move the cursor to ``wiki`` and ``code``; one already there is not written again (a
    rewrite changes the lane folder, which the next run's lint would list anew)."""
    keep_out_of_status(root)
    text = f"wiki={wiki}\ncode={code}\n"
    if repo_text(root, f"{lane.dir}/{CURSOR}", "cursor") != text:
        atomic_write_text(root / lane.dir / CURSOR, text)


def keep_out_of_status(root: Path) -> None:
    """The watcher's files never show as untracked in ``git status`` (the work tree stays clean
    after every legitimate command): this clone's ``info/exclude`` lists them, not a committed
    ``.gitignore``. A wiki that commits them gets them committed by the stop (:func:`watcher_files`)."""
    from wikiengine.core.git import exclude_locally

    exclude_locally(root, [CURSOR, STOP_AUTHORIZED])


def watcher_files(root: Path, lane: Lane) -> list[str]:
    """The watcher's files of ``lane`` that git tracks (a wiki that grew by hand may have
    committed them), as they are on disk now: the stop's commit takes them along."""
    rels = [f"{lane.dir}/{CURSOR}", f"{lane.dir}/{STOP_AUTHORIZED}"]
    tracked = set(git_out(root, "ls-files", "--", *rels).splitlines())
    return [rel for rel in rels if rel in tracked and (root / rel).is_file()]


def first_commit_time(root: Path, rel: str) -> float | None:
    out = git_out(root, "log", "--diff-filter=A", "--format=%ct", "--", rel).split()
    return float(out[-1]) if out else None


def first_commit_times(root: Path, rels: list[str], folder: str | None = None) -> dict[str, float]:
    """:func:`first_commit_time` of each of ``rels`` from one history walk (a path never
    committed is absent). ``folder``: a folder holding every one of ``rels`` (a lane's), whose
    files' times are kept per clone (:func:`_added_times`): only the commits since are walked."""
    if not rels:
        return {}
    if folder is not None:
        kept = _added_times(root, folder)
        if kept is not None:
            return {rel: kept[rel] for rel in rels if rel in kept}
    return _first_additions(git_out(root, "log", "--diff-filter=A", "--no-renames", "--format=%x00%ct", "--name-only",
                                    "--", *rels), set(rels))


def _first_additions(out: str, wanted: set[str] | None = None) -> dict[str, float]:
    """Each path's oldest addition in a ``git log --format=%x00%ct --name-only`` (newest first)."""
    found: dict[str, float] = {}
    for block in out.split("\0")[1:]:  # newest first: the last commit that added a path is its first
        stamp, _, names = block.partition("\n")
        for name in names.split("\n"):
            if name and (wanted is None or name in wanted):
                found[name] = float(stamp)
    return found


def _added_times(root: Path, folder: str) -> dict[str, float] | None:
    """The first commit time along HEAD of every file ever added under ``folder``
    (:func:`_along_head`: a lane of 3,000 commits cost the watcher 0.2-0.4 s a run to walk
    whole); None where nothing can be kept."""
    def walk(revisions: list[str]) -> dict[str, float] | None:
        done = git_run(root, "log", "--diff-filter=A", "--no-renames", "--format=%x00%ct", "--name-only", *revisions,
                       "--", folder + "/", check=False)
        return _first_additions(done.stdout) if done.ok else None

    def readable(kept) -> bool:
        return isinstance(kept, dict) and all(type(stamp) in (int, float) for stamp in kept.values())

    # an addition since is newer than one the record holds: the record's stays the first
    return _along_head(root, "added", folder, walk, lambda kept, since: {**since, **kept}, readable)


def _along_head(root: Path, kind: str, key: str, walk: Callable[[list[str]], Any], merge: Callable[[Any, Any], Any],
                readable: Callable[[Any], bool]):
    """``walk(revisions)`` over HEAD's history, kept per clone (:mod:`wikiengine.core.history_record`)
    with the HEAD it was read at: the same HEAD is answered from the record, one that descends
    from it walks only the commits since (``merge(kept, since)``), a rewritten one (or a record
    whose value is not ``readable``) walks everything again. None where nothing can be kept (no
    commit yet, a wiki in a subdirectory of its repository) or the walk fails (``walk`` answers
    None): nothing is kept."""
    head = current_head(root)
    if head is None or record_path(root, kind, key) is None:
        return None
    held = read_record(root, kind, key, lambda record: isinstance(record.get("head"), str) and readable(record.get("value")))
    if held is not None and held["head"] == head:
        return held["value"]
    since = held is not None and is_ancestor(root, held["head"], head)
    found = walk([head, f"^{held['head']}"] if since else [head])
    if found is None:
        return None
    value = merge(held["value"], found) if since else found
    write_record(root, kind, key, {"head": head, "value": value})
    return value


def _lint_battery(root: Path, lane: Lane, since: str | None) -> list[AuditFinding]:
    from wikiengine.lint.gitview import changed_view
    from wikiengine.lint.runner import lint

    if since is None:
        result = lint(root, base="HEAD", jobs=1)
    else:
        view = changed_view(root, since)
        paths = set(view.changed_pages())
        model = lane.model_page(root)
        paths |= {p for p in (lane.log, model) if p and (root / p).is_file()}
        result = lint(root, sorted(paths), base=since, jobs=1, view=view, reuse=True)
    return [AuditFinding(f.code, f.path, f.line, f.message, f"wiki lint --explain {f.code}; then fix {f.path}:{f.line}",
                         f.identity()) for f in result.findings]


def _inherited_cache(root: Path, start: str) -> Path:
    from wikiengine.core.git import git_dir
    from wikiengine.lint.cache import engine_fingerprint

    # keyed by the engine's source too: another version of the rules finds other identities
    return git_dir(root) / "wiki-lane" / f"inherited-{start}-{engine_fingerprint()[:12]}.json"


def record_inherited(root: Path, start: str) -> int:
    """At a session's start (``wiki loop start``, HEAD = ``start``): keep the identities of the
    wiki's lint findings as they are now, the exact set later audits call inherited (the same
    work tree: checked-out submodules, ignored files). Returns how many."""
    from wikiengine.core.atomic import atomic_write_json
    from wikiengine.lint.runner import lint

    found = sorted({f.identity() for f in lint(root, base="HEAD", jobs=1).findings})
    cache = _inherited_cache(root, start)
    cache.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_json(cache, [list(item) for item in found])
    return len(found)


def inherited_identities(root: Path, start: str) -> set[tuple]:
    """The identities of the lint findings the wiki had at commit ``start`` (a session's
    start): what ``wiki loop start`` recorded, else (another clone, another engine version)
    the start commit linted once in a temporary worktree, kept in ``.git/wiki-lane/``. The
    worktree has no submodule checked out and no ignored file: a finding that depends on
    them may count as the session's there."""
    from wikiengine.core import git
    from wikiengine.core.atomic import atomic_write_json
    from wikiengine.lint.runner import lint

    cache = _inherited_cache(root, start)
    try:
        return {tuple(item) for item in load_json(read_text(cache, kind="cache"), cache)}
    except (PageError, ValueError, TypeError):
        pass  # absent, or not one we wrote: lint the start commit again
    import tempfile  # only here: a watcher's usual run reads the kept identities

    with tempfile.TemporaryDirectory(prefix="wiki-inherited-") as tmp:
        tree = Path(tmp) / "tree"
        git.run(root, "worktree", "add", "--detach", "--quiet", str(tree), start)
        try:
            found = sorted({f.identity() for f in lint(tree, base="HEAD", use_cache=False, jobs=1).findings})
        except WikiError:
            found = []  # the start commit cannot be linted (its config is broken): nothing counts as inherited
        finally:
            git.run(root, "worktree", "remove", "--force", str(tree), check=False)
    cache.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_json(cache, [list(item) for item in found])
    return set(found)


def _older_stubs_inherited(audit: Audit, root: Path, checks: list[AuditFinding], start: str | None) -> list[AuditFinding]:
    """Lane checks without the stale stubs committed before the session began (inherited, as
    their lint twin EXP011 is): the session neither made them nor could run them yet."""
    def predates(rel: str) -> bool:  # the commit that added the stub is part of the start's history
        added = git_out(root, "log", "--diff-filter=A", "--format=%H", "--", rel).split()
        return bool(added) and is_ancestor(root, added[-1], start)

    older = [f for f in checks if start is not None and f.check == "stale-stub" and predates(f.path)]
    audit.inherited += older
    return [f for f in checks if f not in older]


def split_inherited(audit: Audit, root: Path, battery: list[AuditFinding], start: str | None) -> list[AuditFinding]:
    """The battery's findings the session added; the ones already there at ``start`` go to
    ``audit.inherited`` (listed when the audit covers the session's start)."""
    if start is None:
        return battery
    known = inherited_identities(root, start)
    audit.inherited = [f for f in battery if f.identity in known]
    audit.inherited_from = start
    audit.list_inherited = audit.since is None or not is_ancestor(root, start, audit.since)
    return [f for f in battery if f.identity not in known]


DRIFT_CODE = "EXP014"  # the audits report a drift under the code of its lint rule (lint/rules/experiment_filed.py)


def drift_findings(root: Path, journal_rel: str, records: list[dict]) -> list[AuditFinding]:
    """Every filed page of the journal that differs from its filing digest (not only the delta's)."""
    return [AuditFinding(DRIFT_CODE, drift.page, 1, drift.describe(), drift.repair(commit))
            for drift, commit in committed_drifts(root, journal_rel, records)]


def _lane_checks(root: Path, lane: Lane, records: list[dict], pages: dict, workloads, now: float,
                 stale_hours: float, thrash_k: int) -> list[AuditFinding]:
    found = []
    lane_args = f"{lane.model_prefix} {lane.name}"
    asked = [pages[vid].rel for vid in (workloads or {}) if vid in pages] + [p.rel for p in pages.values() if p.is_open]
    added = first_commit_times(root, sorted(set(asked)), lane.dir)  # one history walk, not one per page
    for vid, workload in sorted((workloads or {}).items()):
        page = pages.get(vid)
        started = timestamp(workload.started) if workload.started else None
        committed = added.get(page.rel) if page else None
        if page is None:
            if workload.is_finished:
                continue  # backfill's to file; the next wake does it
            found.append(AuditFinding("no-stub", lane.dir, 1, f"{workload.name} is in flight with no stub page",
                                      f"wiki backfill {lane_args} once it finishes; dispatch only through wiki step"))
        elif committed is None or (started is not None and committed > started + 1):
            found.append(AuditFinding("stub-after-dispatch", page.rel, 1,
                                      f"{workload.name} started before its stub was committed",
                                      "file stubs with wiki exp new before any dispatch (wiki step does it)"))
    found += stale_stubs(lane, pages, added.get, now, stale_hours)
    found += thrashing(lane, records, pages, thrash_k)
    return found


def stale_stubs(lane: Lane, pages: dict, added: Callable[[str], float | None], now: float,
                stale_hours: float) -> list[AuditFinding]:
    """The open stubs older than ``stale_hours``; ``added`` says when a page was first committed
    (the audit asks git per stub; `wiki report` answers from one history walk)."""
    found = []
    for vid, page in sorted(pages.items()):
        if not page.is_open:
            continue
        committed = added(page.rel)
        if committed is not None and now - committed > stale_hours * 3600:
            hours = (now - committed) / 3600
            found.append(AuditFinding("stale-stub", page.rel, 1, f"{vid} has been in progress for {hours:.0f} h "
                                      f"(more than {stale_hours:g} h)",
                                      "`wiki step` dispatches, processes or kills it on a free track; `wiki loop stop` "
                                      f"resolves what is left ({lane.model_prefix} {lane.name})",
                                      ("stale-stub", page.rel, vid)))
    return found


def thrashing(lane: Lane, records: list[dict], pages: dict, k: int) -> list[AuditFinding]:
    """K consecutive invalid/inconclusive results on one mechanism, or on one v-id's letters
    (:func:`wikiengine.model.progress.thrashing`: the computation `wiki exp new` gates on)."""
    mechanisms = progress.filed_mechanisms(records, pages.values())
    return [AuditFinding("thrashing", pages[s.vids[-1]].rel, 1,
                         f"{len(s.vids)} consecutive invalid/inconclusive results on one {s.kind} ({', '.join(s.vids)})",
                         "stop retrying this; formulate a different mechanism (wiki exp new), or retire the hypothesis; "
                         "a new stub on it needs --reformulated-because TEXT")
            for s in progress.thrashing(records, mechanisms, k)]


def session_start(records: list[dict]) -> int:
    """The number of the lane's newest session (0: none started)."""
    starts = [r for r in records if r.get("op") == "start"]
    return int(starts[-1].get("session", len(starts))) if starts else 0


def retrospective_commits(root: Path, lane: Lane) -> list[tuple[str, float, str]]:
    """``(path, commit time, commit sha)`` of the lane's retrospectives, by their first commit
    (bound by git history, never by file time)."""
    patterns = [f"wiki/analyses/*-{lane.model_name}-{lane.name}-retrospective*.md",
                f"wiki/analyses/*-{lane.model_prefix}-{lane.name}-retrospective*.md", f"{lane.dir}/retrospectives/*.md"]
    found = []
    for rel in sorted({p.relative_to(root).as_posix() for pattern in patterns for p in root.glob(pattern)}):
        out = git_out(root, "log", "--diff-filter=A", "--format=%H %ct", "--", rel).split()
        if len(out) >= 2:
            found.append((rel, float(out[-1]), out[-2]))
    return found


def session_start_commit(root: Path, lane: Lane, session: int) -> str | None:
    """The commit that started ``session`` (``wiki loop start`` writes ``loop(<lane>): start session <k> ...``):
    the newest such commit along HEAD, kept with the HEAD it was found at (:func:`_along_head`:
    the journal changes with every write, and the search walked all of its history each run)."""
    def walk(revisions: list[str]) -> str | None:
        done = git_run(root, "log", "--format=%H", "--fixed-strings", f"--grep=loop({lane.name}): start session {session} ",
                       *revisions, "--", lane.journal, check=False)
        return (done.stdout.split() or [""])[0] if done.ok else None

    found = _along_head(root, "starts", f"{lane.journal}\0{session}", walk, lambda kept, since: since or kept,
                        lambda kept: isinstance(kept, str))
    if found is None:
        found = walk(["HEAD"]) or ""
    return found or None


def _claims_need_retrospective(root: Path, lane: Lane, start_commit: str | None, closing: bool,
                               required: list[str]) -> list[AuditFinding]:
    from wikiengine.core.page import parse_page
    from wikiengine.model.logbook import parse_entries

    log = repo_text(root, lane.log)
    entries = parse_entries(parse_page(log, lane.log)) if log is not None else []
    claims = []
    for entry in entries:
        if entry.has_op("start"):
            break
        if entry.has_op("stop") or _CEILING_RE.search(entry.text + entry.body):
            claims.append(entry)
    if closing:
        claims.append(None)
    newer = [r for r in retrospective_commits(root, lane) if start_commit is None or not is_ancestor(root, r[2], start_commit)]
    if not claims:
        return []
    gaps = {rel: retrospective_gaps_of(root, rel, lane, required) for rel, _when, _sha in newer}
    if any(not found for found in gaps.values()):
        return []
    target = f"wiki/analyses/{today()}-{lane.model_name}-{lane.name}-retrospective.md"
    if gaps:  # written, but not one that may close this lane: say what each lacks
        why = "; ".join(f"{rel}: {', '.join(found)}" for rel, found in gaps.items())
        message, correction = (f" has no retrospective of {lane.model_name}/{lane.name} that may close it ({why})",
                               "complete the retrospective (this lane, what the session learned"
                               + (f", sections {', '.join(required)}" if required else "") + ") and commit it")
    else:
        message, correction = (f" has no retrospective of {lane.model_name}/{lane.name} committed since the session began",
                               f"write {target} (type: analysis, model: {lane.model_prefix}, lane: {lane.name}"
                               + (f", sections {', '.join(required)}" if required else "") + ") and commit it")
    return [AuditFinding("no-retrospective", lane.log, entry.line if entry else 1,
                         ("the stop about to be made" if entry is None else f"'{entry.title}'") + message, correction)
            for entry in claims]


def retrospective_gaps_of(root: Path, rel: str, lane: Lane, required: list[str]) -> list[str]:
    """What keeps the retrospective at ``rel`` from closing ``lane`` (:mod:`model.retrospective`)."""
    from wikiengine.model.retrospective import retrospective_gaps

    try:
        text = read_text(root / rel, rel, within=root)
    except WikiError as exc:
        return [f"it cannot be read: {exc}"]
    return retrospective_gaps(text, rel, model=lane.model_name, lane=lane.name, required=required)


def run_audit(root: Path, lane: Lane, *, closing: bool = False, backend=None, config: dict | None = None,
              now: float | None = None) -> Audit:
    """The audit of ``lane`` since its cursor (see the module docstring)."""
    from wikiengine.executors.compute_errors import ComputeError
    from wikiengine.step import lane_read

    config = config or {}
    records = journal_records(root, lane.journal)
    session = session_start(records)
    wiki_sha = head_sha(root)
    cursor, why_full = read_cursor(root, lane, wiki_sha)
    audit = Audit(lane, session, wiki_sha, code_sha(root, config, wiki_sha), cursor["wiki"] if cursor else None, closing)
    if why_full:
        audit.notes.append(why_full)  # a full audit is news, not a finding: a cron watcher pages nobody for it
    start = session_start_commit(root, lane, session) if session else None
    battery = [f for f in _lint_battery(root, lane, audit.since) if f.check != DRIFT_CODE]
    audit.findings += split_inherited(audit, root, battery, start)
    audit.findings += drift_findings(root, lane.journal, records)
    pages = {p.exp_id: p for p in lane_read.lane_pages(root, lane)}
    workloads = None
    if backend is not None:
        try:
            settings = lane_read.lane_settings(root, lane, config or None)  # the watcher's: resolved once
            prefix = f"{settings.user_prefix}-{lane.model_name}-{lane.name}"
            # A/A runs (v000) have no page by design: their aa-dispatch record is their stub
            workloads = {w.vid: w for w in backend.list_workloads(prefix) if w.vid != AA_VID}
        except ComputeError as exc:
            audit.findings.append(AuditFinding("backend", lane.dir, 1, f"the backend cannot be listed: {exc}",
                                               "check the cluster credentials; an audit that cannot see the backend is not clean"))
    now = now if now is not None else utcnow().timestamp()
    checks = _lane_checks(root, lane, records, pages, workloads, now,
                          float(config.get("stale_stub_hours", DEFAULT_STALE_HOURS)),
                          progress.thrash_k(config))
    audit.findings += _older_stubs_inherited(audit, root, checks, start)
    required = config.get("retrospective_sections") or []
    audit.findings += _claims_need_retrospective(root, lane, start, closing, [str(title) for title in required])
    return audit


# --- the authorization record ---------------------------------------------------------------


def _signature(payload: str) -> str | None:
    from wikiengine.lint.cache import signing_key

    key = signing_key()
    return hashlib.blake2b(payload.encode(), key=key, digest_size=32).hexdigest() if key else None


def write_authorization(root: Path, audit: Audit, moment: dt.datetime) -> str:
    """``.stop-authorized`` after a clean closing audit; returns its text."""
    payload = (f"{audit.all_clear}\nwiki={audit.wiki_sha}\ncode={audit.code_sha}\nsession={audit.session}\n"
               f"at={utc_iso(moment)}\n")
    signature = _signature(payload)
    if signature is None:
        from wikiengine.core.errors import WikiError

        raise WikiError("no per-user signing key (the lint cache key): cannot sign .stop-authorized")
    text = payload + f"signature={signature}\n"
    keep_out_of_status(root)
    atomic_write_text(root / audit.lane.dir / STOP_AUTHORIZED, text)
    return text


def check_authorization(root: Path, lane: Lane, session: int) -> tuple[dict | None, str | None]:
    """The record of ``.stop-authorized`` when it may open the gate, else ``(None, why not)``."""
    text = repo_text(root, f"{lane.dir}/{STOP_AUTHORIZED}", "authorization")
    if text is None:
        return None, "no .stop-authorized: run `wiki watch --closing --once` after the closing retrospective"
    payload, _, tail = text.rpartition("signature=")
    values = dict(line.split("=", 1) for line in payload.splitlines()[1:] if "=" in line)
    expected = _signature(payload)
    if expected is None or not hmac.compare_digest(tail.strip().encode("utf-8"), expected.encode("utf-8")):
        return None, ".stop-authorized was not written by this user's watcher (its signature does not verify)"
    if values.get("session") != str(session):
        return None, f".stop-authorized is from session {values.get('session')}, not session {session}: stale"
    wiki = values.get("wiki", "")
    if not _SHA_RE.fullmatch(wiki) or not is_ancestor(root, wiki, "HEAD"):
        return None, ".stop-authorized names a wiki sha that is not in this history"
    for rel, _when, sha in retrospective_commits(root, lane):
        if not is_ancestor(root, sha, wiki):
            return None, f".stop-authorized (wiki={wiki[:12]}) is older than the retrospective {rel}: audit again"
    return {"all_clear": payload.splitlines()[0].strip(), **values}, None
