"""The report of a kernel family as data: every verified candidate, its speedup and its receipt.

A family's journal keeps one ``verify`` record per receipt `wiki kernel verify` sealed (the
page, the candidate, the mode, the verdict and the receipt's digest). For each, the report
reads the receipt and says what it is worth: ``missing``, ``invalid`` (it does not validate:
edited, truncated, hand-written), ``unbound`` (its digest is not the one the record
committed), ``unsigned`` (from before receipts were signed), ``signed, verified`` (its
signature checks under the per-user key), ``signature does not verify``, or ``signed (not
checked: ...)`` where this machine has no per-user key.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

from wikiengine.core.clock import timestamp, utc_iso
from wikiengine.core.errors import WikiError
from wikiengine.model import experiment as ex
from wikiengine.model import receipt as kernel_receipt
from wikiengine.model.journal import parse_journal
from wikiengine.model.kernels import KERNEL_EXPERIMENTS_ROOT, KERNEL_LANE, KernelFamily

VERIFIED = "signed, verified"


@dataclass(frozen=True)
class Candidate:
    """One verified kernel candidate, for the report."""

    vid: str
    page: str | None  # the experiment page (repository path)
    cand: str  # cand1, cand2 ...
    mode: str  # quick | full
    verdict: str  # the verifier's PASS | FAIL
    speedup: float | None  # against the reference, co-measured (the receipt's timing)
    receipt: str  # repository path
    status: str  # what the receipt is worth (module docstring)
    at: float | None = None


@dataclass
class FamilyReport:
    """Everything the report shows of one kernel family."""

    family: str
    dir: str
    generated_at: str
    candidates: list[Candidate] = field(default_factory=list)
    verdicts: dict[str, int] = field(default_factory=dict)  # the family's filed pages, by verdict
    notes: list[str] = field(default_factory=list)

    @property
    def best(self) -> Candidate | None:
        """The fastest candidate whose receipt passed and is signed and verified."""
        ok = [c for c in self.candidates if c.verdict == "PASS" and c.status == VERIFIED and c.speedup is not None]
        return max(ok, key=lambda c: c.speedup, default=None)

    def as_json(self) -> dict:
        best = self.best
        return {"family": self.family, "dir": self.dir, "generated_at": self.generated_at,
                "candidates": [asdict(c) for c in self.candidates], "verdicts": dict(self.verdicts),
                "best": asdict(best) if best else None, "notes": list(self.notes)}


def receipt_status(root: Path, record: dict, key: bytes | None, why_no_key: str) -> tuple[dict | None, str]:
    """The receipt a ``verify`` record names, and what it is worth (module docstring)."""
    path = root / str(record.get("receipt") or "")
    if not record.get("receipt") or not path.is_file():
        return None, "missing"
    data, problem = kernel_receipt.validate(path.read_text(encoding="utf-8", errors="replace"))
    if data is None:
        return None, f"invalid: {problem}"
    if record.get("receipt_sha256") and record["receipt_sha256"] != data["sha256"]:
        return data, "unbound: its digest is not the one the verify record committed"
    if "signature" not in data:
        return data, "unsigned"
    if key is None:
        return data, f"signed (not checked: {why_no_key})"
    return data, VERIFIED if kernel_receipt.signature_ok(data, key) else "signature does not verify"


def _receipt_key(root: Path) -> tuple[bytes | None, str]:
    from wikiengine.step.kernel.sealing import receipt_key

    try:
        return receipt_key(root), ""
    except WikiError as err:
        return None, str(err)


def family_report(root: Path, family: KernelFamily, now: float | None = None) -> FamilyReport:
    """The report of ``family`` (see the module docstring)."""
    now = now if now is not None else dt.datetime.now(dt.UTC).timestamp()
    path = root / family.journal
    records = parse_journal(path.read_text(encoding="utf-8"), family.journal) if path.is_file() else []
    pages = {p.exp_id: p for p in (ex.ExperimentPage.at(root, rel, family) for rel in family.page_rels(root)) if p.exp_id}
    report = FamilyReport(family.slug, family.dir, utc_iso(dt.datetime.fromtimestamp(now, dt.UTC)),
                          verdicts=dict(Counter(p.verdict for p in pages.values() if p.verdict)))
    key, why = _receipt_key(root)
    for record in (r for r in records if r.get("op") == "verify"):
        data, status = receipt_status(root, record, key, why)
        vid = str(record.get("vid") or "")
        page = pages.get(vid)
        report.candidates.append(Candidate(
            vid, page.rel if page else None, str(record.get("cand") or ""), str(record.get("mode") or ""),
            str(record.get("verdict") or ""), kernel_receipt.speedup(data) if data else None, str(record.get("receipt") or ""),
            status, timestamp(record.get("at"))))
    if not records:
        report.notes.append(f"{family.journal} is absent or empty: no candidate was verified by the engine")
    return report


def all_families(root: Path) -> list[KernelFamily]:
    """Every kernel family with a ``pallas`` folder, in name order."""
    base = root / KERNEL_EXPERIMENTS_ROOT
    try:
        names = sorted(p.name for p in base.iterdir() if (p / KERNEL_LANE).is_dir())
    except OSError:
        return []
    return [KernelFamily(name) for name in names]
