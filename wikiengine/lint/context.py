"""What a rule sees: the wiki's files, parsed pages (each parsed at most once), the
configuration and, for git-aware rules, the base revision."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from wikiengine.errors import WikiError
from wikiengine.lint.config import LintConfig
from wikiengine.lint.kinds import kind_of
from wikiengine.page import Page, load_page

if TYPE_CHECKING:
    from wikiengine.lint.gitview import GitView

LINTED_DIRS = ("wiki", "memory", ".env")


@dataclass
class PageInfo:
    """One markdown file of the wiki: its kind and its parsed page (or why it cannot be read)."""

    rel: str  # posix path relative to the root
    path: Path
    kind: str
    page: Page | None = None
    error: WikiError | None = None

    @property
    def frontmatter(self) -> dict:
        return self.page.frontmatter if self.page else {}


@dataclass
class LintContext:
    root: Path
    config: LintConfig
    files: list[str]  # every markdown file of the wiki, sorted (posix, relative)
    targets: list[str]  # the files whose findings are reported
    git: GitView | None = None
    _infos: dict[str, PageInfo] = field(default_factory=dict)

    def info(self, rel: str) -> PageInfo:
        """The page at ``rel``, parsed once and cached."""
        cached = self._infos.get(rel)
        if cached is None:
            path = self.root / rel
            cached = PageInfo(rel, path, kind_of(rel))
            try:
                cached.page = load_page(path)
            except WikiError as err:
                cached.error = err
            self._infos[rel] = cached
        return cached

    def pages(self, kind: str | None = None) -> list[PageInfo]:
        """Every page of ``kind`` (every page when None) in the whole wiki."""
        return [self.info(rel) for rel in self.files if kind is None or kind_of(rel) == kind]

    def exists(self, rel: str) -> bool:
        return (self.root / rel).exists()


def discover(root: Path) -> list[str]:
    """Every ``.md`` file under the linted directories, as sorted posix paths."""
    found = []
    for top in LINTED_DIRS:
        base = root / top
        if not base.is_dir():
            continue
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
            for name in filenames:
                if name.endswith(".md"):
                    found.append(Path(dirpath, name).relative_to(root).as_posix())
    return sorted(found)
