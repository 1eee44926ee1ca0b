"""PRG003 and PRG004: sections that the cascade does not combine the way they read."""

from __future__ import annotations

import re

from wikiengine.lint.rule import Rule


def _chains(ctx):
    """Each readable program.md with the readable program.md files above it, root first."""
    from wikiengine.core.errors import WikiError
    from wikiengine.model.targets import target_for_path

    for info in ctx.target_pages("program"):  # findings land on the child: only targets
        if info.page is None:
            continue
        try:
            target = target_for_path(ctx.root, info.path.parent)
        except WikiError:
            continue
        parents = []
        for level in target.levels[:-1]:
            rel = level.program.relative_to(ctx.root).as_posix()
            if ctx.exists(rel):
                parent = ctx.info(rel)
                if parent.page is not None:
                    parents.append((level.name, parent))
        if parents:
            yield info, parents


def _marker(ctx):
    """The configured additive marker, compiled for linear-time matching."""
    from wikiengine.model.cascade import additive_marker_regex

    return additive_marker_regex(ctx.config.additive_marker, ctx.config.source)


def _indexed_chains(ctx):
    """Each child program (of :func:`_chains`) with the configured additive marker and its
    parents' section indexes, root first: ``(info, marker, [(level, parent, index), ...])``."""
    marker = _marker(ctx)
    for info, parents in _chains(ctx):
        yield info, marker, [(level, parent, _SectionIndex(parent.page, marker)) for level, parent in parents]


class _SectionIndex:
    """A parent program's sections by whole title key (with whether each is additive) and,
    non-additive ones only, by leading-title key: one dict lookup per child section instead
    of a scan of every parent section (5,000 sections each made 25 million searches)."""

    def __init__(self, page, marker):
        self.by_key: dict[str, list] = {}
        self.by_lead: dict[str, list] = {}
        for section in page.sections:
            additive = bool(marker.search(section.title.strip()))
            self.by_key.setdefault(section.key, []).append((section, additive))
            if not additive:
                self.by_lead.setdefault(section.leading_key, []).append(section)


class AdditiveTitleCollision(Rule):
    """## What it does
    Reports an additive section (a title that matches the additive marker, by default
    `<Model>-specific CAN additions`) that collides with a parent program's section:

    - the parent has a section with the same title that is *not* additive (or the other
      way round), so the cascade replaces where one side meant to add;
    - its leading title (the part before ` — `, `:` or `(`) is the title of a parent's
      ordinary section, so it becomes a second section beside the parent's instead of
      adding to it.

    ## Why is this bad?
    Additive sections concatenate only with sections of the same title that are also
    additive. A near miss does not fail: the effective program silently holds the
    parent's text and the addition as two rival sections, or loses the parent's text.

    ## Example
    Parent `wiki/experiments/program.md` has `## What you CAN do`; the model's
    program.md says:
    ```markdown
    ## What you CAN do — Gemma4-specific CAN additions
    ```
    Name the additive section on its own, so it concatenates at every level:
    ```markdown
    ## Gemma4-specific CAN additions
    ```

    ## Options
    `[tool.wiki] additive-marker` (a regular expression) says which titles are additive.
    """

    code = "PRG003"
    name = "additive-title-collision"
    summary = "an additive section collides with a parent's section title"
    reports_on = ("program",)

    def check_wiki(self, ctx):
        for info, marker, indexes in _indexed_chains(ctx):
            for section in info.page.sections:
                additive = bool(marker.search(section.title.strip()))
                lead = section.leading_key
                for level, parent, index in indexes:
                    for theirs, their_additive in index.by_key.get(section.key, ()):
                        if additive != their_additive:
                            which = "additive here but not" if additive else "not additive here but additive"
                            yield self.finding(
                                info.rel,
                                section.line,
                                f"'## {section.title}' is {which} in the {level} program "
                                f"({parent.rel}:{theirs.line}): the cascade replaces instead of adding",
                                subject=f"{section.title} <- {parent.rel} {theirs.title}",
                            )
                    if additive and lead != section.key:
                        for theirs, their_additive in index.by_key.get(lead, ()):
                            if not their_additive:
                                yield self.finding(
                                    info.rel,
                                    section.line,
                                    f"additive section '## {section.title}' is led by the {level} program's "
                                    f"'## {theirs.title}' ({parent.rel}:{theirs.line}): it adds a second section "
                                    "instead of adding to that one",
                                    subject=f"{section.title} <- {parent.rel} {theirs.title}",
                                )


class LeadingTitleShadow(Rule):
    """## What it does
    Reports a section of a child `program.md` that shares a parent section's leading
    title (the part before a suffix such as ` — note`, `: note` or `(note)`) but not
    the whole title, while the child has no section with the parent's exact title.

    ## Why is this bad?
    The cascade replaces by the whole title. `## Branching model — branch naming` under
    a parent's `## Branching model — per-experiment forks` does not replace it: the
    effective program gets two conflicting branching models, and a reader follows
    whichever comes first.

    ## Example
    Parent: `## Branching model — per-experiment forks`. Child:
    ```markdown
    ## Branching model — branch naming
    ```
    Use the parent's exact title to replace its section:
    ```markdown
    ## Branching model — per-experiment forks
    ```

    A child section that says it inherits the parent's (its title or first paragraph
    says "inherits", as in `## Branching model — inherits the root pattern`) adds to the
    parent's on purpose and is not reported.

    ## Options
    None. Additive sections are PRG003's business.
    """

    code = "PRG004"
    name = "leading-title-shadow"
    summary = "a child section shares a parent section's leading title but not its suffix"
    reports_on = ("program",)

    def check_wiki(self, ctx):
        for info, marker, indexes in _indexed_chains(ctx):
            own_keys = {s.key for s in info.page.sections}
            for section in info.page.sections:
                if marker.search(section.title.strip()) or _says_it_inherits(section):
                    continue
                for level, parent, index in indexes:
                    theirs = next(
                        (t for t in index.by_lead.get(section.leading_key, ())
                         if t.key != section.key and t.key not in own_keys),
                        None,
                    )
                    if theirs is not None:
                        yield self.finding(
                            info.rel,
                            section.line,
                            f"'## {section.title}' shares its leading title with the {level} program's "
                            f"'## {theirs.title}' ({parent.rel}:{theirs.line}) but does not replace it: "
                            "the effective program gets both",
                            subject=f"{section.title} <- {parent.rel} {theirs.title}",
                        )
                        break


_INHERITS_RE = re.compile(r"(?i)\binherit(?:s|ed|ing)?\b")


def _says_it_inherits(section) -> bool:
    """Does the section say, in its title or first paragraph, that it inherits the parent's?"""
    first = section.body.strip().split("\n\n", 1)[0]
    return bool(_INHERITS_RE.search(section.title) or _INHERITS_RE.search(first))
