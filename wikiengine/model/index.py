"""``wiki/index.md``'s counted sections, ``## Experiments (N)``: what N counts.

N counts the distinct pages the section links (one page listed twice counts once). The
writer that lists a new page (``index_add``) and the rule that checks the count (IDX001)
both count with :func:`section_pages`, so they never disagree.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from functools import lru_cache

from wikiengine.core.links import destinations, joined, relative_target
from wikiengine.core.page import Page, Section

_COUNTED_RE = re.compile(r"(?P<name>.*?\S)\s*\((?P<count>\d{1,9})\)")


@dataclass(frozen=True)
class CountedSection:
    """A section titled ``<name> (<count>)``."""

    section: Section
    name: str
    count: int


def counted_sections(page: Page) -> list[CountedSection]:
    """The page's sections whose title ends in a count, ``Models (12)``."""
    found = []
    for section in page.sections:
        match = _COUNTED_RE.fullmatch(section.title.strip())
        if match:
            found.append(CountedSection(section, match.group("name"), int(match.group("count"))))
    return found


def section_pages(section: Section, page_rel: str) -> frozenset[str]:
    """The distinct repository-relative paths the links of ``section`` (of the page
    ``page_rel``) name: what a counted section's N counts. Links that leave the
    repository, and absolute or external ones, are not pages of it."""
    return _pages_linked(section.body, posixpath.dirname(page_rel))


@lru_cache(maxsize=256)
def _pages_linked(body: str, directory: str) -> frozenset[str]:
    """:func:`section_pages` of a section's text, kept per process: a writer counts the sections
    of the index's old text and of its new one (IDX001 judges both), which share all but one."""
    pages = set()
    for dest in destinations(body):
        file_part = relative_target(dest)
        if file_part is None:
            continue
        target = joined(directory, file_part)
        if target != ".." and not target.startswith("../"):
            pages.add(target)
    return frozenset(pages)
