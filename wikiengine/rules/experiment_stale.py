"""EXP011."""

from __future__ import annotations

import datetime as dt

from wikiengine.lint.options import Option
from wikiengine.lint.rule import Rule
from wikiengine.rules._experiments import IN_PROGRESS, experiment_facts

DEFAULT_MAX_AGE_DAYS = 14


class StaleStub(Rule):
    """## What it does
    Flags an `in_progress` experiment stub that was first committed more than
    `max-age-days` days ago (default 14). The age is measured from git commit time (the
    first commit that added the page at the base revision), not from the page's own
    `created`, which an agent can copy forward.

    ## Why is this bad?
    A stub is filed just before dispatch and gets its verdict when the run finishes. One
    that stays `in_progress` for weeks is a run whose result was never filed (a silent
    subagent failure, a lost session) and blocks nothing, so nobody notices.

    ## Example
    `status: in_progress` on a page first committed 30 days ago.

    File the verdict (`invalid` with the reason if the run was lost).

    ## Options
    - `max-age-days` (integer, default 14).

    Needs git; uncommitted stubs are never stale.
    """

    code = "EXP011"
    options = {"max-age-days": Option("int", minimum=1, maximum=36_500)}
    name = "stale-in-progress-stub"
    summary = "an in_progress stub older than max-age-days, measured from git commit time"
    needs_git = True
    cache_wiki = False  # reads commit times and the clock

    def check_wiki(self, ctx):
        if ctx.git is None:
            return
        max_age = int(ctx.config.option(self.code, "max-age-days", DEFAULT_MAX_AGE_DAYS))
        now = dt.datetime.now(dt.timezone.utc)
        for info in ctx.target_pages("experiment"):
            facts = experiment_facts(info, ctx)
            if facts is None or facts.status != IN_PROGRESS:
                continue
            times = ctx.git.commit_times(info.rel)
            if times is None:
                continue
            age = now - times[0]
            if age > dt.timedelta(days=max_age):
                yield self.finding(
                    info.rel, 1,
                    f"in_progress since {times[0].date().isoformat()} ({age.days} days, more than {max_age}): "
                    "file its verdict",
                )
