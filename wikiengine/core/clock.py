"""Time: the one clock acts read, and the one timestamp form memory and pages carry.

Acts take the time from a :data:`Clock` (a callable returning an aware UTC datetime) that
the wake passes down, so that a test can inject one and the journal, STATE.md and the
pages agree on the same moment. :func:`utcnow` is the real one.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Callable

Clock = Callable[[], dt.datetime]

ISO_RE = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$")


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


def utc_iso(moment: dt.datetime) -> str:
    """``2026-09-21T03:14:00Z``: the form every recorded timestamp takes (seconds, UTC)."""
    if moment.tzinfo is None:
        raise ValueError("a recorded timestamp must be timezone-aware")
    return moment.astimezone(dt.timezone.utc).replace(microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ")


def now_iso(clock: Clock = utcnow) -> str:
    return utc_iso(clock())


def today(clock: Clock = utcnow) -> str:
    """The UTC date, ``2026-09-21``: a page's and a log entry's date."""
    return clock().date().isoformat()


def parse_iso(text: object) -> dt.datetime | None:
    """An ISO-8601 timestamp with a zone (``Z`` or an offset), in UTC; None for anything else."""
    if not isinstance(text, str) or not ISO_RE.match(text.strip()):
        return None
    return dt.datetime.fromisoformat(text.strip().replace("Z", "+00:00")).astimezone(dt.timezone.utc)


def timestamp(text: object) -> float | None:
    """Seconds since the epoch of an ISO-8601 timestamp (a zone-less one is UTC); None if unreadable."""
    if not text:
        return None
    try:
        moment = dt.datetime.fromisoformat(str(text).strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    return (moment if moment.tzinfo else moment.replace(tzinfo=dt.timezone.utc)).timestamp()
