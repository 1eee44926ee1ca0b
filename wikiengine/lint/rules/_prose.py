"""The prose of a page: its lines with fenced code blocks and code spans blanked out,
line numbers kept, for rules that read ids or callouts in text (CON001, HYP003)."""

from __future__ import annotations

import re
from collections.abc import Iterator

from wikiengine.core.links import blank_code_spans

_FENCE_RE = re.compile(r" {0,3}(`{3,}|~{3,})")


def prose_lines(text: str) -> Iterator[str]:
    """Each line of ``text``: "" inside (and on) a fence, code spans blanked elsewhere."""
    fence = ""
    for line in text.splitlines():
        marker = _FENCE_RE.match(line)
        if fence:
            if marker and marker.group(1)[0] == fence[0] and len(marker.group(1)) >= len(fence) and not line.strip().strip(fence[0]):
                fence = ""
            yield ""
        elif marker and not (marker.group(1)[0] == "`" and "`" in line[marker.end():]):
            fence = marker.group(1)
            yield ""
        else:
            yield blank_code_spans(line)
