"""WK100 and WK101: findings the engine itself makes about suppressions and the baseline."""

from __future__ import annotations

from wikiengine.lint.rule import Rule


class UnusedSuppression(Rule):
    """## What it does
    Reports a `<!-- wiki-lint: disable CODE -->` (or `disable-file`) comment whose code
    silenced nothing on its lines (or in its file), names an unknown rule, or names no
    rule at all. Suppressions of rules that did not run (not selected, or git-aware
    rules outside git) are not reported.

    ## Why is this bad?
    A stale suppression hides the next real finding of that rule on the same line, and
    tells readers that something is wrong when it no longer is.

    ## Example
    ```markdown
    <!-- wiki-lint: disable LNK001 -->
    See [the setup](setup.md).
    ```
    when `setup.md` exists. Remove the comment (`wiki lint --fix` does).

    ## Options
    None.
    """

    code = "WK100"
    name = "unused-suppression"
    summary = "a suppression comment that silences nothing"
    fixable = True


class StaleBaselineEntry(Rule):
    """## What it does
    Reports an entry of the baseline file `.wiki-lint-baseline.json` that matched fewer
    findings than its count: the accepted findings were fixed (or the page was removed).
    Entries are matched by path, code and message, not by line.

    ## Why is this bad?
    A baseline only shrinks. An entry that no longer matches would silently accept the
    next finding with the same message in that page.

    ## Example
    A baseline entry for `EXP001` on a page whose frontmatter has since been fixed.
    Run `wiki lint --write-baseline` and commit the smaller baseline.

    ## Options
    None.
    """

    code = "WK101"
    name = "stale-baseline-entry"
    summary = "a baseline entry no longer matches any finding"
