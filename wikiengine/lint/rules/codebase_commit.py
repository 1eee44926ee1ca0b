"""CDB001."""

from __future__ import annotations

from wikiengine.lint.rule import Rule
from wikiengine.lint.rules._experiments import key_line

_REPO_KEYS = ("repo", "submodule", "source", "path")
MIN_SHA = 7


def pinned_submodule(frontmatter: dict, rel: str, gitlinks: dict[str, str]) -> str | None:
    """The submodule a codebase page describes: the gitlink its frontmatter names
    (`repo:`, `submodule:`, `source:` or `path:`), else the one named like its slug
    (`wiki/codebases/<slug>.md` or `wiki/codebases/<slug>/...`)."""
    for key in _REPO_KEYS:
        value = frontmatter.get(key)
        if isinstance(value, str) and value.strip().strip("/") in gitlinks:
            return value.strip().strip("/")
    parts = rel.split("/")
    slug = parts[2][:-3] if len(parts) == 3 else parts[2]
    named = [path for path in gitlinks if path.rsplit("/", 1)[-1] == slug]
    return named[0] if len(named) == 1 else None


class CodebaseCommitPinned(Rule):
    """## What it does
    Checks that a codebase page's `commit:` (the companion page
    `wiki/codebases/<slug>.md` and the generated pages under `wiki/codebases/<slug>/`)
    is the commit its submodule is pinned at: the gitlink recorded in git's index for
    `raw/code/<repo>` (named by the page's `repo:`, or the submodule named like the
    slug). A short sha (7 or more hex digits) matches the pinned commit it starts
    with. Pages whose submodule cannot be told, and wikis outside git, are not checked.

    ## Why is this bad?
    Codebase pages describe the code at one commit, and their line-anchored links
    (`module.py#L174`) point into that commit. When the submodule moves on and the
    pages are not regenerated, the summaries and anchors describe code that is no
    longer there, and an agent re-grounding on them reasons about the wrong code.

    ## Example
    `commit: 3f2a91c` on `wiki/codebases/maxtext.md` while `raw/code/maxtext` is
    pinned at `9b04e7d...`. Regenerate the silo at the pinned commit (or move the pin
    back) and update `commit:`.

    ## Options
    None.
    """

    code = "CDB001"
    name = "codebase-commit-pinned"
    summary = "a codebase page's commit: differs from the commit its submodule is pinned at"
    cache_wiki = False  # reads the gitlinks of git's index
    reads_tracked = True

    def wiki_inputs(self, ctx):
        """The gitlinks of git's index (the pinned commits), when there is a codebase page."""
        return _pins_key(ctx) if ctx.targets_under("wiki/codebases/") else ""

    def check_wiki(self, ctx):
        pages = ctx.targets_under("wiki/codebases/")
        tree = ctx.tracked() if pages else None
        if tree is None or not tree.gitlinks:
            return
        pins = _pins_key(ctx)
        for rel in pages:  # each page's answer kept with it while it and the pins are unchanged
            for line, message in ctx.page_fact(rel, self.code, lambda rel=rel: self._judged(rel, tree, ctx), key=pins):
                yield self.finding(rel, line, message)

    def _judged(self, rel, tree, ctx) -> list[tuple[int, str]]:
        info = ctx.info(rel)
        commit = info.frontmatter.get("commit")
        if not isinstance(commit, str) or not commit.strip():
            return []
        submodule = pinned_submodule(info.frontmatter, rel, tree.gitlinks)
        if submodule is None:
            return []
        pinned = tree.gitlinks[submodule]
        sha = commit.strip().lower()
        if len(sha) >= MIN_SHA and pinned.startswith(sha):
            return []
        return [(key_line(info, "commit"), f"commit {sha[:12]} is not the commit {submodule} is pinned at "
                                           f"({pinned[:12]}): regenerate the page at the pinned commit or update commit:")]


def _pins_key(ctx) -> str:
    """A hash of the pinned commits (``-`` outside git)."""
    import hashlib

    tree = ctx.tracked()
    return hashlib.blake2b(repr(sorted(tree.gitlinks.items())).encode(), digest_size=16).hexdigest() if tree else "-"
