"""The one place where executors make remote calls safe: deadlines, backoff, redaction.

Every remote call an executor makes goes through :func:`call_with_retries`: it retries
only what the caller classifies as transient (408, 429, 5xx, a dropped connection),
sleeps with doubling backoff or for the server's ``Retry-After``, and never runs past
the policy's deadline. When the deadline would be crossed the call ends with
:class:`DeadlineExceeded`: the answer is *unknown*, which callers must never read as
"gone" or "done".

Error messages leave through :func:`safe_message`, which names the request and strips
every secret this process can see (tokens from the environment and token files,
``Authorization`` values, credentials inside URLs).
"""

from __future__ import annotations

import contextvars
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TypeVar

from wikiengine.core.errors import BackendUnavailable
from wikiengine.core.secrets import safe_message

T = TypeVar("T")

RETRY_STATUSES = frozenset({408, 429, 500, 502, 503, 504})

@dataclass(frozen=True)
class RetryPolicy:
    """How long one logical call may take and how it backs off.

    ``deadline_s`` bounds the whole call including every retry and sleep;
    ``request_timeout_s`` bounds one HTTP exchange (connect, each read, write).
    """

    deadline_s: float = 120.0
    request_timeout_s: float = 30.0
    max_attempts: int = 5
    base_wait_s: float = 1.0
    max_wait_s: float = 30.0
    sleep: Callable[[float], None] = field(default=time.sleep, compare=False, repr=False)


class DeadlineExceeded(BackendUnavailable):
    """The call could not finish before its deadline: its outcome is unknown."""


class RetriesExhausted(BackendUnavailable):
    """Every attempt failed with a transient error: the outcome is unknown."""


@dataclass(frozen=True)
class Transient:
    """A classifier's verdict: retry this failure, after ``retry_after_s`` if the server said so."""

    retry_after_s: float | None = None


# The absolute (monotonic) deadline of the call in progress, read by transport hooks so
# that retries a client library makes on its own also stop at our deadline.
_current_deadline: contextvars.ContextVar[float | None] = contextvars.ContextVar("executor_deadline", default=None)


def current_deadline() -> float | None:
    """The monotonic deadline of the enclosing :func:`call_with_retries`, if any."""
    return _current_deadline.get()


def remaining_time(default: float) -> float:
    """Seconds left before the enclosing deadline (``default`` outside any call); raises when none is left."""
    deadline = _current_deadline.get()
    if deadline is None:
        return default
    left = deadline - time.monotonic()
    if left <= 0:
        raise DeadlineExceeded("deadline reached")
    return min(default, left)


def call_with_retries(
    fn: Callable[[], T],
    *,
    what: str,
    policy: RetryPolicy,
    classify: Callable[[BaseException], Transient | None],
) -> T:
    """Run ``fn`` until it succeeds, a non-transient error is raised, or the policy runs out.

    ``classify`` returns :class:`Transient` for failures worth retrying and None for the
    others (which propagate unchanged). Raises :class:`DeadlineExceeded` when the next
    wait would cross the deadline and :class:`RetriesExhausted` after ``max_attempts``;
    both messages name ``what`` and are free of secrets.
    """
    deadline = time.monotonic() + policy.deadline_s
    outer = _current_deadline.get()
    if outer is not None:
        deadline = min(deadline, outer)
    token = _current_deadline.set(deadline)
    try:
        wait = policy.base_wait_s
        last = "no attempt"
        for attempt in range(1, policy.max_attempts + 1):
            try:
                return fn()
            except DeadlineExceeded:
                raise DeadlineExceeded(f"{what}: no answer within the {policy.deadline_s:g} s deadline") from None
            except Exception as exc:  # noqa: BLE001 - classified below, re-raised if not transient
                verdict = classify(exc)
                if verdict is None:
                    raise
                last = safe_message(exc)
            if attempt == policy.max_attempts:
                break
            # the server's Retry-After is honoured as asked, bounded only by the deadline
            pause = wait if verdict.retry_after_s is None else max(verdict.retry_after_s, 0.0)
            if time.monotonic() + pause >= deadline:
                raise DeadlineExceeded(
                    f"{what}: no answer within the {policy.deadline_s:g} s deadline (last error: {last})"
                ) from None
            policy.sleep(pause)
            wait = min(wait * 2, policy.max_wait_s)
        raise RetriesExhausted(f"{what}: failed {policy.max_attempts} times (last error: {last})") from None
    finally:
        _current_deadline.reset(token)


def retry_after_seconds(headers: Mapping[str, str]) -> float | None:
    """The ``Retry-After`` header as seconds (delay-seconds or an HTTP date), else None."""
    value = None
    for key in headers:
        if key.lower() == "retry-after":
            value = str(headers[key]).strip()
            break
    if not value:
        return None
    if value.isdigit():
        return float(value)
    import email.utils  # here, not at the top: every commit imports this module for secret_values (15 ms)

    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())
