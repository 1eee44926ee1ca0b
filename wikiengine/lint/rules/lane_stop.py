"""RUN003 and RUN004: a lane's stop markers, as the gated stop writes them."""

from __future__ import annotations

import re

from wikiengine.core.errors import PageError
from wikiengine.core.safe_read import read_optional
from wikiengine.lint.rule import Rule
from wikiengine.lint.rules._logs import log_entries

ALL_CLEAR_RE = re.compile(r"ALL-CLEAR\b[^`\n]*")
ITERATION_OPS = ("loop-iteration", "run-experiment")
STOP_AUTHORIZED = ".stop-authorized"


def _lane_logs(ctx):
    from wikiengine.model.logbook import log_tier

    for info in ctx.target_pages("log"):
        if info.page is not None and log_tier(info.rel) in ("lane", "family"):
            yield info


def authorization_line(ctx, log_rel: str) -> str | None:
    """The ALL-CLEAR line of the lane's ``.stop-authorized`` (None: no such file)."""
    path = ctx.root / log_rel.rsplit("/", 1)[0] / STOP_AUTHORIZED
    try:
        text = read_optional(path, kind="authorization", within=ctx.root)
    except PageError:
        return None
    match = ALL_CLEAR_RE.search(text or "")
    return match.group(0).strip() if match else None


class StopHasFinalAudit(Rule):
    """## What it does
    Checks that every `stop` entry of a lane (or kernel family) log has a
    `**Final audit**:` line quoting the watcher's ALL-CLEAR line, and that the newest
    stop quotes the same ALL-CLEAR line as the lane's `.stop-authorized` record when
    that file is present and no session was started after that stop.

    ## Why is this bad?
    A stop is a gate, not a claim: `wiki loop stop` writes the marker only after a clean
    closing audit, quoting it verbatim. A stop with no audit line (or one that quotes
    an audit the watcher never wrote) is a session that closed unaudited, which real
    wikis did three times by cancelling their auditor mid-audit.

    ## Example
    ```markdown
    ## [2026-06-09] stop | /stop-experiment after 5 experiments

    **Op**: stop
    ```
    Stop with `wiki loop stop`, which writes
    `**Final audit**: ALL-CLEAR gemma4/tpu session 2 wiki=1a2b3c4d code=1a2b3c4d`.

    ## Options
    None.
    """

    code = "RUN003"
    name = "stop-has-final-audit"
    summary = "a stop entry has no **Final audit**: ALL-CLEAR line, or quotes another audit than .stop-authorized"
    cache_wiki = False  # reads .stop-authorized, which is not a page
    reports_on = ("log",)
    by_lane = True  # lint/lane_parts.py: wiki_inputs holds every lane's .stop-authorized

    def wiki_inputs(self, ctx):
        """The ALL-CLEAR line of every lane's ``.stop-authorized`` (a lane log's folder)."""
        from wikiengine.model.logbook import log_tier

        return repr([(rel, authorization_line(ctx, rel)) for rel in ctx.target_files("log")
                     if log_tier(rel) in ("lane", "family")])

    def check_wiki(self, ctx):
        for info in _lane_logs(ctx):
            entries = [e for e in log_entries(info, ctx) if e.problem is None]
            stops = [e for e in entries if e.has_op("stop")]
            newest = next((e for e in entries if e.has_op("stop") or e.has_op("start")), None)
            for entry in stops:
                audit = entry.fields().get("Final audit", "")
                quoted = ALL_CLEAR_RE.search(audit)
                if quoted is None:
                    yield self.finding(info.rel, entry.line, "stop entry has no '**Final audit**: ALL-CLEAR ...' line: "
                                       "stop through `wiki loop stop` after a clean closing audit", date=entry.finding_date)
                    continue
                # .stop-authorized belongs to the newest session: compare it with that session's stop only
                record = authorization_line(ctx, info.rel) if entry is newest else None
                if record is not None and quoted.group(0).strip() != record:
                    yield self.finding(info.rel, entry.line, f"the Final audit quotes {quoted.group(0).strip()!r} but "
                                       f".stop-authorized says {record!r}", date=entry.finding_date)


class IterationAfterStop(Rule):
    """## What it does
    Checks a lane (or kernel family) log for loop iterations (`loop-iteration`,
    `run-experiment`) dated after a `stop` with no `start` between them.

    ## Why is this bad?
    A stopped session that keeps iterating is unsupervised: no start marker recorded its
    pool, parallelism or first pick, and its stop claim was false. In one real wiki both
    recorded stops were followed by more iterations with no new start.

    ## Example
    ```markdown
    ## [2026-06-10] loop-iteration | v046-splash on 2B/v5p-16: supported (+0.7%)
    ## [2026-06-09] stop | session 1 closed
    ```
    Run `wiki loop start` before iterating again.

    ## Options
    None.
    """

    code = "RUN004"
    name = "iteration-after-stop"
    summary = "a loop iteration is logged after a stop with no new start"
    kinds = ("log",)

    def check_page(self, info, ctx):
        from wikiengine.model.logbook import log_tier

        if log_tier(info.rel) not in ("lane", "family"):
            return
        stopped = None
        for entry in reversed([e for e in log_entries(info, ctx) if e.problem is None]):  # oldest first
            if entry.has_op("start"):
                stopped = None
            elif entry.has_op("stop"):
                stopped = entry
            elif stopped is not None and any(entry.has_op(op) for op in ITERATION_OPS):
                yield self.finding(info.rel, entry.line, f"{entry.ops[0]} on {entry.date} after the stop of "
                                   f"{stopped.date} (line {stopped.line}) with no new start: run `wiki loop start` first",
                                   date=entry.finding_date, subject=entry.subject)
