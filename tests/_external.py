"""Tests that need something outside the repository: skipped where it is missing, failed in CI.

A fresh clone must pass its own test command with nothing beside it, so a test that needs
something the repository does not hold (the reference corpus in ``../shared/reference``, a
PostgreSQL server, a Chromium binary, ...) checks for it first with ``require``::

    from _external import require

    def test_round_trip_over_the_corpus() -> None:
        require(CORPUS.is_dir(), f"the reference corpus at {CORPUS}")
        ...

Where the condition is false the test is reported as SKIPPED, with the reason
``needs the reference corpus at /path/...`` in pytest's summary (``-ra`` is on), so nobody
mistakes a skip for a pass. Where the environment variable ``FLOWKIT_REQUIRE_EXTERNAL`` is set
to anything but empty or ``0`` (``.ci/run`` sets it to ``1``), the same test FAILS with the same
reason instead: a machine that is meant to have the requirement must never skip silently.

``what`` names the requirement and where it was looked for, e.g. ``"PostgreSQL at
$FLOWKIT_PG_URL"`` or ``"chromium on PATH"``, so the reader knows what to install or set.

Parametrized tests whose parameters come from the missing thing (one test per corpus file)
should fall back to a single placeholder parameter and call ``require`` in the body, so the
test still shows up as one skipped item rather than vanishing from the report.

``tests/`` is on ``sys.path`` under pytest (it holds the rootdir ``conftest.py``), so every test
module imports this as ``_external``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

__all__ = ["ENV_VAR", "external_required", "require", "require_path"]

#: Set (to ``1``) where a missing requirement must fail instead of skip, as in CI.
ENV_VAR = "FLOWKIT_REQUIRE_EXTERNAL"


def external_required() -> bool:
    """Whether a missing requirement fails (``FLOWKIT_REQUIRE_EXTERNAL`` set, not ``0``)."""
    return os.environ.get(ENV_VAR, "").strip() not in ("", "0")


def require(condition: bool, what: str) -> None:
    """Go on if ``condition`` holds; else skip the test, or fail it when
    ``FLOWKIT_REQUIRE_EXTERNAL`` is set. Both give the reason ``needs {what}``."""
    __tracebackhide__ = True  # pytest reports the skip or failure at the caller's line
    if condition:
        return
    reason = f"needs {what}"
    if external_required():
        pytest.fail(f"{reason} ({ENV_VAR} is set, so a missing requirement fails)", pytrace=False)
    pytest.skip(reason)


def require_path(path: Path, what: str) -> Path:
    """``path`` if it exists; else ``require`` fails or skips with ``needs {what} at {path}``."""
    __tracebackhide__ = True
    require(path.exists(), f"{what} at {path}")
    return path
