"""The retry schedule: exponential backoff with jitter, and Retry-After in both forms."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from flowkit.errors import LLMConfigError
from flowkit.llm import Backoff
from flowkit.llm._retry import RETRYABLE_STATUS, parse_retry_after


def test_backoff_grows_exponentially_up_to_the_maximum():
    backoff = Backoff(initial=0.5, multiplier=2.0, maximum=3.0, jitter=0.0)
    assert [backoff.delay(n) for n in range(5)] == [0.5, 1.0, 2.0, 3.0, 3.0]


@given(st.integers(0, 30), st.floats(0.0, 1.0))
def test_jitter_only_shortens_the_delay_within_its_fraction(attempt, jitter):
    backoff = Backoff(initial=0.1, maximum=5.0, jitter=jitter)
    full = min(5.0, 0.1 * 2.0**attempt)
    assert full * (1 - jitter) <= backoff.delay(attempt) <= full


def test_retry_after_wins_over_the_schedule_but_is_capped():
    backoff = Backoff(max_retry_after=10.0)
    assert backoff.delay(0, retry_after=3.0) == 3.0
    assert backoff.delay(0, retry_after=120.0) == 10.0
    assert backoff.delay(0, retry_after=-5.0) == 0.0


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"retry-after": "7"}, 7.0),
        ({"retry-after": "1.5"}, 1.5),
        ({"retry-after-ms": "250", "retry-after": "9"}, 0.25),
        ({"retry-after": "soon"}, None),
        ({"retry-after": "nan"}, None),
        ({"retry-after-ms": "NaN"}, None),
        ({"retry-after-ms": "nan", "retry-after": "2"}, 2.0),
        ({}, None),
    ],
)
def test_retry_after_seconds(headers, expected):
    assert parse_retry_after(headers) == expected


def test_retry_after_http_date():
    now = datetime(2025, 1, 1, 12, 0, 0, tzinfo=UTC)
    header = format_datetime(now + timedelta(seconds=42), usegmt=True)
    assert parse_retry_after({"retry-after": header}, now=now) == 42.0
    past = format_datetime(now - timedelta(seconds=42), usegmt=True)
    assert parse_retry_after({"retry-after": past}, now=now) == 0.0


def test_retryable_statuses():
    assert {408, 429, 500, 502, 503, 504} <= RETRYABLE_STATUS
    assert not {400, 401, 403, 404, 422} & RETRYABLE_STATUS


# -- a server's Retry-After never stretches a call past its timeout (issue 23 item 20) ------


@pytest.mark.timeout(20)
@pytest.mark.parametrize("status", [429, 503])
def test_a_retry_after_longer_than_the_timeout_ends_the_call_instead_of_sleeping(
    server, connect, mode, status
):
    from flowkit.errors import LLMUnavailableError

    from .conftest import complete, fail

    llm = connect(server.url, timeout=2.0, max_retries=3, backoff=Backoff())
    server.fallback = fail(status, retry_after="3600")

    with pytest.raises(LLMUnavailableError) as caught:  # the server's refusal, with its status
        complete(llm, mode)

    assert len(server.requests) == 1  # given up at once: no wait could end within the timeout
    assert caught.value.retryable and caught.value.status_code == status
    assert f"HTTP {status}" in str(caught.value) and "3600" in str(caught.value)


@pytest.mark.timeout(20)
def test_a_retry_after_within_the_timeout_is_honoured(server, connect, mode):
    from .conftest import complete, fail, ok

    llm = connect(server.url, timeout=2.0, max_retries=1, backoff=Backoff())
    server.script(fail(429, retry_after="0.2"), ok("after the wait"))

    assert complete(llm, mode).text == "after the wait"
    assert len(server.requests) == 2


def test_no_wait_of_the_schedule_is_longer_than_the_timeout():
    from flowkit.llm._retry import bounded_wait

    slow = Backoff(initial=10.0, maximum=30.0, jitter=0.0)
    assert bounded_wait(slow, 0, None, timeout=2.0) == 2.0
    assert bounded_wait(slow, 0, 1.5, timeout=2.0) == 1.5
    assert bounded_wait(slow, 0, 3600.0, timeout=2.0) is None
    assert bounded_wait(Backoff(), 0, 3600.0, timeout=120.0) == 60.0  # max_retry_after


@pytest.mark.parametrize(
    "options",
    [
        {"initial": -1.0},
        {"jitter": 3.0},
        {"jitter": -0.1},
        {"multiplier": 0.5},
        {"maximum": float("inf")},
        {"max_retry_after": float("nan")},
        {"initial": "1"},
        {"initial": True},
    ],
)
def test_a_backoff_that_cannot_be_used_is_refused_when_built(options: dict[str, object]) -> None:
    """It was taken, then the first retry failed with the sleep's own ValueError (found by
    a defect hunt)."""
    with pytest.raises(LLMConfigError, match="cannot be used"):
        Backoff(**options)  # type: ignore[arg-type]
