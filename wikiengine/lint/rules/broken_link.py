"""LNK001 and LNK002, the link scan they use, and how a link target is judged.

A target is judged once per lint (most links of generated pages share a few hundred
targets) against what git will publish: a tracked file or folder is fine; a target
under a declared artifact path (``artifact-paths``, default ``raw/profiles/``) is absent
by design; under a submodule that is not checked out it cannot be checked; under a
checked-out submodule it must exist there; a target that exists only because git
ignores it is LNK002; anything else is broken (LNK001). Outside git, the file system
decides, and ``.gitmodules`` names the submodules.
"""

from __future__ import annotations

import bisect
import os
import posixpath
import re
import sys
from pathlib import Path
from urllib.parse import unquote

from wikiengine.lint.rule import Rule
from wikiengine.lint.rules.unreadable_page import ALL_KINDS

# Inline links and images: [text](dest "title"), with one level of nested brackets in the
# text, an <angle> destination or one with balanced parentheses, and an optional title.
# The repetitions are possessive: their alternatives start with different characters and
# cannot end on the character that follows, so giving text back never finds another
# match, and possessive runs are several times faster on long link-heavy pages.
_INLINE_RE = re.compile(
    r"!?\[(?:[^\[\]\\]++|\\.|\[(?:[^\[\]\\]++|\\.)*+\])*+\]"
    r"\(\s*+(<[^<>\n]*>|(?:[^\s()\\]++|\\.|\((?:[^\s()\\]++|\\.)*+\))*+)"
    r"(?:\s+(?:\"[^\"]*\"|'[^']*'|\([^()]*\)))?\s*\)"
)
_CODE_SPAN_RE = re.compile(r"(`+)(?:.+?)(?<!`)\1(?!`)")
_FENCE_RE = re.compile(r" {0,3}(`{3,}|~{3,})")
_SCHEME_RE = re.compile(r"[A-Za-z][A-Za-z0-9+.-]{1,31}:")
_ODD_SPACE_RE = re.compile(r"[^\S \t\n]")
_ESCAPE_RE = re.compile(r"\\([!-/:-@\[-`{-~])")


def link_destinations(text: str, first_line: int = 1) -> list[tuple[int, int, str]]:
    """``(line, col, destination)`` of every link and image that CommonMark sees in ``text``.

    A line scan where it is certain (inline ``[text](dest)`` on ordinary lines outside
    fences and code spans), else markdown-it-py's parser (about 2 ms a page): reference
    links, HTML, escapes, entities, indented code or link text spread over lines send the
    page to markdown-it. A page with none of those constructs anywhere (most pages, and
    generated codebase pages) is scanned in one pass over the whole text instead of line
    by line, with the same answers. ``tests/test_rules_lnk.py`` checks the scans against
    each other and against markdown-it on the CommonMark spec examples, the example wiki,
    generated pages and generated texts.
    """
    found = _scan_links(text, first_line)
    if found is None:
        return markdown_it_links(text, first_line)
    return found


def _scan_links(text: str, first_line: int) -> list[tuple[int, int, str]] | None:
    if "](" not in text and "]:" not in text and "][" not in text:
        return []  # no inline link, reference link or definition can exist
    if _plain(text):
        return _scan_plain(text, first_line)
    return _scan_careful(text, first_line)


def _scan_careful(text: str, first_line: int) -> list[tuple[int, int, str]] | None:
    """The line-by-line scan, for texts with constructs it must look at twice."""
    found = []
    fence = ""
    for number, line in enumerate(text.splitlines(), start=first_line):
        if fence:
            if fence[0] in line:
                closer = _FENCE_RE.match(line)
                if closer and closer.group(1)[0] == fence[0] and len(closer.group(1)) >= len(fence) and not line.strip().strip(fence[0]):
                    fence = ""
            continue
        if "`" in line or "~" in line:
            opener = _FENCE_RE.match(line)
            if opener and not (opener.group(1)[0] == "`" and "`" in line[opener.end():]):
                fence = opener.group(1)
                continue
        brackets = "[" in line or "]" in line
        if not brackets and "<" not in line and "\t" not in line:
            continue
        stripped = line.lstrip(" ")
        if stripped.startswith("<!--") and "-->" in stripped[4:] and len(line) - len(stripped) <= 3:
            continue  # a one-line HTML comment block: no links in it
        if not brackets:
            if stripped.startswith("<") or "\t" in line:
                return None  # an HTML block or a tab the scan cannot place
            continue
        if line.startswith("    ") or "\t" in line or stripped.startswith("<"):
            return None
        masked = _masked_code_spans(line) if "`" in line else line
        if masked is None or "`" in masked or "\\" in masked or "&" in masked or "<" in masked or "]:" in masked or "][" in masked:
            return None
        if masked.count("[") != masked.count("]") or _ODD_SPACE_RE.search(masked):
            return None  # link text spread over lines, or Unicode spaces the regex reads differently
        last = 0
        for match in _INLINE_RE.finditer(masked):
            if match.group(0).count("](") > 1 or "](" in masked[last : match.start()]:
                return None  # an image inside link text, or something link-like the scan does not understand
            found.append((number, match.start() + 1, _clean(match.group(1))))
            last = match.end()
        if "](" in masked[last:]:
            return None
    return found


# What makes the careful scan look twice at a line: fences, HTML, tabs, escapes, entities,
# reference links, indented code; and ASCII spaces other than ' ' and newline (they would
# also make str.split("\n") differ from str.splitlines()). Non-ASCII text is always careful.
_CARE_MARKERS = ("```", "~~~", "]:", "][", "\n    ")
_CARE_CHARS_RE = re.compile(r"[<\t\\&\r\x0b\x0c\x1c-\x1f]")
# The inline link pattern without the optional "!" of images, so that the regex engine
# can jump from "[" to "[" (an image's "!" is looked up before the match).
_BRACKET_LINK_RE = re.compile(_INLINE_RE.pattern[2:])


def _plain(text: str) -> bool:
    return (
        text.isascii() and not text.startswith("    ") and not any(marker in text for marker in _CARE_MARKERS)
        and not _CARE_CHARS_RE.search(text)
    )


def _scan_plain(text: str, first_line: int) -> list[tuple[int, int, str]] | None:
    """:func:`_scan_links` for a :func:`_plain` text (most pages, generated ones included),
    in one pass over the whole text instead of line by line: code spans blanked out at
    once, every line's brackets balanced, one regex scan; the same answers."""
    parts = text.split("`")
    if "``" in text or len(parts) % 2 == 0 or any("\n" in parts[i] for i in range(1, len(parts), 2)):
        return _scan_careful(text, first_line)  # a backtick string the line scan must pair
    if len(parts) > 1:
        masked = [parts[0]]
        for index in range(1, len(parts), 2):
            masked.append(" " * (len(parts[index]) + 2))
            masked.append(parts[index + 1])
        text = "".join(masked)
    starts = [0]
    for line in text.split("\n"):
        if line.count("[") != line.count("]"):
            return None  # link text spread over lines
        starts.append(starts[-1] + len(line) + 1)
    found = []
    last = 0
    find = text.find
    for match in _BRACKET_LINK_RE.finditer(text):
        start, end = match.span()
        if start > last and text[start - 1] == "!":
            start -= 1  # an image
        if find("\n", start, end) >= 0 or find("](", find("](", start, end) + 2, end) >= 0 or find("](", last, start) >= 0:
            return None
        index = bisect.bisect_right(starts, start) - 1
        found.append((first_line + index, start - starts[index] + 1, _clean(match.group(1))))
        last = end
    if find("](", last) >= 0:
        return None
    return found


def _masked_code_spans(line: str) -> str | None:
    """``line`` with its code spans blanked out (same length), or None when a backtick is
    left unpaired. Single-backtick spans are paired by splitting (generated pages have
    one on every table row); longer backtick strings go through the regex."""
    if "``" in line:
        masked = _CODE_SPAN_RE.sub(lambda m: " " * len(m.group(0)), line)
        return None if "`" in masked else masked
    parts = line.split("`")
    if len(parts) % 2 == 0:
        return None  # an odd number of backticks
    out = [parts[0]]
    for index in range(1, len(parts), 2):
        out.append(" " * (len(parts[index]) + 2))
        out.append(parts[index + 1])
    return "".join(out)


_MD = None


def markdown_it_links(text: str, first_line: int = 1) -> list[tuple[int, int, str]]:
    """Links and images according to markdown-it-py (CommonMark), with their lines."""
    global _MD
    if _MD is None:
        from markdown_it import MarkdownIt

        _MD = MarkdownIt("commonmark")
    found = []
    for token in _MD.parse(text):
        if token.type != "inline" or not token.children:
            continue
        line = (token.map[0] if token.map else 0) + first_line
        for child in token.children:
            if child.type in ("softbreak", "hardbreak"):
                line += 1
            elif child.type == "link_open":
                found.append((line, 1, unquote(child.attrs.get("href", ""))))
            elif child.type == "image":
                found.append((line, 1, unquote(child.attrs.get("src", ""))))
    return found


def _clean(dest: str) -> str:
    if dest.startswith("<") and dest.endswith(">"):
        dest = dest[1:-1]
    if "\\" in dest:
        dest = _ESCAPE_RE.sub(r"\1", dest)
    return unquote(dest) if "%" in dest else dest


def relative_target(dest: str) -> str | None:
    """The file part of a relative link (no scheme, no bare ``#anchor``), else None."""
    if not dest or dest.startswith(("#", "/", "?")) or (":" in dest and _SCHEME_RE.match(dest)):
        return None
    return dest.split("#", 1)[0].split("?", 1)[0] or None


def page_links(info) -> list[list]:
    """``[line, col, file part, rest, target]`` of every relative link of the page ``info``:
    the destination is ``file part + rest`` (``rest``: its ``#anchor`` or ``?query``);
    ``target`` is the repository-relative path it names (None when it leaves the
    repository). Strings are interned, so that the lint cache stores each distinct
    path once (generated pages repeat a few hundred targets tens of thousands of times).
    The last page's result is kept: rules that collect from one page scan it once."""
    global _LAST_SCAN
    page = info.page
    if _LAST_SCAN is not None and _LAST_SCAN[0] is page:
        return _LAST_SCAN[1]
    text = page.preamble + "".join(s.text for s in page.sections)
    _known, resolve = _resolver(info.rel)
    links = []
    for line, col, dest in link_destinations(text, page.body_line):
        file_part = relative_target(dest)
        if file_part is None:
            continue
        file_part, target = resolve(file_part)
        rest = dest[len(file_part):]  # relative_target() is a prefix of the destination
        links.append([line, col, file_part, sys.intern(rest) if rest else "", target])
    _LAST_SCAN = (page, links)
    return links


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
            target = posixpath.normpath(posixpath.join(directory, file_part))
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
        if not repo or "/" not in target[len(prefix):] or self.tree is None:
            return False
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
        elif target in tree.files:
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
        if tree is None:
            return OK
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
    that is not fine, computed once per lint for LNK001 and LNK002."""
    from wikiengine.lint.rules._experiments import lint_cache

    memo = lint_cache(ctx, "judged-links")
    if "rows" not in memo:
        judge = memo["judge"] = TargetJudge(ctx)
        judged = judge.verdicts
        pending = []
        for rel in ctx.targets:
            links = _stored_links(ctx, rel)
            if not links:
                continue
            known, resolve = _resolver(rel)
            for line, col, file_part, rest in links:
                target = (known.get(file_part) or resolve(file_part))[1]
                verdict = BROKEN if target is None else judged.get(target) or judge.judge(target)
                if verdict is not OK and verdict is not UNVERIFIABLE:
                    pending.append((rel, line, col, file_part + rest, target, verdict))
        judge.settle()
        memo["rows"] = [
            (rel, line, col, dest, target, judged[target] if verdict == CANDIDATE else verdict)
            for rel, line, col, dest, target, verdict in pending
        ]
    return memo["rows"]


def _stored_links(ctx, rel: str):
    """``[line, col, file part, rest]`` of the links of ``rel``: LNK001's cached facts
    when LNK001 runs (they leave the target out, which :func:`_resolver` gives back)."""
    if "LNK001" in ctx._rules:
        return ctx.facts("LNK001", rel)
    info = ctx.info(rel)
    return [link[:4] for link in page_links(info)] if info.page is not None else None


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
        return [link[:4] for link in page_links(info)] or None

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
