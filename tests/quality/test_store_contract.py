"""The WorkflowStateStore contract on the JSON-file store and on a real PostgreSQL."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from flowkit.quality.store_contract import WorkflowStateStoreContract
from flowkit.quality.stores import WorkflowStateStore
from flowkit.quality.stores.jsonfile import JsonWorkflowStateStore

from ._pg import pg_database


class TestJsonWorkflowStateStore(WorkflowStateStoreContract):
    @pytest.fixture
    def store(self, tmp_path: Path) -> Iterator[WorkflowStateStore]:
        with JsonWorkflowStateStore(tmp_path, fsync=False) as store:
            yield store

    @pytest.fixture
    def reopen(self, tmp_path: Path) -> Iterator[Callable[[], WorkflowStateStore]]:
        handles: list[JsonWorkflowStateStore] = []

        def again() -> WorkflowStateStore:
            handles.append(JsonWorkflowStateStore(tmp_path, fsync=False))
            return handles[-1]

        yield again
        for handle in handles:
            handle.close()


class TestPostgresWorkflowStateStore(WorkflowStateStoreContract):
    @pytest.fixture
    def dsn(self) -> Iterator[str]:
        with pg_database() as dsn:
            yield dsn

    @pytest.fixture
    def store(self, dsn: str) -> Iterator[WorkflowStateStore]:
        from flowkit.quality.stores.postgres import PostgresWorkflowStateStore

        store = PostgresWorkflowStateStore(dsn)
        yield store
        store.close()

    @pytest.fixture
    def reopen(self, dsn: str) -> Iterator[Callable[[], WorkflowStateStore]]:
        from flowkit.quality.stores.postgres import PostgresWorkflowStateStore

        handles: list[PostgresWorkflowStateStore] = []

        def again() -> WorkflowStateStore:
            handles.append(PostgresWorkflowStateStore(dsn))
            return handles[-1]

        yield again
        for handle in handles:
            handle.close()
