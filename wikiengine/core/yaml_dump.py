"""A writer's YAML block without importing PyYAML: what ``yaml.safe_dump(values,
sort_keys=False, allow_unicode=True, default_flow_style=False, width=1000)`` writes, made
here for the mappings writers build (a stub's frontmatter, a Setup's knobs).

Importing PyYAML (its loader, dumper, resolver and C binding) was 25 million instructions of
a 900 million ``wiki exp new`` on the real shape. The values a writer holds are simple: keys
that are words; strings, integers, booleans and ``None``; one level of lists and mappings of
those. For them PyYAML's choice between a plain, a single-quoted and a double-quoted scalar
is :func:`_scalar`'s, taken from its emitter (``analyze_scalar``, ``choose_scalar_style``)
and resolver (the implicit tags a plain scalar would read as); anything else (a float, a
tab or line break, a string long enough to fold, a deeper structure) is handed to PyYAML
itself. ``tests/test_yaml_dump.py`` holds the two writers to the same text.

What the block loads to is then known without parsing it: :func:`block` hands it to
:func:`wikiengine.core.yamlio.remember`, so that the writer's own lint of the page it wrote
reads its frontmatter without importing PyYAML either.
"""

from __future__ import annotations

import re

from wikiengine.core import yamlio

MAX_TEXT = 400  # characters: a longer string may be folded at the width; PyYAML writes it
_KEY_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,63}")
_SPACE = "\0 \t\r\n\x85\u2028\u2029"
_NOT_ONE_LINE = re.compile(f"[^{yamlio.ONE_LINE_CHARS}]")  # a tab, a line break, a control character...
# PyYAML's implicit resolvers (yaml/resolver.py): a plain scalar matching one reads as that tag
_IMPLICIT = [re.compile(pattern, re.X) for pattern in (
    r"""^(?:yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF)$""",
    r"""^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?
        |\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?
        |[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*
        |[-+]?\.(?:inf|Inf|INF)
        |\.(?:nan|NaN|NAN))$""",
    r"""^(?:[-+]?0b[0-1_]+
        |[-+]?0[0-7_]+
        |[-+]?(?:0|[1-9][0-9_]*)
        |[-+]?0x[0-9a-fA-F_]+
        |[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+)$""",
    r"^(?:<<)$",
    r"^(?:~|null|Null|NULL)$",
    r"""^(?:[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]
        |[0-9][0-9][0-9][0-9] -[0-9][0-9]? -[0-9][0-9]?
         (?:[Tt]|[ \t]+)[0-9][0-9]?
         :[0-9][0-9] :[0-9][0-9] (?:\.[0-9]*)?
         (?:[ \t]*(?:Z|[-+][0-9][0-9]?(?::[0-9][0-9])?))?)$""",
    r"^(?:=)$",
    r"^(?:!|&|\*)$",
)]


def block(values: dict) -> str:
    """``yaml.safe_dump(values, sort_keys=False, allow_unicode=True, default_flow_style=False,
    width=1000)``; when written here, what it loads to is remembered for the loader."""
    entries = [_entry(key, value) for key, value in values.items()]
    if None in entries:
        import yaml

        return yaml.safe_dump(values, sort_keys=False, allow_unicode=True, default_flow_style=False, width=1000)
    text = "".join(entries) or "{}\n"
    yamlio.remember(text, values)
    return text


def _entry(key, value) -> str | None:
    """One top-level ``key: value``: a scalar on its line, a list or mapping of scalars below it;
    None when a part of it is not written here."""
    name = _key(key)
    if name is None:
        return None
    if type(value) not in (dict, list):
        scalar = _scalar(value)
        return None if scalar is None else f"{name}: {scalar}\n"
    if not value:
        return f"{name}: {'{}' if type(value) is dict else '[]'}\n"
    if type(value) is dict:
        rows = [(f"  {_key(k)}: " if _key(k) is not None else None, _scalar(v)) for k, v in value.items()]
    else:
        rows = [("- ", _scalar(item)) for item in value]
    if any(lead is None or scalar is None for lead, scalar in rows):
        return None
    return f"{name}:\n" + "".join(f"{lead}{scalar}\n" for lead, scalar in rows)


def _key(key) -> str | None:
    """A key as PyYAML writes it, when it is a plain word (else None)."""
    return key if type(key) is str and _KEY_RE.fullmatch(key) and not _implicit(key) else None


def _scalar(value) -> str | None:
    """A scalar as PyYAML's block emitter writes it, or None (by the exact type, as PyYAML picks
    its representer: a subclass of ``str`` is not a string to it)."""
    if value is None:
        return "null"
    if type(value) is bool:
        return "true" if value else "false"
    if type(value) is int:
        return str(value)
    if type(value) is not str or len(value) > MAX_TEXT or _NOT_ONE_LINE.search(value):
        return None  # a float's spelling, a tab, a line break, a long line: PyYAML's own rules
    return value if _plain(value) else "'" + value.replace("'", "''") + "'"


def _plain(text: str) -> bool:
    """May PyYAML write ``text`` (one line of printable characters) as a plain block scalar?"""
    if not text or text[0] == " " or text[-1] == " " or text.startswith(("---", "...")) or _implicit(text):
        return False
    first = text[0]
    if first in "#,[]{}&*!|>'\"%@`" or (first in "?:-" and (len(text) == 1 or text[1] in _SPACE)):
        return False
    for index in range(1, len(text)):
        ch = text[index]
        if ch == ":" and (index + 1 == len(text) or text[index + 1] in _SPACE):
            return False
        if ch == "#" and text[index - 1] in _SPACE:
            return False
    return True


def _implicit(text: str) -> bool:
    """Would a plain ``text`` read as something other than a string (a bool, number, date, null)?"""
    return any(pattern.match(text) for pattern in _IMPLICIT)
