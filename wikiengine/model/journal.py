"""A lane's write-ahead journal, the expectations it records, and the ids it has ever used.

``<lane>/.journal.jsonl`` is committed with the lane: one JSON object per line, each
with ``op`` (``claim``, ``file``, ``retry``, ``backfill``; later ``dispatch`` and
``complete``), ``vid``, ``at`` and op-specific fields. A claim is written in the same
commit as its stub, so an id that was ever handed out stays in the journal even when
its page is deleted. A filing record (``file``, ``backfill``; ``amend`` for an engine
writer that rewrites a filed page, which none does today) keeps the ``page`` and the
:func:`page_digest` of its filed text, which :mod:`wikiengine.model.filings` compares
with the page on disk; it also keeps ``moved`` (the filing moved Current best: what a
stall counts, :mod:`wikiengine.model.progress`). A ``complete`` record keeps the backend's
own ``started`` and ``finished`` times and the run's ``chips`` (what ``max_chip_hours``
burns, :mod:`wikiengine.model.budgets`).

:func:`used_ids` is what v-id allocation reads: the lane's pages on disk, the journal,
every page path ever added under the lane in the history of every ref (walked since the last
writer's record, :class:`HistoryIds`), and the journals of the local and remote-tracking
branches.

:class:`Expectation` is the one record of a request the engine made of a backend, committed
before the backend was asked and satisfied by name on a later observe (Kubernetes'
ControllerExpectations): the relay's launch claim in STATE.md and a lane's ``dispatch``
record here are both read as one.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

from wikiengine.core import git
from wikiengine.core.clock import timestamp
from wikiengine.core.errors import WikiError
from wikiengine.core.history_record import read_record, write_record
from wikiengine.core.safe_read import load_json, repo_text
from wikiengine.model.experiment import VId, parse_file_name, parse_vid
from wikiengine.model.lanes import Lane


def journal_records(root: Path, rel: str) -> list[dict]:
    """The records of the journal ``rel`` ([] when there is none), read the one safe way."""
    return parse_journal(repo_text(root, rel, "journal") or "", rel)


def parse_journal(text: str, rel: str = "") -> list[dict]:
    """The records of a journal text; a torn last line (a crash mid-append) is skipped.
    Integers and nesting are bounded (:func:`~wikiengine.core.safe_read.load_json`)."""
    records = []
    lines = text.splitlines()
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = load_json(line, rel, number, parse_constant=_not_a_number)
        except ValueError:
            if number == len(lines):
                break
            raise WikiError("journal line is not JSON", rel, number) from None
        if isinstance(record, dict):
            records.append(record)
    return records


def page_digest(text: str) -> str:
    """The digest a ``file`` record keeps of the page as it was filed (``sha256:<hex>`` of
    its UTF-8 text): every later audit compares the page on disk with it."""
    return bytes_digest(text.encode("utf-8"))


def bytes_digest(data: bytes) -> str:
    """:func:`page_digest` of a page's bytes as they are on disk (the writers write the
    filed text as UTF-8, newlines as given)."""
    import hashlib

    return "sha256:" + hashlib.sha256(data).hexdigest()


def append_record(text: str, record: dict) -> str:
    """``text`` with one record appended: strict JSON, a non-finite number (a run that wrote
    ``NaN``) kept as ``null``, never as ``NaN`` or ``Infinity``, which no JSON reader takes."""
    head = text if not text or text.endswith("\n") else text + "\n"
    return head + json.dumps(_finite(record), sort_keys=True, separators=(",", ":"), allow_nan=False) + "\n"


def _finite(value):
    """``value`` with every non-finite float replaced by None (recursively)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(item) for item in value]
    return value


def _not_a_number(name: str) -> None:
    """A ``NaN``/``Infinity`` an older journal holds reads as null (no figure)."""
    return None


def _ids_in_names(names) -> set[VId]:
    found = set()
    for name in names:
        exp_id = parse_file_name(name.rsplit("/", 1)[-1]).exp_id
        vid = parse_vid(exp_id) if exp_id else None
        if vid is not None:
            found.add(vid)
    return found


def _journal_ids(records: list[dict]) -> set[VId]:
    return {vid for vid in (parse_vid(r.get("vid", "")) for r in records) if vid is not None}


class BranchIds:
    """The ids a lane used on any local or remote-tracking branch: the page paths ever added
    under the lane (the history of every ref) and the branches' journals. The refs are listed
    when this is made, beside the writer's other reading; what they answer is read (under the
    lane lock) by :meth:`ids`. History only changes by a person's hand: a concurrent writer's id
    is on disk and in the journal the lock guards.

    The ids found in history are kept per clone with the commits they were read up to
    (:class:`HistoryIds`), so that a writer walks only the commits made since: a walk of a lane
    of 3,000 commits, whose folder grows with each, cost a second of CPU per ``wiki exp new``."""

    def __init__(self, root: Path, lane: Lane):
        self.root, self.lane = root, lane
        self._refs = git.start(root, "for-each-ref", "--format=%(objectname) %(refname)", stderr=False)

    def __enter__(self) -> BranchIds:
        return self

    def __exit__(self, *exc) -> None:
        self._refs.close()

    def ids(self) -> set[VId]:
        done = self._refs.result(timeout=60, check=False)
        refs = [line.split(" ", 1) for line in done.stdout.splitlines() if " " in line] if done.ok else []
        used = HistoryIds(self.root, self.lane).ids(sorted({sha for sha, _name in refs}))
        branches = [name for _sha, name in refs if name.startswith(("refs/heads/", "refs/remotes/"))]
        if branches:
            blobs = git.cat_file_batch(self.root, [f"{ref}:{self.lane.journal}" for ref in branches], timeout=60)
            out = "\n".join(b.decode("utf-8", "replace") for b in blobs if b is not None)
            used |= _journal_ids(_records_in_batch(out))
        return used


class HistoryIds:
    """The ids of the pages ever added under a lane in the history of a set of commits, kept
    per clone (:mod:`wikiengine.core.history_record`, kind ``ids``) with the commits walked
    (the refs' tips): the next walk starts from the refs' tips now and stops at those. A tip
    that is gone (a branch deleted and its commits pruned) or a record that does not read
    back walks the whole history again. The ids of a deleted branch stay in the record:
    numbers are never reused."""

    def __init__(self, root: Path, lane: Lane):
        self.root, self.lane = root, lane

    def ids(self, tips: list[str]) -> set[VId]:
        """The ids added in the history of ``tips`` and of HEAD (none outside git or before the first commit)."""
        held = read_record(self.root, "ids", self.lane.dir, _readable_ids)
        seen = held["tips"] if held is not None else []
        names = self._added(["--stdin"], "\n".join(["HEAD", *tips, *(f"^{sha}" for sha in seen)]) + "\n") if held else None
        if names is None:  # no record, or one naming a commit that is gone: every ref's whole history
            held, names = None, self._added(["--all"])
        if names is None:
            return set()  # not a repository yet, or no commit: no history
        found = _ids_in_names(names) | {vid for vid in map(parse_vid, held["ids"] if held else []) if vid is not None}
        if tips and set(tips) != set(seen):
            write_record(self.root, "ids", self.lane.dir, {"tips": sorted(tips), "ids": sorted(str(v) for v in found)})
        return found

    def _added(self, revisions: list[str], stdin: str | None = None) -> list[str] | None:
        """The ``.md`` paths added under the lane in the commits ``revisions`` (and ``stdin``,
        read by ``--stdin``) name; None when git refuses them."""
        done = git.run(self.root, "log", *revisions, "--format=", "--name-only", "--diff-filter=A", "--",
                       self.lane.dir + "/", input=stdin, timeout=60, check=False)
        if not done.ok:
            return None
        return [line for line in done.stdout.splitlines() if line.endswith(".md")]


def _readable_ids(held: dict) -> bool:
    tips, ids = held.get("tips"), held.get("ids")
    return (isinstance(tips, list) and isinstance(ids, list) and all(isinstance(t, str) and len(t) in (40, 64) for t in tips)
            and all(isinstance(v, str) for v in ids))


def used_ids(root: Path, lane: Lane, records: list[dict], branches: BranchIds | None = None) -> set[VId]:
    """Every id this lane has used: on disk, in its journal's ``records``, and on any branch's
    history (``branches``: a :class:`BranchIds` the caller started early)."""
    used = _ids_in_names(lane.page_rels(root)) | _journal_ids(records)
    return used | (branches or BranchIds(root, lane)).ids()


def _records_in_batch(out: str) -> list[dict]:
    records = []
    for line in out.splitlines():
        if line.startswith("{"):
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if isinstance(record, dict):
                records.append(record)
    return records


def next_id(used: set[VId]) -> VId:
    """The next v-id: one above the highest number ever used (numbers are never reused)."""
    return VId(max((v.number for v in used), default=0) + 1)


def next_retry(used: set[VId], vid: VId) -> VId:
    """The next free retry letter of ``vid``'s number."""
    letters = [v.letter for v in used if v.number == vid.number]
    candidate = VId(vid.number, max(letters) if letters else "")
    return candidate.next_letter()


# --- expectations -------------------------------------------------------------------------

SEEN, UNSEEN, UNKNOWN = "seen", "unseen", "unknown"  # what an observe says of an expected name
MET, PENDING, LAPSED, REASK = "met", "pending", "lapsed", "reask"  # how an expectation settles


@dataclass(frozen=True)
class Expectation:
    """A request committed before a backend was asked: what (``kind``), the name the backend
    will show it by (the owner reference), when it was asked (seconds since the epoch) and how
    long it may stay unseen before it lapses (``None``: it never lapses; the engine asks again
    by the same name, and a request that landed is adopted, never doubled)."""

    kind: str  # "launch" (a relay session), "dispatch" (a lane workload)
    name: str
    at: float | None = None
    ttl_s: float | None = None

    def age(self, now: float) -> float:
        return now - self.at if self.at is not None else float("inf")

    def settle(self, sighting: str, now: float) -> str:
        """``met`` (seen: adopt it), ``pending`` (unknown, or unseen within its TTL: ask
        nothing), ``lapsed`` (unseen past its TTL: release it) or ``reask``."""
        if sighting == SEEN:
            return MET
        if sighting == UNKNOWN:
            return PENDING  # unknown is never gone
        if self.ttl_s is None:
            return REASK
        return PENDING if self.age(now) < self.ttl_s else LAPSED


def dispatch_expectations(records: list[dict]) -> dict[str, Expectation]:
    """vid -> the newest ``dispatch`` record of a lane journal, as an expectation."""
    found = {}
    for record in records:
        if record.get("op") == "dispatch" and record.get("vid"):
            found[record["vid"]] = Expectation("dispatch", str(record.get("workload") or ""), timestamp(record.get("at")))
    return found


def launched_names(records: list[dict]) -> set[str]:
    """The workloads a backend was seen to hold (``launched`` records): one the backend later
    cannot find is unknown, never launched again."""
    return {str(r["workload"]) for r in records if r.get("op") == "launched" and r.get("workload")}
