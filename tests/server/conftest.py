"""Server fixtures: an app over a store, a client, and the token that lets it change things.

The shared constants and helpers live in ``serve_common`` (``conftest`` is a name every test
folder has, so it is never imported by name).
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

# serve_common, serve_flows and _live, importable from every module here
sys.path.insert(0, str(Path(__file__).parent))

from _external import require
from fastapi import FastAPI
from fastapi.testclient import TestClient
from serve_common import FLOWS, TOKEN

from flowkit.server import create_app
from flowkit.stores import JsonFileStore, MemoryStore, Store


@pytest.fixture(params=["memory", "jsonfile"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    if request.param == "memory":
        yield MemoryStore()
    else:
        with JsonFileStore(tmp_path / "store", fsync=False) as file_store:
            yield file_store


@pytest.fixture
def make_client(store: Store) -> Iterator[Callable[..., TestClient]]:
    """``make_client(**create_app options)``: a started client (lifespan run) over ``store``,
    serving ``FLOWS`` unless the options name other ``flows``."""
    opened: list[TestClient] = []

    def make(**options: Any) -> TestClient:
        options.setdefault("token", TOKEN)
        app: FastAPI = create_app(options.pop("flows", FLOWS), store=store, **options)
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


CHROMIUM = os.environ.get("FLOWKIT_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"


@pytest.fixture(scope="module")
def _chromium() -> Iterator[Any]:
    """One browser process per module: launching it costs about a second."""
    require(Path(CHROMIUM).is_file(), f"Chromium at {CHROMIUM} (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, headless=True)
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def browser(_chromium: Any) -> Iterator[Any]:
    """Debian's headless Chromium under Playwright (the review page's tests). Each test's
    pages live in contexts of their own (``new_page`` makes one), closed after it."""
    yield _chromium
    for context in _chromium.contexts:
        context.close()
