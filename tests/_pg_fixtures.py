"""PostgreSQL fixtures shared by the suites that need them (imported into their conftest):
each test gets its own migrated schema in the run's database."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from _pg import fresh_schema, require_postgres

from flowkit.stores.postgres import PostgresStore

__all__ = ["open_pg", "pg"]


@pytest.fixture
def pg() -> Iterator[tuple[str, str]]:
    """``(url, schema)`` of an empty, migrated schema (skips without PostgreSQL)."""
    require_postgres()
    with fresh_schema() as found:
        yield found


@pytest.fixture
def open_pg(pg: tuple[str, str]) -> Iterator[Callable[..., PostgresStore]]:
    """``open_pg(**options)``: a new PostgresStore on the test's schema; closed at the end."""
    opened: list[PostgresStore] = []

    def open_(**options: object) -> PostgresStore:
        url, schema = pg
        opened.append(PostgresStore(url, schema=schema, **options))  # type: ignore[arg-type]
        return opened[-1]

    yield open_
    for store in opened:
        store.close()
