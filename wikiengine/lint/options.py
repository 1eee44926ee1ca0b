"""Typed configuration values: what a key of ``[tool.wiki]`` or a per-rule option may hold.

Each key is declared once with its kind (and range): the top-level keys in
:data:`wikiengine.lint.config.KEYS`, a rule's options in its ``options`` class attribute
(every rule also takes ``since``). :func:`check` turns a value read from TOML into the
value the engine uses, or raises :class:`ValueError` with the one line a user reads; an
unknown name gets a "did you mean" from the declared ones (:func:`unknown_name`).
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

TYPE_CHECKING = False  # typing's constant, without importing typing
if TYPE_CHECKING:
    from typing import Any

# A rule code or a prefix of one: letters, then digits (EXP, EXP0, EXP004).
_SELECTOR_RE = re.compile(r"[A-Z]+[0-9]*")
MAX_LIST = 10_000  # more entries than any real configuration holds


@dataclass(frozen=True)
class Option:
    """One configurable value: ``kind`` is int, bool, str, regex, str-list, codes or date."""

    kind: str
    minimum: int | None = None
    maximum: int | None = None
    python_re: bool = False  # a regex also compiled by Python's backtracking re (see wikiengine.core.patterns)

    def describe(self) -> str:
        if self.kind == "int" and self.minimum is not None and self.maximum is not None:
            return f"an integer from {self.minimum} to {self.maximum}"
        return _KIND_TEXT[self.kind]


_KIND_TEXT = {
    "int": "an integer",
    "bool": "true or false",
    "str": "a non-empty string",
    "regex": "a regular expression (a string)",
    "str-list": "a list of non-empty strings",
    "codes": "a list of rule codes or prefixes (such as EXP or LNK001)",
    "date": "a date (YYYY-MM-DD)",
}


def check(option: Option, value: Any, name: str) -> Any:
    """``value`` as the engine uses it; ValueError ``"<name> must be ..."`` when it does not fit."""
    wrong = ValueError(f"{name} must be {option.describe()}, not {_shown(value)}")
    kind = option.kind
    if kind == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            raise wrong
        if (option.minimum is not None and value < option.minimum) or (
            option.maximum is not None and value > option.maximum
        ):
            raise wrong
        return value
    if kind == "bool":
        if not isinstance(value, bool):
            raise wrong
        return value
    if kind in ("str", "regex"):
        if not isinstance(value, str) or not value.strip():
            raise wrong
        if kind == "regex":
            from wikiengine.core.errors import WikiError
            from wikiengine.core.patterns import check_backtracking, user_regex

            try:
                user_regex(value, name)
                if option.python_re:
                    check_backtracking(value, name)
            except WikiError as err:
                raise ValueError(err.message) from None
        return value
    if kind in ("str-list", "codes"):
        if not isinstance(value, list) or len(value) > MAX_LIST:
            raise wrong
        if not all(isinstance(item, str) and item.strip() for item in value):
            raise wrong
        if kind == "codes":
            return [selector(item, name) for item in value]
        return list(value)
    if kind == "date":
        if isinstance(value, dt.datetime):
            raise wrong
        if isinstance(value, dt.date):
            return value.isoformat()
        if not isinstance(value, str):
            raise wrong
        try:
            return dt.date.fromisoformat(value.strip()).isoformat()
        except ValueError:
            raise wrong from None
    raise AssertionError(f"unknown option kind {kind!r}")


def selector(text: str, what: str) -> str:
    """A rule code or prefix, upper-cased (codes are; ``exp004`` means ``EXP004``)."""
    code = text.strip().upper()
    if not _SELECTOR_RE.fullmatch(code):
        raise ValueError(f"{what}: {text!r} is not a rule code or prefix (such as EXP or LNK001)")
    return code


def unknown_name(name: str, known, what: str) -> str:
    """The message for an unknown key or option, with the closest known name if any."""
    import difflib  # only a misspelt configuration pays for it

    close = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.6)
    hint = f" (did you mean {close[0]!r}?)" if close else f" (known: {', '.join(sorted(known)) or 'none'})"
    return f"unknown {what} {name!r}{hint}"


def _shown(value: Any) -> str:
    text = repr(value)
    return f"{type(value).__name__} {text if len(text) <= 40 else text[:37] + '...'}"
