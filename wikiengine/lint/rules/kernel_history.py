"""KRN003 and KRN004: a kernel experiment page against its git history."""

from __future__ import annotations

from wikiengine.core.page import parse_page
from wikiengine.lint.rule import Rule
from wikiengine.lint.rules._kernels import (
    branches,
    first_commits,
    first_texts,
    frontmatter_line,
    kernel_facts,
    per_page_in_git,
    refs_state,
)
from wikiengine.model.experiment import resolve_verdict
from wikiengine.model.kernel_page import candidate_commits, ledger


def _branch_exists(ctx, branch: str) -> bool:
    return branch in branches(ctx)


def _branch_of(facts) -> str | None:
    return facts.branch or (facts.folder.experiment_branch(facts.file_id) if facts.file_id else None)


class LedgerMatchesBranch(Rule):
    """## What it does
    Checks that a kernel experiment page's `## Candidate ledger` has no more rows than
    its candidate branch (`branch:`, else `kernel/<family>-v<NNN>`) has candidate
    commits (`cand<N>(<family> v<NNN>): ...`). Skipped outside git and when the branch
    does not exist.

    ## Why is this bad?
    Every candidate is one commit on the branch (seed 003, K4), so that its code can be
    re-verified. Ledger rows with no commit behind them are candidates nobody can
    re-run: in one real wiki a five-row ledger had no candidate commits at all.

    ## Example
    A ledger with rows cand1 to cand5 on a branch whose log holds `cand1(...)` and
    `cand2(...)` only. Author each candidate with `wiki kernel cand N`.

    ## Options
    None.
    """

    code = "KRN003"
    name = "kernel-ledger-branch-commits"
    summary = "a kernel experiment's ledger has more rows than its branch has candidate commits"
    kinds = ()
    cache_wiki = False  # reads git branches, which are not pages: cached by the refs (per page, too)
    reports_on = ("kernel-experiment",)

    def wiki_inputs(self, ctx):
        return refs_state(ctx)

    def check_wiki(self, ctx):
        return per_page_in_git(self, ctx, lambda info: list(self._judged(info, ctx)))

    def _judged(self, info, ctx):
        facts = kernel_facts(info, ctx)
        if facts is None or info.page is None or facts.file_id is None:
            return
        found = ledger(info.page)
        branch = _branch_of(facts)
        if found is None or not found.rows or branch is None or not _branch_exists(ctx, branch):
            return
        commits = len(candidate_commits(ctx.root, branch, facts.folder.slug, facts.file_id))
        if len(found.rows) > commits:
            yield (found.line, f"the Candidate ledger has {len(found.rows)} rows but branch "
                               f"{branch} has {commits} candidate commit(s) of {facts.file_id}")


class StubBeforeVerdict(Rule):
    """## What it does
    Checks, for a filed kernel experiment page, that the commit that added the page
    added a stub (no verdict yet), and that no candidate commit on its branch is older
    than that stub commit. Skipped outside git and for pages not yet committed.

    ## Why is this bad?
    Stub first (seed 003, K3): the hypothesis, the mechanism, the falsification
    criterion and the speedup bar are committed before any candidate is written, so the
    bar cannot be moved to fit the result. A page that arrives already filed, or
    candidates authored before their stub, pre-registered nothing.

    ## Example
    `git log --reverse -- <page>` whose first commit already has `verdict: supported`.
    Stub with `wiki kernel stub`, then author with `wiki kernel cand`.

    ## Options
    None.
    """

    code = "KRN004"
    name = "kernel-stub-before-verdict"
    summary = "a kernel experiment was committed already filed, or a candidate commit is older than its stub"
    kinds = ()
    cache_wiki = False  # reads git history, which is not a page: cached by the refs (per page, too)
    reports_on = ("kernel-experiment",)

    def wiki_inputs(self, ctx):
        return refs_state(ctx)

    def check_wiki(self, ctx):
        return per_page_in_git(self, ctx, lambda info: list(self._judged(info, ctx)))

    def _judged(self, info, ctx):
        facts = kernel_facts(info, ctx)
        if facts is None or facts.verdict is None:
            return
        first = first_commits(ctx).get(info.rel)
        if first is None:
            return
        sha, when, root_commit = first
        if root_commit:
            return  # added by the repository's first commit: an import, whose history is not here
        try:
            added = parse_page(first_texts(ctx)[info.rel] or "", info.rel).frontmatter
        except Exception:  # noqa: BLE001 - an unreadable old version is WK001's when it was current
            return
        if resolve_verdict(added)[0] is not None:
            yield (frontmatter_line(info, "status"),
                   f"the page was committed already filed ({sha[:12]}): no stub commit came before the verdict")
            return
        branch = _branch_of(facts)
        if branch and facts.file_id and _branch_exists(ctx, branch):
            early = [c for c in candidate_commits(ctx.root, branch, facts.folder.slug, facts.file_id) if c[1] < when]
            if early:
                yield (frontmatter_line(info, "status"),
                       f"candidate commit {early[0][0][:12]} on {branch} is older than the stub commit "
                       f"{sha[:12]}: candidates are authored after their stub")
