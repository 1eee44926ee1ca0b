"""EXP002, EXP003 and EXP004: the sections of an experiment page."""

from __future__ import annotations

import re
from dataclasses import replace

from wikiengine.core.page import parse_page, split_lines
from wikiengine.lint.options import Option
from wikiengine.lint.rule import Rule
from wikiengine.lint.rules._experiments import (
    IN_PROGRESS,
    NOT_RECOVERED,
    REQUIRED_SECTIONS,
    experiment_facts,
    has_content,
    lane_conventions,
    sections_led_by,
)
from wikiengine.lint.rules._shared import ExperimentPageRule
from wikiengine.model.experiment import HYPOTHESIS_SECTION, LABELS, missing_labels  # noqa: F401 - --fix and tests use them here


def _required(ctx, code: str = "EXP002", lane_key=None) -> tuple[str, ...]:
    """The required sections: the lane program's ``page_conventions.required_sections``,
    else the rule's ``sections`` option, else the template's."""
    if lane_key is not None:
        own = lane_conventions(ctx, lane_key).get("required_sections")
        if isinstance(own, list) and all(isinstance(t, str) for t in own):
            return tuple(own)
    return tuple(ctx.config.option(code, "sections", REQUIRED_SECTIONS))


class RequiredSections(ExperimentPageRule):
    """## What it does
    Checks that an experiment page has every required section: Hypothesis under test,
    Setup, Results, Profile, HLO Dump and Verdict. A section is found by its leading
    title, so `## Results — marginal new frontier (+0.63%)` is the Results section, and
    the template's `## Verdict + reasoning` is the Verdict. An `in_progress` stub may leave
    its sections empty (they are placeholders); once the page has a verdict, Setup and
    Results must hold content: an empty heading, or one holding only a placeholder (`TBD`,
    `(Pending)`, `<...>`), does not satisfy them. A page with verdict `invalid` (a run that
    crashed or never executed), a page whose Verdict says the run never executed
    (compile-time OOM, a crash before step 0) and a `backfilled: true` page need no
    Profile or HLO Dump.
    (An empty Hypothesis under test is EXP003, an empty Profile or HLO Dump EXP004 and an
    empty Verdict EXP006.)

    ## Why is this bad?
    The stub is filed before dispatch so that the profile analyzer and later readers find
    the hypothesis, the planned setup and the placeholders where they expect them; a
    verdict without its results cannot be checked.

    ## Example
    A stub with only `## Hypothesis under test` and `## Setup`.

    Add the four placeholders:
    ```markdown
    ## Results
    ## Profile
    ## HLO Dump
    ## Verdict
    ```
    `wiki lint --fix` adds the missing sections, empty, to an `in_progress` stub (never
    to a page with a verdict).

    ## Options
    - `sections` (list of titles): the required sections, in order.

    A lane whose pages follow an older, model-level program says so in that program's
    `## Config` block, which follows the cascade:
    ```yaml
    page_conventions:
      id_pattern: 'exp\\d+'
      required_sections: [Hypothesis under test, Setup, Results, Verdict]
    ```
    """

    code = "EXP002"
    options = {"sections": Option("str-list")}
    name = "experiment-required-sections"
    summary = "a required section is missing: Hypothesis under test, Setup, Results, Profile, HLO Dump, Verdict"
    fixable = True

    def check_facts(self, info, facts, ctx):
        stub = _is_stub(facts)
        for title in _required(ctx, lane_key=facts.lane_key):
            found = facts.sections_led_by(title)
            if not found and title in RUN_SECTIONS and (facts.verdict == "invalid" or facts.backfilled
                                                           or never_executed(facts)):
                continue  # a run that crashed or never executed has no profile; backfilled pages say so
            if not found:
                finding = self.finding(info.rel, 1, f"missing required section '## {title}'")
                yield replace(finding, fixable=stub)  # --fix only ever touches a stub
            elif facts.verdict is not None and title in ("Setup", "Results") and not has_content(found):
                yield replace(
                    self.finding(info.rel, found[0].line, f"section '## {title}' is empty on a page with a verdict"),
                    fixable=False,
                )

    def fix(self, info, ctx):
        """Insert each missing section, empty, before the next required section the page has."""
        facts = experiment_facts(info, ctx)
        if facts is None or not _is_stub(facts):
            return None
        page = info.page
        required = _required(ctx, lane_key=facts.lane_key)
        missing = [t for t in required if not sections_led_by(page, t)]
        if not missing:
            return None
        nl = page.newline
        lines = split_lines(page.to_text())
        if lines and not lines[-1].endswith(("\n", "\r")):
            lines[-1] += nl
        inserts: list[tuple[int, str]] = []
        for title in missing:
            later = (sections_led_by(page, t) for t in required[required.index(title) + 1 :])
            anchor = next((found[0].line - 1 for found in later if found), len(lines))
            inserts.append((anchor, f"## {title}{nl}{nl}"))
        # Bottom up, and at one anchor the later title first, so each lands in seed order.
        for _order, (anchor, text) in sorted(enumerate(inserts), key=lambda item: (item[1][0], item[0]), reverse=True):
            lines.insert(anchor, text)
        return parse_page("".join(lines), page.path)


RUN_SECTIONS = ("Profile", "HLO Dump")
_NEVER_RAN_RE = re.compile(r"(?i)never (?:ran|executed|started)|did not (?:run|execute|start)|compile[- ]time oom"
                           r"|before step 0|crashed before|\b(?:0|zero|no) steps?\b|no step ran|before (?:the )?first step")


def never_executed(facts) -> bool:
    """Does the Verdict (title or text) say the run never executed (compile-time OOM, a
    crash before step 0)? Such a page omits Profile and says why in its Verdict."""
    return any(_NEVER_RAN_RE.search(s.title + "\n" + s.body) for s in facts.sections_led_by("Verdict"))


def _is_stub(facts) -> bool:
    return facts.status == IN_PROGRESS and facts.verdict is None


class HypothesisParagraphs(ExperimentPageRule):
    """## What it does
    Checks that `## Hypothesis under test` holds the four labelled paragraphs
    **Hypothesis**, **Mechanism**, **Predicted signal** and **Falsification criterion**,
    each with text. A label is bold at the start of a line and may carry a gloss and a
    colon: `**Predicted signal** (bucket change): expect ...`. A `backfilled: true` page
    instead carries the seed's statement starting `**Hypothesis not recovered**`.

    ## Why is this bad?
    The profile analyzer verifies the predicted signal against the HLO and the profile
    (CONFIRMED / SILENT NO-OP / PARTIAL); without the four paragraphs a silent no-op
    passes as a result, and nobody can say what would have refuted the hypothesis.

    ## Example
    ```markdown
    ## Hypothesis under test
    Splash attention should help.
    ```
    Use:
    ```markdown
    ## Hypothesis under test
    **Hypothesis**: splash attention raises MFU by 2 points on 2b-seq8k.

    **Mechanism**: replace the XLA attention with the splash kernel.

    **Predicted signal**: expect custom_call(target=splash) in the train_step module.

    **Falsification criterion**: MFU gain under 0.5 points.
    ```

    ## Options
    None.
    """

    code = "EXP003"
    name = "experiment-hypothesis-paragraphs"
    summary = "Hypothesis under test lacks one of the labelled paragraphs Hypothesis, Mechanism, Predicted signal, Falsification criterion"

    def check_facts(self, info, facts, ctx):
        found = facts.sections_led_by(HYPOTHESIS_SECTION)
        if not found:
            return  # EXP002
        body = "".join(s.body for s in found)
        if facts.backfilled and NOT_RECOVERED.casefold() in body.casefold():
            return
        missing = missing_labels(body)
        if missing:
            extra = f" (or the {NOT_RECOVERED} statement of a backfilled page)" if facts.backfilled else ""
            yield self.finding(
                info.rel, found[0].line,
                "Hypothesis under test lacks " + ", ".join(f"**{m}**" for m in missing) + extra,
            )


class ProfileAndHloFilled(ExperimentPageRule):
    """## What it does
    Checks that a page with a verdict has a filled `## Profile` and `## HLO Dump` (a
    placeholder such as `TBD` or `(Pending)` is not filled), unless the page is
    `backfilled: true` (BACKFILL files pages for runs the analyzer never saw, and says
    so) or its verdict is `invalid` (a run that crashed or never executed has no profile
    to paste, and says why in its Verdict).

    ## Why is this bad?
    A verdict is assigned from the profile analyzer's audit. Without the Profile and the
    HLO Dump nobody can tell whether the change fired at all.

    ## Example
    A page with `status: supported` whose `## Profile` section is empty.

    Paste the analyzer's Profile and HLO Dump sections, or, for a page filed from logs
    alone, mark it `backfilled: true` with verdict `inconclusive` or `invalid`.

    ## Options
    None.
    """

    code = "EXP004"
    name = "experiment-profile-filled"
    summary = "a page with a verdict has an empty Profile or HLO Dump section and is not backfilled: true"

    def check_facts(self, info, facts, ctx):
        if facts.verdict in (None, "invalid") or facts.backfilled:
            return
        required = _required(ctx, lane_key=facts.lane_key)
        for title in ("Profile", "HLO Dump"):
            found = facts.sections_led_by(title)
            if found and not has_content(found) and title in required:
                yield self.finding(
                    info.rel, found[0].line, f"'## {title}' is empty on a page with verdict {facts.verdict!r}"
                )


class DuplicateSection(Rule):
    """## What it does
    Flags an experiment page with two H2 sections of exactly the same title (two
    `## Verdict`, two `## Results`). Sections that share a leading title but carry
    different suffixes (`## Results` and `## Results — rerun`) are allowed.

    ## Why is this bad?
    Readers and rules take the first section of a title; an appended second `## Verdict`
    says something the frontmatter and the first one do not, usually an edit made
    after the page was filed.

    ## Example
    A page ending in a second `## Verdict` with "A second verdict."

    Merge the two, or give the addition its own title (`## Verdict — addendum`) on a page
    that is still in progress.

    ## Options
    None.
    """

    code = "EXP012"
    name = "duplicate-experiment-section"
    summary = "an experiment page has two sections with the same title"
    kinds = ("experiment",)

    def check_page(self, info, ctx):
        if experiment_facts(info, ctx) is None:
            return
        first: dict[str, int] = {}
        for section in info.page.sections:
            if section.key in first:
                yield self.finding(
                    info.rel, section.line, f"'## {section.title}' again (first on line {first[section.key]})"
                )
            else:
                first[section.key] = section.line
