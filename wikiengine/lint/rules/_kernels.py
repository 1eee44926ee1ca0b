"""Facts about kernel experiment pages that the KRN rules share, computed once per lint.

A kernel experiment page is ``wiki/kernel_experiments/<family>/<lane>/<page>.md``
(kind ``kernel-experiment``); its family page is ``wiki/kernels/<family>.md`` (kind
``kernel-family``). A page is the one experiment record
(:class:`~wikiengine.model.experiment.ExperimentPage`, its ``folder`` the family; the KRN
rules go by the id of its file name, ``file_id``), its kernel parts are read through
:mod:`wikiengine.model.kernel_page`; the git reads use the repository's branches directly (a
rule whose branch is absent says nothing).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator

from wikiengine.core import git as core_git
from wikiengine.lint.rules._experiments import lint_cache
from wikiengine.model.experiment import ExperimentPage
from wikiengine.model.kernels import family_of_path

TYPE_CHECKING = False  # typing's constant, without importing typing
if TYPE_CHECKING:
    from wikiengine.lint.context import LintContext, PageInfo


def kernel_facts(info: PageInfo, ctx: LintContext) -> ExperimentPage | None:
    """The record of a kernel experiment page (None when the page is not one or cannot be read)."""
    cache = lint_cache(ctx, "kernel-facts")
    if info.rel not in cache:
        family = family_of_path(info.rel)
        facts = None
        if family is not None and info.error is None:
            facts = ExperimentPage.known(info.rel, family, None, info.frontmatter, lambda: info.page)
        cache[info.rel] = facts
    return cache[info.rel]


def kernel_pages_in_git(ctx: LintContext) -> list:
    """The kernel experiment pages reported on, or none outside a git work tree (git is
    asked only when there is such a page: a lint of other pages starts no process here)."""
    pages = ctx.target_pages("kernel-experiment")
    return pages if pages and _in_git(ctx) else []


def _in_git(ctx: LintContext) -> bool:
    cache = lint_cache(ctx, "kernel-git")
    if "in" not in cache:
        cache["in"] = core_git.out(ctx.root, "rev-parse", "--is-inside-work-tree", timeout=60).strip() == "true"
    return cache["in"]


def refs_state(ctx: LintContext) -> str:
    """What the git-reading KRN rules see of the repository: a hash of HEAD and every ref
    (one ``git show-ref --head``; "" when there is no kernel experiment page to check), so
    that their findings are cached until a commit or a branch moves."""
    if not ctx.target_files("kernel-experiment"):
        return ""
    cache = lint_cache(ctx, "kernel-git")
    if "refs" not in cache:
        cache["refs"] = hashlib.blake2b(git(ctx, "show-ref", "--head").encode(), digest_size=16).hexdigest()
    return cache["refs"]


def per_page_in_git(rule, ctx: LintContext, judge) -> Iterator:
    """The findings of a KRN rule that reads each kernel experiment page with git's history:
    ``judge(info) -> [(line, message)]``, kept with each page's cache entry until the page,
    a commit or a branch changes (an edit elsewhere in the wiki re-runs no git process)."""
    refs = refs_state(ctx)
    for info in kernel_pages_in_git(ctx):
        for line, message in ctx.page_fact(info.rel, rule.code, lambda info=info: judge(info), key=refs):
            yield rule.finding(info.rel, line, message)


def branches(ctx: LintContext) -> set[str]:
    """The repository's local branch names, from one ``git for-each-ref`` per lint."""
    cache = lint_cache(ctx, "kernel-git")
    if "branches" not in cache:
        listed = git(ctx, "for-each-ref", "--format=%(refname)", "refs/heads")
        cache["branches"] = {ref.removeprefix("refs/heads/") for ref in listed.splitlines() if ref}
    return cache["branches"]


def first_commits(ctx: LintContext) -> dict[str, tuple[str, int, bool]]:
    """``{page: (sha, commit time, a root commit?)}`` of the commit that first touched each
    kernel experiment page reported on (what ``git log --reverse -- <page>`` lists first),
    from one ``git log`` over all of them rather than one per page."""
    cache = lint_cache(ctx, "kernel-git")
    if "first" not in cache:
        rels = [info.rel for info in kernel_pages_in_git(ctx)]
        listed = git(ctx, "log", "--reverse", "--format=%x01%H %ct %P", "--name-only", "--no-renames",
                     "-z", "--", *rels) if rels else ""
        wanted, first = set(rels), {}
        for record in listed.split("\x01")[1:]:
            header, _, names = record.partition("\n")
            sha, when, *parents = header.replace("\0", " ").split()
            for name in names.strip("\n\0").split("\0"):
                if name in wanted and name not in first:
                    first[name] = (sha, int(when), not parents)
        cache["first"] = first
    return cache["first"]


def first_texts(ctx: LintContext) -> dict[str, str | None]:
    """``{page: its text in its first commit}`` (None where git has no such blob), from one
    ``git cat-file --batch``."""
    cache = lint_cache(ctx, "kernel-git")
    if "first-texts" not in cache:
        named = [(rel, f"{sha}:{rel}") for rel, (sha, _when, _root) in first_commits(ctx).items()]
        blobs = core_git.cat_file_batch(ctx.root, [name for _rel, name in named], timeout=60) if named else []
        cache["first-texts"] = {rel: None if blob is None else blob.decode("utf-8", "replace")
                                for (rel, _name), blob in zip(named, blobs, strict=True)}
    return cache["first-texts"]


def git(ctx: LintContext, *args: str) -> str:
    """The stdout of a git command in the linted repository ("" when it fails)."""
    return core_git.out(ctx.root, *args, timeout=60)


def frontmatter_line(info: PageInfo, key: str) -> int:
    from wikiengine.lint.rules._experiments import key_line

    return key_line(info, key)


def verdict_line(info: PageInfo, facts: ExperimentPage) -> int:
    """The line of the key that holds the page's verdict (``verdict:``, else the older ``status: <verdict>``)."""
    return frontmatter_line(info, "verdict" if "verdict" in facts.frontmatter else "status")
