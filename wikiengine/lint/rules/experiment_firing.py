"""EXP015."""

from __future__ import annotations

from wikiengine.lint.rules._experiments import has_content
from wikiengine.lint.rules._shared import ExperimentPageRule
from wikiengine.lint.rules.experiment_sections import never_executed
from wikiengine.model.experiment import firing_audit


class FiringAuditMissing(ExperimentPageRule):
    """## What it does
    Checks that a filed experiment page's `## HLO Dump` carries the hypothesis-firing
    audit line, in one of the forms the profile analyzer writes (any case):
    `Hypothesis-firing audit: CONFIRMED` (or `SILENT NO-OP`, `PARTIAL`),
    `Firing audit: partial — ...`, `FIRING CONFIRMED`, `SILENT NO-OP`, or a line led by
    `PARTIAL`. A page still in progress, a `backfilled: true` page, a page with verdict
    `invalid` or `inconclusive` (what `wiki exp file` caps a run without an audit at), a run whose Verdict says it never executed, and a page with no HLO Dump
    (EXP002's business) or an empty one (EXP004's) are not checked.

    ## Why is this bad?
    The audit says whether the change the hypothesis names fired at all. A verdict filed
    without it cannot tell a real effect from a silent no-op: the flag was ignored, the
    kernel never ran, and the "refuted" or "supported" is about the baseline.

    ## Example
    ```markdown
    ## HLO Dump
    One `while` loop; each iteration slices the stacked parameters.
    ```
    Add the analyzer's audit line:
    ```markdown
    ## HLO Dump
    Hypothesis-firing audit: CONFIRMED — one `while` loop in `train_step`.
    ```

    ## Options
    None. Pages written before the wiki adopted the audit lack it: grandfather them with
    the `since` option every rule takes (`[tool.wiki.rules.EXP015] since = "2026-07-21"`).
    """

    code = "EXP015"
    name = "experiment-firing-audit"
    summary = "a filed experiment's HLO Dump has no hypothesis-firing audit line (CONFIRMED / SILENT NO-OP / PARTIAL)"

    def check_facts(self, info, facts, ctx):
        if facts.verdict in (None, "invalid", "inconclusive") or facts.backfilled or never_executed(facts):
            return
        found = facts.sections_led_by("HLO Dump")
        if not found or not has_content(found):
            return  # EXP002 / EXP004
        if any(firing_audit(s.body) for s in found):
            return
        yield self.finding(info.rel, found[0].line,
                           "'## HLO Dump' has no hypothesis-firing audit line (CONFIRMED / SILENT NO-OP / PARTIAL)")
