"""Time: the one clock acts read, and the timestamp forms memory, pages and executors carry.

Acts take the time from a :data:`Clock` (a callable returning an aware UTC datetime) that
the wake passes down, so that a test can inject one and the journal, STATE.md and the
pages agree on the same moment. :func:`utcnow` is the real one; a writer that takes an
optional ``clock=`` falls back to it. A compute backend keeps its own clock (the platform's
time, which may disagree with the agent's on purpose) and a separate process (a runner, a
supervisor) reads :func:`utcnow`.

Stdlib only: the trainer imports this on remote machines.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable

Clock = Callable[[], dt.datetime]

ISO_RE = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$")


def utcnow() -> dt.datetime:
    """The wall clock, as an aware UTC datetime."""
    return dt.datetime.now(dt.UTC)


def utc_iso(moment: dt.datetime, timespec: str = "seconds") -> str:
    """``2026-09-21T03:14:00Z``: the form every recorded timestamp takes (UTC, ``Z``).

    ``timespec`` as :meth:`datetime.isoformat`: ``"seconds"`` for memory and pages (the
    schemas require it), ``"milliseconds"`` or ``"auto"`` for an executor's own files,
    where two records of one second must differ. A naive datetime is refused: it would
    silently be read as local time.
    """
    if moment.tzinfo is None:
        raise ValueError("a recorded timestamp must be timezone-aware")
    return moment.astimezone(dt.UTC).isoformat(timespec=timespec).replace("+00:00", "Z")


def now_iso(clock: Clock = utcnow, timespec: str = "seconds") -> str:
    """:func:`utc_iso` of the clock's time."""
    return utc_iso(clock(), timespec)


def utc_date(moment: dt.datetime) -> str:
    """The UTC date of ``moment``, ``2026-09-21``: a page's, a log entry's, an ERRORS.md entry's date."""
    if moment.tzinfo is None:
        raise ValueError("a recorded date must come from a timezone-aware time")
    return moment.astimezone(dt.UTC).date().isoformat()


def today(clock: Clock = utcnow) -> str:
    """The UTC date of the clock's time (never the local date)."""
    return utc_date(clock())


def from_epoch(seconds: float) -> dt.datetime:
    """Seconds since the epoch (a file's mtime, a commit time) as an aware UTC datetime."""
    return dt.datetime.fromtimestamp(seconds, dt.UTC)


def parse_iso(text: object) -> dt.datetime | None:
    """An ISO-8601 timestamp with a zone (``Z`` or an offset), in UTC; None for anything else.

    The strict reading, for memory files a person may edit: a zone-less time is refused."""
    if not isinstance(text, str) or not ISO_RE.match(text.strip()):
        return None
    return dt.datetime.fromisoformat(text.strip().replace("Z", "+00:00")).astimezone(dt.UTC)


def parse_utc(text: object) -> dt.datetime | None:
    """Any ISO-8601 timestamp (a zone-less one is UTC) as an aware UTC datetime; None when
    absent or unreadable. The lenient reading, for executors' files and API answers."""
    if not text:
        return None
    try:
        moment = dt.datetime.fromisoformat(str(text).strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    return (moment if moment.tzinfo else moment.replace(tzinfo=dt.UTC)).astimezone(dt.UTC)


def timestamp(text: object) -> float | None:
    """Seconds since the epoch of :func:`parse_utc`; None if unreadable."""
    moment = parse_utc(text)
    return moment.timestamp() if moment is not None else None
