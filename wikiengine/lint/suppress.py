"""Suppression comments inside a page, in HTML comments so they never render:

- ``<!-- wiki-lint: disable CODE[,CODE] -->`` silences those codes on its own line and
  on the next line;
- ``<!-- wiki-lint: disable-file CODE[,CODE] -->`` anywhere silences them in the file.

A directive inside a fenced code block or an inline code span is an example, not a
directive. A code that silenced nothing is reported as ``WK100`` (like ruff's RUF100).
"""

from __future__ import annotations

import re

from wikiengine.core.fences import fence_closed, fence_opened
from wikiengine.lint.finding import Finding

MARK = "wiki-lint:"
_DIRECTIVE_RE = re.compile(r"<!--\s*wiki-lint:\s*(disable-file|disable)\b\s*([^>]*?)\s*-->")
_CLOSE = "-->"
_OPEN = "<!--"
UNUSED_CODE = "WK100"


def parse_directives(text: str) -> list[tuple]:
    """Every directive of a page as ``(line, col, codes, file_wide)`` tuples (cacheable)."""
    if MARK not in text:
        return []
    found = []
    fence = ""
    for number, line in enumerate(text.splitlines(), start=1):
        if fence:
            if fence_closed(line, fence):
                fence = ""
            continue
        if opened := fence_opened(line):
            fence = opened
            continue
        if MARK not in line:
            continue
        ticks, counted = 0, 0
        for start, match in _directives(line):
            ticks += line.count("`", counted, start)
            counted = start
            if ticks % 2:
                continue  # inside an inline code span
            codes = tuple(dict.fromkeys(c for c in re.split(r"[\s,]+", match.group(2)) if c))
            found.append((number, start + 1, codes, match.group(1) == "disable-file"))
    return found


def _directives(line: str):
    """``(start, match)`` of each directive on ``line``, in linear time.

    Each comment is cut out between a ``<!--`` and the next ``-->`` before the regex
    sees it: left to search the line, the regex restarted at each of 4,000 unclosed
    ``<!-- wiki-lint: disable`` and rescanned the rest of the line every time.
    """
    position = 0
    while True:
        close = line.find(_CLOSE, position)
        if close < 0:
            return
        end = close + len(_CLOSE)
        start = line.rfind(_OPEN, position, close)
        if start >= 0:
            match = _DIRECTIVE_RE.fullmatch(line, start, end)
            if match:
                yield start, match
        position = end


def apply(
    findings: list[Finding], directives: dict[str, list[tuple]], active_codes: set[str]
) -> tuple[list[Finding], list[Finding], int]:
    """Drop suppressed findings; return (kept, unused-suppression findings, number suppressed).

    ``active_codes``: codes of the rules that ran, so that a suppression for a rule that
    was not selected (or was skipped) is not called unused.
    """
    if not directives:
        return findings, [], 0
    indexes = {path: _Index(entries) for path, entries in directives.items()}
    used: set[tuple[str, int, str]] = set()
    kept = []
    suppressed = 0
    for finding in findings:
        index = indexes.get(finding.path)
        line = index.silencer(finding.code, finding.line) if index is not None else None
        hit = (finding.path, line, finding.code) if line is not None else None
        if hit is None:
            kept.append(finding)
        else:
            used.add(hit)
            suppressed += 1
    unused = []
    for path, entries in directives.items():
        for line, col, codes, _file_wide in entries:
            if not codes:
                unused.append(Finding(path, line, col, UNUSED_CODE, "suppression names no rule code", True))
            for code in codes:
                if (path, line, code) in used:
                    continue
                if code not in active_codes and _is_known(code):
                    continue
                reason = f"unused suppression of {code}" if _is_known(code) else f"suppression of unknown rule {code}"
                unused.append(Finding(path, line, col, UNUSED_CODE, reason, True))
    return kept, unused, suppressed


class _Index:
    """The directives of one page by code: what silences a finding is a dict lookup, not a
    scan of every code of every directive (a ``disable-file`` naming 40,000 codes)."""

    def __init__(self, entries: list[tuple]):
        self.file_wide: dict[str, tuple[int, int]] = {}  # code -> (order, directive line)
        self.by_line: dict[tuple[str, int], tuple[int, int]] = {}  # (code, silenced line) -> same
        for order, (line, _col, codes, file_wide) in enumerate(entries):
            for code in codes:
                if file_wide:
                    self.file_wide.setdefault(code, (order, line))
                else:
                    for silenced in (line, line + 1):
                        self.by_line.setdefault((code, silenced), (order, line))

    def silencer(self, code: str, line: int) -> int | None:
        """The line of the first directive that silences ``code`` on ``line``, or None."""
        hits = [hit for hit in (self.file_wide.get(code), self.by_line.get((code, line))) if hit is not None]
        return min(hits)[1] if hits else None


def _is_known(code: str) -> bool:
    from wikiengine.lint.registry import REGISTRY

    return code in REGISTRY


def remove_unused(text: str, findings: list[Finding]) -> str:
    """``text`` without the unused codes named in ``findings`` (WK100's fix)."""
    lines = text.splitlines(keepends=True)
    by_line: dict[int, set[str]] = {}
    for finding in findings:
        match = re.search(r"(?:unused suppression of|suppression of unknown rule) (\S+)$", finding.message)
        if match:
            by_line.setdefault(finding.line, set()).add(match.group(1))
        elif finding.message == "suppression names no rule code":
            by_line.setdefault(finding.line, set())
    for number, drop in by_line.items():
        line = lines[number - 1]

        pieces, kept_to = [], 0
        for start, match in _directives(line):
            codes = [c for c in re.split(r"[\s,]+", match.group(2)) if c and c not in drop]
            pieces += [line[kept_to:start], f"<!-- wiki-lint: {match.group(1)} {','.join(codes)} -->" if codes else ""]
            kept_to = match.end()
        new = "".join(pieces) + line[kept_to:]
        if not new.strip() and line.strip():
            new = ""
        lines[number - 1] = new
    return "".join(lines)
