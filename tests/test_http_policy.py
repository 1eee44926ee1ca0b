"""executors/http_policy.py: retries, deadlines, Retry-After parsing and redaction."""

from __future__ import annotations

import email.utils
import time

import pytest

from wikiengine.core.secrets import redact, safe_message
from wikiengine.executors.http_policy import (
    DeadlineExceeded,
    RetriesExhausted,
    RetryPolicy,
    Transient,
    call_with_retries,
    retry_after_seconds,
)


class Flaky(Exception):
    pass


def run(failures: int, policy: RetryPolicy, retry_after: float | None = None):
    calls = []

    def fn():
        calls.append(1)
        if len(calls) <= failures:
            raise Flaky("try again")
        return "ok"

    result = call_with_retries(fn, what="GET thing", policy=policy,
                               classify=lambda e: Transient(retry_after) if isinstance(e, Flaky) else None)
    return result, len(calls)


def test_row16_backoff_doubles_up_to_the_cap_then_succeeds():
    waits = []
    policy = RetryPolicy(max_attempts=5, base_wait_s=1, max_wait_s=3, sleep=waits.append)
    assert run(4, policy) == ("ok", 5)
    assert waits == [1, 2, 3, 3]


def test_row16_retry_after_is_honoured_as_asked():
    waits = []
    assert run(1, RetryPolicy(sleep=waits.append, max_wait_s=2), retry_after=17) == ("ok", 2)
    assert waits == [17]


def test_row16_attempts_are_bounded_and_the_answer_is_unknown():
    with pytest.raises(RetriesExhausted, match="GET thing: failed 3 times"):
        run(10, RetryPolicy(max_attempts=3, sleep=lambda s: None))


def test_row17_a_wait_past_the_deadline_ends_the_call_at_once():
    waits = []
    with pytest.raises(DeadlineExceeded, match="GET thing"):
        run(1, RetryPolicy(deadline_s=5, sleep=waits.append), retry_after=3600)
    assert waits == []


def test_non_transient_errors_propagate_unchanged():
    with pytest.raises(KeyError):
        call_with_retries(lambda: {}["x"], what="x", policy=RetryPolicy(), classify=lambda e: None)


@pytest.mark.parametrize(
    "headers, seconds",
    [({"Retry-After": "120"}, 120.0), ({"retry-after": " 5 "}, 5.0), ({}, None), ({"Retry-After": "soon"}, None)],
)
def test_retry_after_seconds(headers, seconds):
    assert retry_after_seconds(headers) == seconds


def test_retry_after_as_an_http_date():
    when = email.utils.formatdate(time.time() + 60, usegmt=True)
    assert 55 <= retry_after_seconds({"Retry-After": when}) <= 61


def test_redaction_of_known_values_and_credential_shapes(monkeypatch):
    monkeypatch.setenv("KAGGLE_KEY", "s3cr3t+key/value")
    text = ("key s3cr3t+key/value and s3cr3t%2Bkey%2Fvalue; Authorization: Bearer abc.def.ghi; "
            "https://user:pw@host/x; hf_abcdefghijklmnop; basic dXNlcjpwYXNzd29yZA==")
    clean = redact(text)
    for secret in ("s3cr3t", "abc.def.ghi", "user:pw", "hf_abcdefghijklmnop", "dXNlcjpwYXNzd29yZA"):
        assert secret not in clean
    assert "https://<redacted>@host/x" in clean


def test_safe_message_is_one_redacted_line(monkeypatch):
    monkeypatch.setenv("HF_TOKEN", "hf_zzzzzzzzzzzzzzzz")
    message = safe_message(RuntimeError("bad token hf_zzzzzzzzzzzzzzzz\nsecond line"))
    assert message == "RuntimeError: bad token <redacted>"
