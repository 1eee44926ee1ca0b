"""What the engine filed, against what is on disk (RELIABILITY row 73).

A journal's ``file`` and ``backfill`` records (and an ``amend`` record, should an engine
writer ever rewrite a filed page) keep the page's path and the :func:`~wikiengine.model.journal.page_digest` of the
text filed. A filed page whose text on disk differs from its newest filing digest, or
that is gone, was edited after filing: every audit reports it until it is repaired, by
reverting the text (the digest matches again) or by filing a rerun (a later ``retry``
record ``"of": <vid>`` whose own page is filed). Records without a digest (journals
older than the digests) are never findings: real wikis keep such journals.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from pathlib import Path

from wikiengine.core import git
from wikiengine.core.errors import PageError, WikiError
from wikiengine.core.page import read_regular
from wikiengine.model.journal import bytes_digest, journal_records
from wikiengine.model.kernels import KERNEL_EXPERIMENTS_ROOT, family_of_path
from wikiengine.model.lanes import EXPERIMENTS_ROOT, lane_of_path

FILING_OPS = ("file", "backfill", "amend")
JOURNAL_GLOBS = (f"{EXPERIMENTS_ROOT}/*/*/.journal.jsonl", f"{KERNEL_EXPERIMENTS_ROOT}/*/*/.journal.jsonl")


@dataclass(frozen=True)
class Drift:
    """A filed page that is no longer the text its journal says was filed."""

    vid: str
    page: str  # repository-relative
    digest: str  # the newest filing digest
    missing: bool  # the page is gone (or is not a readable regular file)

    def describe(self) -> str:
        what = "is gone" if self.missing else "was changed after it was filed"
        return f"filed page of {self.vid} {what} (its filing record keeps {self.digest[:19]}…)"

    def repair(self, commit: str | None) -> str:
        """How to repair it (``commit``: the commit that filed it, when known)."""
        text = f"restore the filed text: `git checkout {commit[:12] if commit else '<the filing commit>'} -- {self.page}`"
        lane = lane_of_path(self.page)
        if lane is not None and not self.missing:  # a retry reads the page it reruns
            text += f"; or rerun it: `wiki exp retry {self.vid} {lane.model_prefix} {lane.name}`, then file the rerun"
        return text

    def message(self, commit: str | None) -> str:
        return f"{self.describe()}: {self.repair(commit)}"


def _on_disk(root: Path, rel: str) -> str | None:
    """The digest of the page ``rel`` as it is now (None: gone or not a readable page)."""
    try:
        data, _st = read_regular(root / rel, rel, within=root)
    except PageError:
        return None
    return bytes_digest(data)


def _own_path(rel) -> bool:
    """Is ``rel`` a path the engine writes (relative, inside the wiki, no ``..``)?"""
    return (isinstance(rel, str) and rel.startswith("wiki/") and posixpath.normpath(rel) == rel
            and not rel.startswith("/"))


def _rerun_filed(records: list[dict], vid: str, after: int) -> bool:
    """Was a rerun of ``vid`` (a ``retry`` record ``of`` it, later than index ``after``) filed?"""
    reruns = {str(r.get("vid")): i for i, r in enumerate(records)
              if i > after and r.get("op") == "retry" and r.get("of") == vid and r.get("vid")}
    return any(r.get("op") in FILING_OPS and i > reruns.get(str(r.get("vid")), len(records))
               for i, r in enumerate(records))


def drifted_pages(root: Path, records: list[dict], only: set[str] | None = None) -> list[Drift]:
    """The filed pages of a journal's ``records`` that differ from their newest filing
    digest (see the module docstring), in path order; ``only``: check just these pages."""
    newest: dict[str, tuple[int, dict]] = {}
    for index, record in enumerate(records):
        if record.get("op") in FILING_OPS and _own_path(record.get("page")):
            newest[record["page"]] = (index, record)
    found = []
    for rel, (index, record) in sorted(newest.items()):
        digest, vid = record.get("digest"), str(record.get("vid") or "")
        if not isinstance(digest, str) or (only is not None and rel not in only):
            continue
        now = _on_disk(root, rel)
        if now != digest and not _rerun_filed(records, vid, index):
            found.append(Drift(vid, rel, digest, now is None))
    return found


def restores_filing(root: Path, rel: str) -> bool:
    """Is the page ``rel`` on disk exactly the text its journal's newest filing record keeps?
    (A change that makes it so is a repair, not an edit of a filed page.)"""
    folder = lane_of_path(rel) or family_of_path(rel)
    try:
        records = journal_records(root, folder.journal) if folder is not None else []
    except (OSError, UnicodeDecodeError, WikiError):
        return False
    digests = [r.get("digest") for r in records if r.get("op") in FILING_OPS and r.get("page") == rel]
    return bool(digests) and isinstance(digests[-1], str) and _on_disk(root, rel) == digests[-1]


def filing_commit(root: Path, journal_rel: str, digest: str) -> str | None:
    """The commit that recorded ``digest`` in the journal (the page as filed is in it), or None."""
    shas = git.out(root, "log", "--format=%H", "--fixed-strings", f"-S{digest}", "--", journal_rel).split()
    return shas[-1] if shas else None


def committed_drifts(root: Path, journal_rel: str, records: list[dict],
                     only: set[str] | None = None) -> list[tuple[Drift, str | None]]:
    """:func:`drifted_pages`, each with the commit that filed it. In a git repository a
    filing that no commit holds yet is left out: it is a write in progress (a writer
    killed between its files, which the next writer finishes), not an edit of a filed page."""
    drifts = drifted_pages(root, records, only)
    in_git = bool(drifts) and git.ok(root, "rev-parse", "--git-dir")
    found = []
    for drift in drifts:
        commit = filing_commit(root, journal_rel, drift.digest) if in_git else None
        if commit is not None or not in_git:
            found.append((drift, commit))
    return found


def journal_rels(root: Path) -> list[str]:
    """Every lane and kernel family journal of the wiki at ``root``."""
    return sorted({p.relative_to(root).as_posix() for pattern in JOURNAL_GLOBS for p in root.glob(pattern)
                   if p.is_file()})


def wiki_drifts(root: Path, only: set[str] | None = None) -> list[tuple[Drift, str | None]]:
    """:func:`committed_drifts` of every journal of the wiki; a journal that cannot be read
    is skipped here (the writers refuse it with its line)."""
    found = []
    for rel in journal_rels(root):
        try:
            records = journal_records(root, rel)
        except (OSError, UnicodeDecodeError, WikiError):
            continue
        found += committed_drifts(root, rel, records, only)
    return found
