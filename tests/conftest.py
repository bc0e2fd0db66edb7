"""Suite-wide fixtures: keep structlog's global configuration as each test found it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import structlog


@pytest.fixture(autouse=True)
def _restore_structlog() -> Iterator[None]:
    config = structlog.get_config()
    yield
    structlog.configure(**config)
