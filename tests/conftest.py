"""Suite-wide fixtures: keep structlog's global configuration as each test found it; no
hypothesis test has a deadline, and under CI they draw the same examples every run."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
import structlog
from hypothesis import HealthCheck, settings

# No wall clock in a property: Hypothesis's default 200 ms deadline per example and its
# too-slow health check fail a test whose examples a loaded machine merely runs slowly (a
# hung test still meets pytest-timeout).
settings.register_profile("unhurried", deadline=None, suppress_health_check=[HealthCheck.too_slow])
# CI decides whether a submission lands on one run, so there the examples are derived from
# each test's name (the same every run) instead of a fresh seed: a rare input found by chance
# would fail one submission and pass the next. Runs elsewhere keep exploring with new seeds,
# and what they find becomes a fixed test case.
settings.register_profile(
    "ci", parent=settings.get_profile("unhurried"), derandomize=True, print_blob=True
)
settings.load_profile("ci" if os.environ.get("CI") else "unhurried")


@pytest.fixture(autouse=True)
def _restore_structlog() -> Iterator[None]:
    # `configure` marks structlog as configured, which flowkit reads as "the app chose a
    # pipeline": a test that found it unconfigured leaves it unconfigured.
    configured, config = structlog.is_configured(), structlog.get_config()
    yield
    if configured:
        structlog.configure(**config)
    else:
        structlog.reset_defaults()
