"""What the server tests share: the token, the flows served, and checks of problems."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient
from httpx2 import Response
from serve_flows import chat, counter, owned

from flowkit.examples.review import flow as review

TOKEN = "test-token-0123456789abcdef"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
FLOWS = [review, counter, chat, owned]


def problem(response: Response, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/problem+json"
    body: dict[str, Any] = response.json()
    assert body["code"] == code, body
    assert body["status"] == status
    assert body["type"] == f"urn:flowkit:problem:{code}"
    assert body["title"] and body["detail"]
    return body


def start(client: TestClient, thread: str = "doc", **body: Any) -> dict[str, Any]:
    response = client.post(
        "/flows/review/threads", json={"thread_id": thread, **body}, headers=AUTH
    )
    assert response.status_code == 201, response.text
    data: dict[str, Any] = response.json()
    return data
