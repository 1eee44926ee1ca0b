"""Kernel receipts signed with a per-user key and bound to the family journal (RELIABILITY row 79).

A receipt's ``sha256`` alone is testimony: anyone can change a figure and recompute it. So:

- `wiki kernel verify` signs the receipt (:func:`seal_receipt`: ``signature``, HMAC-SHA256
  under :func:`receipt_key`) and commits, with it, the journal's verify record carrying
  the receipt's digest, the commit measured and the sha256 of the bytes the verifier
  loaded (``sources``: reference, candidate, verifier): :func:`verify_fields`;
- `wiki kernel file` accepts a cited receipt only when :func:`check_bound` finds it bound:
  the signature verifies, a verify record of this page names this receipt path with this
  digest, the receipt is of this family and page, its commit is a candidate commit on the
  page's branch, and its ``sources.candidate`` (and the record's) is the sha256 of the
  candidate file committed there. Anything else is refused: one line naming the receipt
  and what does not match, exit 2.

A receipt from before receipts were signed (no ``signature``, and no verify record with a
digest names it) is not refused but does not count: the verdict is capped, never
``supported``. An unsigned receipt that a digest-bearing record names was stripped: refused.

The key is derived (HMAC with a label, so it never signs anything else) from the per-user
key of the lint cache (:func:`wikiengine.lint.cache.signing_key`): a private file of the
user under ``$XDG_CACHE_HOME/wikiengine/``, never inside a repository or git work tree.
Candidate code cannot read it: the sandbox gives it a fresh HOME and, where the kernel has
Landlock, no read access outside the system and Python trees.
"""

from __future__ import annotations

import hashlib
import hmac
from pathlib import Path

from wikiengine.core.errors import WikiError
from wikiengine.core.git import out as git_out
from wikiengine.model import receipt as kernel_receipt
from wikiengine.model.kernel_page import candidate_commits
from wikiengine.model.kernels import KernelFamily

LABEL = b"wikiengine.kernel-receipt/1"


def receipt_key(root: Path) -> bytes:
    """The per-user receipt key; WikiError when there is no trusted per-user key."""
    from wikiengine.lint.cache import signing_key

    key = signing_key(root)
    if key is None:
        raise WikiError("no per-user signing key (the lint cache key, outside any repository): kernel receipts "
                        "can be neither signed nor checked")
    return hmac.new(key, LABEL, hashlib.sha256).digest()


def seal_receipt(root: Path, data: dict) -> str:
    """The receipt's text, signed."""
    return kernel_receipt.seal(data, receipt_key(root))


def verify_fields(receipt_text: str) -> dict:
    """What the journal's verify record keeps of the receipt it commits."""
    data, problem = kernel_receipt.validate(receipt_text)
    if data is None:
        raise WikiError(f"the receipt just sealed does not validate: {problem}")
    return {"receipt_sha256": data["sha256"], "sources": data.get("sources"), "commit": data["commit"]}


def _record_of(records: list[dict], receipt_rel: str) -> dict | None:
    return next((r for r in reversed(records) if r.get("op") == "verify" and r.get("receipt") == receipt_rel), None)


def _candidate_sha(root: Path, commit: str, candidate_file: str) -> str | None:
    text = git_out(root, "show", f"{commit}:{candidate_file}")
    return hashlib.sha256(text.encode()).hexdigest() if text else None


def _mismatch(root: Path, family: KernelFamily, record: dict, page_vid: str, branch: str | None,
              receipt: dict, candidate_file: str) -> str | None:
    """What of a signed receipt does not match its record, page, branch and sources."""
    if record.get("receipt_sha256") != receipt["sha256"]:
        return "its digest is not the one the journal's verify record committed (re-sealed or replaced)"
    if receipt.get("family") != family.slug or receipt.get("vid") != page_vid or record.get("vid") != page_vid:
        return f"it is the receipt of {receipt.get('family')} {receipt.get('vid')} {receipt.get('candidate')}, not of {page_vid}"
    commits = {sha for sha, _when, _subject in candidate_commits(root, branch, family.slug, page_vid)} if branch else set()
    if receipt["commit"] not in commits or record.get("commit") != receipt["commit"]:
        return f"its commit {receipt['commit'][:12]} is not a candidate commit of {page_vid} on {branch or 'its branch'}"
    measured = (receipt.get("sources") or {}).get("candidate")
    committed = _candidate_sha(root, receipt["commit"], candidate_file)
    if measured is None or measured != committed or (record.get("sources") or {}).get("candidate") != measured:
        return (f"its sources.candidate {str(measured)[:12]} is not the candidate committed at {receipt['commit'][:12]} "
                f"({str(committed)[:12]})")
    return None


def check_bound(root: Path, family: KernelFamily, records: list[dict], page_vid: str, branch: str | None,
                receipt_rel: str, receipt: dict, candidate_file: str) -> tuple[str | None, str | None]:
    """``(refusal, cap)``: why filing on this validated receipt is refused (a forged, re-sealed,
    borrowed or unbound one), or why it does not count (a receipt from before signing);
    ``(None, None)`` when it is bound."""
    record = _record_of(records, receipt_rel)
    if "signature" not in receipt:
        if record is not None and record.get("receipt_sha256"):
            return f"the receipt {receipt_rel} is refused: it carries no signature, but its verify record is signed", None
        return None, "the receipt is unsigned (written before receipts were signed): re-run `wiki kernel verify`"
    if not kernel_receipt.signature_ok(receipt, receipt_key(root)):
        return f"the receipt {receipt_rel} is refused: its signature does not verify (edited or re-sealed)", None
    if record is None:
        return f"the receipt {receipt_rel} is refused: no verify record in {family.journal} names it", None
    problem = _mismatch(root, family, record, page_vid, branch, receipt, candidate_file)
    return (f"the receipt {receipt_rel} is refused: {problem}" if problem else None), None
