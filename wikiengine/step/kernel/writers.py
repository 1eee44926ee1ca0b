"""The kernel lane's writers: `wiki kernel start|stub|cand|verify|file` (seed 003, K0 to K8).

Each operation reads the family (binding, family page, pages, journal), decides what every
file must become, and commits through the lane transaction (:class:`LaneTxn` under the
family's :class:`LaneLock`: redo record, atomic writes, re-lint, one commit), like the
lane writers. Candidate code is committed on the experiment's own branch, in its worktree.
Everything returns a plain dict: the JSON the command prints. The close is
:mod:`wikiengine.step.kernel.close`.
"""

from __future__ import annotations

import hashlib
import posixpath
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

from wikiengine.core.clock import Clock, now_iso, today, utcnow
from wikiengine.core.errors import WikiError
from wikiengine.core.git import ok as git_ok
from wikiengine.core.git import out as git_out
from wikiengine.core.page import parse_page
from wikiengine.core.safe_read import read_text, repo_text
from wikiengine.core.text import folded
from wikiengine.model import experiment as ex
from wikiengine.model import kernel_page as kp
from wikiengine.model import logbook, results_tsv
from wikiengine.model import receipt as kernel_receipt
from wikiengine.model.experiment import ExperimentPage
from wikiengine.model.journal import append_record, next_id, page_digest, parse_journal, used_ids
from wikiengine.model.kernel_page import candidate_commits
from wikiengine.model.kernels import KernelFamily, derive_slug
from wikiengine.model.lanes import is_experiment_path
from wikiengine.model.variant_matrix import CURRENT_BEST, FRONTIER_EXP, parse_matrix, render_matrix, set_cells
from wikiengine.step.kernel import git as kernel_git
from wikiengine.step.kernel import run as kernel_run
from wikiengine.step.kernel import sealing
from wikiengine.step.kernel.verdicts import KernelEvidence, cap_kernel_verdict
from wikiengine.step.txn import LaneLock, LaneTxn
from wikiengine.step.writers import frontmatter_yaml, parse_proposal, stub_head

BINDING = "Family binding"
DEFAULT_BAR = 1.05
_SLUG_RE = re.compile(r"[a-z0-9][a-z0-9-]{0,59}")
_YAML_BLOCK_RE = re.compile(r"```ya?ml\n(?P<yaml>.*?)\n```", re.S)
KERNEL_SECTIONS = ("Hypothesis under test", "Setup", "Candidate plan", "Baseline comparison", "Results",
                   "Candidate ledger", "Profile", "HLO Dump", "Observations", "Verdict", "Cross-variant relevance",
                   "Next hypotheses")


# --- reading the family ----------------------------------------------------------------------


def read_binding(root: Path, family: KernelFamily) -> dict:
    """The yaml block of the family program's ``## Family binding``."""
    import yaml

    text = repo_text(root, family.program)
    if text is None:
        raise WikiError(f"kernel family {family.slug!r} is not bootstrapped: run `wiki kernel start` with --reference")
    section = parse_page(text, family.program).section(BINDING)
    match = _YAML_BLOCK_RE.search(section.body if section else "")
    if match is None:
        raise WikiError("the family program has no yaml block under '## Family binding'", family.program)
    data = yaml.safe_load(match.group("yaml"))
    if not isinstance(data, dict) or not {"reference", "candidate", "op_points"} <= set(data):
        raise WikiError("the family binding needs reference, candidate and op_points", family.program)
    return data


def family_pages(root: Path, family: KernelFamily) -> list[ExperimentPage]:
    """The family's experiment pages whose file name carries an id, read when asked."""
    pages = [ExperimentPage.at(root, rel, family) for rel in family.page_rels(root)]
    return [p for p in pages if p.file_id]


def find_kernel_page(root: Path, family: KernelFamily, vid: str | None) -> ExperimentPage:
    """The page ``vid``, or (``vid`` None) the family's one open stub."""
    pages = family_pages(root, family)
    if vid is not None:
        found = [p for p in pages if p.exp_id == ex.canonical_id(vid)]
        if not found:
            raise WikiError(f"no experiment {ex.canonical_id(vid)} in kernel family {family.slug}")
        return found[0]
    open_pages = [p for p in pages if p.is_open]
    if not open_pages:
        raise WikiError(f"kernel family {family.slug} has no open stub: `wiki kernel stub` first")
    return open_pages[-1]


def open_experiment(root: Path, family: KernelFamily, txn: LaneTxn, vid: str | None) -> tuple[list[dict], ExperimentPage]:
    """The family's journal and the experiment ``vid`` (the open stub when None), which must not be filed yet."""
    page_ref = find_kernel_page(root, family, vid)
    if page_ref.is_filed:
        raise WikiError(f"{page_ref.exp_id} is filed and immutable; a rerun is a new stub", page_ref.rel)
    return journal_records(txn, family), page_ref


def journal_records(txn: LaneTxn, family: KernelFamily) -> list[dict]:
    return parse_journal(txn.read(family.journal), family.journal)


def session_target(records: list[dict]) -> dict:
    starts = [r for r in records if r.get("op") == "start"]
    if not starts:
        raise WikiError("the family has no session: run `wiki kernel start` first")
    return starts[-1]["target"]


def page_branch(records: list[dict], vid: str) -> str | None:
    return next((r["branch"] for r in reversed(records) if r.get("op") == "branch" and r.get("vid") == vid), None)


def _rel_link(from_rel: str, to_rel: str) -> str:
    return posixpath.relpath(to_rel, posixpath.dirname(from_rel))


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


# --- start -----------------------------------------------------------------------------------


def render_program(family: KernelFamily, binding: dict) -> str:
    import yaml

    block = yaml.safe_dump(binding, sort_keys=False, width=1000).rstrip("\n")
    return (f"# {family.slug} kernel family ({family.name})\n\n"
            "## Quick start\n\nDrive it with `wiki kernel start|stub|cand|verify|file|close` (K0 to K9); the spec is "
            "the kernel root program, `wiki/kernel_experiments/program.md`.\n\n"
            f"## {BINDING}\n\n```yaml\n{block}\n```\n\n"
            "## Run target\n\nChosen once per session by `wiki kernel start` and recorded in the start marker of "
            "`log.md`.\n")


def render_family_page(family: KernelFamily, op_points: list[str], hardware: str, date: str) -> str:
    front = {"title": f"{family.slug} kernel family", "type": "model", "architecture": family.slug,
             "lane": family.name, "sizes": list(op_points), "hardwares": [hardware], "created": date, "updated": date}
    rows = [{"Size": p, "Hardware": hardware, "Status": "live", "Baseline": "1.0x (pinned reference)",
             "Current best": "—", "Open hyps": "0", "Frontier exp": "—"} for p in op_points]
    matrix = render_matrix(rows).replace("| Size |", "| Op-point |", 1)
    return ("---\n" + frontmatter_yaml(front) + "---\n" + f"# {family.slug} (kernel family, {family.name})\n\n"
            "## Target metrics\n\nSpeedup at p50 over the pinned reference, co-measured in one process; parity "
            "against a float64 oracle; the candidate's op must fire.\n\n"
            f"## How to run\n\n`wiki kernel start {family.slug}`, then K0 to K9 with `wiki kernel`.\n\n"
            f"## Variant matrix\n\n{matrix}\n## Cross-variant open hypotheses\n\n"
            "## Variant-specific open hypotheses\n\n## Retired hypotheses\n\n## Ruled-out levers\n\n"
            "## Knobs translation matrix\n\nNone yet.\n\n## Iteration ladder\n\nK0 baseline, K3 stub, K4 candidates, "
            "K6 verify, K7 verdict, K8 family page, K9 next stub or the stop chain.\n")


def run_target(chip: int | None, pod: str | None, accelerator: str | None, topology: str | None,
               chips: int | None, hours: float, artifacts: str | None, *, image: str | None = None,
               context: str | None = None, namespace: str = "default") -> dict:
    """The run target record (seed 003 Step 9·K); a pod named ``""`` is named at start."""
    if pod is None:
        return {"kind": "local", "chip": 0 if chip is None else chip}
    if not (accelerator and topology):
        raise WikiError("a cluster pod needs --accelerator and --topology (from `wiki kernel pod discover`)")
    if not (artifacts or "").startswith("gs://"):
        raise WikiError("a cluster pod writes its artifacts to gs:// only: pass --artifacts gs://BUCKET/PATH")
    if hours <= 0:
        raise WikiError("--hours must be positive: it is the pod's hard TTL")
    if not image:
        raise WikiError("a cluster pod needs --image (with the TPU stack and the verifier's Python)")
    if pod:
        from wikiengine.executors.gke.kernel_pod import check_pod_name

        check_pod_name(pod)
    return {"kind": "pod", "pod": pod, "context": context, "namespace": namespace, "accelerator": accelerator,
            "topology": topology, "chips": chips, "hours": hours, "activeDeadlineSeconds": int(hours * 3600),
            "artifacts": artifacts, "image": image}


def target_line(target: dict) -> str:
    """The start marker's **Run target** line."""
    if target["kind"] == "local":
        return f"local chip {target['chip']}"
    return (f"cluster pod {target['pod']} — {target['accelerator']}/{target['topology']}, "
            f"{target.get('chips') or 'all'} chips, TTL {target['hours']:g}h")


def start(root: Path, named: str, *, chip: int | None = None, pod: str | None = None, accelerator: str | None = None,
          topology: str | None = None, chips: int | None = None, hours: float = 8.0, artifacts: str | None = None,
          image: str | None = None, context: str | None = None, namespace: str = "default",
          reference: Path | None = None, op_points: list[str] | None = None, class_page: str | None = None,
          bar: float = DEFAULT_BAR, first_pick: str | None = None, dry_run: bool = False, date: str | None = None, clock: Clock = utcnow) -> dict:
    """`wiki kernel start`: derive the slug, bootstrap a new family, record the run target,
    clear a leftover ``.stop-authorized``, write the start marker, point ``memory/STATE.md``
    at the session (:mod:`wikiengine.model.state`): one commit. On a pod the session's
    pod is brought up first (or attached to: a second start is idempotent)."""
    from wikiengine.model.state import stage_start

    date = date or today(clock)
    family = KernelFamily(derive_slug(root, named))
    target = run_target(chip, pod, accelerator, topology, chips, hours, artifacts, image=image, context=context,
                        namespace=namespace)
    if not (root / family.program).is_file() and (reference is None or not op_points):
        raise WikiError(f"kernel family {family.slug} is new: bootstrap it with --reference FILE and --op-point NAME")
    if kernel_run.is_pod(target):
        target = kernel_run.resolve_pod_target(target)
    with LaneLock(root, family.txn_lane) as lock:
        txn = LaneTxn(root, family.txn_lane)
        open_start, session = open_session(journal_records(txn, family))
        if open_start and kernel_run.is_pod(target) and kernel_run.is_pod(open_start["target"]) \
                and target["pod"] in ("", open_start["target"]["pod"]):
            recorded = open_start["target"]  # the session's pod, as recorded: attach (idempotent by name)
            result = {"family": family.slug, "session": session, "attached": True, "target": recorded,
                      "run_target": target_line(recorded), "recovered": lock.recovered}
            if dry_run:
                return {**result, "dry_run": True, "would_write": []}
            return {**result, "pod": kernel_run.bring_up(recorded, family.slug, session)}
        if open_start:
            raise WikiError(f"session {open_start.get('session')} of {family.slug} is open on "
                            f"{target_line(open_start['target'])}: the run target is fixed for the whole run (pause or "
                            "close it before starting another)")
        pod_up = None
        if kernel_run.is_pod(target):
            target["pod"] = target["pod"] or kernel_run.session_pod_name(family.slug, session)
            if not dry_run:
                pod_up = kernel_run.bring_up(target, family.slug, session)
        bootstrapped = not (root / family.program).is_file()
        if bootstrapped:
            bootstrap_family(txn, root, family, target, reference=reference, op_points=op_points, class_page=class_page,
                             bar=bar, date=date, dry_run=dry_run)
        stale = root / family.dir / ".stop-authorized"
        write_start_marker(txn, root, family, target, session=session, first_pick=first_pick, bootstrapped=bootstrapped,
                           stale=stale.exists(), date=date, at=now_iso(clock))
        left_alone = stage_start(txn, family, session=session, run_target=target_line(target), at=now_iso(clock))
        result = {"family": family.slug, "session": session, "bootstrapped": bootstrapped,
                  "run_target": target_line(target), "target": target, "stale_stop_authorized": stale.exists(),
                  "recovered": lock.recovered, **({"pod": pod_up} if pod_up else {}),
                  "memory_state": left_alone or "memory/STATE.md points at this session: `wiki step` drives it"}
        if dry_run:
            return {**result, "dry_run": True, "would_write": txn.changed()}
        stale.unlink(missing_ok=True)
        result["commit"] = txn.commit(f"kernel({family.slug}): start session {session} on {target_line(target)}")
        if bootstrapped:
            kernel_git.create_branch(root, family.integration_branch, result["commit"])
        return result


def open_session(records: list[dict]) -> tuple[dict | None, int]:
    """The journal's start record of a session still open (None: the last one was stopped or
    paused, or there was none), and the number of the session a start opens or attaches to."""
    last = next((r for r in reversed(records) if r.get("op") in ("start", "stop", "pause")), None)
    open_start = last if last is not None and last["op"] == "start" else None
    return open_start, sum(1 for r in records if r.get("op") == "start") + (0 if open_start else 1)


def bootstrap_family(txn: LaneTxn, root: Path, family: KernelFamily, target: dict, *, reference: Path,
                     op_points: list[str], class_page: str | None, bar: float, date: str, dry_run: bool) -> None:
    """A new family's pinned reference, program (the family binding), family page, RESULTS.tsv
    and index entry."""
    reference_text = read_text(reference, reference, "source")
    code_dir = f"kernels/{family.slug}"
    binding = {"home_repo": ".", "integration_branch": family.integration_branch,
               "reference": f"{code_dir}/reference.py", "reference_sha256": _sha256(reference_text),
               "candidate": f"{code_dir}/candidate.py", "op_points": list(op_points), "speedup_bar": bar,
               "atol": 1e-4, "rtol": 1e-4, "class_page": class_page}
    txn.write(binding["reference"], reference_text)
    txn.write(family.program, render_program(family, {k: v for k, v in binding.items() if v is not None}))
    hardware = "unmeasured (dry run)" if dry_run and kernel_run.is_pod(target) else \
        kernel_run.device_token(root, target)
    txn.write(family.family_page, render_family_page(family, list(op_points), hardware, date))
    txn.write(family.results, results_tsv.HEADER)
    from wikiengine.step.writers import index_add

    index_add(txn, root, [(f"{family.slug} kernel family", family.family_page)], "Kernels", create=True)


def write_start_marker(txn: LaneTxn, root: Path, family: KernelFamily, target: dict, *, session: int,
                       first_pick: str | None, bootstrapped: bool, stale: bool, date: str, at: str) -> None:
    """The start marker of the family log and the journal's start record."""
    pick = first_pick or _first_pick(root, family)
    entry = logbook.render_entry(date, "start", f"/start-experiment session {session} of kernel family {family.slug}", {
        "Cluster pool": f"chip {target['chip']}" if target["kind"] == "local" else target["pod"],
        "Parallelism": "1", "First-pick hypothesis": pick, "Run target": target_line(target),
        "Notes": "session opened via wiki kernel start" + ("; family bootstrapped" if bootstrapped else "")
                 + ("; a leftover .stop-authorized was deleted" if stale else "")})
    txn.write(family.log, logbook.insert_entry(txn.read(family.log) or f"# {family.slug} kernel log\n\n", entry))
    txn.write(family.journal, append_record(txn.read(family.journal), {
        "op": "start", "session": session, "target": target, "at": at}))


def _first_pick(root: Path, family: KernelFamily) -> str:
    text = repo_text(root, family.family_page)
    if text is not None:
        leads = kp.open_leads(parse_page(text, family.family_page))
        if leads:
            return next(iter(leads))
    return "baseline the pinned reference, then the first lever of the class page"


# --- stub (K3) -------------------------------------------------------------------------------


def render_kernel_stub(family: KernelFamily, vid: str, slug: str, variant: str, proposal, front: dict,
                       levers: list[str], plan_items: list[str], bar: float, date: str) -> str:
    lines, body = stub_head(front, vid, slug, proposal)
    body += ["## Setup", "", proposal.setup or "Planned setup: the family binding's reference and op-point.", "",
             f"**Lever queue**: {', '.join(levers)}", "",
             f"**Pre-registered bar**: speedup above {bar:g}x at p50 over the pinned reference on `{variant}`", "",
             "## Candidate plan", ""]
    body += [f"- [ ] cand{i}: {' '.join(item.split())}" for i, item in enumerate(plan_items, start=1)] + [""]
    for title in KERNEL_SECTIONS[3:]:
        body += [f"## {title}", ""]
        if title == "Candidate ledger":
            body += [kp.ledger_header()]
    return "\n".join(lines) + "\n" + "\n".join(body)


def stub(root: Path, family: KernelFamily, *, slug: str, proposal_path: Path, op_point: str, lever: str,
         levers: list[str], plan_items: list[str], intervention_class: str, category: str,
         activity: str = "capability-eval", profile: str | None = None, bar: float | None = None,
         dry_run: bool = False, date: str | None = None, clock: Clock = utcnow) -> dict:
    """`wiki kernel stub` (K3): the page of one mechanism, committed before any candidate."""
    if not _SLUG_RE.fullmatch(slug) or not _SLUG_RE.fullmatch(lever):
        raise WikiError("the slug and the lever are lower-case words joined by '-'")
    ex.refuse_a_misread_slug(slug)
    if activity not in kp.ACTIVITIES:
        raise WikiError(f"--activity {activity!r} is not one of {', '.join(kp.ACTIVITIES)}")
    if activity == "optimization":
        if not profile or not is_experiment_path(profile) or not (root / profile).is_file():
            raise WikiError("activity optimization needs --profile citing a model-lane experiment page that profiled "
                            "this op-point; otherwise the activity is capability-eval")
    if not plan_items:
        raise WikiError("the Candidate plan needs at least one --plan item")
    proposal = parse_proposal(proposal_path)
    binding = read_binding(root, family)
    date = date or today(clock)
    with LaneLock(root, family.txn_lane) as lock:
        txn = LaneTxn(root, family.txn_lane)
        records = journal_records(txn, family)
        target = session_target(records)
        if op_point not in binding["op_points"]:
            raise WikiError(f"op-point {op_point!r} is not in the family binding ({', '.join(binding['op_points'])})")
        variant = f"{op_point}/{kernel_run.device_token(root, target)}"
        family_text = txn.read(family.family_page)
        matrix = parse_matrix(parse_page(family_text, family.family_page))
        if matrix is None or matrix.row(variant) is None:
            raise WikiError(f"the pinned chip reports {variant.split('/', 1)[1]!r}: the family page has no row "
                            f"{variant!r} (rows: {', '.join(matrix.keys()) if matrix else 'none'})", family.family_page)
        mechanism = folded(proposal.paragraphs["Mechanism"])
        for page in family_pages(root, family):
            if page.is_open:
                raise WikiError(f"{page.exp_id} is still open: file it before the next stub", page.rel)
            if page.mechanism == mechanism:
                raise WikiError(f"the mechanism is {page.exp_id}'s already: one page per mechanism", page.rel)
        vid = str(next_id(used_ids(root, family, records)))
        bar = bar if bar is not None else float(binding.get("speedup_bar", DEFAULT_BAR))
        front = {"title": f"{vid} {slug}", "type": "experiment", "model": family.slug, "variant": variant,
                 "hypothesis": " ".join(proposal.paragraphs["Hypothesis"].split())[:200], "status": ex.IN_PROGRESS,
                 "activity": activity, "intervention_class": intervention_class, "category": category,
                 "class_page": binding.get("class_page"), "lever": lever, "speedup_bar": bar, "profile": profile,
                 "created": date, "updated": date}
        rel = f"{family.dir}/{ex.page_file_name(date, vid, slug)}"
        txn.write(rel, render_kernel_stub(family, vid, slug, variant, proposal, front, levers or [lever], plan_items,
                                          bar, date))
        txn.write(family.journal, append_record(txn.read(family.journal), {
            "op": "claim", "vid": vid, "slug": slug, "variant": variant, "lever": lever, "page": rel, "at": now_iso(clock)}))
        result = {"family": family.slug, "vid": vid, "page": rel, "variant": variant, "speedup_bar": bar,
                  "recovered": lock.recovered}
        if dry_run:
            return {**result, "dry_run": True, "would_write": txn.changed()}
        result["commit"] = txn.commit(f"kernel({family.slug} {vid}): stub {slug}")
        return result


# --- cand (K4) -------------------------------------------------------------------------------


def _check_reference(binding: dict, text: str) -> None:
    pinned = binding.get("reference_sha256")
    if not (isinstance(pinned, str) and re.fullmatch(r"[0-9a-f]{64}", pinned)):
        raise WikiError(f"the family binding's reference_sha256 {pinned!r} is not a sha256: the reference is not "
                        "pinned (restore the value `wiki kernel start` wrote)")
    if _sha256(text) != pinned:
        raise WikiError(f"the reference {binding['reference']} on the candidate branch is not the pinned one "
                        f"(sha256 {_sha256(text)[:12]} != {pinned[:12]})")


def cand(root: Path, family: KernelFamily, number: int, *, note: str, source: Path, mechanism: str | None = None,
         vid: str | None = None, dry_run: bool = False, clock: Clock = utcnow) -> dict:
    """`wiki kernel cand N`: one commit on the experiment's branch and its ledger row."""
    code = read_text(source, source, "source")  # the agent's input first: a pipe or a bad file is refused at once
    binding = read_binding(root, family)
    with LaneLock(root, family.txn_lane) as lock:
        txn = LaneTxn(root, family.txn_lane)
        records, page_ref = open_experiment(root, family, txn, vid)
        target = session_target(records)
        if not git_ok(root, "cat-file", "-e", f"HEAD:{page_ref.rel}"):
            raise WikiError("the stub is not committed: a candidate is authored only after its stub", page_ref.rel)
        if mechanism is not None and folded(mechanism) != page_ref.mechanism:
            nxt = next_id(used_ids(root, family, records))
            raise WikiError(f"this candidate's mechanism differs from {page_ref.exp_id}'s: a new mechanism is `{nxt}` "
                            "(`wiki kernel stub`)")
        page = page_ref.page
        ledger = kp.ledger(page)
        rows = len(ledger.rows) if ledger else 0
        if number != rows + 1:
            raise WikiError(f"the next candidate of {page_ref.exp_id} is cand{rows + 1}, not cand{number}")
        branch = page_branch(records, page_ref.exp_id)
        new_branch = branch is None
        if new_branch:
            integration = binding.get("integration_branch", family.integration_branch)
            if not kernel_git.branch_exists(root, integration):
                raise WikiError(f"the integration branch {integration} does not exist; candidate branches start "
                                "from it, never from main")
            wanted = family.experiment_branch(page_ref.exp_id)
            branch = kernel_git.free_branch_name(root, wanted)
        op_point = str(page_ref.frontmatter.get("variant", "")).split("/", 1)[0]
        if dry_run:
            return {"family": family.slug, "vid": page_ref.exp_id, "cand": f"cand{number}", "branch": branch,
                    "new_branch": new_branch, "dry_run": True, "recovered": lock.recovered}
        if new_branch:  # recorded at once, so a failure below never leaves an unrecorded branch of ours
            integration = binding.get("integration_branch", family.integration_branch)
            kernel_git.create_branch(root, branch, integration)
            txn.write(family.journal, append_record(txn.read(family.journal), {
                "op": "branch", "vid": page_ref.exp_id, "branch": branch, "wanted": family.experiment_branch(page_ref.exp_id),
                "from": integration, "from_sha": kernel_git.branch_sha(root, integration), "at": now_iso(clock)}))
            txn.commit(f"kernel({family.slug} {page_ref.exp_id}): branch {branch} from {integration}")
            txn = LaneTxn(root, family.txn_lane)
        tree = kernel_git.ensure_worktree(root, branch, family.worktree(root, branch))
        reference_text = read_text(tree / binding["reference"], binding["reference"], "source", within=tree)
        _check_reference(binding, reference_text)
        measured = kernel_run.measure(root, target, binding, reference_text, code, op_point, "quick")
        p50 = measured.get("timing", {}).get("candidate_p50_ms")
        ratio = measured.get("timing", {}).get("speedup")
        parity = "pass" if measured.get("parity", {}).get("pass") else "fail"
        summary = (f"p50 {p50:.4g} ms, speedup {ratio:.3g}x, parity {parity}" if p50 is not None and ratio
                   else f"not measured ({'; '.join(measured.get('reasons', []))[:120]})")
        (tree / binding["candidate"]).parent.mkdir(parents=True, exist_ok=True)
        (tree / binding["candidate"]).write_text(code, encoding="utf-8")
        from wikiengine.core.git import commit_paths

        subject = f"cand{number}({family.slug} {page_ref.exp_id}): {' '.join(note.split())} — {summary}"
        sha = commit_paths(tree, [binding["candidate"]], subject)
        if sha is None:
            raise WikiError("the candidate is byte-identical to the previous one: nothing to commit")
        row = kp.render_ledger_row(f"cand{number}", sha, note, p50, ratio, parity)
        section = page.section(kp.CANDIDATE_LEDGER)
        body = (section.body.rstrip("\n") if section and ledger and ledger.is_table else "\n" + kp.ledger_header().rstrip("\n"))
        page = page.with_section_body(kp.CANDIDATE_LEDGER, body + "\n" + row + "\n\n")
        plan_section = page.section(kp.CANDIDATE_PLAN)
        if plan_section is not None:
            ticked = re.sub(rf"(?m)^([ \t]*[-*][ \t]+)\[ \]([ \t]+cand{number}:)", r"\1[x]\2", plan_section.body, count=1)
            page = page.with_section_body(kp.CANDIDATE_PLAN, ticked)
        page = page.with_frontmatter({"branch": branch})
        txn.write(page_ref.rel, page.to_text())
        txn.write(family.journal, append_record(txn.read(family.journal), {"op": "cand", "vid": page_ref.exp_id, "cand": f"cand{number}",
                                                          "commit": sha, "branch": branch, "at": now_iso(clock)}))
        commit = txn.commit(f"kernel({family.slug} {page_ref.exp_id}): ledger row cand{number} ({summary})")
        return {"family": family.slug, "vid": page_ref.exp_id, "cand": f"cand{number}", "branch": branch,
                "new_branch": new_branch, "branch_suffixed": new_branch and branch != family.experiment_branch(page_ref.exp_id),
                "candidate_commit": sha, "subject": subject, "quick": measured, "commit": commit,
                "recovered": lock.recovered}


# --- verify (K6) -----------------------------------------------------------------------------


def verify(root: Path, family: KernelFamily, *, vid: str | None = None, cand_name: str | None = None,
           mode: str = "full", dry_run: bool = False, clock: Clock = utcnow) -> dict:
    """`wiki kernel verify`: the verifier on one ledger candidate, in a fresh process; the sealed
    receipt under ``receipts/`` and the page's ``verification_receipt``: one commit."""
    binding = read_binding(root, family)
    with LaneLock(root, family.txn_lane) as lock:
        txn = LaneTxn(root, family.txn_lane)
        records, page_ref = open_experiment(root, family, txn, vid)
        target = session_target(records)
        page = page_ref.page
        ledger = kp.ledger(page)
        rows = list(ledger.rows) if ledger else []
        if not rows:
            raise WikiError(f"{page_ref.exp_id} has no candidate in its ledger: `wiki kernel cand 1` first", page_ref.rel)
        row = next((r for r in rows if r.cand == cand_name), None) if cand_name else rows[-1]
        if row is None:
            raise WikiError(f"{cand_name} is not a row of {page_ref.exp_id}'s Candidate ledger")
        commit = row.cells.get("commit", "").strip("` ")
        full = git_out(root, "rev-parse", "--verify", "--quiet", f"{commit}^{{commit}}").strip()
        if not full:
            raise WikiError(f"the ledger's commit {commit!r} of {row.cand} is not in this repository")
        reference_text = git_out(root, "show", f"{full}:{binding['reference']}")
        candidate_text = git_out(root, "show", f"{full}:{binding['candidate']}")
        _check_reference(binding, reference_text)
        if dry_run:
            return {"family": family.slug, "vid": page_ref.exp_id, "cand": row.cand, "commit": full, "mode": mode,
                    "dry_run": True, "recovered": lock.recovered}
        variant = str(page_ref.frontmatter.get("variant", ""))
        measured = kernel_run.measure(root, target, binding, reference_text, candidate_text, variant.split("/", 1)[0],
                                      mode)
        reasons = list(measured.get("reasons", []))
        if measured.get("hardware") != variant.split("/", 1)[-1]:
            reasons.append(f"the chip reports {measured.get('hardware')!r}, not the page's {variant.split('/', 1)[-1]!r}")
        data = {**measured, "family": family.slug, "vid": page_ref.exp_id, "candidate": row.cand, "commit": full,
                "variant": variant, "run_target": {k: v for k, v in target.items() if v is not None}, "reasons": reasons, "verdict": "PASS" if not reasons else "FAIL"}
        text = sealing.seal_receipt(root, data)
        receipt_rel = f"{family.receipts_dir}/{page_ref.exp_id}-{row.cand}-{mode}.json"
        txn.write(receipt_rel, text)
        txn.write(page_ref.rel, page.with_frontmatter({"verification_receipt": _rel_link(page_ref.rel, receipt_rel)}).to_text())
        txn.write(family.journal, append_record(txn.read(family.journal), {
            "op": "verify", "vid": page_ref.exp_id, "cand": row.cand, "receipt": receipt_rel, "verdict": data["verdict"],
            "mode": mode, **sealing.verify_fields(text), "at": now_iso(clock)}))
        sha = txn.commit(f"kernel({family.slug} {page_ref.exp_id}): {mode} receipt of {row.cand} — {data['verdict']}")
        return {"family": family.slug, "vid": page_ref.exp_id, "cand": row.cand, "receipt": receipt_rel,
                "verdict": data["verdict"], "reasons": reasons, "speedup": data.get("timing", {}).get("speedup"),
                "commit": sha, "recovered": lock.recovered}


# --- file (K7, K8) ---------------------------------------------------------------------------


def resolve_receipt(root: Path, page_rel: str, cited) -> tuple[str | None, dict | None, str | None]:
    """``(repo path, receipt, problem)`` of a page's ``verification_receipt``."""
    if not isinstance(cited, str) or not cited.strip():
        return None, None, "no verification_receipt"
    rel = posixpath.normpath(posixpath.join(posixpath.dirname(page_rel), cited.strip()))
    receipt = repo_text(root, rel, "metrics")
    if receipt is None:
        return rel, None, f"the receipt {cited} does not exist"
    data, problem = kernel_receipt.validate(receipt)
    return rel, data, (f"the receipt {cited} does not validate: {problem}" if problem else None)


def verdict_evidence(root: Path, family: KernelFamily, records: list[dict], page_ref: ExperimentPage,
                     requested: str) -> tuple[KernelEvidence, str | None]:
    """K7's evidence for filing ``page_ref`` as ``requested`` (the page's cited receipt, its
    bar, its ledger against the branch's candidate commits), and the receipt's repo path."""
    receipt_rel, receipt, problem = resolve_receipt(root, page_ref.rel, page_ref.frontmatter.get("verification_receipt"))
    ledger = kp.ledger(page_ref.page)
    branch = page_branch(records, page_ref.exp_id)
    branch = branch if branch and kernel_git.branch_exists(root, branch) else None
    refusal = None
    if receipt is not None:
        refusal, problem = _receipt_binding(root, family, records, page_ref.exp_id, branch, receipt_rel, receipt)
        receipt = None if refusal or problem else receipt
        problem = refusal or problem
    commits = len(candidate_commits(root, branch, family.slug, page_ref.exp_id)) if branch else None
    return KernelEvidence(requested=requested, receipt=receipt, receipt_problem=problem,
                          bar=kp.speedup_bar(page_ref.frontmatter), ledger_rows=len(ledger.rows) if ledger else 0,
                          branch_commits=commits, refusal=refusal), receipt_rel


def _receipt_binding(root: Path, family: KernelFamily, records: list[dict], vid: str, branch: str | None,
                     receipt_rel: str, receipt: dict) -> tuple[str | None, str | None]:
    """:func:`sealing.check_bound` of a cited receipt; a missing key refuses as well."""
    try:
        return sealing.check_bound(root, family, records, vid, branch, receipt_rel, receipt,
                                   read_binding(root, family)["candidate"])
    except WikiError as err:
        return f"the receipt {receipt_rel} cannot be checked: {err.message}", None


def _results_table(receipt: dict | None) -> str:
    timing = (receipt or {}).get("timing", {})
    ref, cand, ratio = timing.get("reference_p50_ms"), timing.get("candidate_p50_ms"), timing.get("speedup")
    if ref is None or cand is None:
        return "No co-measured timing (no valid receipt).\n"
    return ("| metric | baseline | this run | delta | noise band |\n|---|---|---|---|---|\n"
            f"| p50 ms | {ref:.4g} | {cand:.4g} | {cand - ref:+.4g} | interleaved, {timing.get('reps')} reps |\n"
            f"| speedup | 1.0x | {ratio:.3g}x | {ratio - 1:+.3g}x | — |\n")


def _speedup_of(root: Path, family_rel: str, cell: str) -> float | None:
    from wikiengine.model.variant_matrix import cell_reference

    ref = cell_reference(cell, family_rel, re.compile(r"(?P<id>v\d{3,}[a-z]?)"))
    text = repo_text(root, ref.target) if ref is not None and ref.target else None
    if text is None:
        return None
    front = parse_page(text, ref.target).frontmatter
    value = front.get("speedup")
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _leads_body(section_body: str, add: dict[str, str], drop: set[str]) -> str:
    lines = [ln for ln in section_body.strip("\n").splitlines()
             if not any(re.match(rf"^[ \t]*[-*][ \t]+\*\*{re.escape(d)}\*\*", ln) for d in drop)]
    lines = [ln for ln in lines if ln.strip()]
    have = {m.group(1) for ln in lines for m in [re.match(r"^[ \t]*[-*][ \t]+\*\*([a-z0-9-]+)\*\*", ln)] if m}
    lines += [f"- **{slug}**: {why}" for slug, why in add.items() if slug not in have]
    return "\n" + "\n".join(lines) + ("\n\n" if lines else "\n")


@dataclass(frozen=True)
class KernelFiling:
    """What `wiki kernel file` decided for one page: the capped verdict, the receipt behind
    it and the leads it adds."""

    page_ref: ExperimentPage
    requested: str
    verdict: str
    caps: list[str]
    receipt: dict | None
    receipt_rel: str | None
    receipt_problem: str | None
    ratio: float | None  # the receipt's speedup
    leads: dict[str, str]  # slug -> why: the receipt's and the command line's
    date: str

    @property
    def slug(self) -> str:
        return self.page_ref.slug or self.page_ref.exp_id

    @property
    def variant(self) -> str:
        return str(self.page_ref.frontmatter.get("variant", ""))

    @property
    def lever(self) -> str:
        return str(self.page_ref.frontmatter.get("lever", ""))


def file_verdict(root: Path, family: KernelFamily, *, verdict: str, reason: str | None = None, vid: str | None = None,
                 leads: dict[str, str] | None = None, dry_run: bool = False, date: str | None = None, clock: Clock = utcnow) -> dict:
    """`wiki kernel file` (K7, K8): the capped verdict, the page's Results, Profile, HLO Dump,
    Verdict and leads; the family page's Current best, Frontier exp and hypotheses;
    RESULTS.tsv and the log's digest line: one commit."""
    if verdict not in ex.VERDICTS:
        raise WikiError(f"--verdict {verdict!r} is not one of {', '.join(ex.VERDICTS)}")
    date = date or today(clock)
    with LaneLock(root, family.txn_lane) as lock:
        txn = LaneTxn(root, family.txn_lane)
        records, page_ref = open_experiment(root, family, txn, vid)
        filing = decide_kernel_filing(root, family, records, page_ref, verdict, leads, date)
        txn.write(page_ref.rel, kernel_filed_page_text(filing, reason))
        moved = _update_family_page(txn, root, family, filing)
        _record_kernel_filing(txn, family, filing, moved, at=now_iso(clock))
        result = {"family": family.slug, "vid": page_ref.exp_id, "page": page_ref.rel, "verdict": filing.verdict,
                  "requested": verdict, "capped": filing.caps, "speedup": filing.ratio, "current_best_moved": moved,
                  "leads": sorted(filing.leads), "recovered": lock.recovered}
        if dry_run:
            return {**result, "dry_run": True, "would_write": txn.changed()}
        result["commit"] = txn.commit(f"kernel({family.slug} {page_ref.exp_id}): file {filing.slug} — {filing.verdict}")
    if moved and filing.receipt is not None:
        integration = read_binding(root, family).get("integration_branch", family.integration_branch)
        result["integration_advanced"] = kernel_git.fast_forward(root, integration, filing.receipt["commit"])
    if filing.verdict == "supported" and page_ref.frontmatter.get("activity") == "optimization":
        result["validation_stub"] = open_validation_stub(root, family, page_ref, filing.ratio, dry_run=dry_run)
    return result


def decide_kernel_filing(root: Path, family: KernelFamily, records: list[dict], page_ref: ExperimentPage,
                         requested: str, leads: dict[str, str] | None, date: str) -> KernelFiling:
    """K7: cap the requested verdict by the evidence (:func:`verdict_evidence`)."""
    evidence, receipt_rel = verdict_evidence(root, family, records, page_ref, requested)
    if evidence.refusal:
        raise WikiError(evidence.refusal)
    receipt = evidence.receipt
    filed, caps = cap_kernel_verdict(evidence)
    ratio = kernel_receipt.speedup(receipt) if receipt else None
    new_leads = {lead["slug"]: lead["why"] for lead in (receipt or {}).get("leads", [])}
    new_leads.update(leads or {})
    return KernelFiling(page_ref, requested, filed, caps, receipt, receipt_rel, evidence.receipt_problem, ratio,
                        new_leads, date)


def kernel_filed_page_text(filing: KernelFiling, reason: str | None) -> str:
    """The page as filed: Results, Profile, HLO Dump, Verdict, Next hypotheses and the frontmatter."""
    page_ref, receipt, filed = filing.page_ref, filing.receipt, filing.verdict
    firing = (receipt or {}).get("firing", {})
    page = page_ref.page.with_section_body("Results", "\n" + _results_table(receipt) + "\n")
    page = page.with_section_body("Profile", "\n" + (
        f"Co-measured in one process, interleaved, one thread ({(receipt or {}).get('verifier', 'no verifier')}); "
        f"receipt `{page_ref.frontmatter.get('verification_receipt')}`.\n\n" if receipt else
        f"Not measured: {filing.receipt_problem}.\n\n"))
    audit = firing.get("audit", "silent no-op" if receipt else None)
    page = page.with_section_body("HLO Dump", "\n" + (
        f"Firing audit: {audit} — declared op `{firing.get('op')}`; ops seen: "
        f"{', '.join(f'`{o}`' for o in firing.get('ops_seen', [])) or 'none'}.\n\n" if audit else
        "Firing audit: partial — no receipt, the candidate's op was not traced.\n\n"))
    verdict_body = f"\n**{filed}** — {' '.join((reason or 'as measured').split())}\n"
    if filing.caps:
        verdict_body += "\n" + "\n".join(f"- Capped: {c}." for c in filing.caps) + "\n"
    page = page.with_section_body("Verdict", verdict_body + "\n")
    next_section = page.section(kp.NEXT_HYPOTHESES)
    page = page.with_section_body(kp.NEXT_HYPOTHESES, _leads_body(next_section.body if next_section else "", filing.leads, set()))
    ratio = filing.ratio
    updates = {"status": ex.FILED, "verdict": filed, "updated": filing.date, "speedup": round(ratio, 4) if ratio else None}
    if filed == "supported":
        updates["verified_by"] = kp.VERIFIER
    return page.with_frontmatter(updates).to_text()


def _update_family_page(txn: LaneTxn, root: Path, family: KernelFamily, filing: KernelFiling) -> bool:
    """K8: the family page's Current best and Frontier exp (True when they moved), its leads and Open hyps."""
    family_text, moved = _move_current_best(root, family, txn.read(family.family_page), filing)
    family_page = _family_leads(parse_page(family_text, family.family_page), family, filing)
    if family_page.has_frontmatter:
        family_page = family_page.with_frontmatter({"updated": filing.date})
    matrix = parse_matrix(family_page)
    if matrix is not None and matrix.row(filing.variant) is not None:
        count = len(kp.open_leads(family_page))
        family_page = parse_page(set_cells(family_page.to_text(), matrix, filing.variant, {"Open hyps": str(count)}),
                                 family.family_page)
    txn.write(family.family_page, family_page.to_text())
    return moved


def _move_current_best(root: Path, family: KernelFamily, family_text: str, filing: KernelFiling) -> tuple[str, bool]:
    """The family page's text with the row's Current best and Frontier exp moved to a supported
    page that beats the row's best speedup, and whether they moved."""
    page_ref, variant, ratio = filing.page_ref, filing.variant, filing.ratio
    matrix = parse_matrix(parse_page(family_text, family.family_page))
    if matrix is None or matrix.row(variant) is None or filing.verdict != "supported" or not ratio:
        return family_text, False
    best = _speedup_of(root, family.family_page, matrix.row(variant).cell(CURRENT_BEST))
    if not (best is None or ratio > best):
        return family_text, False
    return set_cells(family_text, matrix, variant, {
        CURRENT_BEST: f"[{page_ref.exp_id}-{filing.slug}]({_rel_link(family.family_page, page_ref.rel)}) {ratio:.3g}x",
        FRONTIER_EXP: f"{page_ref.exp_id}-{filing.slug}"}), True


def _family_leads(family_page, family: KernelFamily, filing: KernelFiling):
    """The family page with the filing's new leads open, and its lever retired."""
    page_ref, lever = filing.page_ref, filing.lever
    for title in kp.OPEN_LEADS[:1]:
        section = family_page.section(title)
        family_page = family_page.with_section_body(title, _leads_body(section.body if section else "", filing.leads, {lever}))
    if lever:
        retired = family_page.section(kp.RETIRED_LEADS)
        family_page = family_page.with_section_body(kp.RETIRED_LEADS, _leads_body(
            retired.body if retired else "", {lever: f"tried by [{page_ref.exp_id}-{filing.slug}]"
                                                     f"({_rel_link(family.family_page, page_ref.rel)}): {filing.verdict}"},
            set()))
    variant_section = family_page.section(kp.OPEN_LEADS[1])
    return family_page.with_section_body(kp.OPEN_LEADS[1], _leads_body(
        variant_section.body if variant_section else "", {}, {lever}))


def _record_kernel_filing(txn: LaneTxn, family: KernelFamily, filing: KernelFiling, moved: bool, *, at: str) -> None:
    """The filing's log digest line, RESULTS.tsv row and journal record."""
    page_ref, ratio, filed = filing.page_ref, filing.ratio, filing.verdict
    delta = f"{ratio:.3g}x vs reference" if ratio else "no speedup measured"
    entry = logbook.render_entry(filing.date, "loop-iteration",
                                 f"{page_ref.exp_id}-{filing.slug} on {filing.variant}: {filed} ({delta})")
    txn.write(family.log, logbook.insert_entry(txn.read(family.log), entry))
    timing = (filing.receipt or {}).get("timing", {})
    txn.write(family.results, results_tsv.append_row(txn.read(family.results), {
        "exp_id": page_ref.exp_id, "date": filing.date, "step_time_ms": timing.get("candidate_p50_ms"),
        "config": filing.variant, "status": results_tsv.STATUS_OF_VERDICT[filed],
        "description": f"{filing.lever}: {page_ref.frontmatter.get('hypothesis', '')}"}, family.results))
    txn.write(family.journal, append_record(txn.read(family.journal), {
        "op": "file", "vid": page_ref.exp_id, "verdict": filed, "requested": filing.requested,
        "receipt": filing.receipt_rel, "frontier_moved": moved, "page": page_ref.rel,
        "digest": page_digest(txn.read(page_ref.rel)), "at": at}))


def open_validation_stub(root: Path, family: KernelFamily, page_ref: ExperimentPage, ratio: float | None,
                         *, dry_run: bool) -> dict:
    """A supported optimization opens the model lane's validation stub (the lane writer's
    `wiki exp new`); it never moves a model page's Current best itself."""
    from wikiengine.model.lanes import lane_of_path
    from wikiengine.step import writers as lw

    profile = str(page_ref.frontmatter.get("profile", ""))
    lane = lane_of_path(profile)
    if lane is None:
        return {"skipped": f"the cited profile {profile!r} is not a model-lane page"}
    source = parse_page(read_text(root / profile, profile, within=root), profile).frontmatter
    with tempfile.TemporaryDirectory(prefix="wiki-kernel-") as tmp:
        proposal = Path(tmp, "proposal.md")
        proposal.write_text(
            f"**Hypothesis**: the {family.slug} kernel {page_ref.exp_id} ({ratio or 0:.3g}x at its op-point) raises the "
            "lane's target metric when it replaces the reference op in the model.\n\n"
            f"**Mechanism**: swap the reference op for kernel/{family.slug} {page_ref.exp_id} in the model's step.\n\n"
            "**Predicted signal**: the op's share of step time drops as the kernel's p50 ratio predicts.\n\n"
            "**Falsification criterion**: no gain beyond the lane's noise band, or a parity failure in the model.\n",
            encoding="utf-8")
        return lw.new_experiment(root, lane, slug=f"validate-{family.slug.replace('_', '-')}-{page_ref.exp_id}",
                                 variant=str(source.get("variant", "")), proposal_path=proposal, track=None,
                                 dry_run=dry_run)


# --- ruling a lever out ----------------------------------------------------------------------


def rule_out(root: Path, family: KernelFamily, lever: str, *, reason: str, dry_run: bool = False,
             date: str | None = None, clock: Clock = utcnow) -> dict:
    """`wiki kernel rule-out`: record on the family page that a lever of the class page
    cannot apply, and why on mechanism (the close counts it as covered)."""
    if not _SLUG_RE.fullmatch(lever):
        raise WikiError(f"lever {lever!r} is not lower-case words joined by '-'")
    if len(reason.split()) < 4 or ex.is_placeholder(reason):
        raise WikiError("--reason must say why the lever cannot apply, on mechanism (a sentence, not a placeholder)")
    date = date or today(clock)
    with LaneLock(root, family.txn_lane) as lock:
        txn = LaneTxn(root, family.txn_lane)
        if not txn.exists(family.family_page):
            raise WikiError("the family has no family page", family.family_page)
        page = parse_page(txn.read(family.family_page), family.family_page)
        section = page.section(kp.RULED_OUT)
        page = page.with_section_body(kp.RULED_OUT, _leads_body(section.body if section else "",
                                                                {lever: " ".join(reason.split())}, {lever}))
        if page.has_frontmatter:
            page = page.with_frontmatter({"updated": date})
        txn.write(family.family_page, page.to_text())
        txn.write(family.journal, append_record(txn.read(family.journal), {
            "op": "rule-out", "lever": lever, "reason": " ".join(reason.split()), "at": now_iso(clock)}))
        result = {"family": family.slug, "lever": lever, "reason": " ".join(reason.split()), "recovered": lock.recovered}
        if dry_run:
            return {**result, "dry_run": True, "would_write": txn.changed()}
        result["commit"] = txn.commit(f"kernel({family.slug}): rule out lever {lever} on mechanism")
        return result
