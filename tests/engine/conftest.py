"""Engine fixtures: every runner test runs on each shipped store."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from _pg import fresh_schema, require_postgres

from flowkit.stores import JsonFileStore, MemoryStore, Store


@pytest.fixture(params=["memory", "jsonfile"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    if request.param == "memory":
        yield MemoryStore()
    else:
        with JsonFileStore(tmp_path / "store", fsync=False) as file_store:
            yield file_store


@pytest.fixture(params=["memory", "jsonfile", "postgres"])
def every_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    """Each shipped store, PostgreSQL too (skipped with a printed reason where it is missing):
    a test file that must hold on all three takes ``store`` from this one."""
    if request.param == "memory":
        yield MemoryStore()
    elif request.param == "postgres":
        require_postgres()
        from flowkit.stores.postgres import PostgresStore

        with fresh_schema() as (url, schema), PostgresStore(url, schema=schema) as pg_store:
            yield pg_store
    else:
        with JsonFileStore(tmp_path / "store", fsync=False) as file_store:
            yield file_store
