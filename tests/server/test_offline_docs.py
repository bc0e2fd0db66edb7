"""``/docs`` (Swagger UI) and ``/redoc`` work offline: their scripts and styles come from the
server, and the policy it sends lets them load nothing from anywhere else. The browser tests
drive Debian's Chromium with every request that is not to the server blocked."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from _live import ThreadServer
from fastapi.testclient import TestClient
from serve_common import FLOWS, TOKEN, problem

from flowkit.server import create_app
from flowkit.stores import MemoryStore

# Each `securitypolicyviolation` the page raises, kept where the test can read it.
_RECORD_VIOLATIONS = """
window.__violations = [];
document.addEventListener("securitypolicyviolation", (event) => {
    window.__violations.push({directive: event.effectiveDirective, uri: event.blockedURI});
});
"""


@pytest.fixture(scope="module")
def live() -> Iterator[ThreadServer]:
    with ThreadServer(create_app(FLOWS, store=MemoryStore(), token=TOKEN)) as server:
        yield server


def _policy(response: Any) -> dict[str, list[str]]:
    directives = (part.split() for part in response.headers["Content-Security-Policy"].split(";"))
    return {name: values for name, *values in directives}


@pytest.mark.parametrize("path", ["/docs", "/redoc"])
def test_the_docs_pages_reference_nothing_outside_the_server(path: str) -> None:
    with TestClient(create_app(FLOWS, store=MemoryStore(), token=TOKEN)) as client:
        response = client.get(path)
        assert response.status_code == 200
        html = response.text
        assert not re.search(r"(?i)\b(https?:)?//", html), "an external URL in the page"
        assets = re.findall(r'(?:src|href)="([^"]+)"', html)
        assert assets and all(asset.startswith("/docs/assets/") for asset in assets)
        for asset in assets:
            served = client.get(asset)
            assert served.status_code == 200 and len(served.content) > 0, asset
        policy = _policy(response)
        assert policy["default-src"] == ["'none'"]
        assert policy["script-src"][0] == "'self'"
        assert all(value.startswith("'sha256-") for value in policy["script-src"][1:])
        assert policy["connect-src"] == ["'self'"] and policy["img-src"] == ["'self'", "data:"]
        assert not any("http" in value for values in policy.values() for value in values)
        problem(client.get("/docs/assets/app.js"), 404, "not_found")
        problem(client.get("/docs/assets/..%2Fcore.py"), 404, "not_found")


def _open_offline(browser: Any, url: str) -> tuple[Any, list[str]]:
    """A page at ``url`` that can reach the server of ``url`` only; and the list of every
    other address it asked for."""
    page = browser.new_page()
    elsewhere: list[str] = []
    base = url.split("/", 3)[:3]

    def only_the_server(route: Any) -> None:
        if route.request.url.split("/", 3)[:3] == base:
            route.continue_()
        else:
            elsewhere.append(route.request.url)
            route.abort()

    page.route("**/*", only_the_server)
    page.add_init_script(_RECORD_VIOLATIONS)
    page.goto(url)
    return page, elsewhere


def test_swagger_ui_lists_the_operations_offline(live: ThreadServer, browser: Any) -> None:
    page, elsewhere = _open_offline(browser, live.base + "/docs")
    page.get_by_text("List Flows").wait_for()  # the summary of GET /flows
    page.get_by_text("/threads/{thread_id}/history").first.wait_for()
    assert elsewhere == []
    assert page.evaluate("window.__violations") == []


def test_redoc_renders_the_api_offline(live: ThreadServer, browser: Any) -> None:
    page, elsewhere = _open_offline(browser, live.base + "/redoc")
    page.get_by_role("heading", name="List Flows").wait_for()
    assert elsewhere == []
    # ReDoc asks for its maker's logo on their CDN; the policy refuses it, and nothing else
    violations = page.evaluate("window.__violations")
    assert all(v["directive"] == "img-src" for v in violations), violations
