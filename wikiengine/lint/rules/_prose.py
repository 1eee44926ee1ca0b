"""The prose of a page: its lines with fenced code blocks and code spans blanked out,
line numbers kept, for rules that read ids or callouts in text (CON001, HYP003)."""

from __future__ import annotations

from collections.abc import Iterator

from wikiengine.core.fences import fence_closed, fence_opened
from wikiengine.core.links import blank_code_spans


def prose_lines(text: str) -> Iterator[str]:
    """Each line of ``text``: "" inside (and on) a fence, code spans blanked elsewhere."""
    fence = ""
    for line in text.splitlines():
        if fence:
            if fence_closed(line, fence):
                fence = ""
            yield ""
        elif opened := fence_opened(line):
            fence = opened
            yield ""
        else:
            yield blank_code_spans(line)
