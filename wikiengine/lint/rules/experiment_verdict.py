"""EXP005, EXP006 and EXP009: the verdict of an experiment page."""

from __future__ import annotations

import re

from wikiengine.lint.rules._experiments import (
    IN_PROGRESS,
    VERDICTS,
    has_content,
    key_line,
)
from wikiengine.lint.rules._shared import ExperimentPageRule

# The verdict word a Verdict section opens with: "**supported** — ...", "Verdict: refuted", "Refuted."
_OPENING_VERDICT_RE = re.compile(r"^[\W_]*(?:verdict[\W_]*)?(" + "|".join(VERDICTS) + r")\b", re.I)


class BackfilledVerdict(ExperimentPageRule):
    """## What it does
    Checks that a `backfilled: true` page has verdict `inconclusive` or `invalid`, never
    `supported` or `refuted`.

    ## Why is this bad?
    BACKFILL files a page from a workload's log tail after the run; the profile
    analyzer's hypothesis-firing audit never ran, so nothing supports or refutes the
    hypothesis (which is not even recovered).

    ## Example
    ```yaml
    status: supported
    backfilled: true
    ```
    Use `status: inconclusive` (clean completion) or `status: invalid` (a crash).

    ## Options
    None.
    """

    code = "EXP005"
    name = "backfilled-verdict"
    summary = "a backfilled: true page has verdict supported or refuted"

    def check_facts(self, info, facts, ctx):
        if facts.backfilled and facts.verdict in ("supported", "refuted"):
            key = "verdict" if "verdict" in facts.frontmatter and facts.status not in VERDICTS else "status"
            yield self.finding(
                info.rel, key_line(info, key),
                f"backfilled page has verdict {facts.verdict!r}: a backfilled page is inconclusive or invalid",
            )


class VerdictSectionAgrees(ExperimentPageRule):
    """## What it does
    Checks that the frontmatter status and the `## Verdict` section agree: a page with a
    verdict (`status: <verdict>`, or `status: filed` with `verdict: <verdict>`) has a
    filled Verdict section; an `in_progress` page has an empty one; and when the Verdict
    section opens with a verdict word, it is the frontmatter's verdict.

    ## Why is this bad?
    Readers (and the model page's Current best) go by the frontmatter, people by the
    section. A page that says both `supported` and `refuted`, or a verdict with no
    reasoning, cannot be trusted.

    ## Example
    `status: in_progress` with `## Verdict` holding "**supported** — +2.1 MFU".

    Set `status: supported` in the same edit that fills the Verdict section.

    ## Options
    None.
    """

    code = "EXP006"
    name = "verdict-section-agrees"
    summary = "frontmatter status and the Verdict section disagree"

    def check_facts(self, info, facts, ctx):
        found = facts.sections_led_by("Verdict")
        if not found:
            return  # EXP002
        filled = has_content(found)
        if facts.verdict is not None and not filled:
            yield self.finding(info.rel, found[0].line, f"verdict is {facts.verdict!r} but '## Verdict' is empty")
        elif facts.status == IN_PROGRESS and filled:
            yield self.finding(info.rel, found[0].line, "status is 'in_progress' but '## Verdict' is filled")
        elif facts.verdict is not None:
            first = next((ln for s in found for ln in s.body.splitlines() if ln.strip()), "")
            match = _OPENING_VERDICT_RE.match(first.strip())
            if match and match.group(1).lower() != facts.verdict:
                yield self.finding(
                    info.rel, found[0].line,
                    f"'## Verdict' says {match.group(1).lower()!r} but the frontmatter says {facts.verdict!r}",
                )


class StatusVerdictConsistent(ExperimentPageRule):
    """## What it does
    Checks that a page which carries both `status` and `verdict` agrees with itself.
    Two schemas are understood: `status: <verdict>` (the seeds) and `status: filed` plus
    `verdict: <verdict>`. Flagged: `status: supported` with `verdict: refuted`,
    `status: filed` without a verdict (or with an unknown one), `status: in_progress`
    with a verdict.

    ## Why is this bad?
    Every other rule, the model page and the agents read the verdict from the
    frontmatter; a page with two answers gets a different one depending on the reader.

    ## Example
    ```yaml
    status: supported
    verdict: inconclusive
    ```
    Use `status: filed` with `verdict: inconclusive`, or `status: inconclusive` alone.

    ## Options
    None.
    """

    code = "EXP009"
    name = "status-verdict-consistent"
    summary = "frontmatter status and verdict keys disagree"

    def check_facts(self, info, facts, ctx):
        if facts.verdict_problem:
            line = key_line(info, "verdict") if "verdict" in facts.frontmatter else key_line(info, "status")
            yield self.finding(info.rel, line, facts.verdict_problem)
