"""Server fixtures: an app over a store, a client, and the token that lets it change things."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(
    0, str(Path(__file__).parent)
)  # `serve_flows` (the test flows) and `_live`, for every module

from fastapi import FastAPI
from fastapi.testclient import TestClient
from serve_flows import chat, counter, owned

from flowkit.examples.review import flow as review
from flowkit.server import create_app
from flowkit.stores import JsonFileStore, MemoryStore, Store

TOKEN = "test-token-0123456789abcdef"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
FLOWS = [review, counter, chat, owned]


@pytest.fixture(params=["memory", "jsonfile"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    if request.param == "memory":
        yield MemoryStore()
    else:
        with JsonFileStore(tmp_path / "store", fsync=False) as file_store:
            yield file_store


@pytest.fixture
def make_client(store: Store) -> Iterator[Callable[..., TestClient]]:
    """``make_client(**create_app options)``: a started client (lifespan run) over ``store``."""
    opened: list[TestClient] = []

    def make(**options: Any) -> TestClient:
        options.setdefault("token", TOKEN)
        app: FastAPI = create_app(FLOWS, store=store, **options)
        client = TestClient(app)
        client.__enter__()
        opened.append(client)
        return client

    yield make
    for client in opened:
        client.__exit__(None, None, None)


@pytest.fixture
def client(make_client: Callable[..., TestClient]) -> TestClient:
    return make_client()
