"""CON001 and CON002: `> [!warning]` callouts that mark a claim, and their resolution."""

from __future__ import annotations

import re

from wikiengine.lint.kinds import ALL_KINDS
from wikiengine.lint.options import Option
from wikiengine.lint.rule import Rule
from wikiengine.lint.rules._prose import prose_lines

_CALLOUT_RE = re.compile(r" {0,3}>\s*\[!warning\][+-]?\s*Contradicted by\b(?P<rest>.*)", re.I)
# "> **Resolved** 2026-06-22: ..." or "> Resolution: ..." (with content: "Resolution: TBD" is not one).
_RESOLVED_RE = re.compile(
    r" {0,3}>\s*(?:\*\*|__)?(?:Resolved\b|Resolution(?:\*\*|__)?\s*:(?:\*\*|__)?\s*(?!\(?(?:TBD|pending)\b)\S)", re.I
)
_QUOTE_RE = re.compile(r" {0,3}>")


def unresolved_contradictions(text: str, first_line: int = 1, callout_re: re.Pattern = _CALLOUT_RE) -> list[tuple[int, str]]:
    """``(line, rest of the callout line)`` of each ``[!warning] Contradicted by`` callout
    (or each line ``callout_re`` matches, its group ``rest``) outside code whose blockquote
    has no ``Resolved ...`` or ``Resolution: ...`` line."""
    found = []
    open_at: tuple[int, str] | None = None
    for number, line in enumerate(prose_lines(text), start=first_line):
        callout = callout_re.match(line)
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
        text = page.body
        if "ontradicted by" not in text:
            return
        for line, rest in unresolved_contradictions(text, page.body_line):
            yield self.finding(info.rel, line,
                               f"unresolved contradiction ({rest or 'no source named'}): reconcile the claim, then add a **Resolved** line")


_WARNING_RE = re.compile(r"\[!warning\]", re.I)
# Leading titles of a warning callout that marks a claim as overtaken (besides "Contradicted by").
MARKER_TITLES = ("Refuted by", "Superseded by", "Invalidated by", "Replaced by", "Overturned by", "Disputed by",
                 "Obsoleted by", "Retracted", "Superseded", "Obsolete", "Outdated")
# A title "<Word> by <link or experiment id>" of any word (`Narrowed by [v031](...)`).
_BY_REFERENCE = r"[A-Za-z][\w-]* by\s*(?:\[|`?(?:v|exp)\d)"


def _marker_callout_re(titles) -> re.Pattern:
    """A ``[!warning]`` callout led by one of ``titles`` (or "<Word> by <reference>"), never "Contradicted by"."""
    led_by = "|".join(re.escape(t.strip()) + r"\b" for t in titles if t.strip())
    return re.compile(
        r" {0,3}>\s*\[!warning\][+-]?\s*(?!contradicted by\b)(?P<rest>(?:" + (led_by + "|" if led_by else "")
        + _BY_REFERENCE + r").*)",
        re.I,
    )


class UnresolvedWarning(Rule):
    """## What it does
    Lists every `> [!warning]` callout that marks a claim as overtaken, other than
    `Contradicted by` (CON001's), that is still unresolved: `> [!warning] Refuted by
    [v028](...)`, `> [!warning] Superseded by ...`, `Invalidated by`, `Replaced by`,
    `Retracted`, `Outdated`, or any `<Word> by` followed by a link or an experiment id.
    Resolved is read as CON001 reads it: a line of the same blockquote starting with
    `Resolved` or `Resolution:` and what was resolved. A warning that marks no claim
    (`> [!warning] Never edit raw/`) is not reported, nor callouts inside code fences.

    ## Why is this bad?
    The callout says the claim under it no longer holds. Until the claim is rewritten or
    withdrawn and the callout says so, agents that read the page meet a claim and its
    refutation side by side, and may build on the claim.

    ## Example
    ```markdown
    > [!warning] Refuted by [v028](../experiments/.../2026-06-02-v028-remat.md)

    **Claim**: full remat always costs more than 5% of step time.
    ```
    Rewrite the claim, then record it:
    ```markdown
    > [!warning] Refuted by [v028](../experiments/.../2026-06-02-v028-remat.md)
    > **Resolved** 2026-06-20: the claim now says "on v5p, above 8k context".
    ```

    ## Options
    - `titles` (list): the leading titles that mark a claim (default: Refuted by,
      Superseded by, Invalidated by, Replaced by, Overturned by, Disputed by,
      Obsoleted by, Retracted, Superseded, Obsolete, Outdated); "<Word> by <link or id>"
      is always read as one.
    """

    code = "CON002"
    name = "unresolved-warning-callout"
    summary = "a [!warning] callout marking a claim (Refuted by, Superseded by, ...) with no Resolved line"
    kinds = ALL_KINDS
    options = {"titles": Option("str-list")}

    def prepare(self, ctx):
        self._callout_re = _marker_callout_re(ctx.config.option(self.code, "titles", MARKER_TITLES))

    def check_page(self, info, ctx):
        page = info.page
        text = page.body
        if not _WARNING_RE.search(text):  # no casefold() copy of a 16 MB page
            return
        callout_re = getattr(self, "_callout_re", None) or _marker_callout_re(
            ctx.config.option(self.code, "titles", MARKER_TITLES))
        for line, rest in unresolved_contradictions(text, page.body_line, callout_re):
            yield self.finding(info.rel, line, f"unresolved warning ({rest}): rewrite or withdraw the claim, "
                                               "then add a **Resolved** line")
