"""The page model: a markdown file as frontmatter, preamble and ordered H2 sections.

A page keeps the exact source text of every part, so writing a parsed page back
gives the same bytes (BOM, CRLF, a missing final newline and an empty frontmatter
all round-trip). Sections start at top-level H2 headings as CommonMark defines them
(markdown-it-py's ``heading_open`` h2 tokens at nesting level 0).

Finding the headings with a full markdown-it-py parse costs about 2 ms a page, so a
fence-aware line scan finds them instead whenever the page has nothing that could make
it wrong (HTML blocks other than column-0 comments, setext underlines, indented fences or
headings, tabs in the indent); otherwise markdown-it-py's block parser decides. ``tests/test_page_scan.py``
checks that the two agree on generated edge cases and on every example page.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field, replace
from pathlib import Path

from wikiengine.core.errors import PageError
from wikiengine.core.safe_read import MAX_PAGE_BYTES, decode, read_regular

TYPE_CHECKING = False  # typing's constant, without importing typing
if TYPE_CHECKING:
    from typing import Any

_LINE_RE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")
_FENCE_OPEN_RE = re.compile(r"(`{3,}|~{3,})(.*)$")
# First characters of a line that the H2 scan must look at closely ("" is in every string).
_SCAN_SPECIAL_FIRST = " \t\r\n#`~<-="
# An ATX heading of any level: 1-6 '#' then a space, a tab or the end of the line.
_ATX_RE = re.compile(r"#{1,6}(?:[ \t]|$)")
_FM_FENCE_RE = re.compile(r"---[ \t]*(?:\r\n|\r|\n)?$")
_FM_CLOSE_RE = re.compile(r"(?:---|\.\.\.)[ \t]*(?:\r\n|\r|\n)?$")
_FM_CLOSE_LINE_RE = re.compile(r"^(?:---|\.\.\.)[ \t]*(?:\n|\Z)", re.M)  # the closing line, in text without \r
# The CommonMark trim set (markdown-it-py's mdTrim), used for heading text.
_MD_TRIM = "\t\n\x0b\x0c\r \xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u202f\u205f\u3000"
# A heading title's "leading title": the part before a suffix such as " — note".
_SUFFIX_RE = re.compile(r"(?:\s+(?:—|–|-{1,2}|\()|\s*:)\s*.*$")  # `## Verdict: refuted (OOM)` too
_WS_RE = re.compile(r"\s+")


def split_lines(text: str) -> list[str]:
    """Split keeping line endings; only ``\\n``, ``\\r\\n`` and ``\\r`` end a line (as in CommonMark)."""
    if "\r" in text:
        return _LINE_RE.findall(text)
    # The common case, about 4x faster than the regex: only '\n' ends a line.
    lines = text.split("\n")
    last = lines.pop()
    out = [line + "\n" for line in lines]
    if last:
        out.append(last)
    return out


_INFO_FENCE_RE = re.compile(r"^(`{3,}|~{3,})[ \t]*(\w*)")


def fenced_block(text: str, languages: tuple[str, ...] = ("yaml", "yml")) -> tuple[str, int, bool] | None:
    """The first fenced code block of ``text`` whose info string is one of ``languages``
    (case-insensitive): its body, the 0-based index in ``text`` of the body's first line,
    and whether a closing fence ends it. None when ``text`` has no such block."""
    lines = split_lines(text)
    for index, line in enumerate(lines):
        match = _INFO_FENCE_RE.match(line)
        if match and match.group(2).lower() in languages:
            fence = match.group(1)
            for end in range(index + 1, len(lines)):
                closing = lines[end].strip()
                if closing.startswith(fence[0] * len(fence)) and not closing.strip(fence[0]):
                    return "".join(lines[index + 1 : end]), index + 1, True
            return "".join(lines[index + 1 :]), index + 1, False
    return None


@functools.lru_cache(maxsize=4096)  # pages repeat their section titles: 160,000 keys for 10,000 pages
def title_key(title: str) -> str:
    """How section titles are compared: trimmed, inner whitespace collapsed, case-folded."""
    return _WS_RE.sub(" ", title.strip()).casefold()


@functools.lru_cache(maxsize=4096)
def _leading_key(title: str) -> str:
    return title_key(leading_title(title))


def leading_title(title: str) -> str:
    """The title before a suffix: ``Results — marginal new frontier`` -> ``Results``."""
    return _SUFFIX_RE.sub("", title.strip()) or title.strip()


@dataclass
class Section:
    """One H2 section: its heading line(s) and the body up to the next H2, as source text."""

    title: str
    heading: str
    body: str
    line: int  # 1-based file line of the heading's first line
    end_line: int  # 1-based file line of the section's last line

    @functools.cached_property
    def key(self) -> str:
        return title_key(self.title)

    @functools.cached_property
    def leading_key(self) -> str:
        return _leading_key(self.title)

    @property
    def text(self) -> str:
        return self.heading + self.body

    @property
    def body_line(self) -> int:
        """The file line on which the body starts."""
        return self.line + len(split_lines(self.heading))

    def is_empty(self) -> bool:
        """True when the body holds nothing but whitespace and HTML comments."""
        return not _COMMENT_RE.sub("", self.body).strip()


_COMMENT_RE = re.compile(r"<!--.*?-->", re.S)


@dataclass
class Page:
    """A parsed markdown page. ``to_text()`` gives back the exact source.

    The body is split into its preamble and H2 sections on first use: most pages of a real
    wiki (generated codebase pages: 3,471 of the real shape's 4,633, 30 of its 34 MB) are
    checked by no rule that reads a section, and a cold lint spent about 0.2 s of CPU
    splitting them."""

    path: Path | None
    bom: str
    frontmatter_block: str  # the raw block, fences included; "" when the page has none
    frontmatter_text: str  # the YAML between the fences
    frontmatter: dict[str, Any]
    body: str  # everything after the frontmatter: the preamble and the sections' source
    body_line: int  # 1-based file line where the preamble starts
    has_frontmatter: bool = field(default=False)

    def to_text(self) -> str:
        return self.bom + self.frontmatter_block + self.body

    def to_bytes(self) -> bytes:
        return self.to_text().encode("utf-8")

    @functools.cached_property
    def _parts(self) -> tuple[str, list[Section]]:
        return _parts_from_lines(split_lines(self.body), self.body_line - 1)

    @property
    def preamble(self) -> str:
        """The body before the first H2 section."""
        return self._parts[0]

    @property
    def sections(self) -> list[Section]:
        """The H2 sections, in order."""
        return self._parts[1]

    def section(self, title: str) -> Section | None:
        """The first section whose title equals ``title`` (compared with :func:`title_key`)."""
        key = title_key(title)
        return next((s for s in self.sections if s.key == key), None)

    def sections_led_by(self, title: str) -> list[Section]:
        """Sections whose leading title (suffix dropped) equals ``title``."""
        key = title_key(title)
        return [s for s in self.sections if s.key == key or s.leading_key == key]

    @property
    def newline(self) -> str:
        """The page's line ending, taken from its first line (``\\n`` when it has none)."""
        first = _LINE_RE.search(self.to_text())
        if first and first.group(0).endswith("\r\n"):
            return "\r\n"
        if first and first.group(0).endswith("\r"):
            return "\r"
        return "\n"

    def with_frontmatter(self, updates: dict[str, Any]) -> Page:
        """A new page with top-level frontmatter keys set (``None`` removes a key).

        The edit goes through ruamel.yaml round-trip mode, so comments, key order and
        the other keys' formatting survive; the body is untouched.
        """
        from wikiengine.core.yamlio import roundtrip_update

        nl = self.newline
        yaml_text = roundtrip_update(self.frontmatter_text.replace(nl, "\n"), updates, self.path)
        if nl != "\n":
            yaml_text = yaml_text.replace("\n", nl)
        block = f"---{nl}{yaml_text}---{nl}"
        return parse_page(self.bom + block + self.body, self.path)

    def with_section_body(self, title: str, body: str) -> Page:
        """A new page whose section ``title`` has ``body`` (appended when missing)."""
        nl = self.newline
        sections = list(self.sections)
        for index, section in enumerate(sections):
            if section.key == title_key(title):
                sections[index] = replace(section, body=body)
                break
        else:
            prefix = self.body if self.body.endswith(("\n", "\r")) or not self.body else self.body + nl
            text = self.bom + self.frontmatter_block + prefix + f"## {title}{nl}" + body
            return parse_page(text, self.path)
        return parse_page(self.bom + self.frontmatter_block + self.preamble + "".join(s.text for s in sections), self.path)


# Time and memory go per line (a list of line strings, markdown-it's tokens when it decides):
# 16 MB of one-character lines took 41 s and 1.35 GiB; 200,000 lines take about 1.5 s at worst.
MAX_PAGE_LINES = 200_000


def read_text(path: str | Path, label=None, limit: int = MAX_PAGE_BYTES) -> str:
    """The UTF-8 text of the regular file at ``path`` (see :func:`~wikiengine.core.safe_read.read_regular`)."""
    label = path if label is None else label
    return decode(read_regular(path, label, limit)[0], label)


def load_page(path: str | Path, *, parse_yaml: bool = True) -> Page:
    """Read and parse the markdown file at ``path`` (a regular file, see :func:`read_regular`)."""
    path = Path(path)
    return parse_page(read_text(path), path, parse_yaml=parse_yaml)


def split_frontmatter(text: str, path=None) -> tuple[str, str]:
    """``(block, yaml)`` of a page's text (its BOM removed): the frontmatter block, fences
    included, and the YAML between the fences; ``("", "")`` when the page has none. Only
    the lines up to the closing fence are read. PageError when the fence opened on line 1
    is never closed."""
    if not text.startswith("---"):
        return "", ""
    if "\r" in text:  # lines may end in \r alone: read them one by one
        first = _LINE_RE.match(text)
        if not _FM_FENCE_RE.fullmatch(first.group(0)):
            return "", ""
        for line in _LINE_RE.finditer(text, first.end()):
            if _FM_CLOSE_RE.fullmatch(line.group(0)):
                return text[: line.end()], text[first.end() : line.start()]
    else:
        end = text.find("\n") + 1 or len(text)
        if not _FM_FENCE_RE.fullmatch(text, 0, end):
            return "", ""
        close = _FM_CLOSE_LINE_RE.search(text, end)
        if close is not None:
            return text[: close.end()], text[end : close.start()]
    raise PageError("unterminated frontmatter: no closing '---' for the fence opened on line 1", path, 1)


def load_frontmatter(yaml_text: str, path=None) -> dict[str, Any]:
    """The mapping the YAML between a page's fences holds ({} when empty); PageError naming
    the file and line when it is not valid YAML or not a mapping."""
    from wikiengine.core.yamlio import safe_load

    loaded = safe_load(yaml_text, path, first_line=2)
    if loaded is None:
        return {}
    if not isinstance(loaded, dict):
        raise PageError("frontmatter is not a mapping of keys to values", path, 2)
    return loaded


def read_frontmatter(text: str, path=None) -> dict[str, Any]:
    """The frontmatter of a page's text, read as :func:`parse_page` reads it but without
    splitting the body into sections; {} when the page has none, PageError when it cannot
    be read (unterminated, invalid YAML, not a mapping)."""
    block, yaml_text = split_frontmatter(text[1:] if text.startswith("\ufeff") else text, path)
    return load_frontmatter(yaml_text, path) if block else {}


def parse_page(text: str, path: str | Path | None = None, *, parse_yaml: bool = True) -> Page:
    """Parse markdown ``text`` into a :class:`Page`.

    With ``parse_yaml=False`` the frontmatter is split off but not loaded (for callers
    that only need sections, or that load it through their own cache).
    """
    path = path if path is None or isinstance(path, Path) else Path(path)  # a Path is kept (immutable)
    line_count = text.count("\n") + text.count("\r") - text.count("\r\n") if "\r" in text else text.count("\n")
    if line_count > MAX_PAGE_LINES:
        raise PageError(f"too many lines ({line_count}; the limit for a page is {MAX_PAGE_LINES})", path)
    bom = ""
    if text.startswith("\ufeff"):
        bom, text = "\ufeff", text[1:]
    fm_block, fm_text = split_frontmatter(text, path)
    has_fm = bool(fm_block)
    frontmatter: dict[str, Any] = load_frontmatter(fm_text, path) if has_fm and parse_yaml else {}
    return Page(
        path=path,
        bom=bom,
        frontmatter_block=fm_block,
        frontmatter_text=fm_text,
        frontmatter=frontmatter,
        body=text[len(fm_block) :] if has_fm else text,
        body_line=len(split_lines(fm_block)) + 1,
        has_frontmatter=has_fm,
    )


def _parts_from_lines(body_lines: list[str], body_start: int) -> tuple[str, list[Section]]:
    """``(preamble, sections)`` of a body split into lines (``body_start``: the file lines before it)."""
    headings = find_h2(body_lines)
    first = headings[0][0] if headings else len(body_lines)
    sections: list[Section] = []
    for number, (start, heading_len, title) in enumerate(headings):
        end = headings[number + 1][0] if number + 1 < len(headings) else len(body_lines)
        sections.append(
            Section(
                title=title,
                heading="".join(body_lines[start : start + heading_len]),
                body="".join(body_lines[start + heading_len : end]),
                line=body_start + start + 1,
                end_line=body_start + end,
            )
        )
    return "".join(body_lines[:first]), sections


# --- finding H2 headings -------------------------------------------------------------


def find_h2(lines: list[str]) -> list[tuple[int, int, str]]:
    """Top-level H2 headings as ``(first line index, number of lines, title)``.

    Uses the fast line scan when it is certain, else markdown-it-py's block parser.
    """
    found = _scan_h2(lines)
    if found is None:
        return markdown_it_h2(lines)
    return found


def _atx_h2_title(line: str) -> str | None:
    """The title of a column-0 ATX H2 line, or None when it is not one."""
    if not line.startswith("##") or line.startswith("###"):
        return None
    rest = line[2:].rstrip("\r\n")
    if rest and rest[0] not in " \t":
        return None
    end = len(rest)
    while end > 0 and rest[end - 1] in " \t":
        end -= 1
    hashes = end
    while hashes > 0 and rest[hashes - 1] == "#":
        hashes -= 1
    if hashes < end and (hashes == 0 or rest[hashes - 1] in " \t"):
        end = hashes
    return rest[:end].strip(_MD_TRIM).replace("\0", "\ufffd")


def _scan_h2(lines: list[str]) -> list[tuple[int, int, str]] | None:
    """Fence-aware line scan; None when the page holds a construct it cannot judge."""
    found: list[tuple[int, int, str]] = []
    fence_char = ""
    fence_len = 0
    in_comment = False  # inside an HTML comment block opened at column 0
    previous_blank = True
    for index, raw in enumerate(lines):
        first = raw[:1]
        if in_comment:
            # CommonMark HTML block type 2 ends on the line holding '-->', blank lines or not.
            if "-->" in raw:
                in_comment = False
                previous_blank = True  # no paragraph is open after an HTML block
            continue
        # Fast paths for the bulk of a page: lines that cannot open, close or be anything
        # the scan must judge (the full checks below give the same answer for them).
        if fence_char:
            if first != fence_char and first != " ":
                continue
        elif first not in _SCAN_SPECIAL_FIRST:
            if "```" in raw or "~~~" in raw:
                return None
            previous_blank = False
            continue
        line = raw.rstrip("\r\n")
        if fence_char:
            stripped = line.lstrip(" ")
            if len(line) - len(stripped) <= 3 and stripped.startswith(fence_char * fence_len):
                # A closer is the fence character only, then nothing but spaces or tabs.
                if not stripped.lstrip(fence_char).strip(" \t"):
                    fence_char = ""
            continue
        if not line.strip(" \t"):
            previous_blank = True
            continue
        first = line[0]
        if first in " \t":
            stripped = line.lstrip(" \t")
            if "\t" in line[: len(line) - len(stripped)]:
                return None
            indent = len(line) - len(stripped)
            if indent <= 3:
                lead = stripped[:1]
                if lead in ("#", "<") or "```" in stripped or "~~~" in stripped:
                    return None
                if lead in "-=" and not previous_blank and not stripped.strip(lead + " \t"):
                    return None
            previous_blank = False
            continue
        if first == "#" and _ATX_RE.match(line):
            title = _atx_h2_title(line)
            if title is not None:
                found.append((index, 1, title))
            previous_blank = True  # a heading is never continued by a setext underline
            continue
        if first in "`~":
            match = _FENCE_OPEN_RE.match(line)
            if match and not (first == "`" and "`" in match.group(2)):
                fence_char, fence_len = first, len(match.group(1))
                previous_blank = True
                continue
        if first == "<":
            if not line.startswith("<!--"):
                return None
            # An HTML comment block (lint suppressions, generated-file notes): it may
            # interrupt a paragraph and ends on the line that holds '-->' (this one included).
            in_comment = "-->" not in line
            previous_blank = True
            continue
        if first in "-=" and not previous_blank and not line.strip(first + " \t"):
            return None
        if "```" in line or "~~~" in line:
            return None
        previous_blank = False
    return found


_MD = None


def markdown_it_h2(lines: list[str]) -> list[tuple[int, int, str]]:
    """H2 headings at nesting level 0 according to markdown-it-py (CommonMark)."""
    global _MD
    if _MD is None:
        from markdown_it import MarkdownIt

        _MD = MarkdownIt("commonmark")
        _MD.disable(["inline", "text_join"])  # block structure is all sections need
    tokens = _MD.parse("".join(lines))
    found = []
    for index, token in enumerate(tokens):
        if token.type == "heading_open" and token.tag == "h2" and token.level == 0 and token.map:
            start, end = token.map
            found.append((start, end - start, tokens[index + 1].content))
    return found
