"""IDX002."""

from __future__ import annotations

import fnmatch
import re
import sys

from wikiengine.lint.options import Option
from wikiengine.lint.rule import Rule
from wikiengine.lint.rules.broken_link import page_links
from wikiengine.model.lanes import INDEX

# Pages that are found without a link: the catalog and logs, the cascade areas (reached
# by folder: lanes, kernel families, runs), and generated pages (rule docs, codebase silos).
DEFAULT_EXCLUDE = (
    "wiki/index.md", "*/log.md", "*/program.md", "*/README.md",
    "wiki/experiments/*", "wiki/kernel_experiments/*", "wiki/runs/*",
    "wiki/rules/*", "wiki/codebases/*/*",
)


def checked_pages(exclude: tuple[str, ...]):
    """``checked(rel)``: is ``rel`` a page under ``wiki/`` that no glob of ``exclude`` matches
    (``fnmatchcase``)? The globs are matched as one regex, and each path judged once: a
    cold run asks about every link target of the wiki (generated pages repeat a few hundred
    targets tens of thousands of times)."""
    excluded = re.compile("|".join(fnmatch.translate(pattern) for pattern in exclude)).match if exclude else None
    verdicts: dict[str, bool] = {}

    def checked(rel: str) -> bool:
        verdict = verdicts.get(rel)
        if verdict is None:
            verdict = verdicts[rel] = rel.startswith("wiki/") and (excluded is None or excluded(rel) is None)
        return verdict

    return checked


class OrphanPage(Rule):
    """## What it does
    Reports a wiki page that no other page links: not the index, not a log, not a
    related page. Checked are the hand-written pages under `wiki/` (sources, concepts,
    observations, hypotheses, analyses, models, kernels, codebase companion pages);
    not checked are `index.md`, logs, programs and READMEs, the cascade areas
    (`wiki/experiments/`, `wiki/kernel_experiments/`, `wiki/runs/`, whose pages are
    found by folder), and generated pages (`wiki/rules/`, the codebase silos
    `wiki/codebases/<slug>/...`). A wiki without a catalog (`wiki/index.md`) is not
    checked: its pages have nothing to be orphaned from.

    ## Why is this bad?
    Agents re-ground by following links from the index and the logs. A page nothing
    links is knowledge nobody will read again: a source ingested but never cataloged,
    a concept split off and forgotten.

    ## Example
    `wiki/concepts/vmem-budget.md` exists, and neither `wiki/index.md` nor any page
    links it. List it in the index's `## Concepts (N)` section (and count it).

    ## Options
    - `exclude` (list of globs, matched against the repository-relative path with
      `fnmatch`, so `*` crosses folders): more pages that need no inbound link, added
      to the defaults above.
    """

    code = "IDX002"
    name = "orphan-page"
    summary = "a hand-written wiki page that no other page links"
    options = {"exclude": Option("str-list")}

    def collect(self, info, ctx):
        _file_parts, linked = page_links(info)
        targets = sorted({t for t in linked if t is not None and t.endswith(".md") and t != info.rel})
        return targets or None

    def check_wiki(self, ctx):
        if INDEX not in ctx.files:
            return
        exclude = DEFAULT_EXCLUDE + tuple(str(p) for p in ctx.config.option(self.code, "exclude", ()))
        checked = checked_pages(exclude)

        candidates = [rel for rel in ctx.targets if checked(rel)]
        if not candidates:
            return
        unlinked, key = set(candidates), repr(exclude)  # one key object: the index stores it once
        # the catalog first: it links most checked pages, so a PATH run's are usually all found there
        for rel in (INDEX, *(rel for rel in ctx.files if rel != INDEX)):
            # the links to checked pages, kept with each page's cache entry: an edit elsewhere reads no facts
            targets = ctx.page_fact(rel, self.code, key=key, compute=lambda rel=rel: [
                sys.intern(t) for t in ctx.facts(self.code, rel) or () if checked(t)])  # interned: stored once
            unlinked.difference_update(targets)
            if not unlinked and ctx.targets is not ctx.files:
                # a PATH run's targets (a writer's few pages) are all linked; a whole-wiki run reads
                # on, keeping every page's links for the PATH runs that follow
                return
        for rel in candidates:
            if rel in unlinked:
                yield self.finding(rel, 1, "no page links this page: list it in wiki/index.md or link it from a related page")
