"""Regular expressions that come from the user (``additive-marker``, ``id-pattern``,
``wiki resolve --additive-marker``), compiled by RE2.

A backtracking engine (Python's ``re``) takes exponential time on a pattern such as
``^(a+)+$`` against thirty ``a``s and a ``!``: one line of configuration could hang every
lint and resolve. RE2 matches in time linear in the text whatever the pattern, and refuses
what it cannot do in linear time (backreferences, lookaround) with a clear error instead.

A pattern that must still be spliced into a Python ``re`` (the experiment rules wrap
``id-pattern`` in lookarounds, which RE2 lacks) is also held to :func:`check_backtracking`:
no repetition inside a repetition, no repeated alternation, at most two unbounded
repeats; those are the shapes that make a backtracking engine blow up.
"""

from __future__ import annotations

import functools

from wikiengine.core.errors import WikiError

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


MAX_UNBOUNDED = 2  # `\w*\w*x` searches a line in cubic time already


def check_backtracking(pattern: str, what: str, path=None) -> None:
    """WikiError when ``pattern`` could take exponential (or high-polynomial) time in Python's ``re``."""
    import re
    from re import _constants as c
    from re import _parser

    try:
        tree = _parser.parse(pattern)
    except (re.error, RecursionError, OverflowError) as exc:
        raise WikiError(f"{what} {pattern!r} is not a regular expression: {exc}", path) from None
    repeats = (c.MAX_REPEAT, c.MIN_REPEAT, getattr(c, "POSSESSIVE_REPEAT", c.MAX_REPEAT))
    unbounded = 0

    def walk(items) -> bool:
        """Visit ``items``; True when they hold a repetition or an alternation."""
        nonlocal unbounded
        risky = False
        for op, av in items:
            if op in repeats:
                _low, high, sub = av
                unbounded += high == c.MAXREPEAT
                if walk(sub) and high > 1:
                    raise WikiError(f"{what} {pattern!r} repeats a repetition or an alternation, which can take "
                                    "exponential time: simplify it", path)
                risky = True
            elif op is c.SUBPATTERN:
                risky |= walk(av[-1])
            elif op is c.BRANCH:
                risky = True
                for branch in av[1]:
                    walk(branch)
            elif op in (c.ASSERT, c.ASSERT_NOT):
                risky |= walk(av[1])
        return risky

    walk(tree)
    if unbounded > MAX_UNBOUNDED:
        raise WikiError(f"{what} {pattern!r} has more than {MAX_UNBOUNDED} unbounded repeats: simplify it", path)
