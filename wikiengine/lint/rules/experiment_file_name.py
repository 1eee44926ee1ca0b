"""EXP001."""

from __future__ import annotations

from wikiengine.lint.options import Option
from wikiengine.lint.rules._experiments import (
    frontmatter_date,
    key_line,
    lane_id_pattern,
    lane_regexes,
)
from wikiengine.lint.rules._shared import ExperimentPageRule


class ExperimentFileName(ExperimentPageRule):
    """## What it does
    Checks that an experiment page is named `YYYY-MM-DD-<id>-<slug>.md` with a real date,
    an id of the configured scheme (`v<NNN>` by default) and a lowercase slug, and that
    the frontmatter agrees with the name: `created` has the same date and `id` (or `vid`),
    when present, the same id.

    ## Why is this bad?
    The loop finds pages by name: BACKFILL looks for `*-v<NNN>-*.md` to decide whether a
    completed workload has a page, and people sort lanes by date. A page whose name is
    off is filed twice; one whose date disagrees with `created` sorts in the wrong place.

    ## Example
    `wiki/experiments/gemma4_autoresearch_optimization/tpu/v045-splash.md`, or a page
    `2026-06-05-v045-splash.md` with `created: 2026-06-04`.

    Use `2026-06-05-v045-splash.md` with `created: 2026-06-05`.

    ## Options
    - `id-pattern` (regex, default `v\\d{3,}`): the experiment id scheme of every
      experiment rule; `"v\\d{3,}|exp\\d+"` also accepts older `exp34` pages. It must
      compile in RE2 and may not repeat a repetition or an alternation (`(v+)+`), nor
      hold more than two unbounded repeats: such shapes can make matching take forever.
    """

    code = "EXP001"
    options = {"id-pattern": Option("regex", python_re=True)}  # the experiment rules splice it into an re
    name = "experiment-file-name"
    summary = "experiment file name is not YYYY-MM-DD-vNNN-slug.md, or its date or v-id disagrees with the frontmatter"

    def check_facts(self, info, facts, ctx):
        match = lane_regexes(ctx, facts.lane_key)[0].fullmatch(facts.file_name)
        if match is None:
            yield self.finding(
                info.rel, 1,
                f"file name {facts.file_name!r} is not YYYY-MM-DD-<id>-<slug>.md (id: {lane_id_pattern(ctx, facts.lane_key)})"
            )
            return
        if facts.file_date is None:
            yield self.finding(info.rel, 1, f"file name date {match.group('date')} is not a real date")
            return
        created_raw = facts.frontmatter.get("created")
        created = frontmatter_date(created_raw)
        line = key_line(info, "created")
        if created_raw is not None and created is None:
            yield self.finding(info.rel, line, f"frontmatter created {created_raw!r} is not a date")
        elif created is not None and created != facts.file_date:
            yield self.finding(
                info.rel, line, f"frontmatter created is {created} but the file name says {facts.file_date}"
            )
        fm_id = facts.frontmatter_id
        if fm_id is not None and fm_id != facts.file_id:
            yield self.finding(
                info.rel, key_line(info, "id") if "id" in facts.frontmatter else key_line(info, "vid"),
                f"frontmatter id is {fm_id} but the file name says {facts.file_id}",
            )

