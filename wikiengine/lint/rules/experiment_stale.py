"""EXP011."""

from __future__ import annotations

import datetime as dt

from wikiengine.core.clock import from_epoch, utcnow
from wikiengine.lint.options import Option
from wikiengine.lint.rule import Rule
from wikiengine.lint.rules._shared import target_experiments
from wikiengine.model.experiment import is_open

DEFAULT_MAX_AGE_HOURS = 24.0  # conventions.md: a stub in progress more than 24 hours is orphaned


class StaleStub(Rule):
    """## What it does
    Flags an experiment stub still open (`status: in_progress`, or a free word real wikis
    used for it: `running`, `pending`, `draft`, `TBD`) that was first committed more than
    `max-age-hours` hours ago (default 24). The age is measured from git commit time (the
    first commit that added the page at the base revision), not from the page's own
    `created`, which an agent can copy forward.

    ## Why is this bad?
    A stub is filed just before dispatch and gets its verdict when the run finishes. One
    that stays `in_progress` for weeks is a run whose result was never filed (a silent
    subagent failure, a lost session) and blocks nothing, so nobody notices.

    ## Example
    `status: running` on a page first committed three days ago.

    File the verdict (`invalid` with the reason if the run was lost).

    ## Options
    - `max-age-hours` (integer, default 24).
    - `max-age-days` (integer): read instead of `max-age-hours` when set (older configurations).

    Needs git; uncommitted stubs are never stale.
    """

    code = "EXP011"
    options = {"max-age-hours": Option("int", minimum=1, maximum=876_000),
               "max-age-days": Option("int", minimum=1, maximum=36_500)}
    name = "stale-in-progress-stub"
    summary = "a stub still open (in_progress, running, pending) older than max-age-hours (24), from git commit time"
    needs_git = True
    cache_wiki = False  # reads commit times and the clock
    reports_on = ("experiment",)

    def check_wiki(self, ctx):
        if ctx.git is None:
            return
        days = ctx.config.option(self.code, "max-age-days")
        hours = float(days) * 24 if days is not None else float(ctx.config.option(self.code, "max-age-hours",
                                                                                   DEFAULT_MAX_AGE_HOURS))
        now = utcnow()  # the wall clock: lint runs in a fork pool, out of reach of a wake's clock
        # The open stubs, cached until a page changes; their first commit times, until the base
        # changes (a commit re-reads the times of the open stubs, not every lane's pages).
        open_stubs = ctx.wiki_memo("EXP011-open-stubs", lambda: self._open_stubs(ctx), by_lane=True)
        firsts = ctx.revision_facts("EXP011-first-commits", [rel for rel, _status in open_stubs],
                                    lambda rels: self._first_commits(ctx, rels),
                                    lambda commit, held: self._firsts_advanced(ctx, commit, held))
        # a stub first committed after this (a second's margin: the exact test is on datetimes)
        # is not stale: most open stubs are recent, and a datetime of each cost 4 ms at 50,000 pages
        recent = now.timestamp() - hours * 3600 + 1
        for rel, status in open_stubs:
            first = firsts[rel]
            if first is None or first > recent:  # not committed, or committed recently: not stale
                continue
            since = from_epoch(first)
            age = now - since
            if age > dt.timedelta(hours=hours):
                yield self.finding(
                    rel, 1,
                    f"{status} since {since.date().isoformat()} ({age.total_seconds() / 3600:.0f} h, more than "
                    f"{hours:g} h): file its verdict (invalid, with the reason, if the run was lost)",
                )

    @staticmethod
    def _open_stubs(ctx) -> list[tuple[str, str]]:
        """``(page, status)`` of every open target experiment."""
        return [(info.rel, str(facts.status)) for info, facts in target_experiments(ctx) if is_open(facts.frontmatter)]

    @staticmethod
    def _firsts_advanced(ctx, commit: str, held: dict[str, float | None]) -> dict[str, float | None] | None:
        """The first commit times ``held`` at the earlier base ``commit``, with the commits since:
        a commit's run walks those alone, not the whole history (0.2 s at 50,000 pages)."""
        since = ctx.git.times_since(commit)
        if since is None:
            return None
        advanced = dict(held)
        for rel, first in held.items():
            if rel in since:  # committed since: its first time is the earlier of the two
                walked = since[rel][0].timestamp()
                advanced[rel] = walked if first is None else min(first, walked)
        return advanced

    @staticmethod
    def _first_commits(ctx, rels: list[str]) -> dict[str, float | None]:
        """The first commit time (epoch seconds) of each of ``rels`` up to the base; None: not committed."""
        times = ctx.git.commit_times_of(rels)
        return {rel: times[rel][0].timestamp() if times[rel] is not None else None for rel in rels}
