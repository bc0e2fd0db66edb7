"""Engine fixtures: every runner test runs on each shipped store."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from flowkit.stores import JsonFileStore, MemoryStore, Store


@pytest.fixture(params=["memory", "jsonfile"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    if request.param == "memory":
        yield MemoryStore()
    else:
        with JsonFileStore(tmp_path / "store", fsync=False) as file_store:
            yield file_store
