"""KRN001 and KRN002: what a filed kernel experiment page must carry."""

from __future__ import annotations

from wikiengine.lint.rule import Rule
from wikiengine.lint.rules._kernels import frontmatter_line, kernel_facts, verdict_line
from wikiengine.model.kernel_page import VERIFIER, ledger


class SupportedNeedsVerifier(Rule):
    """## What it does
    Checks that a kernel experiment page with verdict `supported` says who verified it:
    `verified_by: kernel-verifier`.

    ## Why is this bad?
    A kernel lane separates the author from the verifier (seed 003, K6): the author's
    own timing is not evidence. A supported kernel that no verifier signed is the
    author grading their own work; real wikis filed `supported` that way from a receipt
    whose verdict was FAIL.

    ## Example
    ```yaml
    status: filed
    verdict: supported
    ```
    File with `wiki kernel file`, which writes `verified_by: kernel-verifier` only when
    the receipt resolves, validates and says PASS above the bar.

    ## Options
    None.
    """

    code = "KRN001"
    name = "kernel-supported-verified-by"
    summary = "a supported kernel experiment has no verified_by: kernel-verifier"
    kinds = ("kernel-experiment",)

    def check_page(self, info, ctx):
        facts = kernel_facts(info, ctx)
        if facts is None or facts.verdict != "supported":
            return
        who = facts.frontmatter.get("verified_by")
        if who != VERIFIER:
            line = frontmatter_line(info, "verified_by") if "verified_by" in facts.frontmatter else verdict_line(info, facts)
            said = f"verified_by is {who!r}" if who is not None else "there is no verified_by"
            yield self.finding(info.rel, line, f"verdict is 'supported' but {said}: a supported kernel needs "
                                               f"verified_by: {VERIFIER}")


class LedgerIsTable(Rule):
    """## What it does
    Checks that a filed kernel experiment page has a `## Candidate ledger` section
    holding a table (one row per authored candidate).

    ## Why is this bad?
    The ledger is what the branch's candidate commits are counted against and what the
    verdict's receipt names. A filed page with no ledger, or a ledger written as prose,
    cannot be checked: the claim "five candidates were tried" has nothing to count.

    ## Example
    ```markdown
    ## Candidate ledger

    Tried five variants; the third was fastest.
    ```
    Write it as `| cand | commit | what | p50 ms | speedup | parity |` rows
    (`wiki kernel cand` appends one per candidate).

    ## Options
    None.
    """

    code = "KRN002"
    name = "kernel-candidate-ledger-table"
    summary = "a filed kernel experiment has no '## Candidate ledger' table"
    kinds = ("kernel-experiment",)

    def check_page(self, info, ctx):
        facts = kernel_facts(info, ctx)
        if facts is None or facts.verdict is None or info.page is None or facts.frontmatter.get("backfilled") is True:
            return
        found = ledger(info.page)
        if found is None:
            yield self.finding(info.rel, verdict_line(info, facts),
                               f"verdict is {facts.verdict!r} but the page has no '## Candidate ledger'")
        elif not found.is_table:
            yield self.finding(info.rel, found.line, "'## Candidate ledger' is not a table: write one row per "
                                                     "candidate (| cand | commit | what | p50 ms | speedup | parity |)")
