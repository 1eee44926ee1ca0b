"""Regular expressions that come from the user (``additive-marker``, ``id-pattern``,
``wiki resolve --additive-marker``), compiled by RE2.

A backtracking engine (Python's ``re``) takes exponential time on a pattern such as
``^(a+)+$`` against thirty ``a``s and a ``!``: one line of configuration could hang every
lint and resolve. RE2 matches in time linear in the text whatever the pattern, and refuses
what it cannot do in linear time (backreferences, lookaround) with a clear error instead.
"""

from __future__ import annotations

import functools

from wikiengine.errors import WikiError

MAX_PATTERN_LENGTH = 1000


def _options():
    import re2

    options = re2.Options()
    options.log_errors = False  # the error becomes our one line, not absl's stderr noise
    return options


@functools.lru_cache(maxsize=64)
def _compiled(pattern: str):
    import re2

    return re2.compile(pattern, options=_options())


def user_regex(pattern: str, what: str, path=None):
    """``pattern`` compiled for linear-time matching (``.search``, ``.fullmatch``...).

    Raises :class:`WikiError` (exit 2) naming ``what`` when it is not a string, is too
    long, or is not a regular expression RE2 accepts.
    """
    if not isinstance(pattern, str):
        raise WikiError(f"{what} must be a string (a regular expression), not {type(pattern).__name__}", path)
    if len(pattern) > MAX_PATTERN_LENGTH:
        raise WikiError(f"{what} is longer than {MAX_PATTERN_LENGTH} characters", path)
    if "\0" in pattern:
        raise WikiError(f"{what} contains a NUL character", path)
    import re2

    try:
        return _compiled(pattern)
    except re2.error as exc:
        detail = exc.args[0].decode("utf-8", "replace") if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        raise WikiError(
            f"{what} {pattern!r} is not a usable regular expression: {detail} "
            "(patterns are matched in linear time: no backreferences or lookaround)",
            path,
        ) from None
