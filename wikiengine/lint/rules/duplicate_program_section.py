"""PRG001."""

from __future__ import annotations

from wikiengine.lint.rule import Rule


class DuplicateProgramSection(Rule):
    """## What it does
    Reports two H2 sections with the same title in one `program.md`. Titles are
    compared as the cascade compares them: trimmed, inner whitespace collapsed,
    case-insensitively (`## Setup` and `## setup` are one title).

    ## Why is this bad?
    The cascade replaces a parent's section by the child's section of the same title.
    With two candidates in one file, which one inherits is a guess, and `wiki resolve`
    refuses the program.

    ## Example
    ```markdown
    ## Setup
    Use the lane image.

    ## Setup
    Use the nightly image.
    ```
    Keep one section:
    ```markdown
    ## Setup
    Use the nightly image.
    ```

    ## Options
    None.
    """

    code = "PRG001"
    name = "duplicate-program-section"
    summary = "two H2 sections with the same title in one program.md"
    kinds = ("program",)

    def check_page(self, info, ctx):
        seen = {}
        for section in info.page.sections:
            first = seen.setdefault(section.key, section)
            if first is not section:
                yield self.finding(
                    info.rel,
                    section.line,
                    f"duplicate section '## {section.title}' (first on line {first.line}): which one would inherit?",
                )
