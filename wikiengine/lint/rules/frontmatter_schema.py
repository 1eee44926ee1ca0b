"""WK002."""

from __future__ import annotations

from wikiengine.lint.kinds import ALL_KINDS
from wikiengine.lint.rule import Rule


class FrontmatterSchema(Rule):
    """## What it does
    Validates a page's frontmatter against the JSON Schema of its kind,
    `schema/<kind>.schema.json` (the kind follows from the page's path), and names the
    offending key and its line. Kinds without a schema are not checked.

    ## Why is this bad?
    Agents and the engine read frontmatter as data: a verdict that is not one of the
    known verdicts, a date that is not a date, or a missing required key breaks every
    reader downstream, silently.

    ## Example
    ```markdown
    ---
    status: finished
    ---
    ```
    Use a value the schema allows:
    ```markdown
    ---
    status: supported
    ---
    ```

    ## Options
    None. The schemas live in `schema/`; the fast path validates with a compiled
    validator and jsonschema explains the pages that fail.
    """

    code = "WK002"
    name = "frontmatter-schema"
    summary = "frontmatter violates its kind's JSON Schema (names the key and its line)"
    kinds = ALL_KINDS

    def __init__(self):
        self._schemas: set[str] = set()

    def prepare(self, ctx):
        from wikiengine.core.schemas import schema_names

        self._schemas = set(schema_names())

    def check_page(self, info, ctx):
        from wikiengine.core.validators import compiled

        schema = schema_name(info)
        if schema not in self._schemas:
            return
        validate = compiled(schema)  # compiled on the first page of its kind
        page = info.page
        try:
            validate(page.frontmatter)
            return
        except ValueError as fast_error:
            first = getattr(fast_error, "message", str(fast_error))
        from wikiengine.core.schemas import issues
        from wikiengine.core.yamlio import key_lines

        first_line = 2 if page.has_frontmatter else 1
        lines = key_lines(page.frontmatter_text, first_line) if page.has_frontmatter else {}
        found = issues(page.frontmatter, schema, lines)
        if not found:  # the two validators disagree: report the fast one's words
            yield self.finding(info.rel, 1, f"frontmatter: {first} [schema {schema}]")
            return
        for issue in found:
            yield self.finding(info.rel, issue.line or 1, f"frontmatter {issue.where()}: {issue.message} [schema {schema}]")


SESSION_STATE_SCHEMAS = {"lane": "memory-lane-state", "kernel": "memory-kernel-state"}


def schema_name(info) -> str:
    """The schema of a page: its kind's, except that a STATE.md pointing at a session
    (``mode: lane`` or ``mode: kernel``) has that session's state schema."""
    mode = info.page.frontmatter.get("mode") if info.kind == "memory-state" and info.page is not None else None
    if isinstance(mode, str) and mode in SESSION_STATE_SCHEMAS:
        return SESSION_STATE_SCHEMAS[mode]
    return info.kind
