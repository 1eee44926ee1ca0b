"""WK001."""

from __future__ import annotations

from wikiengine.lint.kinds import ALL_KINDS
from wikiengine.lint.rule import Rule


class UnreadablePage(Rule):
    """## What it does
    Reports a page that cannot be read: bytes that are not UTF-8, frontmatter that is
    not valid YAML (or uses tags, anchors or duplicate keys), or a frontmatter fence
    that is never closed.

    ## Why is this bad?
    Every other rule, and every agent that reads the wiki, needs the page's structure.
    An unreadable page is invisible to them.

    ## Example
    ```markdown
    ---
    status: supported
    status: refuted
    ---
    ```
    Use one `status:` key:
    ```markdown
    ---
    status: supported
    ---
    ```

    ## Options
    None.
    """

    code = "WK001"
    name = "unreadable-page"
    summary = "the page cannot be read: bad YAML, bad encoding, unterminated frontmatter"
    kinds = ALL_KINDS

    def check_page(self, info, ctx):
        if info.error is not None:
            yield self.finding(info.rel, info.error.line or 1, info.error.message)
