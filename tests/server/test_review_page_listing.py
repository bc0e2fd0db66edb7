"""The review page's lists, a page at a time: "More" fetches the next page through
``GET /threads``' cursor, in a real browser (Debian's headless Chromium, Playwright)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from _live import ThreadServer
from serve_common import AUTH, TOKEN

from flowkit.examples.review import flow as review
from flowkit.server import create_app
from flowkit.stores import JsonFileStore

pytestmark = pytest.mark.slow


@pytest.fixture
def live(tmp_path: Path) -> Iterator[ThreadServer]:
    store = JsonFileStore(tmp_path / "store", fsync=False)
    with ThreadServer(create_app([review], store=store, token=TOKEN)) as server:
        for index in range(23):  # more than the "recently updated" list's page of 20
            made = httpx.post(
                f"{server.base}/flows/review/threads",
                json={"thread_id": f"doc-{index:02}", "input": {"topic": "t"}},
                headers=AUTH,
                timeout=60,
            )
            assert made.status_code == 201, made.text
        yield server


def test_more_shows_the_next_page_of_threads(live: ThreadServer, browser: Any) -> None:
    page = browser.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(live.base + "/")
    page.fill("#token", TOKEN)
    page.click("#token-form button")
    page.locator("#recent a", has_text="doc-22").wait_for()  # the newest first
    assert page.locator("#recent tbody tr").count() == 20
    assert page.locator("#waiting tbody tr").count() == 23  # one page of 50 holds them all
    assert page.locator("#waiting-more").is_hidden()
    page.click("#recent-more")
    page.locator("#recent a", has_text="doc-00").wait_for()
    assert page.locator("#recent tbody tr").count() == 23
    assert page.locator("#recent-more").is_hidden()  # that was the last page
    shown = page.locator("#recent a").all_inner_texts()
    assert sorted(shown) == [f"doc-{i:02}" for i in range(23)]
    assert errors == []
