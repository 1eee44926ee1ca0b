"""HYP004."""

from __future__ import annotations

import datetime as dt
import re

from wikiengine.core.identity import model_name
from wikiengine.lint.options import Option
from wikiengine.lint.rule import Rule
from wikiengine.lint.rules._experiments import (
    canonical_id,
    experiment_facts,
    frontmatter_date,
    key_line,
    lane_ids,
    lint_cache,
    model_dirs,
    pages_of,
    real_date,
)

OPEN_STATUSES = ("open", "in_progress", "in-progress", "testing")
DEFAULT_DAYS = 14
_LINK_TARGET_RE = re.compile(r"\]\(([^)\s]+)\)|\[\[([^\]|#]+)")


def hypothesis_slug(value) -> str | None:
    """The hypothesis slug an experiment's ``hypothesis:`` names: the slug itself, a path or
    link to ``hypotheses/<slug>.md``, or a ``[[slug]]`` (None: prose, or nothing)."""
    if not isinstance(value, str) or not value.strip():
        return None
    text = value.strip()
    link = _LINK_TARGET_RE.search(text)
    if link:
        text = link.group(1) or link.group(2)
    text = text.rsplit("/", 1)[-1].split("#", 1)[0]
    text = text[:-3] if text.endswith(".md") else text
    return text.casefold() if re.fullmatch(r"[\w.-]+", text) else None


def _page_date(facts, keys=("updated", "created")) -> dt.date | None:
    fm = facts.frontmatter
    for key in keys:
        day = frontmatter_date(fm.get(key))
        if day:
            return real_date(day)
    return real_date(facts.file_date)


def experiment_index(ctx) -> tuple[dt.date | None, dict[str, tuple[dt.date | None, bool]]]:
    """``(newest experiment begun (created), {hypothesis slug: (newest date of a page naming it, is one open)})``,
    once per lint, from the cached frontmatter of every experiment page."""
    cache = lint_cache(ctx, "hypothesis-activity")
    if "index" not in cache:
        newest, named = None, {}
        for info in pages_of(ctx, "experiment"):
            facts = experiment_facts(info, ctx)
            if facts is None:
                continue
            day, started = _page_date(facts), _page_date(facts, ("created",))
            if started is not None and (newest is None or started > newest):
                newest = started  # "now" is the newest experiment begun: filing an old stub does not move it
            slug = hypothesis_slug(facts.frontmatter.get("hypothesis"))
            if slug is not None:
                last, running = named.get(slug, (None, False))
                later = day if last is None or (day is not None and day > last) else last
                named[slug] = (later, running or facts.is_open)
        cache["index"] = (newest, named)
    return cache["index"]


def _listed_activity(info, ctx) -> tuple[list[dt.date], bool]:
    """Dates of the pages a hypothesis's own ``experiments:`` list names in its lane, and
    whether one of them is still open."""
    fm = info.frontmatter
    model, lane, listed = fm.get("model"), fm.get("lane"), fm.get("experiments")
    if not (isinstance(model, str) and isinstance(lane, str) and isinstance(listed, list)):
        return [], False
    folders = [d for d in model_dirs(ctx) if model_name(d) == model_name(model)]
    by_id = lane_ids(ctx, (folders[-1], lane)) if folders else {}
    dates, running = [], False
    for item in listed:
        for rel in by_id.get(canonical_id(item), ()):
            facts = experiment_facts(ctx.info(rel), ctx)
            if facts is not None:
                dates += [d for d in (_page_date(facts),) if d is not None]
                running = running or facts.is_open
    return dates, running


class HypothesisIdle(Rule):
    """## What it does
    Reports an open hypothesis (`wiki/hypotheses/<slug>.md` with `status: open`,
    `in_progress` or `testing`) that nothing has touched for more than `days` days
    (default 14): neither the hypothesis page (`updated`, else `created`) nor any
    experiment page that names it is dated within `days` of the wiki's newest experiment.
    An experiment names a hypothesis by its `hypothesis:` frontmatter (the slug, or a
    path or link to the page), or by being in the hypothesis's own `experiments:` list
    (with its `model` and `lane`). A hypothesis that an in-progress experiment names is
    being tested (a stub left too long is EXP011's). An undated hypothesis is not judged.

    "Now" is the newest `created` date (else the file-name date) of any experiment page in
    the wiki, never the clock: the same wiki always lints the same, and filing an old stub
    (its `updated` moves, its `created` does not) does not make every hypothesis idle.

    ## Why is this bad?
    An open hypothesis is a promise that someone will test it. One left open for weeks
    with nothing testing it crowds the queue the loop picks from, and readers take it
    for live work; test it, or retire it with the reason.

    ## Example
    ```yaml
    status: open
    created: 2026-05-02
    ```
    when the wiki's newest experiment is dated 2026-06-30 and no experiment names the
    hypothesis. Test it (an experiment with `hypothesis: <slug>`), or set
    `status: retired` and say why.

    ## Options
    - `days` (integer, default 14): how long an open hypothesis may go untouched.
    - `statuses` (list): the statuses that mean open (default: open, in_progress,
      in-progress, testing).
    """

    code = "HYP004"
    name = "hypothesis-idle"
    summary = "an open hypothesis that no experiment has named within N days of the wiki's newest experiment"
    options = {"days": Option("int", minimum=1, maximum=36_500), "statuses": Option("str-list")}
    reports_on = ("hypothesis",)

    def check_wiki(self, ctx):
        hypotheses = ctx.target_pages("hypothesis")
        if not hypotheses:
            return  # a PATH run over experiment pages reads no other experiment's frontmatter
        newest, named = experiment_index(ctx)
        if newest is None:
            return
        days = int(ctx.config.option(self.code, "days", DEFAULT_DAYS))
        statuses = {s.casefold() for s in ctx.config.option(self.code, "statuses", OPEN_STATUSES)}
        for info in hypotheses:
            status = info.frontmatter.get("status")
            if not (isinstance(status, str) and status.strip().casefold() in statuses):
                continue
            stem = info.rel.rsplit("/", 1)[-1][: -len(".md")].casefold()
            last, running = named.get(stem, (None, False))
            listed, listed_running = _listed_activity(info, ctx)
            own = [real_date(frontmatter_date(info.frontmatter.get(k))) for k in ("updated", "created")]
            dates = [d for d in (last, *listed, *own) if d is not None]
            if running or listed_running or not dates or (newest - max(dates)).days <= days:
                continue
            yield self.finding(
                info.rel, key_line(info, "status"),
                f"hypothesis is {status.strip()} but idle: last touched {max(dates)}, "
                f"{(newest - max(dates)).days} days before the wiki's newest experiment ({newest}); "
                "test it, or retire it with the reason", subject="idle hypothesis",
            )
