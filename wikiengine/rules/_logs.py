"""Log entries, parsed once per lint for the LOG and RUN rules (the entry model is
:mod:`wikiengine.logbook`, shared with the writers)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from wikiengine.logbook import GLOBAL_LOG, LogEntry, log_tier, parse_entries, parse_heading  # noqa: F401
from wikiengine.rules._experiments import lint_cache

if TYPE_CHECKING:
    from wikiengine.lint.context import LintContext, PageInfo


def log_entries(info: PageInfo, ctx: LintContext) -> list[LogEntry]:
    """The entries of a log page, in file order (cached per lint)."""
    cache = lint_cache(ctx, "log-entries")
    if info.rel not in cache:
        cache[info.rel] = parse_entries(info.page)
    return cache[info.rel]
