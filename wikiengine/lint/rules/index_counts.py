"""IDX001."""

from __future__ import annotations

import bisect

from wikiengine.lint.kinds import kind_of
from wikiengine.lint.options import Option
from wikiengine.lint.rule import Rule
from wikiengine.model.index import counted_sections, section_pages
from wikiengine.model.lanes import INDEX

# Section name (lower case) -> the frontmatter `type` it catalogs (conventions.md).
SECTION_TYPES = {
    "sources": "source", "codebases": "codebase", "concepts": "concept", "models": "model",
    "hypotheses": "hypothesis", "experiments": "experiment", "observations": "observation",
    "analyses": "analysis",
}
_GENERATED_PREFIX = "wiki/codebases/"
_PATH_TYPES = ("experiment", "model", "hypothesis")  # the type of a page without `type:`, from its path


class IndexSectionCount(Rule):
    """## What it does
    Checks every counted section of `wiki/index.md`, `## Models (N)`: `N` must equal
    the number of pages of that type (frontmatter `type`, else the kind its path gives
    for experiment, model and hypothesis pages; generated codebase silo pages are not
    counted) or, for a section whose type is not known, the number of
    pages the section links. A count that matches either the pages of its type or the
    pages it lists is accepted, so an index that counts what it lists is not flagged.

    ## Why is this bad?
    The index is how agents (and people) size the wiki before reading it. A count that
    matches nothing means pages were added or removed without the index following:
    something is missing from the catalog, or the catalog lists pages that are gone.

    ## Example
    ```markdown
    ## Observations (203)
    ```
    when the wiki has 200 observation pages and the section links 200. Make it
    `## Observations (200)`.

    ## Options
    - `sections` (list of `"<section name>=<page type>"`): more sections to count by
      type, e.g. `["Kernels=model"]`, added to Sources, Codebases, Concepts, Models,
      Hypotheses, Experiments, Observations, Analyses.
    """

    code = "IDX001"
    name = "index-section-count"
    summary = "a counted section of wiki/index.md, '## Models (N)', whose N matches neither the pages of its type nor its entries"
    options = {"sections": Option("str-list")}
    reports_on = ("page",)

    def check_wiki(self, ctx):
        if INDEX not in ctx.targets:
            return
        info = ctx.info(INDEX)
        page = info.page
        if page is None:
            return
        types = dict(SECTION_TYPES)
        for entry in ctx.config.option(self.code, "sections", ()):
            name, _, kind = entry.partition("=")
            if kind.strip():
                types[name.strip().lower()] = kind.strip()
        counted = counted_sections(page)
        if not counted:
            return
        by_type: dict[str, int] | None = None  # every page's kind: asked only of a count its section does not match
        seen: dict[str, int] = {}
        for entry in counted:
            said, section = entry.count, entry.section
            seen[entry.name.lower()] = nth = seen.get(entry.name.lower(), 0) + 1
            listed = len(section_pages(section, INDEX))
            kind = types.get(entry.name.lower())
            if said == listed:
                continue
            if kind is not None and by_type is None:
                by_type = self._pages_by_type(ctx)
            if kind is not None and said == by_type.get(kind, 0):
                continue
            count = by_type.get(kind, 0) if kind is not None else 0
            pages = f"the wiki has {count} {kind} page{'' if count == 1 else 's'} and " if kind else ""
            # the section is the subject, not its figures: a write that adds a page to a section whose
            # count was already wrong changes the figures, not the finding
            yield self.finding(INDEX, section.line, f"'## {section.title.strip()}' says {said}, but {pages}the section lists {listed}",
                               subject=f"## {entry.name} (#{nth})")

    @staticmethod
    def _pages_by_type(ctx) -> dict[str, int]:
        counts: dict[str, int] = {}
        # not the generated codebase silo pages (wiki/codebases/<slug>/...): the pages are bisected
        # out of the sorted file list, only the codebase folder's looked at one by one
        pages, codebases = ctx.files_under("wiki/"), ctx.files_under(_GENERATED_PREFIX)
        if codebases:
            at = bisect.bisect_left(pages, codebases[0])
            pages = pages[:at] + [rel for rel in codebases if rel.count("/") <= 2] + pages[at + len(codebases):]
        # each page's kind kept in one table: a run that lints the index reads no frontmatter
        for kind in ctx.pages_fact(pages, "IDX001:kind", lambda rel: _counted_kind(rel, ctx.info(rel).frontmatter)).values():
            if kind is not None:
                counts[kind] = counts.get(kind, 0) + 1
        return counts


def _counted_kind(rel: str, frontmatter: dict) -> str | None:
    """The type the index counts the page as: its `type:`, else the kind its path gives for
    experiment, model and hypothesis pages; None when neither (or a `type:` that is not a name)."""
    declared = _declared_type(frontmatter)
    if declared is False:
        return None
    path_kind = kind_of(rel)
    return declared or (path_kind if path_kind in _PATH_TYPES else None)


def _declared_type(frontmatter: dict):
    """The page's `type:`: its name, "" when it has none, False when it is not a string."""
    declared = frontmatter.get("type")
    if isinstance(declared, str):
        return declared
    return False if declared else ""
