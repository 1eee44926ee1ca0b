"""LNK001, and the link scan it uses."""

from __future__ import annotations

import posixpath
import re
from urllib.parse import unquote

from wikiengine.lint.rule import Rule
from wikiengine.rules.unreadable_page import ALL_KINDS

# Inline links and images: [text](dest "title"), with one level of nested brackets in the
# text, an <angle> destination or one with balanced parentheses, and an optional title.
_INLINE_RE = re.compile(
    r"!?\[(?:[^\[\]\\]|\\.|\[(?:[^\[\]\\]|\\.)*\])*\]"
    r"\(\s*(<[^<>\n]*>|(?:[^\s()\\]|\\.|\((?:[^\s()\\]|\\.)*\))*)"
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
    page to markdown-it. ``tests/test_rules_lnk.py`` checks the two against each other on
    the CommonMark spec examples, the example wiki and generated pages.
    """
    found = _scan_links(text, first_line)
    if found is None:
        return markdown_it_links(text, first_line)
    return found


def _scan_links(text: str, first_line: int) -> list[tuple[int, int, str]] | None:
    if "](" not in text and "]:" not in text and "][" not in text:
        return []  # no inline link, reference link or definition can exist
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
        masked = _CODE_SPAN_RE.sub(lambda m: " " * len(m.group(0)), line) if "`" in line else line
        if "`" in masked or "\\" in masked or "&" in masked or "<" in masked or "]:" in masked or "][" in masked:
            return None
        if masked.count("[") != masked.count("]") or _ODD_SPACE_RE.search(masked):
            return None  # link text spread over lines, or Unicode spaces the regex reads differently
        rest = masked
        for match in _INLINE_RE.finditer(masked):
            if match.group(0).count("](") > 1:
                return None  # an image inside link text
            found.append((number, match.start() + 1, _clean(match.group(1))))
            rest = rest.replace(match.group(0), " " * len(match.group(0)), 1)
        if "](" in rest:
            return None  # something link-like the scan does not understand
    return found


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
    return unquote(_ESCAPE_RE.sub(r"\1", dest))


def relative_target(dest: str) -> str | None:
    """The file part of a relative link (no scheme, no bare ``#anchor``), else None."""
    if not dest or dest.startswith(("#", "/", "?")) or _SCHEME_RE.match(dest):
        return None
    return dest.split("#", 1)[0].split("?", 1)[0] or None


class BrokenLink(Rule):
    """## What it does
    Reports a relative link or image whose target file (or directory) does not exist,
    resolved from the page's own directory. Links with a scheme (`https:`, `mailto:`),
    bare `#anchors`, and links inside code are not checked.

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
    None.
    """

    code = "LNK001"
    name = "broken-relative-link"
    summary = "a relative link points to a file that does not exist"
    kinds = ALL_KINDS
    cache_wiki = False  # link targets are any files, not only pages

    def collect(self, info, ctx):
        page = info.page
        text = page.preamble + "".join(s.text for s in page.sections)
        links = [
            [line, col, dest]
            for line, col, dest in link_destinations(text, page.body_line)
            if relative_target(dest) is not None
        ]
        return links or None

    def check_wiki(self, ctx):
        for rel in ctx.targets:
            links = ctx.facts(self.code, rel)
            if not links:
                continue
            directory = posixpath.dirname(rel)
            for line, col, dest in links:
                target = posixpath.normpath(posixpath.join(directory, relative_target(dest)))
                if target.startswith("../") or target == "..":
                    yield self.finding(rel, line, f"link '{dest}' points outside the repository", col)
                elif not ctx.exists(target):
                    yield self.finding(rel, line, f"link '{dest}' points to {target}, which does not exist", col)
