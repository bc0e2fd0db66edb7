"""Fixtures for CLI tests: sample flow paths, and isolation from the globals `main` touches."""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import structlog

FLOWS = Path(__file__).resolve().parent.parent / "flows"


@pytest.fixture(autouse=True)
def _restore_cli_globals() -> Iterator[None]:
    # `main` sets up the `flowkit` logger (it is an app) and may put the cwd on sys.path.
    configured, config = structlog.is_configured(), structlog.get_config()
    logger = logging.getLogger("flowkit")
    handlers, level, propagate = list(logger.handlers), logger.level, logger.propagate
    path = list(sys.path)
    yield
    logger.handlers[:] = handlers
    logger.setLevel(level)
    logger.propagate = propagate
    if configured:
        structlog.configure(**config)
    else:
        structlog.reset_defaults()
    sys.path[:] = path


@pytest.fixture
def good() -> str:
    """TARGET of a valid sample flow (`ticket`)."""
    return f"{FLOWS / 'good.py'}:flow"


@pytest.fixture
def broken() -> str:
    """TARGET of a module whose flow has many definition problems."""
    return f"{FLOWS / 'broken.py'}:flow"


@pytest.fixture
def flows_dir() -> Path:
    return FLOWS
