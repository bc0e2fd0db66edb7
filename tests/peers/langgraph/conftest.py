"""Stores for the LangGraph peer scenarios: the JSON-file store on disk, and PostgreSQL through
the suite's own scratch schemas (skipped, with the reason, where no server is reachable)."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest
from _pg import fresh_schema, require_postgres

from flowkit.stores import JsonFileStore, Store

CRASH_CHILD = Path(__file__).with_name("lg_crash_child.py")


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    """A JSON-file store in the test's own folder, as an application would have it."""
    with JsonFileStore(tmp_path / "store", fsync=False) as file_store:
        yield file_store


@pytest.fixture(params=["jsonfile", "postgres"])
def durable_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    """Each durable store: LangGraph runs these scenarios over each of its checkpointers."""
    if request.param == "postgres":
        require_postgres()
        from flowkit.stores.postgres import PostgresStore

        with fresh_schema() as (url, schema), PostgresStore(url, schema=schema) as pg_store:
            yield pg_store
    else:
        with JsonFileStore(tmp_path / "store") as file_store:
            yield file_store


@pytest.fixture(scope="session")
def crash_child() -> ModuleType:
    """The crash child's module (its flows), importable whatever pytest's import mode."""
    name = "flowkit_peer_langgraph_crash_child"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, CRASH_CHILD)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
