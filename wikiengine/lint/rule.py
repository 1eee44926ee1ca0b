"""The rule contract. One rule per module under ``wikiengine/rules/`` (or a small family
per module), listed in the registry ``wikiengine/rules/__init__.py``.

A rule declares ``code``, ``name`` and ``summary``, and a docstring in four parts
(*What it does*, *Why is this bad?*, *Example*, *Options*) that ``wiki lint --explain``
prints and the rule docs are generated from. A rule only finds: it yields
:class:`~wikiengine.lint.finding.Finding` values; the runner filters, suppresses, fixes
and formats.

- ``kinds``: the page kinds ``check_page`` runs on (empty: not a page rule);
- ``check_wiki``: cross-file checks, run once per lint with the whole wiki in view;
- ``needs_git``: the rule compares with a base revision (skipped outside git);
- ``fix``: for ``fixable`` rules, the one safe mechanical fix of a page.
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, ClassVar, Iterable

from wikiengine.lint.finding import Finding

if TYPE_CHECKING:
    from wikiengine.lint.context import LintContext, PageInfo
    from wikiengine.page import Page


class Rule:
    code: ClassVar[str]
    name: ClassVar[str]  # kebab-case, says what it checks: "experiment-file-name"
    summary: ClassVar[str]  # one line
    kinds: ClassVar[tuple[str, ...]] = ()
    needs_git: ClassVar[bool] = False
    fixable: ClassVar[bool] = False

    def check_page(self, info: PageInfo, ctx: LintContext) -> Iterable[Finding]:
        return ()

    def check_wiki(self, ctx: LintContext) -> Iterable[Finding]:
        return ()

    def fix(self, info: PageInfo, ctx: LintContext) -> Page | None:
        """The fixed page, or None when no safe fix applies."""
        return None

    def finding(self, path: str, line: int, message: str, col: int = 1) -> Finding:
        """A finding of this rule."""
        return Finding(path, max(1, line), col, self.code, message, self.fixable)

    @classmethod
    def doc(cls) -> str:
        """The rule's documentation (its docstring, dedented)."""
        return inspect.cleandoc(cls.__doc__ or "")
