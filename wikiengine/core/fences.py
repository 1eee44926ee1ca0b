"""Fenced code blocks, a line at a time, as CommonMark opens and closes them at the top level.

A fence is a run of three or more backticks or tildes indented at most three spaces; a
backtick fence's info string holds no backtick (such a line is a paragraph); the closer is
a run of the same character, at least as long, alone on its line. The link scan, the prose
rules and the suppression comments follow fences with these, so that they agree on what is
code.
"""

from __future__ import annotations

import re

FENCE_RE = re.compile(r" {0,3}(`{3,}|~{3,})")


def fence_opened(line: str) -> str:
    """The fence ``line`` opens (its run of backticks or tildes), or ``""``."""
    opener = FENCE_RE.match(line)
    if opener is None or (opener.group(1)[0] == "`" and "`" in line[opener.end():]):
        return ""
    return opener.group(1)


def fence_closed(line: str, fence: str) -> bool:
    """Does ``line`` close the block that ``fence`` opened?"""
    closer = FENCE_RE.match(line)
    return (closer is not None and closer.group(1)[0] == fence[0] and len(closer.group(1)) >= len(fence)
            and not line.strip().strip(fence[0]))
