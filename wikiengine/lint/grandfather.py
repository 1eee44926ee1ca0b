"""``since``: a rule's findings on pages dated before its date are grandfathered.

A page's date is its frontmatter ``created`` (or ``date``), else the time of its first
commit (from GitView's one ``git log`` pass), else a ``YYYY-MM-DD`` in its file name.
A page with no date at all is never grandfathered. A finding about one log entry
carries that entry's date (``Finding.date``), which is used instead of the log's: an
old log's first commit must not silence a new entry.
"""

from __future__ import annotations

import datetime as dt
import functools
import re

from wikiengine.core.errors import WikiError
from wikiengine.lint.finding import Finding

TYPE_CHECKING = False  # typing's constant, without importing typing
if TYPE_CHECKING:
    from wikiengine.lint.context import LintContext

_DATE_RE = re.compile(r"(\d{4})-(\d{2})-(\d{2})")


def parse_date(value, where: str = "since") -> dt.date:
    """A ``YYYY-MM-DD`` date; WikiError otherwise (a configuration error)."""
    if isinstance(value, dt.date):
        return value
    if isinstance(value, str):
        try:
            return dt.date.fromisoformat(value.strip()[:10])
        except ValueError:
            pass
    raise WikiError(f"{where} must be a date YYYY-MM-DD, got {value!r}")


def _date_in(value) -> dt.date | None:
    return _date_of(value) if isinstance(value, str) else None


@functools.lru_cache(maxsize=4096)  # pages share their dates: a cold lint asks about every page's
def _date_of(text: str) -> dt.date | None:
    match = _DATE_RE.match(text.strip())
    if match:
        try:
            return dt.date(*(int(g) for g in match.groups()))
        except ValueError:
            return None
    return None


def frontmatter_date(frontmatter: dict) -> str:
    """The page's ``created`` (or ``date``) as ``YYYY-MM-DD``, "" when neither holds a date
    (kept in the lint cache's index: grandfathering a warm run's findings reads no page)."""
    for key in ("created", "date"):
        found = _date_in(frontmatter.get(key))
        if found:
            return found.isoformat()
    return ""


def page_date(ctx: LintContext, rel: str) -> dt.date | None:
    """The date a page was written (see the module docstring)."""
    known = ctx.page_dates.get(rel)
    if known is None and ctx.cache is not None:
        known = ctx.cache.page_memo(rel, "date")
    if known is None:
        known = frontmatter_date(ctx.info(rel).frontmatter)
    if known:
        return dt.date.fromisoformat(known)
    git = _history(ctx)
    if git is not None:
        times = git.commit_times(rel)
        if times is not None:
            return times[0].date()
    match = _DATE_RE.search(rel.rsplit("/", 1)[-1])
    return _date_in(match.group(0)) if match else None


def _history(ctx: LintContext):
    if ctx.git is not None:
        return ctx.git
    if not hasattr(ctx, "_history_view"):
        from wikiengine.lint.gitview import GitView, in_git_repo

        view = None
        if in_git_repo(ctx.root):
            try:
                view = GitView.open(ctx.root, "HEAD", untracked=False)  # for its history only
            except WikiError:
                view = None
        ctx._history_view = view
    return ctx._history_view


def since_dates(ctx: LintContext, rules) -> dict[str, dt.date]:
    """The ``since`` date of every rule that has one (configuration wins over the rule)."""
    dates = {}
    for rule in rules:
        value = ctx.config.option(rule.code, "since", rule.since)
        if value is not None:
            dates[rule.code] = parse_date(value, f"[tool.wiki.rules.{rule.code}] since")
    return dates


def apply(findings: list[Finding], ctx: LintContext, dates: dict[str, dt.date]) -> tuple[list[Finding], int]:
    """Drop findings of rules with a ``since`` on pages older than it; return (kept, dropped)."""
    if not dates:
        return findings, 0
    kept = []
    memo: dict[str, dt.date | None] = {}
    for finding in findings:
        since = dates.get(finding.code)
        if since is not None:
            if finding.date is not None:
                written = _date_in(finding.date)  # None for UNDATED: kept
            else:
                if finding.path not in memo:
                    memo[finding.path] = page_date(ctx, finding.path)
                written = memo[finding.path]
            if written is not None and written < since:
                continue
        kept.append(finding)
    return kept, len(findings) - len(kept)
