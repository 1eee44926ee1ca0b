"""EXP014: a filed page is the text its filing record keeps (RELIABILITY row 73)."""

from __future__ import annotations

from wikiengine.lint.rule import Rule
from wikiengine.model.filings import wiki_drifts


class FiledPageMatchesJournal(Rule):
    """## What it does
    Reads every lane and kernel family journal in the working tree
    (`<lane>/.journal.jsonl`) and compares each page filed by `wiki exp file`,
    `wiki backfill` or `wiki kernel file` with the digest (`sha256:` of the filed text)
    that its newest filing record keeps. A page whose text differs, or that is gone, is
    flagged on every run, not only on the run that sees the edit: the journal, not the
    base revision, is what it is compared with. In a git repository only committed
    filings count (a filing not yet committed is a write in progress).

    It is repaired by restoring the filed text (`git checkout <filing commit> -- PAGE`;
    the message names the commit) or, for a lane page, by filing a rerun
    (`wiki exp retry VID`, then `wiki exp file` of the rerun). Records written before
    the journal kept digests are never flagged.

    ## Why is this bad?
    A filed page is evidence: its verdict and figures move the model page's Current
    best, and later filings compare against them as the frontier. A hand edit
    committed with `--no-verify` (a verdict reworded, `tps 1100 -> 5000`) passes every
    check that compares only with the previous commit, and from then on the lane
    measures against a figure no run produced.

    ## Example
    `2026-06-05-v045-splash.md` was filed with `tps: 1100`; a later commit changed it
    to `tps: 5000`.

    Restore it with `git checkout <filing commit> -- 2026-06-05-v045-splash.md`; to
    revisit the result, `wiki exp retry v045`.

    ## Options
    None.
    """

    code = "EXP014"
    name = "filed-page-matches-journal"
    summary = "a filed experiment page differs from the text its journal's filing record keeps"
    cache_wiki = False  # reads the journals, which are not pages
    reports_absent = True  # a filed page that is gone is reported on its path

    def check_wiki(self, ctx):
        only = None
        if ctx.targets is not ctx.files:
            only = set(ctx.targets) | set(ctx.git.deleted() if ctx.git is not None else ())
        for drift, commit in wiki_drifts(ctx.root, only):
            yield self.finding(drift.page, 1, drift.message(commit))
