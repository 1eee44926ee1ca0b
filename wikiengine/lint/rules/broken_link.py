"""LNK001 and LNK002, the links of a page, and how a link target is judged.

A target is judged once per lint (most links of generated pages share a few hundred
targets) against what git will publish: a tracked file or folder is fine; a target
under a declared artifact path (``artifact-paths``, default ``raw/profiles/``) is absent
by design; under a submodule that is not checked out it cannot be checked; under a
checked-out submodule it must exist there; a target that exists only because git
ignores it is LNK002; anything else is broken (LNK001). Outside git, the file system
decides, and ``.gitmodules`` names the submodules.
"""

from __future__ import annotations

import os
import posixpath
import re
import sys
from pathlib import Path

from wikiengine.core.links import destinations, joined, link_destinations, relative_target
from wikiengine.lint.context import in_sorted
from wikiengine.lint.kinds import ALL_KINDS
from wikiengine.lint.rule import Rule


def page_links(info) -> tuple[list[str], list[str | None]]:
    """``(file parts, targets)`` of the relative links of the page ``info``: each file part it
    links (the destination without its ``#anchor`` or ``?query``) once, in the order of its
    first link, as LNK001 collects them, and in the same order the repository-relative path
    each names (None when it leaves the repository), as IDX002 collects them. Where each link
    stands is not kept: a page with a link that is not fine is read again for that
    (:func:`page_rows`; 16 of the real shape's 4,633 pages, whose 142,000 link rows were
    three quarters of a cold lint's cache). Paths are interned, so that the lint cache stores
    each distinct path once. The last page's result is kept: rules that collect from one page
    scan it once; neither list is changed by a reader."""
    global _LAST_SCAN
    page = info.page
    if _LAST_SCAN is not None and _LAST_SCAN[0] is page:
        return _LAST_SCAN[1]
    known, resolve = _resolver(info.rel)
    parts: dict[str, str | None] = {}
    for file_part in dict.fromkeys(map(relative_target, dict.fromkeys(destinations(page.body)))):
        if file_part is not None:
            file_part, target = known.get(file_part) or resolve(file_part)
            parts[file_part] = target
    _LAST_SCAN = (page, (list(parts), list(parts.values())))
    return _LAST_SCAN[1]


def page_rows(info) -> list[tuple[int, int, str, str]]:
    """``(line, col, file part, rest)`` of every relative link of the page ``info`` (the
    destination is ``file part + rest``; ``rest``: its ``#anchor`` or ``?query``)."""
    known, resolve = _resolver(info.rel)
    rows = []
    for line, col, dest in link_destinations(info.page.body, info.page.body_line):
        file_part = relative_target(dest)
        if file_part is not None:
            file_part = (known.get(file_part) or resolve(file_part))[0]
            rows.append((line, col, file_part, dest[len(file_part):]))  # relative_target() is a prefix
    return rows


# directory -> file part -> (file part, target), interned: generated pages of one folder
# link the same few hundred files thousands of times.
_RESOLVED: dict[str, dict[str, tuple[str, str | None]]] = {}


def _resolver(rel: str):
    """``(known, resolve)`` for the links of the page ``rel``: ``resolve(file part) ->
    (file part, target)``, and the dict of the pairs already resolved in its folder."""
    directory = posixpath.dirname(rel)
    known = _RESOLVED.setdefault(directory, {})

    def resolve(file_part: str) -> tuple[str, str | None]:
        pair = known.get(file_part)
        if pair is None:
            target = joined(directory, file_part)
            outside = target.startswith("../") or target == ".."
            pair = known[file_part] = (sys.intern(file_part), None if outside else sys.intern(target))
        return pair

    return known, resolve


_LAST_SCAN = None


OK, BROKEN, UNVERIFIABLE, IGNORED = "ok", "broken", "unverifiable", "ignored"
CANDIDATE = "candidate"  # on disk, not tracked: IGNORED or OK once git has been asked


class TargetJudge:
    """Judges link targets for one lint (see the module docstring), each target once."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.root = str(ctx.root)
        self.artifacts = tuple(p.strip("/") + "/" for p in ctx.config.artifact_paths)
        self.checkouts = tuple(p.strip("/") + "/" for p in ctx.config.checkout_paths)
        self._tree = self._submodules = self._pages = None  # read on first need
        self.verdicts: dict[str, str] = {}
        self.candidates: list[str] = []  # on disk but not tracked: ignored, or simply not added yet

    @property
    def tree(self):
        if self._tree is None:
            self._tree = self.ctx.tracked() or False
        return self._tree or None

    @property
    def submodules(self) -> dict[str, bool]:
        """Submodule path -> is it checked out?"""
        if self._submodules is None:
            self._submodules = {
                path: os.path.exists(os.path.join(self.root, path, ".git")) for path in self.ctx.submodules()
            }
        return self._submodules

    def judge(self, target: str) -> str:
        verdict = self.verdicts.get(target)
        if verdict is None:
            verdict = self.verdicts[target] = self._judge(target)
        return verdict

    def in_local_checkout(self, target: str) -> bool:
        """Is ``target`` inside ``<checkout path>/<repo>/`` of a repo git does not track (an
        untracked local checkout, present or not)? A clone cannot check such a target."""
        prefix = next((p for p in self.checkouts if target.startswith(p)), None)
        repo = target[len(prefix):].split("/", 1)[0] if prefix else ""
        if not repo or "/" not in target[len(prefix):]:
            return False
        if self.tree is None:  # outside git: a checkout that is not on disk cannot be checked
            return not os.path.isdir(os.path.join(self.root, prefix + repo))
        return not self.tree.has_directory(prefix + repo)

    def submodule_of(self, target: str) -> str | None:
        for path in self.submodules:
            if target == path or target.startswith(path + "/"):
                return path
        return None

    def _judge(self, target: str) -> str:
        if (target + "/").startswith(self.artifacts):
            return OK
        tree = self.tree
        if tree is None:
            if self._pages is None:
                self._pages = set(self.ctx.files)
            if target in self._pages:
                return OK
        elif tree.tracks(target):
            return OK
        submodule = self.submodule_of(target)
        if submodule is not None:
            if not self.submodules[submodule]:
                return UNVERIFIABLE
            return OK if os.path.exists(os.path.join(self.root, target)) else BROKEN
        if self.in_local_checkout(target):
            return UNVERIFIABLE
        if tree is not None and tree.has_directory(target):
            return OK
        if not os.path.exists(os.path.join(self.root, target)):
            return BROKEN
        if tree is None or target in self.ctx.committing:
            return OK  # outside git; or a page the writer commits with this lint (no git check-ignore for it)
        self.candidates.append(target)
        return CANDIDATE

    def settle(self) -> None:
        """Ask git once which of the untracked targets it ignores."""
        if not self.candidates:
            return
        from wikiengine.lint.gitview import ignored_paths

        ignored = ignored_paths(Path(self.root), self.candidates)
        for target in self.candidates:
            self.verdicts[target] = IGNORED if target in ignored else OK
        self.candidates = []


def judged_links(ctx) -> list[tuple[str, int, int, str, str | None, str]]:
    """``(page, line, col, destination, target, verdict)`` of every link of the targets
    that is not fine, computed once per lint for LNK001 and LNK002.

    In a whole-wiki run the rows of each page are cached with its entry, and the verdict
    of every target judged is kept: a warm run judges again only those targets, and
    re-reads the links of the pages that changed, unless a target's verdict changed (a
    file appeared, went, or git began to track or ignore it), when every page is. A run
    after an edit (``ctx.changed_since``) takes the other pages' rows whole from the run
    before it, looking up no other page's entry."""
    from wikiengine.lint.rules._experiments import lint_cache

    memo = lint_cache(ctx, "judged-links")
    if "rows" not in memo:
        judge = memo["judge"] = TargetJudge(ctx)
        whole = ctx.cache is not None and ctx.cache.persist and ctx.targets is ctx.files
        key = repr((judge.artifacts, judge.checkouts))
        reuse = whole and _verdicts_hold(ctx, judge, key)
        if reuse:
            every = ctx.cache.memo("link-rows", f"{key}:{ctx.wiki_fingerprint()}")
            if every is not None:  # no page changed either: the whole wiki's rows as they were
                memo["rows"] = [tuple(row) for row in every]
                return memo["rows"]
        judged = judge.verdicts
        pending, fresh = [], []
        rows, pages = [], ctx.targets
        since = ctx.changed_since if reuse else None
        before = ctx.cache.memo("link-rows", f"{key}:{since[0]}") if since is not None else None
        if before is not None:  # a run after an edit: the other pages' rows as the run before it found them
            rows = [tuple(row) for row in before if row[0] not in since[1]]
            pages = [rel for rel in sorted(since[1]) if in_sorted(ctx.files, rel)]  # (a page gone has none)
        for rel in pages:
            kept = ctx.cache.page_memo(rel, "links") if reuse else None
            if kept is not None:
                rows.extend((rel, *row) for row in kept)
                continue
            fresh.append(rel)
            file_parts = _stored_parts(ctx, rel)
            if not file_parts:
                continue
            known, resolve = _resolver(rel)
            # each file part the page links, once: the page is read again for where its links
            # stand only when it links one that is not fine
            flagged = {}
            for file_part in file_parts:
                target = (known.get(file_part) or resolve(file_part))[1]
                verdict = BROKEN if target is None else judged.get(target) or judge.judge(target)
                if verdict is not OK and verdict is not UNVERIFIABLE:
                    flagged[file_part] = (target, verdict)
            if flagged:
                info = ctx.info(rel)
                pending += [(rel, line, col, file_part + rest, *flagged[file_part])
                            for line, col, file_part, rest in (page_rows(info) if info.page is not None else ())
                            if file_part in flagged]
        judge.settle()
        rows.extend(
            (rel, line, col, dest, target, judged[target] if verdict == CANDIDATE else verdict)
            for rel, line, col, dest, target, verdict in pending
        )
        if whole:
            by_page: dict[str, list] = {rel: [] for rel in fresh}
            for row in rows:
                if row[0] in by_page:
                    by_page[row[0]].append(row[1:])
            for rel, kept_rows in by_page.items():
                ctx.cache.store_page_memo(rel, "links", kept_rows)
            if fresh or not reuse:
                ctx.cache.store_memo("link-verdicts", key, dict(judged))
            ctx.cache.stats["link_pages_judged"] += len(fresh)
        memo["rows"] = sorted(rows, key=lambda row: (row[0], row[1], row[2]))
        if whole and (fresh or ctx.cache.memo("link-rows", f"{key}:{ctx.wiki_fingerprint()}") is None):
            ctx.cache.store_memo("link-rows", f"{key}:{ctx.wiki_fingerprint()}", memo["rows"])
    return memo["rows"]


def _verdicts_hold(ctx, judge: TargetJudge, key: str) -> bool:
    """Does every target judged by the run that cached the pages' rows get the same verdict now?"""
    before = ctx.cache.memo("link-verdicts", key)
    if before is None:
        return False
    for target in before:
        judge.judge(target)
    judge.settle()
    return all(judge.verdicts.get(target) == verdict for target, verdict in before.items())


def _stored_parts(ctx, rel: str) -> list[str] | None:
    """The file parts ``rel`` links: LNK001's cached facts when LNK001 runs (they leave the
    target out, which :func:`_resolver` gives back)."""
    if "LNK001" in ctx._rules:
        return ctx.facts("LNK001", rel)
    info = ctx.info(rel)
    return page_links(info)[0] if info.page is not None else None


_TARGET_RE = re.compile(r"points to (.+), which does not exist$")


class BrokenLink(Rule):
    """## What it does
    Reports a relative link or image whose target does not exist, resolved from the
    page's own directory, where "exists" means what a clone of the repository will have:
    a file or folder that git tracks. Links with a scheme (`https:`, `mailto:`), bare
    `#anchors`, and links inside code are not checked. Not broken either:

    - a target under a submodule that is not checked out (`raw/code/<repo>/...` in a
      clone without `--recursive`): it cannot be checked; with the submodule checked
      out, the target must exist in it;
    - a target under a declared artifact path (`raw/profiles/` by default), which the
      wiki keeps out of git by design;
    - a target inside `<checkout path>/<repo>/` (`raw/code/` by default) when git tracks
      nothing of that repo: an untracked local checkout (gitignored, not a submodule),
      which a clone does not have; it cannot be checked.

    A target that exists only because git ignores it is LNK002, not this.

    ## Why is this bad?
    Experiment pages, model pages and logs point at each other; agents follow those
    links to re-ground. A link to a renamed or never-filed page sends them nowhere.

    ## Example
    ```markdown
    See [v0012](2026-03-01-v0012-fused-attn.md).
    ```
    when no such file exists beside the page. Link the page that exists:
    ```markdown
    See [v0012](2026-03-01-v0012-fused-attention.md).
    ```

    ## Options
    `artifact-paths` (top level of `[tool.wiki]`, a list of folders, default
    `["raw/profiles/"]`): folders whose contents are never in git. `checkout-paths` (top
    level, default `["raw/code/"]`): folders whose sub-folders are code checkouts.

    A baseline entry of this rule about a target under a submodule is never reported
    stale: whether it matches depends on which submodules the clone has checked out.
    """

    code = "LNK001"
    name = "broken-relative-link"
    summary = "a relative link points to a file that does not exist (submodules and artifact paths understood)"
    kinds = ALL_KINDS
    cache_wiki = False  # link targets are any files, not only pages
    reads_tracked = True

    def collect(self, info, ctx):
        return page_links(info)[0] or None

    def check_wiki(self, ctx):
        for rel, line, col, dest, target, verdict in judged_links(ctx):
            if target is None:
                yield self.finding(rel, line, f"link '{dest}' points outside the repository", col)
            elif verdict == BROKEN:
                yield self.finding(rel, line, f"link '{dest}' points to {target}, which does not exist", col)

    def baseline_volatile(self, ctx, message: str) -> bool:
        match = _TARGET_RE.search(message)
        if match is None:
            return False
        target = match.group(1)
        return any(target == path or target.startswith(path + "/") for path in ctx.submodules())


class IgnoredLinkTarget(Rule):
    """## What it does
    Reports a relative link whose target exists in the working tree but is ignored by
    git (a `.gitignore` rule matches it), outside the declared artifact paths.

    ## Why is this bad?
    The link works on the author's machine and nowhere else: the target is never
    committed, so every clone, CI run and reader gets a broken link. A broad rule such
    as `lib/` silently dropping wiki pages is a real defect seen in practice.

    ## Example
    `.gitignore` holds `lib/`, and a page links
    ```markdown
    [flags](lib/xla-flags.md)
    ```
    Narrow the ignore rule (`/lib/`) or move the page.

    ## Options
    `artifact-paths` (see LNK001): folders that are ignored on purpose.
    """

    code = "LNK002"
    name = "link-target-ignored"
    summary = "a relative link points to a file that exists but git ignores, so it will not be published"
    cache_wiki = False  # reads .gitignore and the work tree
    reads_tracked = True

    def check_wiki(self, ctx):
        if ctx.tracked() is None:
            return
        for rel, line, col, dest, target, verdict in judged_links(ctx):
            if verdict == IGNORED:
                yield self.finding(
                    rel, line, f"link '{dest}' points to {target}, which git ignores: it will not be published", col
                )
