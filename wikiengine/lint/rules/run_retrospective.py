"""RUN001 and RUN002: retrospectives and the stops they allow."""

from __future__ import annotations

from wikiengine.core.identity import model_name
from wikiengine.lint.rule import Rule
from wikiengine.lint.rules._experiments import key_line
from wikiengine.lint.rules._logs import LaneLogRule, log_entries
from wikiengine.lint.rules._retrospectives import name_lane, path_lane, retrospectives


class StopNeedsRetrospective(LaneLogRule):
    """## What it does
    For every `stop` entry (alone or in a compound op) in a lane's `log.md`, checks that
    a retrospective of that same lane (model and lane) is dated on or after the lane's
    last `start` entry before the stop, and no later than the stop itself. A
    retrospective of another lane, or one from an earlier session, does not count.

    Retrospectives are found where real wikis file them,
    `wiki/analyses/<YYYY-MM-DD>-<model>-<lane>-retrospective[-N].md` (lane from frontmatter
    `model` and `lane`, else from the name), in `wiki/retrospectives/` (frontmatter) and
    in `<lane>/retrospectives/` (the path); their date is frontmatter `created`, else the
    name's date, never the file's time.

    ## Why is this bad?
    A session that stops without a retrospective throws away what it learned, and is
    the seed's canonical premature stop (2026-05-21 gemma4-jax): the watcher blocks it
    and LINT voids the close.

    ## Example
    ```markdown
    ## [2026-06-08] stop | /stop-experiment: frontier flat for 6 iterations
    ## [2026-06-01] start | /start-experiment session begin
    ```
    with the lane's last retrospective dated 2026-05-20 (an earlier session). File
    `wiki/retrospectives/2026-06-08-gemma4-tpu.md` (`model: gemma4`, `lane: tpu`) first.

    ## Options
    None.
    """

    code = "RUN001"
    name = "stop-needs-retrospective"
    summary = "a stop entry in a lane log has no retrospective for that lane filed on or after the lane's last start entry"
    by_lane = True  # lint/lane_parts.py

    def lane_inputs(self, ctx):
        # a retrospective filed in another lane's folder may name this lane
        return repr(sorted((r.rel, r.model, r.lane, r.date) for retros in retrospectives(ctx).values() for r in retros))

    def check_lane_log(self, info, lane, ctx):
        entries = [e for e in log_entries(info, ctx) if e.date is not None]
        retros = None  # the wiki's retrospectives are listed only for a log that has a stop
        for index, entry in enumerate(entries):
            if not entry.has_op("stop"):
                continue
            if retros is None:
                retros = retrospectives(ctx).get((model_name(lane[0]), lane[1]), [])
            start = next((e for e in entries[index + 1 :] if e.has_op("start")), None)
            low = start.date if start else "0000-00-00"
            if not any(low <= r.date <= entry.date for r in retros):
                since = f"on or after the start of {start.date} (line {start.line})" if start else "before it"
                yield self.finding(
                    info.rel, entry.line,
                    f"stop on {entry.date} has no retrospective of {model_name(lane[0])}/{lane[1]} filed {since}",
                    date=entry.finding_date, subject=entry.subject,
                )


class RetrospectiveNamesLane(Rule):
    """## What it does
    Checks that a retrospective says which lane it is about: one in `wiki/retrospectives/`
    needs frontmatter `model` and `lane`; one in `wiki/analyses/` has them in frontmatter or
    in its name (`<date>-<model>-<lane>-retrospective.md`); one in `<lane>/retrospectives/`
    takes its lane from the path, and any `model` or `lane` it declares must agree with it.

    ## Why is this bad?
    RUN001 counts only a retrospective of the stopping lane; one that names no lane (or
    the wrong one) satisfies no stop, and readers looking for a lane's lessons miss it.

    ## Example
    `wiki/retrospectives/2026-06-09-session.md` with only `created: 2026-06-09`.

    Add `model: gemma4` and `lane: tpu`.

    ## Options
    None.
    """

    code = "RUN002"
    name = "retrospective-names-lane"
    summary = "a retrospective does not say which model and lane it is about (or disagrees with its path)"
    kinds = ("retrospective",)

    def check_page(self, info, ctx):
        fm = info.page.frontmatter
        declared_model, declared_lane = fm.get("model"), fm.get("lane")
        from_path = path_lane(info.rel)
        if from_path is None:
            if not (isinstance(declared_model, str) and isinstance(declared_lane, str)) and name_lane(info.rel) is None:
                yield self.finding(info.rel, 1, "retrospective names no lane: add frontmatter 'model' and 'lane'")
            return
        if isinstance(declared_model, str) and model_name(declared_model) != from_path[0]:
            yield self.finding(info.rel, key_line(info, "model"), f"model {declared_model!r} disagrees with the path ({from_path[0]})")
        if isinstance(declared_lane, str) and declared_lane != from_path[1]:
            yield self.finding(info.rel, key_line(info, "lane"), f"lane {declared_lane!r} disagrees with the path ({from_path[1]})")
