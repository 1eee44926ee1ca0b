"""CON001."""

from __future__ import annotations

import re

from wikiengine.lint.rule import Rule
from wikiengine.lint.rules._prose import prose_lines
from wikiengine.lint.rules.unreadable_page import ALL_KINDS

_CALLOUT_RE = re.compile(r" {0,3}>\s*\[!warning\][+-]?\s*Contradicted by\b(?P<rest>.*)", re.I)
# "> **Resolved** 2026-06-22: ..." or "> Resolution: ..." (with content: "Resolution: TBD" is not one).
_RESOLVED_RE = re.compile(
    r" {0,3}>\s*(?:\*\*|__)?(?:Resolved\b|Resolution(?:\*\*|__)?\s*:(?:\*\*|__)?\s*(?!\(?(?:TBD|pending)\b)\S)", re.I
)
_QUOTE_RE = re.compile(r" {0,3}>")


def unresolved_contradictions(text: str, first_line: int = 1) -> list[tuple[int, str]]:
    """``(line, rest of the callout line)`` of each ``[!warning] Contradicted by`` callout
    outside code whose blockquote has no ``Resolved ...`` or ``Resolution: ...`` line."""
    found = []
    open_at: tuple[int, str] | None = None
    for number, line in enumerate(prose_lines(text), start=first_line):
        callout = _CALLOUT_RE.match(line)
        if open_at is not None and (callout or not _QUOTE_RE.match(line)):
            found.append(open_at)  # the blockquote ended without a resolution
            open_at = None
        if callout:
            open_at = (number, callout.group("rest").strip())
        elif open_at is not None and _RESOLVED_RE.match(line):
            open_at = None
    if open_at is not None:
        found.append(open_at)
    return found


class UnresolvedContradiction(Rule):
    """## What it does
    Lists every `> [!warning] Contradicted by [<page>](<path>) on YYYY-MM-DD` callout
    that is still unresolved: its blockquote has no line starting with `Resolved` or
    `Resolution:` and what was resolved (bold or not; `Resolution: TBD` or
    `Resolution pending` resolve nothing). Callouts inside code fences are examples, not
    claims.

    ## Why is this bad?
    The callout marks a claim that a newer page contradicts. Until someone reconciles
    the two (the claim is narrowed, or the newer page is wrong), agents that read the
    page meet two answers and may build on the wrong one. The wiki's LINT lists them so
    they get resolved.

    ## Example
    ```markdown
    > [!warning] Contradicted by [obs-041](../observations/obs-041.md) on 2026-06-12

    **Claim**: splash attention is always faster than the XLA kernel.
    ```
    Reconcile, then record it in the callout:
    ```markdown
    > [!warning] Contradicted by [obs-041](../observations/obs-041.md) on 2026-06-12
    > **Resolved** 2026-06-20: faster only above 4k context; the claim now says so.
    ```

    ## Options
    None.
    """

    code = "CON001"
    name = "unresolved-contradiction"
    summary = "a [!warning] Contradicted by callout with no Resolved line"
    kinds = ALL_KINDS

    def check_page(self, info, ctx):
        page = info.page
        text = page.preamble + "".join(s.text for s in page.sections)
        if "ontradicted by" not in text:
            return
        for line, rest in unresolved_contradictions(text, page.body_line):
            yield self.finding(info.rel, line,
                               f"unresolved contradiction ({rest or 'no source named'}): reconcile the claim, then add a **Resolved** line")
