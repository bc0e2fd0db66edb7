"""Suite-wide fixtures: keep structlog's global configuration as each test found it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import structlog


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
