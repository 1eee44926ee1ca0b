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


class _Unsupported(Exception):
    """A value this module does not write the way PyYAML would: PyYAML writes the block."""


def block(values: dict) -> str:
    """``yaml.safe_dump(values, sort_keys=False, allow_unicode=True, default_flow_style=False,
    width=1000)``; when written here, what it loads to is remembered for the loader."""
    try:
        text = "".join(_entry(key, value) for key, value in values.items()) if values else "{}\n"
    except _Unsupported:
        import yaml

        return yaml.safe_dump(values, sort_keys=False, allow_unicode=True, default_flow_style=False, width=1000)
    yamlio.remember(text, values)
    return text


def _entry(key, value) -> str:
    """One top-level ``key: value``: a scalar on its line, a list or mapping of scalars below it."""
    name = _key(key)
    if type(value) is dict:
        return f"{name}: {{}}\n" if not value else f"{name}:\n" + "".join(f"  {_key(k)}: {_scalar(v)}\n" for k, v in value.items())
    if type(value) is list:
        return f"{name}: []\n" if not value else f"{name}:\n" + "".join(f"- {_scalar(item)}\n" for item in value)
    return f"{name}: {_scalar(value)}\n"


def _key(key) -> str:
    if type(key) is not str or not _KEY_RE.fullmatch(key) or _implicit(key):
        raise _Unsupported
    return key


def _scalar(value) -> str:
    """A scalar as PyYAML's block emitter writes it, or :class:`_Unsupported` (by the exact
    type, as PyYAML picks its representer: a subclass of ``str`` is not a string to it)."""
    if value is None:
        return "null"
    if type(value) is bool:
        return "true" if value else "false"
    if type(value) is int:
        return str(value)
    if type(value) is not str or len(value) > MAX_TEXT or not all(map(_printable, value)):
        raise _Unsupported  # a float's spelling, a tab, a line break, a long line: PyYAML's own rules
    return value if _plain(value) else "'" + value.replace("'", "''") + "'"


def _printable(ch: str) -> bool:
    """Written as itself in a plain or single-quoted scalar (PyYAML with ``allow_unicode``): no
    line break, tab or control character, no byte-order mark."""
    return (" " <= ch <= "~" or "\xa0" <= ch <= "\ud7ff" or ("\ue000" <= ch <= "\ufffd" and ch != "\ufeff")
            or "\U00010000" <= ch < "\U0010ffff")


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
