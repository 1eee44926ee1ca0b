"""The links CommonMark sees in a markdown text: ``(line, col, destination)``, and the
file part of a relative one. A fast line scan where it is certain, else markdown-it-py."""

from __future__ import annotations

import functools
import posixpath
import re
from urllib.parse import unquote

from wikiengine.core.fences import fence_closed, fence_opened

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
# A code span (group 1: its opening backtick run), or what opens none: a backslash escape, or
# a backtick run with no closer. Taken left to right, they pair backticks as CommonMark does.
_CODE_SPAN_RE = re.compile(r"\\[!-/:-@\[-`{-~]|(`+)(?!`)(?:.+?)(?<!`)\1(?!`)|`+")
_SCHEME_RE = re.compile(r"[A-Za-z][A-Za-z0-9+.-]{1,31}:")
_ODD_SPACE_RE = re.compile(r"[^\S \t\n]")
_ESCAPE_RE = re.compile(r"\\([!-/:-@\[-`{-~])")


def link_destinations(text: str, first_line: int = 1) -> list[tuple[int, int, str]]:
    """``(line, col, destination)`` of every link and image that CommonMark sees in ``text``.

    A line scan where it is certain (inline ``[text](dest)`` on ordinary lines outside
    fences and code spans), else markdown-it-py's parser (about 2 ms a page), block by
    block (:func:`_blockwise_links`): reference links, HTML, escapes, entities, indented
    code or link text spread over lines send the block that holds them to markdown-it. A
    page with none of those constructs anywhere (most pages, and generated codebase pages)
    is scanned in one pass over the whole text instead of line by line, with the same
    answers. ``tests/test_rules_lnk.py`` checks the scans against each other and against
    markdown-it on the CommonMark spec examples, the example wiki, generated pages and
    generated texts. Columns are exact where a scan found the link, 1 where markdown-it did.
    """
    found = _scan_links(text, first_line)
    if found is None:
        return _blockwise_links(text, first_line)
    return found


def destinations(text: str) -> list[str]:
    """The destination of every link and image that :func:`link_destinations` finds in
    ``text``, in order, without where each stands: the one-pass scan then counts no lines
    (a fifth of its time on the real shape's pages)."""
    if "](" not in text and not _REFERENCE_RE.search(text):
        return []
    if _plain(text):
        found = _plain_destinations(text)
        if found is not None:
            return found
    return [dest for _line, _col, dest in link_destinations(text)]


def _scan_links(text: str, first_line: int) -> list[tuple[int, int, str]] | None:
    if "](" not in text and not _REFERENCE_RE.search(text):
        return []  # no inline link, reference link or definition can exist
    if _plain(text):
        return _scan_plain(text, first_line)
    return _scan_careful(text, first_line)


def _scan_careful(text: str, first_line: int) -> list[tuple[int, int, str]] | None:
    """The line-by-line scan, for texts with constructs it must look at twice.

    Fences are followed only where they open at column 0 (always top-level blocks): a
    fence, an HTML block or indented code inside a list item or a block quote is one the
    scan cannot place, so the text is not certain."""
    found = []
    fence = ""
    for number, line in enumerate(text.splitlines(), start=first_line):
        if fence:
            if fence[0] in line and fence_closed(line, fence):
                fence = ""
            continue
        lead = _LEAD_RE.match(line).end()  # container markers and indentation
        content = line[lead:] if lead else line
        opened = fence_opened(content) if content[:3] in ("```", "~~~") else ""
        if opened:
            if lead:
                return None  # a fence indented or inside a container
            fence = opened
            continue
        masked = line  # the line with its code spans blanked, once
        if "`" in line:
            masked = None if "\\`" in line else _masked_code_spans(line)
            if masked is None:
                return None  # a backtick string left open (or escaped): a code span may run on over the next lines
        brackets = "[" in line or "]" in line
        if not brackets and "<" not in line and "\t" not in line:
            continue
        if content.startswith("<!--") and "-->" in content[4:] and "    " not in line[:lead]:
            continue  # a one-line HTML comment block: no links in it
        if not brackets:
            if content.startswith("<") or "\t" in line or _html_runs_on(masked):
                return None  # an HTML block, inline HTML that may go on over the next line, a tab
            continue
        if "    " in line[:lead] or "\t" in line or content.startswith("<"):
            return None  # indented code, a tab, an HTML block: perhaps inside a container
        if "`" in masked or "\\" in masked or "&" in masked or "<" in masked or "]:" in masked or "][" in masked:
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


_HTML_OPENER_RE = re.compile(r"<[A-Za-z/!?]")


def _html_runs_on(line: str) -> bool:
    """Might inline HTML that opens on ``line`` (a tag, a comment, a declaration, a
    processing instruction) go on over the next line and hide the links there? Too careful
    where unsure: a quote in a tag (a quoted attribute value may hold ">" and a newline)."""
    position = 0
    while (opener := _HTML_OPENER_RE.search(line, position)) is not None:
        start = opener.start()
        closer = "-->" if line.startswith("<!--", start) else "?>" if line.startswith("<?", start) else ">"
        end = line.find(closer, start + 2)
        if end < 0 or (closer == ">" and ('"' in line[start:end] or "'" in line[start:end])):
            return True
        position = end + len(closer)
    return False


# What may stand before a line's content: indentation, block quote and list markers (and
# whatever looks like them: a line that only seems to open a container is judged as if it did).
_LEAD_RE = re.compile(r"[ >*+\-0-9.)]*")


# What makes the careful scan look twice at a line: fences, HTML, tabs, escapes, entities,
# reference links, indented code (in a container too: four spaces in a line's lead); and
# ASCII spaces other than ' ' and newline (they would also make str.split("\n") differ
# from str.splitlines()). Non-ASCII text is always careful. The one-pass scan is handed
# texts without reference markers or indented code (_plain), and finds the rest among
# the characters it copies out of the text (_MARKS_KEPT) or by the "``" of a fence.
# The whole-text searches are regexes that start with one literal character, which sre
# finds about twice as fast as `in` finds two or four characters (34 MB: 15 ms against 30).
_DEEP_LEAD = r"[ >*+\-0-9.)]*?    "
_DEEP_FIRST_RE = re.compile(_DEEP_LEAD)  # indented code on the first line (match)
_DEEP_LEAD_RE = re.compile("\n" + _DEEP_LEAD)  # or on any other
_REFERENCE_RE = re.compile(r"\][:\[]")  # "]:" or "][": a reference link or definition may be there
_TICK_RUN_RE = re.compile("``")
_ODD_MARKS_RE = re.compile(rb"[<\t\\&\r\x0b\x0c\x1c-\x1f]|~~~")


def _plain(text: str) -> bool:
    """Can the one-pass scan (:func:`_scan_plain`) take ``text``? ASCII, no reference
    link or definition, no indented code."""
    return (text.isascii() and not _REFERENCE_RE.search(text)
            and not (_DEEP_FIRST_RE.match(text) or _DEEP_LEAD_RE.search(text)))


_CHUNK = 1 << 20
# What the one-pass scan copies out of the text: what decides whether every line is
# certain (brackets, backticks, newlines), and the characters that need the careful scan.
_MARKS_KEPT = b"[]`\n~<\t\\&\r\x0b\x0c\x1c\x1d\x1e\x1f"
_DROP = bytes(sorted(set(range(128)) - set(_MARKS_KEPT)))
_SPAN_RE = re.compile(r"`[^`\n]*`")  # a code span of a line whose backticks pair left to right
_SPAN_BYTES_RE = re.compile(_SPAN_RE.pattern.encode())
# What the line scan finds in a plain text: an inline link that holds no newline, no second
# "](" and no backtick outside its text (anything else is left to the careful scan by the "](" it
# leaves behind). It starts with a literal "[", which sre finds by a fast search: the regex
# that also took code spans (it must stop at every backtick and bracket) took 2.6x as long.
_LINK_RE = re.compile(
    r"\[(?:[^\[\]\n]++|\[[^\[\]\n]*+\](?!\())*+\]"
    r"\( *+((?:[^ ()`\n\]]++|\([^ ()`\n\]]*+\))*+)(?: ++(?:\"[^\"`\n\]]*\"|'[^'`\n\]]*'|\([^()`\n\]]*\)))? *\)"
)
# The same with code spans, taken whole, left to right: which "](" lie in code spans.
_SPAN_OR_LINK_RE = re.compile(_SPAN_RE.pattern + "|" + _LINK_RE.pattern)


def _plain_destinations(text: str) -> list[str] | None:
    """The destinations :func:`_scan_plain` finds in a :func:`_plain` text, by one ``findall``;
    None where it would hand the text to the careful scan. Every line pairs its backticks
    left to right (:func:`_lines_balanced`), and each code span is collapsed to one backtick
    first: link text may hold one and no destination can, so a link a span's edge crosses is
    none (CommonMark's spans bind first), a span in link text keeps the link, and a "](" in
    a span is gone. A "](" left that no link took leaves the text to the careful scan.
    Without the per-link loop, a third of the time on the real shape's generated pages."""
    if not _one_pass_certain(text):
        return None
    if "`" in text:
        text = _SPAN_RE.sub("`", text)
    found = _LINK_RE.findall(text)
    if len(found) != text.count("]("):
        return None
    return [unquote(dest) if "%" in dest else dest for dest in found] if "%" in text else found


def _one_pass_certain(text: str) -> bool:
    """May the one-pass scans judge the :func:`_plain` ``text``: no run of backticks, and
    every line certain (:func:`_lines_balanced`)?"""
    return not ("`" in text and _TICK_RUN_RE.search(text)) and _lines_balanced(text)


def _scan_plain(text: str, first_line: int) -> list[tuple[int, int, str]] | None:
    """:func:`_scan_links` for a :func:`_plain` text (most pages, generated ones included),
    in one pass over the whole text instead of line by line, with the same answers: the
    lines are judged from the text's brackets and backticks alone (:func:`_lines_balanced`),
    then one regex finds the links. Every line pairs its backticks, one by one (no run of
    two), so a link that starts after an odd number of them on its line starts in a code
    span and is none; one whose own backticks are odd crosses a span's edge and sends the
    text to the careful scan. Each link the regex takes holds exactly one "](" (its text and
    destination hold no "]"), so there is none outside links and code spans when the text
    counts as many as the links and the code spans hold; otherwise the careful scan decides."""
    if not _one_pass_certain(text):
        return _scan_careful(text, first_line)  # a run of backticks, or a construct the careful scan must judge
    ticks = "`" in text
    found = []
    counted = 0
    line = first_line
    rfind, count = text.rfind, text.count
    for match in _LINK_RE.finditer(text):
        start = match.start()
        line_start = rfind("\n", 0, start)
        if ticks:
            if count("`", line_start + 1, start) % 2:
                continue  # in a code span
            if count("`", start, match.end()) % 2:  # a code span that the link's brackets cross
                return _scan_careful(text, first_line)
        dest = match.group(1)
        if "%" in dest:
            dest = unquote(dest)
        if text[start - 1] == "!" and start:
            start -= 1  # an image
        line += count("\n", counted, start)
        counted = start
        found.append((line, start - line_start, dest))
    arrows = count("](") - len(found)
    if arrows:  # in code spans (rare: looked for only now), or something link-like the regex did not take
        arrows -= sum(count("](", *match.span()) for match in _SPAN_OR_LINK_RE.finditer(text) if match.lastindex is None)
    if arrows:
        return _scan_careful(text, first_line)
    return found


def _lines_balanced(text: str) -> bool:
    """Does every line of the ASCII ``text`` pair its backticks, and hold as many ``[`` as
    ``]`` outside its code spans, with nothing that needs the careful scan (a fence, HTML,
    an escape, an entity, a tab)? Decided on a small copy
    of the characters that tell (:data:`_MARKS_KEPT`, made a chunk at a time: a 16 MB page
    is never copied whole), and on each distinct line of that copy once."""
    marks = b"".join(text[i : i + _CHUNK].encode("ascii").translate(None, _DROP) for i in range(0, len(text), _CHUNK))
    if _ODD_MARKS_RE.search(marks):
        return False  # (the copy can put "~~~" together from tildes apart: only ever too careful)
    if b"`" in marks:
        marks = _SPAN_BYTES_RE.sub(b"", marks)
        if b"`" in marks:
            return False  # a line with an odd number of backticks
    return all(shape.count(b"[") == shape.count(b"]") for shape in set(marks.split(b"\n")))


def blank_code_spans(line: str) -> str:
    """``line`` with its code spans blanked out (same length); a backtick run that opens none
    stays, and so does a backtick escaped by a backslash."""
    return _CODE_SPAN_RE.sub(_blanked, line) if "`" in line else line


def _blanked(match: re.Match) -> str:
    return " " * len(match.group(0)) if match.group(1) else match.group(0)


def _masked_code_spans(line: str) -> str | None:
    """``line`` with its code spans blanked out (same length), or None when a backtick is
    left unpaired. Single-backtick spans are paired by splitting (generated pages have
    one on every table row); longer backtick strings go through the regex."""
    if "``" in line:
        masked = blank_code_spans(line)
        return None if "`" in masked else masked
    parts = line.split("`")
    if len(parts) % 2 == 0:
        return None  # an odd number of backticks
    out = [parts[0]]
    for index in range(1, len(parts), 2):
        out.append(" " * (len(parts[index]) + 2))
        out.append(parts[index + 1])
    return "".join(out)


# The top-level blocks whose text can hold links (fences, code, HTML blocks and rules cannot).
_LINK_BLOCKS = frozenset({"paragraph_open", "heading_open", "bullet_list_open", "ordered_list_open", "blockquote_open"})
# Characters str.splitlines() ends a line on besides "\n", which the careful scan would count.
_OTHER_BREAKS_RE = re.compile("[\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029]")


def _blockwise_links(text: str, first_line: int) -> list[tuple[int, int, str]]:
    """The links of a text the line scan is not certain of, markdown-it's top-level block at a time.

    markdown-it-py's block parser (about 40% of a full parse) cuts the text where CommonMark
    does; each paragraph, heading, list or block quote is then a document of its own with
    the links it has in the page (every container is closed where the next top-level block
    starts), so the careful scan decides it where certain and markdown-it parses only the
    blocks it is not. Reference definitions reach across blocks: a text with one, or with
    ``\r`` or NUL (which markdown-it rewrites before it counts lines), is parsed whole.
    """
    if "\r" in text or "\0" in text:
        return markdown_it_links(text, first_line)
    env: dict = {}
    tokens = _parser("blocks").parse(text, env)
    if env.get("references"):
        return markdown_it_links(text, first_line)
    lines = text.split("\n")
    found = []
    for token in tokens:
        if token.level or token.type not in _LINK_BLOCKS or not token.map:
            continue
        start, end = token.map
        block = "\n".join(lines[start:end]) + "\n"
        scanned = None if _OTHER_BREAKS_RE.search(block) else _scan_links(block, first_line + start)
        found.extend(markdown_it_links(block, first_line + start) if scanned is None else scanned)
    return found


_PARSERS: dict = {}


def _parser(kind: str):
    """markdown-it-py's CommonMark parser, made once: ``"full"``, or ``"blocks"`` (no inline pass)."""
    if kind not in _PARSERS:
        from markdown_it import MarkdownIt

        md = MarkdownIt("commonmark")
        if kind == "blocks":
            md.disable(["inline", "text_join"])
        _PARSERS[kind] = md
    return _PARSERS[kind]


def markdown_it_links(text: str, first_line: int = 1) -> list[tuple[int, int, str]]:
    """Links and images according to markdown-it-py (CommonMark), with their lines."""
    found = []
    for token in _parser("full").parse(text):
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


def joined(directory: str, file_part: str) -> str:
    """``posixpath.normpath(posixpath.join(directory, file_part))`` for a link's file part in a
    page's folder, with the plain case (no empty, ``.`` or ``..`` segment, no leading or
    trailing slash, in either: most links) joined as it stands, which normpath would leave."""
    if (file_part and file_part[0] != "/" and file_part[-1] != "/" and "//" not in file_part
            and "/." not in "/" + file_part and (not directory or _plain_folder(directory))):
        return f"{directory}/{file_part}" if directory else file_part
    return posixpath.normpath(posixpath.join(directory, file_part))


@functools.lru_cache(maxsize=1024)
def _plain_folder(directory: str) -> bool:
    return directory[0] != "/" and directory[-1] != "/" and "//" not in directory and "/." not in "/" + directory


def relative_target(dest: str) -> str | None:
    """The file part of a relative link (no scheme, no bare ``#anchor``), else None."""
    if not dest or dest[0] in "#/?" or (":" in dest and _SCHEME_RE.match(dest)):
        return None
    if "#" in dest:
        dest = dest.partition("#")[0]
    if "?" in dest:
        dest = dest.partition("?")[0]
    return dest or None
