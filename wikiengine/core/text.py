"""Small helpers for the words of human output."""

from __future__ import annotations


def counted(count: int, singular: str, plural: str | None = None) -> str:
    """``1 finding``, ``2 findings``, ``0 entries`` (``plural`` where adding ``s`` is wrong)."""
    return f"{count} {singular if count == 1 else (plural or singular + 's')}"


def folded(text: object) -> str:
    """``text`` case-folded with its white space collapsed: two wordings compare equal."""
    return " ".join(str(text).casefold().split())


def escape_cell(value: object) -> str:
    """A value as one markdown table cell: pipes escaped, line breaks flattened, None as empty."""
    if value is None:
        return ""
    text = str(value).replace("\\", "\\\\").replace("|", "\\|")
    return " ".join(text.split())
