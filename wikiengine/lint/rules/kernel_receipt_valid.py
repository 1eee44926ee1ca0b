"""KRN005: a kernel experiment's verification receipt resolves, validates and backs its verdict."""

from __future__ import annotations

import hashlib
import os
import posixpath
import stat

from wikiengine.lint.rule import Rule
from wikiengine.lint.rules._kernels import frontmatter_line, verdict_line
from wikiengine.lint.rules._shared import target_kernel_experiments
from wikiengine.model import receipt as kernel_receipt
from wikiengine.model.kernel_page import speedup_bar


class ReceiptValid(Rule):
    """## What it does
    Checks a kernel experiment page's `verification_receipt:` (a path relative to the
    page, or to the repository root): the file exists, is a sealed receipt (its
    `sha256` matches its content), and names this page's family and v-id. On a
    `supported` page it also checks that a receipt is cited, that it says `PASS`, and
    that its speedup is above the page's pre-registered `speedup_bar`.

    ## Why is this bad?
    The receipt is the verdict's evidence. Real wikis filed `supported` from a receipt
    whose verdict was FAIL (the kernel never fired), and cited a receipt path that never
    existed; a receipt edited by hand is the author's claim, not the verifier's.

    ## Example
    ```yaml
    verdict: supported
    verification_receipt: receipts/v004-cand3-full.json   # no such file
    ```
    Run `wiki kernel verify`, which writes the receipt and cites it.

    ## Options
    None.
    """

    code = "KRN005"
    name = "kernel-receipt-valid"
    summary = "a kernel experiment's receipt is missing, does not validate, or does not back a supported verdict"
    kinds = ()
    cache_wiki = False  # reads receipt files, which are not pages
    reports_on = ("kernel-experiment",)

    def wiki_inputs(self, ctx):
        """The content of every receipt a page cites (where to look is cached with the pages)."""
        digest = hashlib.blake2b(digest_size=16)
        for path in ctx.wiki_memo("KRN005-receipts", lambda: self._receipt_paths(ctx)):
            digest.update(path.encode() + b"\0" + _contents(ctx.root / path) + b"\0")
        return digest.hexdigest()

    def _receipt_paths(self, ctx) -> list[str]:
        return sorted({path for info, facts in target_kernel_experiments(ctx) for path in _candidates(info, facts)})

    def check_wiki(self, ctx):
        for info, facts in target_kernel_experiments(ctx):
            yield from self._check(info, facts, ctx)

    def _check(self, info, facts, ctx):
        cited = facts.frontmatter.get("verification_receipt")
        line = frontmatter_line(info, "verification_receipt")
        if not isinstance(cited, str) or not cited.strip():
            if facts.verdict == "supported":
                yield self.finding(info.rel, verdict_line(info, facts),
                                   "verdict is 'supported' but no verification_receipt is cited")
            return
        cited = cited.strip()
        candidates = _candidates(info, facts)
        rel = next((c for c in candidates if (ctx.root / c).is_file()), None)
        if rel is None:
            if any(c.startswith(tuple(ctx.config.artifact_paths)) for c in candidates):
                return  # under a gitignored artifact folder: absent by design in a clone, unverifiable
            yield self.finding(info.rel, line, f"verification_receipt {cited} does not exist")
            return
        data, problem = kernel_receipt.validate((ctx.root / rel).read_text(encoding="utf-8", errors="replace"))
        if problem:
            yield self.finding(info.rel, line, f"verification_receipt {cited} does not validate: {problem}")
            return
        if data["family"] != facts.folder.slug or (facts.file_id and data["vid"] != facts.file_id):
            yield self.finding(info.rel, line, f"verification_receipt {cited} is the receipt of {data['family']} "
                                               f"{data['vid']}, not of this page")
            return
        if facts.verdict != "supported":
            return
        ratio, bar = kernel_receipt.speedup(data), speedup_bar(facts.frontmatter)
        if data["verdict"] != "PASS":
            yield self.finding(info.rel, line, f"verdict is 'supported' but the receipt {cited} says FAIL: "
                                               + "; ".join(data.get("reasons") or ["no reason recorded"]))
        elif ratio is None or ratio <= 1.0 or (bar is not None and ratio <= bar):
            shown = "no speedup" if ratio is None else f"a speedup of {ratio:.3g}x"
            yield self.finding(info.rel, line, f"verdict is 'supported' but the receipt shows {shown}"
                                               + (f", not above the pre-registered bar {bar:g}x" if bar else ""))


def _candidates(info, facts) -> list[str]:
    """Where the page's ``verification_receipt:`` may be: beside the page, or from the repository root."""
    cited = facts.frontmatter.get("verification_receipt")
    if not isinstance(cited, str) or not cited.strip():
        return []
    cited = cited.strip()
    return [posixpath.normpath(posixpath.join(posixpath.dirname(info.rel), cited)), cited.lstrip("/")]


def _contents(path) -> bytes:
    """The bytes of a regular file (symlinks followed, as the rule reads it), else why not:
    a pipe is never waited on (opened non-blocking, then found not to be a file)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        return f"error {exc.errno}".encode()
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return b"not a file"
        return b"file " + handle.read()
