"""The lane writers: `wiki exp new|file|retry`, `wiki log add`, `wiki backfill`.

Each operation reads the lane (pages, model page, log, journal, RESULTS.tsv), decides
what every file must become, and hands the texts to a :class:`~wikiengine.step.txn.LaneTxn`
under the lane lock, which writes, re-lints and commits them as one. Everything here
returns a plain dict: the JSON the commands print.
"""

from __future__ import annotations

import json
import os
import posixpath
import re
from dataclasses import dataclass, field, replace
from pathlib import Path

from wikiengine.core.clock import Clock, now_iso, today, utcnow
from wikiengine.core.errors import PageError, Refused, WikiError
from wikiengine.core.page import parse_page
from wikiengine.core.safe_read import load_json, read_text, repo_text
from wikiengine.core.text import escape_cell, folded
from wikiengine.model import experiment as ex
from wikiengine.model import logbook, results_tsv
from wikiengine.model.cell_figures import read_figure, render_figures, restated
from wikiengine.model.evidence import (
    COMPLETED,
    IN_FLIGHT,
    NEVER_DISPATCHED,
    Band,
    RunEvidence,
    band_for_run,
    run_evidence,
)
from wikiengine.model.experiment import AA_VID, ExperimentPage
from wikiengine.model.index import counted_sections, section_pages
from wikiengine.model.journal import BranchIds, append_record, next_id, next_retry, page_digest, parse_journal, used_ids
from wikiengine.model.knobs import Knobs, canonical, knob_problems, knobs_block, parse_knobs, stray_yaml_line
from wikiengine.model.knobs import setup_section as setup_section_of
from wikiengine.model.lane_queue import FILED, OPEN, idle_track, lane_queue, placements, session_track_count, track_of
from wikiengine.model.lanes import HYPOTHESES_DIR, INDEX, Lane
from wikiengine.model.progress import filed_mechanisms, thrash_of
from wikiengine.model.variant_matrix import BASELINE, CURRENT_BEST, FRONTIER_EXP, parse_matrix, set_cells
from wikiengine.model.verdicts import Comparison, Evidence, cap_verdict, compare, is_better
from wikiengine.step.lane_read import (  # the lane as the writers and the wake read it
    LaneSettings,
    artifact_paths,
    find_page,
    lane_pages,
    lane_settings,
    model_page_of,
)
from wikiengine.step.txn import LaneLock, LaneTxn

_SLUG_RE = re.compile(r"[a-z0-9][a-z0-9-]{0,59}")


# --- the proposal ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Proposal:
    """An agent's proposal for a stub: its hypothesis paragraphs and setup."""

    paragraphs: dict[str, str]  # label -> text
    setup: str
    hypothesis_slug: str | None
    knobs: Knobs | None = None  # the Setup's yaml block (None: the proposal sets no knobs)


def parse_proposal(path: Path) -> Proposal:
    """The four labelled paragraphs and the planned setup of a proposal file."""
    if not os.path.lexists(path):
        raise WikiError("no such proposal file", path)
    text = read_text(path, path, "proposal")
    page = parse_page(text, path)
    found = ex.labelled_paragraphs(page.body)
    offset = page.body_line
    for label in ex.LABELS:
        if label not in found:
            raise WikiError(f"the proposal has no **{label}** paragraph", path)
        value, line = found[label]
        if not value or ex.is_placeholder(value):
            raise WikiError(f"the **{label}** paragraph is empty", path, offset + line)
    norm = {label: folded(found[label][0]) for label in ex.LABELS}
    if norm["Falsification criterion"] == norm["Predicted signal"]:
        raise WikiError("the falsification criterion only repeats the predicted signal: say what would refute it",
                        path, offset + found["Falsification criterion"][1])
    stray = stray_yaml_line(page)
    if stray is not None:
        raise WikiError("a yaml block outside the first one of ## Setup is never the run's config (the run would "
                        "measure the frontier while the page claims the change): move the knobs into ## Setup's "
                        "yaml block, or pass them with --knob KEY=VALUE", path, stray)
    setup_section = setup_section_of(page)
    setup = setup_section.body.strip() if setup_section is not None else ""
    slug = page.frontmatter.get("hypothesis") if isinstance(page.frontmatter.get("hypothesis"), str) else None
    return Proposal({label: found[label][0] for label in ex.LABELS}, setup, slug, parse_knobs(page, path))


class Thrashing(Refused):
    """A new stub on a mechanism (or v-id) with K weak results in a row, with no word of
    what changed (exit 3, nothing written)."""


def refuse_thrashing(records: list[dict], pages: list[ExperimentPage], k: int, reason: str | None, *,
                     mechanism: str = "", vid: str = "") -> None:
    """K consecutive invalid/inconclusive results on this mechanism or on this v-id's letters
    (:func:`wikiengine.model.progress.thrash_of`, the watcher's computation) among the lane's
    journal ``records`` and ``pages``: refused unless ``reason`` says what changed."""
    streak = thrash_of(records, filed_mechanisms(records, pages), k, mechanism=mechanism, vid=vid)
    if streak is not None and not reason:
        raise Thrashing(f"{len(streak.vids)} invalid/inconclusive results in a row on this {streak.kind} "
                        f"({', '.join(streak.vids)}): say what changed with --reformulated-because TEXT, "
                        "or formulate a different mechanism")


def _one_line(text: str | None, flag: str) -> str | None:
    """A reason given on the command line, on one line (empty: exit 2)."""
    if text is None:
        return None
    text = " ".join(text.split())
    if not text:
        raise WikiError(f"{flag} is empty: say why")
    return text


class LaneStopped(Refused):
    """The lane's newest session was stopped: no new stub until `wiki loop start` (exit 3)."""


def refuse_stopped_lane(records: list[dict], lane: Lane) -> None:
    """A stub after `wiki loop stop` would never be dispatched: the newest of the journal's
    ``start``/``stop`` records must not be a stop (a lane never started takes stubs)."""
    marks = [r.get("op") for r in records if r.get("op") in ("start", "stop")]
    if marks and marks[-1] == "stop":
        raise LaneStopped(f"lane {lane.model_prefix}/{lane.name} was stopped (`wiki loop stop`): start a session "
                          f"first (`wiki loop start {lane.model_prefix} {lane.name}`)")


def refuse_mechanism_in_flight(pages: list[ExperimentPage], proposal: Proposal, track) -> None:
    """One mechanism in flight at a time: no open stub (of the lane's ``pages``) of another track may test it."""
    mechanism = folded(proposal.paragraphs["Mechanism"])
    for page in pages:
        if page.is_open and page.frontmatter.get("track") != track and page.mechanism == mechanism:
            raise WikiError(f"the mechanism is already in flight on track {page.frontmatter.get('track')} ({page.rel})")


def declared_knobs(root: Path, lane: Lane) -> dict | None:
    """The knobs the lane's program declares (``knobs:`` in its ``## Config``), checked
    against the schema; None when it declares none."""
    from wikiengine.model import cascade, targets

    program = cascade.resolve(targets.target_for_model(root, lane.model_prefix, lane.name),
                              validate=frozenset({"knobs"}))
    return (program.config or {}).get("knobs")


def refuse_undeclared_knobs(knobs: Knobs, declared: dict | None, path) -> None:
    """Every knob of the stub is one the lane declares, of its type and within its range."""
    if declared is None:
        return
    for name, problem in knob_problems(knobs.values, declared):
        raise WikiError(f"knob {name!r}: {problem}", path, knobs.line(name))


def _page_knobs(page: ExperimentPage) -> Knobs | None:
    """A lane page's knobs; a page whose Setup does not parse (an older page) has none to compare."""
    try:
        return parse_knobs(page.page, page.rel) if page.page is not None else None
    except WikiError:
        return None


def refuse_same_knobs(pages: list[ExperimentPage], knobs: Knobs | None, variant: str, rerun_reason: str | None) -> None:
    """One knob set is one change: not while it is in flight on any track (an open stub of the
    lane's ``pages``), and not again after it was filed refuted on this variant unless a rerun
    reason is given."""
    if knobs is None:
        return
    wanted = canonical(knobs.values)
    for page in pages:
        if not (page.is_open or page.verdict == "refuted"):
            continue
        theirs = _page_knobs(page)
        if theirs is None or canonical(theirs.values) != wanted:
            continue
        if page.is_open:
            raise WikiError(f"the same knobs are already in flight on track {page.frontmatter.get('track')} "
                            f"({page.rel}): whatever the prose says, it is the same change")
        if str(page.frontmatter.get("variant")) == variant and not rerun_reason:
            raise WikiError(f"the same knobs were filed refuted on {variant} ({page.rel}); to run them again, "
                            "say why with --rerun-reason TEXT")


def frontmatter_yaml(values: dict) -> str:
    """A frontmatter block's YAML, keys in the given order, scalars quoted only where needed."""
    from wikiengine.core import yaml_dump

    return yaml_dump.block({k: v for k, v in values.items() if v is not None})


def stub_head(front: dict, vid: str, slug: str, proposal) -> tuple[list[str], list[str]]:
    """A stub's frontmatter lines and the start of its body: the title and the four labelled
    paragraphs under the hypothesis section (lane and kernel stubs alike)."""
    lines = ["---", frontmatter_yaml(front).rstrip("\n"), "---"]
    body = [f"# {vid}: {slug}", "", f"## {ex.HYPOTHESIS_SECTION}", ""]
    for label in ex.LABELS:
        body += [f"**{label}**: {' '.join(proposal.paragraphs[label].split())}", ""]
    return lines, body


def render_stub(lane: Lane, vid: str, slug: str, variant: str, proposal: Proposal, track: int | None,
                workload: str, paths: dict[str, str], date: str, model_page_stem: str,
                rerun_reason: str | None = None, reformulated_because: str | None = None) -> str:
    front = {
        "title": f"{vid} {slug}",
        "type": "experiment",
        "model": model_page_stem,
        "variant": variant,
        "hypothesis": proposal.hypothesis_slug or " ".join(proposal.paragraphs["Hypothesis"].split())[:200],
        "status": ex.IN_PROGRESS,
        "created": date,
        "updated": date,
        "track": track,
        "workload_name": workload,
        "artifacts": paths,
        "rerun_reason": rerun_reason,
        "reformulated_because": reformulated_because,
    }
    lines, body = stub_head(front, vid, slug, proposal)
    body += ["## Setup", "", proposal.setup or "Planned setup: see the lane program (`wiki resolve`).", "",
             f"**Workload**: `{workload}`", "",
             f"**Artifacts**: profile `{paths['xprof']}`, HLO `{paths['hlo']}`, metrics `{paths['metrics']}`", ""]
    for title in ex.SECTION_ORDER[2:]:
        body += [f"## {title}", ""]
    return "\n".join(lines) + "\n" + "\n".join(body)


# --- operations ------------------------------------------------------------------------------


def _touch_model_page(txn: LaneTxn, model_rel: str | None, date: str) -> None:
    """The lane filed a page: its model page is up to date as of ``date`` (MOD004)."""
    if model_rel is None:
        return
    page = parse_page(txn.read(model_rel), model_rel)
    if page.has_frontmatter and "updated" in page.frontmatter and str(page.frontmatter["updated"]) < date:
        txn.write(model_rel, page.with_frontmatter({"updated": date}).to_text())


def index_add(txn: LaneTxn, root: Path, pages: list[tuple[str, str]], section: str = "Experiments",
              create: bool = False) -> None:
    """List new pages (``(label, rel)``) in ``wiki/index.md``'s first ``## <section> (N)``
    section, N then counting the distinct pages it links (:func:`section_pages`, IDX001's
    count), when the wiki has an index; with ``create`` a missing section is added at the end."""
    if not pages or not (root / INDEX).is_file():
        return
    index = parse_page(txn.read(INDEX), INDEX)
    items = "".join(f"- [{label}]({posixpath.relpath(rel, 'wiki')})\n" for label, rel in pages)
    found = next((c for c in counted_sections(index) if c.name == section), None)
    if found is None:
        if create:
            txn.write(INDEX, index.to_text().rstrip("\n") + f"\n\n## {section} ({len(pages)})\n\n{items}")
        return
    old = found.section
    count = len(section_pages(old, INDEX) | {rel for _label, rel in pages})
    last = old is index.sections[-1]
    body = old.body.rstrip("\n") + "\n" + items + ("" if last else "\n")
    heading = re.sub(r"\(\d+\)(\s*)$", lambda m: f"({count}){m.group(1)}", old.heading, count=1)
    sections = [replace(s, heading=heading, body=body) if s is old else s for s in index.sections]
    txn.write(INDEX, index.bom + index.frontmatter_block + index.preamble + "".join(s.text for s in sections))


def place_stub(records: list[dict], pages: list[ExperimentPage], track: int | None) -> tuple[int | None, list[str]]:
    """Where a new stub waits (:mod:`wikiengine.model.lane_queue`), from the lane's journal
    ``records`` and ``pages``: ``track``, or without one the lowest idle track of the session,
    else the lane queue (None); and the v-ids it waits behind (empty: it runs at the next
    wake). A busy track queues the stub, never drops the run in flight."""
    placed = {vid for vid, _track in placements(records)}  # the queue asks the state of these alone
    states = {p.exp_id: FILED if ex.is_filed(p.frontmatter) else OPEN for p in pages if p.exp_id in placed}
    tracks = session_track_count(records)
    if track is None:
        track = idle_track(records, states, tracks)
    queue = lane_queue(records, states, tracks)
    if track is None:
        return None, [t.active for t in queue.tracks if t.active] + [*(v for t in queue.tracks for v in t.queued),
                                                                    *queue.waiting]
    if not 1 <= track <= tracks:
        return track, []  # a track no session has: nothing runs there to wait for
    held = queue.track(track)
    return track, [v for v in (held.active, *held.queued) if v]


def with_knobs(proposal: Proposal, knobs: Knobs | None, proposal_path: Path) -> Proposal:
    """The proposal with the knobs of ``--knob``/``--knobs`` as its Setup's yaml block (a
    proposal that has its own block and options too is refused: one source of knobs)."""
    if knobs is None:
        return proposal
    if proposal.knobs is not None:
        raise WikiError("the proposal's ## Setup has a yaml block and --knob/--knobs were given: give the knobs one way",
                        proposal_path)
    setup = (proposal.setup + "\n\n" if proposal.setup else "") + knobs_block(knobs.values)
    return replace(proposal, setup=setup, knobs=knobs)


def new_experiment(root: Path, lane: Lane, *, slug: str, variant: str, proposal_path: Path, track: int | None,
                   rerun_reason: str | None = None, reformulated_because: str | None = None,
                   knobs: Knobs | None = None, dry_run: bool = False, date: str | None = None,
                   clock: Clock = utcnow) -> dict:
    """`wiki exp new`: allocate the next v-id, write the stub (``knobs``: from ``--knob``/``--knobs``,
    its Setup's yaml block), claim it in the journal, commit."""
    from wikiengine.core.identity import workload_name

    if not _SLUG_RE.fullmatch(slug):
        raise WikiError(f"slug {slug!r} is not lower-case [a-z0-9-] (at most 60 characters)")
    if re.search(r"-[a-z]$", slug):
        raise WikiError(f"slug {slug!r} ends in a one-letter word, which reads as a retry letter: {slug[:-2]}, or a longer word")
    ex.refuse_a_misread_slug(slug)
    rerun_reason = _one_line(rerun_reason, "--rerun-reason")
    reformulated_because = _one_line(reformulated_because, "--reformulated-because")
    proposal = with_knobs(parse_proposal(proposal_path), knobs, proposal_path)
    if proposal.knobs is not None:
        refuse_undeclared_knobs(proposal.knobs, declared_knobs(root, lane), proposal_path if knobs is None else "--knob")
    date = date or today(clock)
    settings = lane_settings(root, lane)
    model_rel, _text, _page, matrix = model_page_of(root, lane)
    if matrix.row(variant) is None:
        raise WikiError(f"variant {variant!r} is not a row of the variant matrix (rows: {', '.join(matrix.keys()) or 'none'})",
                        model_rel, matrix.header_line)
    # git reads the branches' ids while the lock is taken and the lane's pages are read
    with BranchIds(root, lane) as branches, LaneLock(root, lane) as lock:
        txn = LaneTxn(root, lane)
        journal = txn.read(lane.journal)
        records, pages = parse_journal(journal, lane.journal), lane_pages(root, lane)  # read once for every guard
        refuse_stopped_lane(records, lane)
        track, waits = place_stub(records, pages, track)
        refuse_mechanism_in_flight(pages, proposal, track)
        refuse_same_knobs(pages, proposal.knobs, variant, rerun_reason)
        refuse_thrashing(records, pages, settings.thrash_k, reformulated_because,
                         mechanism=folded(proposal.paragraphs["Mechanism"]))
        vid = str(next_id(used_ids(root, lane, records, branches)))
        workload = workload_name(settings.user_prefix, lane.model_name, lane.name, int(vid[1:]), slug)
        paths = artifact_paths(settings, lane, vid, slug, date)
        rel = f"{lane.experiments_dir}/{ex.page_file_name(date, vid, slug)}"
        txn.write(rel, render_stub(lane, vid, slug, variant, proposal, track, workload, paths, date,
                                   posixpath.basename(model_rel)[:-3], rerun_reason, reformulated_because))
        claim = {"op": "claim", "vid": vid, "slug": slug, "track": track, "variant": variant, "workload": workload,
                 "page": rel, "at": now_iso(clock), "rerun_reason": rerun_reason,
                 "reformulated_because": reformulated_because}
        txn.write(lane.journal, append_record(journal, {k: v for k, v in claim.items() if v is not None or k == "track"}))
        index_add(txn, root, [(f"{vid} {slug}", rel)])
        result = {"vid": vid, "page": rel, "workload_name": workload, "artifacts": paths, "track": track,
                  "queued_after": waits, "recovered": lock.recovered}
        if dry_run:
            return {**result, "dry_run": True, "would_write": txn.changed()}
        result["commit"] = txn.commit(f"exp({vid}): stub {slug}")
        return result


def retry_experiment(root: Path, lane: Lane, vid: str, *, reformulated_because: str | None = None, dry_run: bool = False,
                     date: str | None = None, clock: Clock = utcnow) -> dict:
    """`wiki exp retry`: a new stub ``<vid><next letter>`` with the same hypothesis and mechanism
    (refused on a thrashing mechanism or v-id unless ``reformulated_because`` says what changed)."""
    from wikiengine.core.identity import workload_name

    reformulated_because = _one_line(reformulated_because, "--reformulated-because")
    date = date or today(clock)
    settings = lane_settings(root, lane)
    with LaneLock(root, lane) as lock:
        original = find_page(root, lane, vid)
        parsed = ex.parse_vid(original.exp_id)
        if parsed is None:
            raise WikiError(f"{original.exp_id} is not a v<NNN> id: retries take a letter after v<NNN>")
        txn = LaneTxn(root, lane)
        journal = txn.read(lane.journal)
        records, pages = parse_journal(journal, lane.journal), lane_pages(root, lane)
        refuse_stopped_lane(records, lane)
        refuse_thrashing(records, pages, settings.thrash_k, reformulated_because, mechanism=original.mechanism,
                         vid=original.exp_id)
        retry = next_retry(used_ids(root, lane, records), parsed)
        slug = original.slug or "retry"
        found = original.paragraphs
        if any(not found.get(label, ("", 0))[0] for label in ex.LABELS):
            raise WikiError("the page has no four labelled paragraphs to retry; a new mechanism is `wiki exp new`",
                            original.rel)
        setup = setup_section_of(original.page)
        proposal = Proposal({label: found[label][0] for label in ex.LABELS},
                            _planned_setup(setup.body if setup else ""),
                            original.frontmatter.get("hypothesis") if isinstance(original.frontmatter.get("hypothesis"), str) else None,
                            parse_knobs(original.page, original.rel))
        workload = workload_name(settings.user_prefix, lane.model_name, lane.name, retry.number, slug, retry.letter)
        paths = artifact_paths(settings, lane, str(retry), slug, date)
        rel = f"{lane.experiments_dir}/{ex.page_file_name(date, str(retry), slug)}"
        track = track_of(records).get(original.exp_id, original.frontmatter.get("track"))
        track, waits = place_stub(records, pages, track if isinstance(track, int) else None)
        refuse_mechanism_in_flight(pages, proposal, track)
        refuse_same_knobs(pages, proposal.knobs, str(original.frontmatter.get("variant", "")), f"a retry of {original.exp_id}")
        text = render_stub(lane, str(retry), slug, str(original.frontmatter.get("variant", "")), proposal,
                           track if isinstance(track, int) else None, workload, paths, date,
                           str(original.frontmatter.get("model", lane.model_name)),
                           reformulated_because=reformulated_because)
        txn.write(rel, text)
        record = {"op": "retry", "vid": str(retry), "of": original.exp_id, "slug": slug,
                  "track": track if isinstance(track, int) else None, "variant": original.frontmatter.get("variant"),
                  "workload": workload, "page": rel, "at": now_iso(clock)}
        txn.write(lane.journal, append_record(journal, {**record, "reformulated_because": reformulated_because}
                                              if reformulated_because else record))
        index_add(txn, root, [(f"{retry} {slug}", rel)])
        result = {"vid": str(retry), "retry_of": original.exp_id, "page": rel, "workload_name": workload,
                  "artifacts": paths, "track": track, "queued_after": waits, "recovered": lock.recovered}
        if dry_run:
            return {**result, "dry_run": True, "would_write": txn.changed()}
        result["commit"] = txn.commit(f"exp({retry}): stub retry of {original.exp_id} {slug}")
        return result


def _planned_setup(body: str) -> str:
    """A page's Setup without the lines the writer adds (workload, artifacts)."""
    keep = [ln for ln in body.strip().splitlines() if not ln.startswith(("**Workload**", "**Artifacts**"))]
    return "\n".join(keep).strip()


@dataclass(frozen=True)
class RunOutcome:
    """What a run's metrics file says besides its metrics."""

    exit_code: int | None = None
    parity: str | None = None  # "pass" | "fail" | None (no parity check)


METRIC_NAME_MAX = 64


def check_metric_name(name: str, path: Path | None = None) -> str:
    """``name`` if it can head a Results row and a ledger figure: 1-64 characters, none that
    ends a table cell or a line (``|``, a backtick, a backslash, a tab, a line break or any
    other control, format or bidirectional character; row 98); else :class:`WikiError`."""
    import unicodedata

    odd = next((c for c in name if c in "|`\\" or unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp")), None)
    if not name.strip() or len(name) > METRIC_NAME_MAX or odd is not None:
        why = (f"U+{ord(odd):04X} would break the Results table or the ledger line" if odd is not None
               else f"give 1-{METRIC_NAME_MAX} characters")
        raise WikiError(f"metric name {name[:80].encode('unicode_escape').decode('ascii')!r}: {why}", path)
    return name


def read_metrics(path: Path | None, pairs: list[str]) -> tuple[dict[str, float], RunOutcome]:
    """Metrics from ``--metrics FILE`` (a JSON object: numbers are metrics, ``exit_code`` and
    ``parity`` the outcome, strings, lists and objects detail) and ``--metric NAME=VALUE``."""
    metrics: dict[str, float] = {}
    exit_code = parity = None
    if path is not None:
        try:
            data = load_json(read_text(path, path, "metrics"), path)
        except json.JSONDecodeError as exc:
            raise WikiError(f"metrics file is not JSON: {exc.msg}", path, exc.lineno) from None
        if not isinstance(data, dict):
            raise WikiError("metrics file must hold a JSON object of name: number", path, 1)
        exit_code = data.pop("exit_code", None)
        if exit_code is not None and (isinstance(exit_code, bool) or not isinstance(exit_code, int)):
            raise WikiError(f"exit_code {exit_code!r} is not an integer", path)
        parity = data.pop("parity", None)
        if parity not in (None, "pass", "fail"):
            raise WikiError(f"parity {parity!r} is not 'pass' or 'fail'", path)
        values = data.get("metrics", data)
        if not isinstance(values, dict):
            raise WikiError("'metrics' must be an object of name: number", path)
        for name, value in values.items():
            if isinstance(value, (str, list, dict)) or value is None:
                continue  # a note or detail (an op digest, per-round figures, the configs): not a metric
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value or value in (float("inf"), float("-inf")):
                raise WikiError(f"metric {name!r} is {value!r}, not a finite number", path)
            metrics[check_metric_name(str(name), path)] = float(value)
    for pair in pairs:
        name, eq, value = pair.partition("=")
        try:
            number = float(value)
        except ValueError:
            number = None
        if not eq or not name.strip() or number is None or number != number or abs(number) == float("inf"):
            raise WikiError(f"--metric {pair!r} is not NAME=NUMBER")
        metrics[check_metric_name(name.strip())] = number
    return metrics, RunOutcome(exit_code, parity)


def _read_text_file(path: Path | None, kind: str) -> str | None:
    """The text of a ``profile`` or ``hlo`` file the agent names or the run recorded (None: none)."""
    return None if path is None else read_text(path, path, kind)


def lane_band(records: list[dict], evidence: RunEvidence, variant: str, measured: Comparison, floor_pct: float,
              run_metrics: dict[str, float]) -> tuple[Band | None, Comparison]:
    """The noise band a run is judged by: the lane's measured A/A band in force when it was
    dispatched, never narrower than ``noise_band_pct`` of the reference, widened (never
    narrowed) by the run's own in-process A/A figure when it reports a positive one."""
    band = band_for_run(records, evidence, variant)
    width = band.half_width if band else 0.0
    source = (f"the lane's A/A band ({band.n} runs of the unchanged frontier, MAD {band.mad:.3g})" if band
              else "no measured A/A band")
    floor = abs(measured.reference) * floor_pct / 100 if measured.reference and floor_pct > 0 else 0.0
    if floor > width:
        width, source = floor, source + f"; floored at {floor_pct:g}% of the reference (noise_band_pct)"
    own = run_metrics.get("noise_band")
    if own is not None and own > width:
        width, source = own, source + "; widened to the run's own in-process A/A figure"
    return band, replace(measured, noise_band=width, noise_source=source)


def _fmt(value: float | None) -> str:
    return "—" if value is None else f"{value:.6g}"


def results_table(metrics: dict[str, float], metric: str, measured: Comparison, band: Band | None = None) -> str:
    """Results as the table metric x baseline x this run x delta x noise band, how the target
    metric was compared, and the band's n and the delta's confidence. A metric name the run
    recorded is escaped as a cell (the agent's own are refused at the input)."""
    rows = ["| metric | baseline | this run | delta | noise band |", "|---|---|---|---|---|"]
    for name, value in metrics.items():
        own = name == metric
        base = measured.reference if own else None
        delta = measured.delta if own else None
        rows.append(f"| {escape_cell(name)} | {_fmt(base)} | {_fmt(value)} | {'—' if delta is None else f'{delta:+.6g}'} | "
                    f"{('±' + _fmt(measured.noise_band)) if own else '—'} |")
    note = f"\nThe {metric} baseline is {measured.reference_label}; noise band: {measured.noise_source}."
    confidence = band.confidence(measured.delta) if band else None
    if band is not None:
        note += (f" A/A band n={band.n}, MAD {band.mad:.3g}"
                 + (f"; the delta is {confidence:.1f} MADs." if confidence is not None else "; MAD 0: no confidence figure."))
    if measured.co_measured and measured.recorded is not None:
        note += f" Recorded {metric} (rescaled to the frontier's recorded figure): {measured.recorded:.6g}."
    return "\n".join(rows) + "\n" + note


def _rel_link(from_rel: str, to_rel: str) -> str:
    return posixpath.relpath(to_rel, posixpath.dirname(from_rel))


@dataclass(frozen=True)
class Filing:
    """What `wiki exp file` decided for one page: the capped verdict and the figures behind it
    (``metrics``: what the engine recorded; ``claimed``: what the agent passed, an annotation)."""

    target: ExperimentPage
    slug: str
    variant: str
    requested: str
    verdict: str
    caps: list[str]
    metric: str
    metrics: dict[str, float]
    measured: Comparison
    baseline: float | None
    frontier: float | None
    date: str
    evidence: RunEvidence
    band: Band | None = None
    claimed: dict[str, float] = field(default_factory=dict)
    claimed_outcome: RunOutcome = RunOutcome()
    external: bool = False  # filed with --external: the engine did not launch the run

    @property
    def invalid_kind(self) -> str | None:
        """Why an ``invalid`` filing is invalid: ``crash`` (a non-zero exit, a kill, a lost run)
        or ``parity`` (it ran, and broke numerics); None for another verdict or reason."""
        if self.verdict != "invalid":
            return None
        if self.evidence.crash or self.claimed_outcome.exit_code not in (None, 0):
            return "crash"
        return "parity" if "fail" in (self.evidence.parity, self.claimed_outcome.parity) else None

    @property
    def verdict_label(self) -> str:
        """The verdict as the log and the ledger say it: ``invalid (parity)`` apart from ``invalid (crash)``."""
        return f"{self.verdict} ({self.invalid_kind})" if self.invalid_kind else self.verdict

    @property
    def delta_text(self) -> str:
        """The change of the target metric against the frontier it was measured against."""
        measured = self.measured
        versus = measured.reference if measured.co_measured else (self.frontier if self.frontier is not None else self.baseline)
        return (f"{(measured.value - versus) / abs(versus) * 100:+.2f}% {self.metric} vs frontier"
                if measured.value is not None and versus else "no metric")


def run_on_record(records: list[dict], target: ExperimentPage, external: bool, stopping: bool = False) -> RunEvidence:
    """The engine's record of the page's run; exit 2 when there is nothing to file yet (never
    dispatched without ``--external``, or still in flight) or ``--external`` names a run the
    engine launched. ``stopping``: `wiki loop stop` resolves whatever is open, as it is."""
    evidence = run_evidence(records, target.exp_id)
    if stopping:
        return evidence
    if external:
        if evidence.state != NEVER_DISPATCHED:
            raise WikiError(f"{target.exp_id} was dispatched by the engine ({evidence.workload}): file it without "
                            "--external, from what the engine recorded", target.rel)
        return evidence
    if evidence.state == NEVER_DISPATCHED:
        raise WikiError(f"{target.exp_id} was never dispatched (no dispatch record in the lane journal): `wiki step` "
                        "runs it; a run made outside the engine is filed with --external (at most inconclusive)",
                        target.rel)
    if evidence.state == IN_FLIGHT:
        raise WikiError(f"{target.exp_id} is in flight ({evidence.workload} dispatched, no completion recorded): "
                        "the next `wiki step` processes it, then a verdict is owed", target.rel)
    return evidence


def file_experiment(root: Path, lane: Lane, vid: str, *, verdict: str, metrics: dict[str, float] | None = None,
                    outcome: RunOutcome = RunOutcome(), profile_path: Path | None = None, hlo_path: Path | None = None,
                    reason: str | None = None, external: bool = False, stopping: bool = False, dry_run: bool = False,
                    date: str | None = None, clock: Clock = utcnow) -> dict:
    """`wiki exp file`: Results, Profile, HLO Dump and Verdict (capped by what the engine
    recorded of the run), the status flip, the model page's row, the lane log, RESULTS.tsv,
    the hypothesis page and the journal: one commit. ``metrics``/``outcome`` are the
    agent's: they annotate the page and can only lower the verdict."""
    if verdict not in ex.VERDICTS:
        raise WikiError(f"--verdict {verdict!r} is not one of {', '.join(ex.VERDICTS)}")
    date = date or today(clock)
    settings = lane_settings(root, lane)
    with LaneLock(root, lane) as lock:
        target = find_page(root, lane, vid)
        if target.is_filed:
            raise WikiError(f"{target.exp_id} is filed and immutable; a rerun is `wiki exp retry {target.exp_id}`", target.rel)
        txn = LaneTxn(root, lane)
        records = parse_journal(txn.read(lane.journal), lane.journal)
        evidence = run_on_record(records, target, external, stopping)
        arts = evidence.artifacts
        profile = _read_text_file(profile_path or _path_or_none(arts.get("profile"), root), "profile")
        hlo = _read_text_file(hlo_path or _path_or_none(arts.get("hlo"), root), "hlo")
        model = model_page_of(root, lane)
        filing = decide_filing(root, lane, settings, target, model, requested=verdict, evidence=evidence,
                               records=records, claimed=metrics or {}, claimed_outcome=outcome, profile=profile,
                               hlo=hlo, date=date, external=external)
        txn.write(target.rel, filed_page_text(filing, profile, hlo, reason))
        value = filing.measured.recorded
        moved = filing.verdict == "supported" and value is not None and is_better(value, filing.frontier,
                                                                                  settings.higher_is_better)
        _update_model_page(txn, model, filing, moved)
        _record_filing(txn, root, lane, filing, moved=moved, at=now_iso(clock))
        result = {"vid": target.exp_id, "page": target.rel, "verdict": filing.verdict, "invalid": filing.invalid_kind,
                  "requested": verdict,
                  "capped": filing.caps, "metric": filing.metric, "value": value, "baseline": filing.baseline,
                  "delta": filing.measured.delta, "noise_band": filing.measured.noise_band,
                  "band_n": filing.band.n if filing.band else None,
                  "confidence": filing.band.confidence(filing.measured.delta) if filing.band else None,
                  "evidence": {"state": evidence.state, "workload": evidence.workload, "exit_code": evidence.exit_code,
                               "killed": evidence.killed, "parity": evidence.parity},
                  "current_best_moved": moved, "recovered": lock.recovered}
        if dry_run:
            return {**result, "dry_run": True, "would_write": txn.changed()}
        result["commit"] = txn.commit(f"exp({target.exp_id}): file {filing.slug} — {filing.verdict}")
        return result


def _path_or_none(value, root: Path) -> Path | None:
    """A recorded artifact path (repository-relative, or absolute outside the repository)."""
    return root / value if value else None


def decide_filing(root: Path, lane: Lane, settings: LaneSettings, target: ExperimentPage, model, *, requested: str,
                  evidence: RunEvidence, records: list[dict], claimed: dict[str, float], claimed_outcome: RunOutcome,
                  profile: str | None, hlo: str | None, date: str, external: bool = False) -> Filing:
    """Measure the recorded run against its frontier and the lane's band, and cap the requested
    verdict by the evidence (:func:`~wikiengine.model.verdicts.cap_verdict`); the agent's
    figures never enter the comparison, its outcome only lowers."""
    variant = str(target.frontmatter.get("variant", ""))
    metric = settings.target_metric
    baseline, frontier, band, measured = measure_run(root, settings, target, model, records, evidence)
    firing = ex.firing_audit(hlo)
    crash = evidence.crash or (f"the agent reports exit code {claimed_outcome.exit_code}"
                               if claimed_outcome.exit_code not in (None, 0) else None)
    filed, caps = cap_verdict(Evidence(
        requested=requested, crashed=crash is not None, crash_reason=f"the run crashed: {crash}" if crash else "",
        parity_failed="fail" in (evidence.parity, claimed_outcome.parity), backfilled=target.backfilled,
        external=external, exit_unrecorded=evidence.unrecorded_exit,
        band_measured=band is not None, has_profile=bool(profile and profile.strip()),
        has_hlo=bool(hlo and hlo.strip()),
        firing="silent no-op" if evidence.no_op else firing,
        delta=measured.delta, noise_band=measured.noise_band, higher_is_better=settings.higher_is_better,
    ))
    return Filing(target, target.slug or target.exp_id, variant, requested, filed, caps, metric, evidence.metrics,
                  measured, baseline, frontier, date, evidence, band, dict(claimed), claimed_outcome, external)


def measure_run(root: Path, settings: LaneSettings, target: ExperimentPage, model, records: list[dict],
                evidence: RunEvidence) -> tuple[float | None, float | None, Band | None, Comparison]:
    """``(baseline, Current best, band, comparison)`` of a recorded run: its target metric
    against the frontier it was dispatched against, judged by the lane's band."""
    model_rel, _text, _page, matrix = model
    variant = str(target.frontmatter.get("variant", ""))
    row = matrix.row(variant)
    if row is None:
        raise WikiError(f"variant {variant!r} of {target.exp_id} is not a row of the variant matrix", model_rel)
    metric = settings.target_metric
    baseline = cell_figure(model, row, BASELINE, metric)
    frontier = frontier_value(root, model, row, metric, records)
    against = _measured_against(root, records, evidence, metric, baseline, frontier)
    band, measured = lane_band(records, evidence, variant, compare(metric, evidence.metrics, baseline, against, 0.0, ""),
                               settings.noise_band_pct, evidence.metrics)
    return baseline, frontier, band, measured


def preview_filing(root: Path, lane: Lane, vid: str) -> Filing:
    """What `wiki exp file VID --verdict supported` would decide now, written nowhere: the
    evidence the engine holds and the caps that apply (the wake's ``needs``)."""
    settings = lane_settings(root, lane)
    target = find_page(root, lane, vid)
    records = parse_journal(repo_text(root, lane.journal, "journal") or "", lane.journal)
    evidence = run_on_record(records, target, external=False)
    arts = evidence.artifacts
    profile = _read_text_file(_path_or_none(arts.get("profile"), root), "profile")
    hlo = _read_text_file(_path_or_none(arts.get("hlo"), root), "hlo")
    return decide_filing(root, lane, settings, target, model_page_of(root, lane), requested="supported",
                         evidence=evidence, records=records, claimed={}, claimed_outcome=RunOutcome(),
                         profile=profile, hlo=hlo, date=today())


def _claims_text(filing: Filing) -> str:
    """The agent's figures, as an annotation that says it is one."""
    said = [f"{k}={v:g}" for k, v in filing.claimed.items()]
    said += [f"exit_code={filing.claimed_outcome.exit_code}"] if filing.claimed_outcome.exit_code is not None else []
    said += [f"parity={filing.claimed_outcome.parity}"] if filing.claimed_outcome.parity else []
    if not said:
        return ""
    return ("\n\nFigures the agent passed to `wiki exp file` (its annotation, not evidence: they never raise the "
            f"verdict, enter the table above or move Current best): {', '.join(said)}.")


def _outcome_text(evidence: RunEvidence, external: bool) -> str:
    if external:
        return " The engine did not launch this run (filed with --external): nothing above was measured by it."
    if evidence.state != COMPLETED:
        return f" The run was {evidence.state} when the lane stopped: nothing was measured."
    parts = [f"Workload {evidence.workload}", f"exit code {evidence.exit_code if evidence.exit_code is not None else 'not recorded'}"]
    if evidence.killed:
        parts.append(f"killed by the wake ({evidence.killed})")
    if evidence.preempted:
        parts.append(f"attempt {evidence.attempts} of {evidence.attempts}: the {evidence.preempted} before it were "
                     "preempted (not failures; filed from the completed attempt)")
    if evidence.parity:
        parts.append(f"parity check {evidence.parity}")
    return " " + "; ".join(parts) + " (the journal's completion record)."


def filed_page_text(filing: Filing, profile: str | None, hlo: str | None, reason: str | None) -> str:
    """The page as filed: Results, Profile, HLO Dump, Verdict and the frontmatter's status flip."""
    page = filing.target.page
    evidence = filing.evidence
    table = results_table(filing.metrics, filing.metric, filing.measured, filing.band) if filing.metrics else "No figures recorded by the engine."
    page = page.with_section_body(section_title(page, "Results"), "\n" + table + _outcome_text(evidence, filing.external)
                                  + _claims_text(filing) + "\n\n")
    missing = "Not captured: the run left no {what} and none was given to `wiki exp file`, so the verdict is at most inconclusive."
    page = page.with_section_body(section_title(page, "Profile"), "\n" + (profile.strip() if profile and profile.strip()
                                                                   else missing.format(what="profile")) + "\n\n")
    page = page.with_section_body(section_title(page, "HLO Dump"), "\n" + (hlo.strip() if hlo and hlo.strip()
                                                                    else missing.format(what="HLO dump")) + "\n\n")
    verdict_body = f"\n**{filing.verdict}** — {' '.join((reason or 'as measured').split())}\n"
    if filing.caps:
        verdict_body += "\n" + "\n".join(f"- Capped: {c}." for c in filing.caps) + "\n"
    page = page.with_section_body(section_title(page, "Verdict"), verdict_body + "\n")
    value = filing.measured.recorded
    updates = {"status": ex.FILED, "verdict": filing.verdict, "updated": filing.date, "metrics": filing.metrics or None}
    if reason:
        updates["reason"] = " ".join(reason.split())
    if value is not None:
        updates[filing.metric] = round(value, 6)
    if evidence.exit_code is not None:
        updates["exit_code"] = evidence.exit_code
    if evidence.parity in ("pass", "fail"):
        updates["parity"] = evidence.parity
    if filing.external:
        updates["external"] = True
    return page.with_frontmatter(updates).to_text()


def _update_model_page(txn: LaneTxn, model, filing: Filing, moved: bool) -> None:
    """Move the row's Current best and Frontier exp to the page when it beat the frontier;
    else only mark the model page up to date."""
    model_rel, model_text, model_page, matrix = model
    if not moved:
        _touch_model_page(txn, model_rel, filing.date)
        return
    target = filing.target
    link = f"[{target.exp_id}-{filing.slug}]({_rel_link(model_rel, target.rel)})"
    figures = {**filing.metrics, filing.metric: filing.measured.recorded}
    new_text = set_cells(model_text, matrix, filing.variant, {
        CURRENT_BEST: restated(matrix.row(filing.variant).cell(CURRENT_BEST), link, figures, filing.metric),
        FRONTIER_EXP: f"{target.exp_id}-{filing.slug}",
    })
    txn.write(model_rel, parse_page(new_text, model_rel).with_frontmatter({"updated": filing.date}).to_text()
              if model_page.has_frontmatter else new_text)


def empty_baselines(root: Path, lane: Lane) -> dict[str, str]:
    """Rows of the lane's variant matrix whose Baseline cell is empty, and how it will be
    filled: the A/A runs of a row with no Current best run its baseline config, and their
    median is recorded (:func:`baseline_text`); a row with a Current best has its frontier
    measured instead, so its Baseline stays empty until someone measures it."""
    rel = lane.model_page(root)
    matrix = parse_matrix(parse_page((root / rel).read_text(encoding="utf-8"), rel)) if rel else None
    if matrix is None or matrix.header_of(BASELINE) is None:
        return {}
    found = {}
    for row in matrix.rows:
        cell = row.cell(BASELINE)
        if cell.strip() and not ex.is_placeholder(cell):
            continue
        best = row.cell(CURRENT_BEST)
        found[row.key] = ("recorded by the first wake's A/A runs of the baseline config, before the first dispatch"
                          if not best.strip() or ex.is_placeholder(best) else
                          "stays empty: the row has a Current best, so its A/A runs measure the frontier")
    return found


def baseline_text(model_rel: str, text: str, band: dict, date: str) -> str | None:
    """The model page with the row's empty Baseline cell set from a measured A/A band of the
    row's baseline config (``band``: its ``variant``, ``metric``, ``value`` the median of the
    runs' figures, ``band``, ``n``); None when the row has no empty Baseline cell, or the
    band measured a frontier page or has no figure. A cell that holds anything is never touched."""
    if band.get("frontier") or band.get("value") is None or band.get("band") is None:
        return None
    page = parse_page(text, model_rel)
    matrix = parse_matrix(page)
    row = matrix.row(str(band.get("variant"))) if matrix else None
    if row is None or matrix.header_of(BASELINE) is None:
        return None
    cell = row.cell(BASELINE)
    if cell.strip() and not ex.is_placeholder(cell):
        return None
    figure = render_figures({band["metric"]: float(band["value"])}, band["metric"])
    new_cell = f"{figure} ±{float(band['band']):.3g} (median of {band['n']} A/A runs, {date})"
    new_text = set_cells(text, matrix, row.key, {BASELINE: new_cell})
    return parse_page(new_text, model_rel).with_frontmatter({"updated": date}).to_text() if page.has_frontmatter \
        else new_text


def _record_filing(txn: LaneTxn, root: Path, lane: Lane, filing: Filing, *, moved: bool, at: str) -> None:
    """The filing's lane log line, RESULTS.tsv row, hypothesis page evidence and journal record
    (``moved``: the filing moved Current best, what a stall counts)."""
    target, slug, date = filing.target, filing.slug, filing.date
    delta_text = filing.delta_text
    entry = logbook.render_entry(date, "loop-iteration",
                                 f"{target.exp_id}-{slug} on {filing.variant}: {filing.verdict_label} ({delta_text})")
    txn.write(lane.log, logbook.insert_entry(txn.read(lane.log), entry))
    description = str(target.frontmatter.get("hypothesis", ""))
    try:
        knobs = parse_knobs(target.page, target.rel)
    except PageError:
        knobs = None  # a hand-written Setup block that does not parse: the ledger says nothing of the knobs
    txn.write(lane.results, results_tsv.append_row(txn.read(lane.results), {
        "exp_id": target.exp_id, "date": date, **_results_figures(filing.metrics, filing.metric, filing.measured.recorded),
        "config": results_tsv.config_string(knobs.values if knobs else None),
        "status": results_tsv.status_of(filing.verdict, filing.invalid_kind),
        "description": (f"invalid ({filing.invalid_kind}): " if filing.invalid_kind else "")
        + (f"(external run: no figures measured by the engine) {description}" if filing.external else description),
    }, lane.results))
    _hypothesis_update(txn, root, target, slug, filing.verdict, delta_text, date)
    band = filing.band
    txn.write(lane.journal, append_record(txn.read(lane.journal), {
        "op": "file", "vid": target.exp_id, "verdict": filing.verdict, "requested": filing.requested,
        "workload": filing.evidence.workload, "external": filing.external or None, "metric": filing.metric,
        "value": filing.measured.recorded, "moved": moved,
        "band": band.half_width if band else None, "band_n": band.n if band else None,
        "page": target.rel, "digest": page_digest(txn.read(target.rel)), "at": at}))


def _results_figures(metrics: dict[str, float], metric: str, recorded: float | None) -> dict[str, str]:
    """The RESULTS.tsv figures of a run (the target metric as recorded on the page)."""
    figures = {"tps": metrics.get("tps"), "mfu_percent": metrics.get("mfu_percent", metrics.get("mfu")),
               "step_time_ms": metrics.get("step_time_ms"), "peak_hbm_gib": metrics.get("peak_hbm_gib")}
    column = {"mfu": "mfu_percent"}.get(metric, metric)
    if column in figures and recorded is not None:
        figures[column] = recorded
    figures["mfu_percent"] = results_tsv.mfu_percent(figures["mfu_percent"])
    return {k: (f"{v:.6g}" if v is not None else None) for k, v in figures.items()}


def section_title(page, leading: str) -> str:
    """The title as written of the section led by ``leading`` (suffixes and aliases kept)."""
    from wikiengine.core.page import title_key

    keys = {title_key(t) for t in ex.section_titles(leading)}
    section = next((s for s in page.sections if s.leading_key in keys or s.key in keys), None)
    return section.title if section is not None else leading


def cell_figure(model, row, column: str, metric: str) -> float | None:
    """The figure of ``metric`` in a cell of the variant matrix, found by its unit (None: the
    cell holds no figure); exit 2 naming the model page's line and the cell when the cell
    holds figures and none can be said to be it: a wrong number would file a wrong delta."""
    cell = row.cell(column)
    found = read_figure(cell, metric)
    if found.reason is not None:
        model_rel, _text, _page, matrix = model
        raise WikiError(f"row {row.key}: cannot read the {metric} figure of the {matrix.header_of(column)!r} cell "
                        f"{cell!r}: {found.reason}; write one {metric} figure there, marked by its unit "
                        "(e.g. '512 ms / 31,955 TPS / 20.5% MFU')", model_rel, row.line)
    return found.value


def frontier_value(root: Path, model, row, metric: str, records: list[dict] = ()) -> float | None:
    """The Current best's metric: the figure the page its cell links was filed with (the
    journal ``records``, else its frontmatter), else the cell's figure of the metric."""
    from wikiengine.model.variant_matrix import cell_reference

    model_rel = model[0]
    ref = cell_reference(row.cell(CURRENT_BEST), model_rel, re.compile(r"(?P<id>v\d{3,}[a-z]?)"))
    if ref is None:
        return None
    if ref.target and (root / ref.target).is_file():
        value = _filed_value(root, list(records), ref.target, metric)
        if value is not None:
            return value
    return cell_figure(model, row, CURRENT_BEST, metric)


def _filed_value(root: Path, records: list[dict], page: str, metric: str) -> float | None:
    """The figure a filed page was filed with: the journal's ``file`` record of it (what the
    engine wrote, immune to a later hand edit), else the page's frontmatter (older journals)."""
    filed = [r for r in records if r.get("op") == "file" and r.get("page") == page and r.get("metric") == metric]
    if filed and isinstance(filed[-1].get("value"), (int, float)):
        return float(filed[-1]["value"])
    try:
        return ex.metric_of(parse_page(repo_text(root, page) or "", page).frontmatter, metric)
    except (OSError, WikiError):
        return None


def _measured_against(root: Path, records: list[dict], evidence: RunEvidence, metric: str, baseline: float | None,
                      current_best: float | None) -> float | None:
    """The recorded figure of the frontier a run was dispatched against (the dispatch record
    names its page; none there means the row's Baseline); an external run: today's Current best."""
    if evidence.state == NEVER_DISPATCHED:
        return current_best
    return _filed_value(root, records, evidence.frontier, metric) if evidence.frontier else baseline


def _hypothesis_update(txn: LaneTxn, root: Path, target: ExperimentPage, slug: str, verdict: str, delta: str, date: str) -> None:
    """Record the verdict on the hypothesis page the experiment tests (when it names one)."""
    name = target.frontmatter.get("hypothesis")
    if not isinstance(name, str) or not re.fullmatch(r"[a-z0-9][a-z0-9-]*", name):
        return
    rel = f"{HYPOTHESES_DIR}/{name}.md"
    if not (root / rel).is_file():
        return
    page = parse_page(txn.read(rel), rel)
    line = f"- [{target.exp_id}-{slug}]({_rel_link(rel, target.rel)}): {verdict} ({delta}), {date}\n"
    evidence = page.section("Evidence")
    body = (evidence.body.rstrip("\n") + "\n" if evidence and evidence.body.strip() else "\n") + line + "\n"
    page = page.with_section_body("Evidence", body)
    if page.has_frontmatter and "updated" in page.frontmatter:
        page = page.with_frontmatter({"updated": date})
    txn.write(rel, page.to_text())


def add_log_entry(root: Path, op: str, subject: str, lane: Lane | None, fields: dict[str, str], *,
                  dry_run: bool = False, date: str | None = None, clock: Clock = utcnow) -> dict:
    """`wiki log add`: one entry in the right tier, full form, newest first."""
    date = date or today(clock)
    if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_-]*", op):
        raise WikiError(f"op {op!r} is not a word")
    tier = "lane" if lane is not None else "global"
    known = logbook.DEFAULT_OPS[tier]
    if tier == "global" and op in logbook.LANE_ONLY_OPS:
        raise WikiError(f"'{op}' belongs in a lane log, never the global one: name MODEL LANE")
    if tier == "lane" and op in logbook.GLOBAL_ONLY_OPS:
        raise WikiError(f"'{op}' belongs in the global log, never a lane log")
    if op.casefold() not in {k.casefold() for k in known}:
        raise WikiError(f"op {op!r} is not a {tier}-log op ({', '.join(known)})")
    if op in logbook.ONE_LINE_OPS and fields:
        raise WikiError(f"a {op} entry is one line: it takes no --field")
    if not subject.strip():
        raise WikiError("the entry needs a subject")
    rel = lane.log if lane is not None else logbook.GLOBAL_LOG
    txn_lane = lane or Lane("wiki", "global")
    with LaneLock(root, txn_lane) as lock:
        txn = LaneTxn(root, txn_lane)
        entry = logbook.render_entry(date, op, subject, None if op in logbook.ONE_LINE_OPS else fields)
        txn.write(rel, logbook.insert_entry(txn.read(rel), entry))
        result = {"log": rel, "tier": tier, "op": op, "entry": entry.strip(), "recovered": lock.recovered}
        if dry_run:
            return {**result, "dry_run": True}
        result["commit"] = txn.commit(f"log({tier}): {op} | {' '.join(subject.split())[:60]}")
        return result


def _log_summary(tail: str) -> str:
    """One line of a crashed run's log: its last error-looking line, else its last line."""
    lines = [ln.strip() for ln in tail.splitlines() if ln.strip()]
    errors = [ln for ln in lines if re.search(r"(?i)error|exception|traceback|killed|oom", ln)]
    line = (errors or lines or ["no log"])[-1]
    return re.sub(r"[`|<>\[\]]", "'", line)[:160]


def render_backfill(lane: Lane, workload, variant: str | None, model_page_stem: str, date: str) -> tuple[str, str, str]:
    """``(verdict, reason, page text)`` of a backfilled page (seed 001 step 0's policy)."""
    if workload.crashed:
        verdict, reason = "invalid", f"crashed; logs: {_log_summary(workload.log_tail)}"
    else:
        verdict, reason = "inconclusive", "backfilled — profile-analyzer not dispatched"
    front = {"title": f"{workload.vid} {workload.slug}", "type": "experiment", "model": model_page_stem,
             "variant": variant, "status": ex.FILED, "verdict": verdict, "reason": reason, "backfilled": True,
             "created": date, "updated": date, "workload_name": workload.name}
    if variant is None:
        del front["variant"]  # no claim recorded the variant: EXP010 has nothing to check
    lines = ["---", frontmatter_yaml(front).rstrip("\n"), "---"]
    tail = "\n".join(workload.log_tail.splitlines()[-20:]).replace("```", "'''")
    body = [
        f"# {workload.vid}: {workload.slug}", "",
        f"## {ex.HYPOTHESIS_SECTION}", "",
        f"{ex.NOT_RECOVERED} — page filed by BACKFILL after the run completed without a stub. The original dispatch "
        "context was lost; treat this experiment as observation-only.", "",
        "## Setup", "", f"**Workload**: `{workload.name}` (started {workload.started or 'unknown'}, finished "
        f"{workload.finished or 'unknown'}, exit code {workload.exit_code if workload.exit_code is not None else 'unknown'}).", "",
        *(["Variant not recovered: no claim in the lane journal recorded it.", ""] if variant is None else []),
        "## Results", "", "Log tail, as the backend returned it:", "", "```text", tail or "(empty)", "```", "",
        "## Profile", "", "Not captured: the profile analyzer was not dispatched (backfilled page).", "",
        "## HLO Dump", "", "Not captured: the profile analyzer was not dispatched (backfilled page).", "",
        "## Verdict", "", f"**{verdict}** — {reason}.", "",
    ]
    return verdict, reason, "\n".join(lines) + "\n" + "\n".join(body)


def backfill(root: Path, lane: Lane, backend, *, dry_run: bool = False, date: str | None = None, clock: Clock = utcnow) -> dict:
    """`wiki backfill`: a page for every finished workload of the lane that has none."""
    date = date or today(clock)
    settings = lane_settings(root, lane)
    prefix = f"{settings.user_prefix}-{lane.model_name}-{lane.name}"
    workloads = [w for w in backend.list_workloads(prefix) if w.is_finished and w.vid != AA_VID]  # A/A runs: no page
    with LaneLock(root, lane) as lock:
        txn = LaneTxn(root, lane)
        journal_text = txn.read(lane.journal)
        records = parse_journal(journal_text, lane.journal)
        have = {p.exp_id for p in lane_pages(root, lane)}
        model_rel = lane.model_page(root)
        stem = posixpath.basename(model_rel)[:-3] if model_rel else lane.model_name
        claimed_variant = {r.get("vid"): r.get("variant") for r in records if r.get("op") in ("claim", "retry")}
        filed = []
        for workload in workloads:
            vid = ex.canonical_id(workload.vid)
            if vid in have:
                continue
            variant = claimed_variant.get(vid)
            verdict, reason, text = render_backfill(lane, workload, variant, stem, date)
            # a hand-named run's slug may begin with a one-letter word: `v091-b-crash` would read as v091b
            slug = workload.slug if ex.misread_id(workload.slug) is None else f"run-{workload.slug}"
            rel = f"{lane.experiments_dir}/{ex.page_file_name(date, vid, slug)}"
            txn.write(rel, text)
            journal_text = append_record(journal_text, {"op": "backfill", "vid": vid, "workload": workload.name,
                                                        "verdict": verdict, "page": rel, "digest": page_digest(text),
                                                        "at": now_iso(clock)})
            entry = logbook.render_entry(date, "backfill", f"{vid}-{slug} filed from logs ({verdict})",
                                         {"Pages created": rel, "Key result": reason,
                                          "Notes": "Hypothesis not recovered; never supported or refuted without the analyzer."})
            txn.write(lane.log, logbook.insert_entry(txn.read(lane.log), entry))
            have.add(vid)
            filed.append({"vid": vid, "page": rel, "verdict": verdict, "workload": workload.name})
        if filed:
            txn.write(lane.journal, journal_text)
            _touch_model_page(txn, model_rel, date)
            index_add(txn, root, [(f"{b['vid']} (backfilled)", b['page']) for b in filed])
        result = {"lane": f"{lane.model_prefix}/{lane.name}", "finished_workloads": len(workloads), "backfilled": filed,
                  "recovered": lock.recovered}
        if dry_run:
            return {**result, "dry_run": True, "would_write": txn.changed()}
        result["commit"] = txn.commit(f"backfill({lane.name}): {len(filed)} page(s) filed from logs") if filed else None
        return result
