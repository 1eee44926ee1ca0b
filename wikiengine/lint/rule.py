"""The rule contract. One rule per module under ``wikiengine/lint/rules/`` (or a small family
per module), listed in the registry ``wikiengine/lint/registry.py``.

A rule declares ``code``, ``name`` and ``summary``, and a docstring in four parts
(*What it does*, *Why is this bad?*, *Example*, *Options*) that ``wiki lint --explain``
prints and the rule docs are generated from. A rule only finds: it yields
:class:`~wikiengine.lint.finding.Finding` values; the runner filters, suppresses, fixes
and formats.

- ``kinds``: the page kinds ``check_page`` runs on (empty: not a page rule);
- ``check_wiki``: cross-file checks, run once per lint with the whole wiki in view;
- ``needs_git``: the rule compares with a base revision (skipped outside git);
- ``reads_tracked``: the rule asks ``ctx.tracked()`` (what git tracks, read by one
  ``git ls-files`` that then starts with the run);
- ``reports_absent``: in a whole-wiki run, the rule's ``check_wiki`` findings on a path
  that is not on disk are kept (a page that should be there and is gone);
- ``reports_on``: the page kinds that ``check_wiki``'s findings can land on (None: any
  path). A PATH run whose targets (and deleted files) are of none of them, nor of
  ``kinds`` or the kinds ``collect`` runs on, does not import the rule: the table
  :mod:`wikiengine.lint.scopes` is generated from these attributes;
- ``by_lane``: ``check_wiki``'s findings on a lane's files depend only on that lane, the files
  outside every lane, the list of lanes, the configuration and ``lane_inputs`` (what it reads
  of other lanes), so that a whole-wiki run after an edit in one lane runs it on that lane
  alone (:mod:`wikiengine.lint.lane_parts`);
- ``reads_pages``: False when ``check_wiki`` reads only the paths of the wiki's files (and what
  ``wiki_inputs`` names), not their content: its findings are then kept while the list of files
  is the same, whatever the pages say;
- ``fix``: for ``fixable`` rules, the one safe mechanical fix of a page;
- ``collect``: small per-page facts (JSON-like values) that ``check_wiki`` reads back
  through ``ctx.facts(code, rel)``; they are cached with the file, so a cross-file rule
  does not re-read unchanged pages. It runs on the pages of ``collect_kinds`` (empty:
  of ``kinds``, or every page when that is empty too);
- ``options``: the rule's options and their kinds (:class:`~wikiengine.lint.options.Option`),
  checked when the configuration is read; a misspelt one is refused;
- ``since``: a ``YYYY-MM-DD`` date; pages dated before it are grandfathered (the
  ``since`` option in ``[tool.wiki.rules.<CODE>]`` overrides it). A finding about one
  entry of a log carries the entry's date (``finding(..., date=)``), which is compared
  instead of the log's.

Caching contract (as in ruff): ``check_page`` and ``collect`` may depend only on the page
itself and the configuration, because their results are cached by the file's content
hash. Anything that reads another file belongs in ``check_wiki``; in a whole-wiki run its
results are cached, per rule, by the rule's fingerprint, the hash of every page of the
wiki and :meth:`Rule.wiki_inputs` (set ``cache_wiki = False`` when a rule reads files
that are not pages, such as link targets, and override ``wiki_inputs`` to name them
when they can be hashed cheaply: the git refs, say). A PATH run never caches them: they
cover only the targets there.

Speed contract: ``check_wiki`` findings are kept only for ``ctx.targets``. A cross-file
rule whose findings land on the page it examines should loop over
``ctx.target_pages(kind)`` and look up the rest of the wiki as needed (frontmatter and
``ctx.facts`` come from the cache without parsing); looping over ``ctx.pages(kind)`` and
reading ``info.page`` splits every page of the wiki, which a five-file pre-commit run
cannot afford on a wiki of thousands of pages.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable

from wikiengine.lint.finding import Finding
from wikiengine.lint.options import Option

TYPE_CHECKING = False  # typing's constant, without importing typing
if TYPE_CHECKING:
    from typing import ClassVar

    from wikiengine.core.page import Page
    from wikiengine.lint.context import LintContext, PageInfo


class Rule:
    code: ClassVar[str]
    name: ClassVar[str]  # kebab-case, says what it checks: "experiment-file-name"
    summary: ClassVar[str]  # one line
    kinds: ClassVar[tuple[str, ...]] = ()
    collect_kinds: ClassVar[tuple[str, ...]] = ()
    needs_git: ClassVar[bool] = False
    fixable: ClassVar[bool] = False
    since: ClassVar[str | None] = None
    cache_wiki: ClassVar[bool] = True
    reads_tracked: ClassVar[bool] = False  # uses ctx.tracked(): its git process starts with the run
    reports_absent: ClassVar[bool] = False  # keeps findings on paths that are gone (whole-wiki runs)
    reports_on: ClassVar[tuple[str, ...] | None] = None  # the kinds check_wiki's findings land on (None: any)
    by_lane: ClassVar[bool] = False  # check_wiki judges one lane at a time (lint/lane_parts.py)
    reads_pages: ClassVar[bool] = True  # False: check_wiki reads the paths, not the pages (keyed by the file list)
    # option name -> its kind, for [tool.wiki.rules.<CODE>]; documented under *Options*
    options: ClassVar[dict[str, Option]] = {}

    def prepare(self, ctx: LintContext) -> None:
        """Once per run, in the main process, before any page is checked (compile, load)."""

    def collect(self, info: PageInfo, ctx: LintContext):
        """Facts of one page for ``check_wiki`` (None: nothing); see the module docstring."""
        return None

    def check_page(self, info: PageInfo, ctx: LintContext) -> Iterable[Finding]:
        return ()

    def check_wiki(self, ctx: LintContext) -> Iterable[Finding]:
        return ()

    def wiki_inputs(self, ctx: LintContext) -> str | None:
        """A fingerprint of what ``check_wiki`` reads besides the pages and the configuration
        ("" when nothing; None: it cannot be told, so the rule runs every time)."""
        return "" if self.cache_wiki and not self.needs_git else None

    def lane_inputs(self, ctx: LintContext) -> str:
        """For a ``by_lane`` rule: what its findings on one lane read from the other lanes (the
        wiki's log-split date, say), as text that changes when that does ("" when nothing)."""
        return ""

    def baseline_volatile(self, ctx: LintContext, message: str) -> bool:
        """May a finding with ``message`` come and go with the clone's state (a submodule
        checked out or not) rather than with an edit? Its baseline entry is then never stale."""
        return False

    def fix(self, info: PageInfo, ctx: LintContext) -> Page | None:
        """The fixed page, or None when no safe fix applies."""
        return None

    def finding(self, path: str, line: int, message: str, col: int = 1, date: str | None = None,
                subject: str | None = None) -> Finding:
        """A finding of this rule (``date``: of the log entry it is about, see Finding.date;
        ``subject``: what it is about when the message quotes other lines, see Finding.subject)."""
        return Finding(path, max(1, line), col, self.code, message, self.fixable, date, subject)

    @classmethod
    def doc(cls) -> str:
        """The rule's documentation (its docstring, dedented)."""
        return inspect.cleandoc(cls.__doc__ or "")

    @classmethod
    def has_collect(cls) -> bool:
        return cls.collect is not Rule.collect

    @classmethod
    def collects_on(cls, kind: str) -> bool:
        """Does ``collect`` run on pages of ``kind``?"""
        kinds = cls.collect_kinds or cls.kinds
        return not kinds or kind in kinds
