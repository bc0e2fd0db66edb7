"""When to retry an LLM request and how long to wait: backoff with jitter and ``Retry-After``.

Pure functions; the sync and async drivers only carry out the waits decided here.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

from ..errors import LLMConfigError

__all__ = ["RETRYABLE_STATUS", "Backoff", "bounded_wait", "parse_retry_after"]

#: Statuses worth another attempt: request timeout, conflict, rate limit, server errors.
RETRYABLE_STATUS = frozenset({408, 409, 429, *range(500, 600)})


@dataclass(frozen=True, slots=True)
class Backoff:
    """Exponential backoff with jitter between attempts.

    Attempt ``n`` (0-based) waits ``min(maximum, initial * multiplier**n)``, shortened by up
    to ``jitter`` (a fraction) at random so many clients do not retry in lockstep. A
    server's ``Retry-After`` wins over the schedule, capped at ``max_retry_after``.
    """

    initial: float = 0.5
    multiplier: float = 2.0
    maximum: float = 8.0
    jitter: float = 0.25
    max_retry_after: float = 60.0

    def __post_init__(self) -> None:
        # Checked here, when the client is built: a negative wait failed at the first retry
        # with the sleep's own ValueError.
        bad = [
            f"{name}={value!r:.20}"
            for name, value, low in (
                ("initial", self.initial, 0.0),
                ("multiplier", self.multiplier, 1.0),
                ("maximum", self.maximum, 0.0),
                ("max_retry_after", self.max_retry_after, 0.0),
            )
            if isinstance(value, bool)
            or not isinstance(value, int | float)
            or not (math.isfinite(value) and value >= low)
        ]
        jitter = self.jitter
        if isinstance(jitter, bool) or not isinstance(jitter, int | float) or not 0 <= jitter <= 1:
            bad.append(f"jitter={jitter!r:.20}")
        if bad:
            raise LLMConfigError(
                f"Backoff({', '.join(bad)}) cannot be used: waits are finite seconds of 0 or "
                "more, the multiplier at least 1 and the jitter a fraction from 0 to 1."
            )

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        """Seconds to wait before retrying after failed attempt ``attempt`` (0-based)."""
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.max_retry_after)
        base = min(self.maximum, self.initial * self.multiplier**attempt)
        return base * (1.0 - self.jitter * random.random())


def bounded_wait(
    backoff: Backoff, attempt: int, retry_after: float | None, *, timeout: float
) -> float | None:
    """The wait before the attempt after ``attempt`` (0-based), never longer than ``timeout``.

    The schedule's own wait is shortened to the timeout. A server that asks (``Retry-After``)
    for a longer wait than the timeout gets ``None``: the call ends with a timeout error rather
    than sleep past its deadline, since a shorter wait would only be refused again.
    """
    delay = backoff.delay(attempt, retry_after)
    if delay <= timeout:
        return delay
    return None if retry_after is not None else timeout


def parse_retry_after(headers: Mapping[str, str], *, now: datetime | None = None) -> float | None:
    """Seconds the server asked us to wait, from ``retry-after-ms`` or ``Retry-After``.

    ``Retry-After`` may be seconds or an HTTP date; ``headers`` keys are lower case.
    Unparseable values are ignored (``None``) rather than trusted.
    """
    millis = _number(headers.get("retry-after-ms"))
    if millis is not None:
        return max(millis / 1000.0, 0.0)
    value = headers.get("retry-after")
    if value is None:
        return None
    seconds = _number(value)
    if seconds is not None:
        return max(seconds, 0.0)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max((when - (now or datetime.now(UTC))).total_seconds(), 0.0)


def _number(text: str | None) -> float | None:
    """``text`` as a float, or ``None`` if it is missing, not a number, or NaN."""
    if text is None:
        return None
    try:
        number = float(text)
    except ValueError:
        return None
    return None if math.isnan(number) else number
