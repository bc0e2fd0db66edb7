"""The retry schedule: exponential backoff with jitter, and Retry-After in both forms."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

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
