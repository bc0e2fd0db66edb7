"""Tokens, open reads, the authorisation hook, CORS, limits, and what never leaves the server."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import pytest
from fastapi.testclient import TestClient
from serve_common import AUTH, TOKEN, problem, start

from flowkit.server import ADMIN, Access

MUTATIONS = [
    ("post", "/flows/review/threads", {"thread_id": "new"}),
    ("post", "/threads/doc/resume", {"input": {"approved": True}}),
    ("post", "/threads/doc/fork", {}),
    ("patch", "/threads/doc/state", {"values": {"topic": "x"}}),
    ("delete", "/threads/doc", None),
]
READS = ["/flows", "/threads", "/threads/doc", "/threads/doc/history"]


def call(client: TestClient, method: str, path: str, body: Any, **headers: str) -> Any:
    if body is None:
        return client.request(method, path, headers=headers)
    return client.request(method, path, json=body, headers=headers)


@pytest.mark.parametrize(("method", "path", "body"), MUTATIONS)
@pytest.mark.parametrize(
    "authorization", [None, "Bearer wrong-token-0123456789", "Basic abc", "Bearer", TOKEN]
)
def test_every_mutation_without_the_token_is_401(
    make_client: Callable[..., TestClient],
    method: str,
    path: str,
    body: Any,
    authorization: str | None,
) -> None:
    client = make_client(open_reads=True)
    start(client)
    headers = {} if authorization is None else {"Authorization": authorization}
    response = call(client, method, path, body, **headers)
    problem(response, 401, "unauthorized")
    assert response.headers["www-authenticate"] == "Bearer"
    assert client.get("/threads/doc", headers=AUTH).json()["version"] == 1  # nothing changed


@pytest.mark.parametrize(("method", "path", "body"), MUTATIONS)
def test_a_server_without_a_token_takes_no_changes(
    make_client: Callable[..., TestClient], method: str, path: str, body: Any
) -> None:
    client = make_client(token=None, open_reads=True)
    body_ = problem(call(client, method, path, body), 401, "unauthorized")
    assert "FLOWKIT_SERVER_TOKEN" in body_["detail"]


@pytest.mark.parametrize("path", READS)
def test_reads_need_the_token_unless_opened(
    make_client: Callable[..., TestClient], path: str
) -> None:
    closed = make_client()
    start(closed)
    problem(closed.get(path), 401, "unauthorized")
    problem(closed.get(path, headers={"Authorization": "Bearer nope"}), 401, "unauthorized")
    opened = make_client(open_reads=True)
    assert opened.get(path).status_code == 200


def test_secrets_are_never_shown_and_personal_data_only_to_principals(
    make_client: Callable[..., TestClient],
) -> None:
    client = make_client(open_reads=True)
    client.post("/flows/owned/threads", json={"thread_id": "rec"}, headers=AUTH)
    anonymous = client.get("/threads/rec").json()["state"]
    principal = client.get("/threads/rec", headers=AUTH).json()["state"]
    assert anonymous["api_key"] == principal["api_key"] == "***"
    assert "sato@example.com" not in str(anonymous) and "03-1234-5678" not in str(anonymous)
    assert "sato@example.com" in principal["note"]
    history = client.get("/threads/rec/history").json()
    assert "sk-live" not in str(history) and "sato@example.com" not in str(history)


def test_a_token_never_reaches_the_log_or_a_response(
    make_client: Callable[..., TestClient], caplog: pytest.LogCaptureFixture
) -> None:
    client = make_client()
    with caplog.at_level(logging.DEBUG, logger="flowkit"):
        start(client, input={"topic": "sato@example.com"})
        client.get("/threads/doc?secret=hunter2", headers=AUTH)
        response = client.get("/threads/doc", headers={"Authorization": "Bearer " + "x" * 30})
    assert TOKEN not in response.text and "x" * 30 not in response.text
    text = caplog.text
    assert TOKEN not in text and "x" * 30 not in text and "hunter2" not in text
    assert "sato@example.com" not in text
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("http_request")]
    assert "http_request method='GET' path='/threads/{thread_id}' status=200" in "\n".join(lines)


# -- the authorisation hook ----------------------------------------------------------------------

PEOPLE = {"alice-token-0123456789": "alice", "bob-token-0123456789ab": "bob"}


def initiator_and_admins(access: Access) -> bool:
    """The quality workflow's rule: a session is its initiator's and the admins'."""
    if access.principal == ADMIN:
        return True
    owner = (access.state or {}).get("initiator")
    return access.principal is not None and owner == access.principal


def test_the_hook_denies_another_principals_thread_with_403(
    make_client: Callable[..., TestClient],
) -> None:
    client = make_client(authenticate=PEOPLE.get, authorize=initiator_and_admins)
    alice = {"Authorization": "Bearer alice-token-0123456789"}
    bob = {"Authorization": "Bearer bob-token-0123456789ab"}
    created = client.post(
        "/flows/owned/threads",
        json={"thread_id": "qc-1", "input": {"initiator": "alice"}},
        headers=alice,
    )
    assert created.status_code == 201
    assert client.get("/threads/qc-1", headers=alice).status_code == 200
    assert client.get("/threads/qc-1", headers=AUTH).status_code == 200  # an admin
    for method, path, body in [
        ("get", "/threads/qc-1", None),
        ("get", "/threads/qc-1/history", None),
        ("get", "/threads/qc-1/events", None),
        ("post", "/threads/qc-1/resume", {"input": {"approved": True}}),
        ("post", "/threads/qc-1/fork", {}),
        ("patch", "/threads/qc-1/state", {"values": {"approved": True}}),
        ("delete", "/threads/qc-1", None),
    ]:
        body_ = problem(call(client, method, path, body, **bob), 403, "forbidden")
        assert body_["thread_id"] == "qc-1"
    # Bob cannot start a session in Alice's name either, nor see hers in the list.
    problem(
        client.post(
            "/flows/owned/threads",
            json={"thread_id": "qc-2", "input": {"initiator": "alice"}},
            headers=bob,
        ),
        403,
        "forbidden",
    )
    assert client.get("/threads", headers=bob).json()["threads"] == []
    assert [t["thread_id"] for t in client.get("/threads", headers=alice).json()["threads"]] == [
        "qc-1"
    ]


def test_a_hook_that_raises_denies_and_is_logged_by_type(
    make_client: Callable[..., TestClient], caplog: pytest.LogCaptureFixture
) -> None:
    def broken(access: Access) -> bool:
        raise RuntimeError("db down: password=hunter2")

    client = make_client(authorize=broken)
    with caplog.at_level(logging.ERROR, logger="flowkit"):
        problem(
            client.post("/flows/review/threads", json={"thread_id": "x"}, headers=AUTH),
            403,
            "forbidden",
        )
    assert "server_authorize_failed" in caplog.text and "hunter2" not in caplog.text


# -- CORS, limits ----------------------------------------------------------------------------


def test_cors_is_closed_by_default_and_opens_for_named_origins(
    make_client: Callable[..., TestClient],
) -> None:
    preflight = {
        "Origin": "https://review.example",
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "authorization",
    }
    closed = make_client()
    assert (
        "access-control-allow-origin" not in closed.options("/threads", headers=preflight).headers
    )
    got = closed.get("/flows", headers={**AUTH, "Origin": "https://review.example"})
    assert "access-control-allow-origin" not in got.headers
    opened = make_client(cors_origins=["https://review.example"])
    allowed = opened.options("/threads", headers=preflight)
    assert allowed.headers["access-control-allow-origin"] == "https://review.example"
    other = opened.options("/threads", headers={**preflight, "Origin": "https://evil.example"})
    assert "access-control-allow-origin" not in other.headers


def test_bodies_past_the_size_limit_are_413_and_deep_json_is_422(
    make_client: Callable[..., TestClient],
) -> None:
    client = make_client(max_body_bytes=2000)
    big = {"thread_id": "big", "input": {"topic": "x" * 3000}}
    problem(client.post("/flows/review/threads", json=big, headers=AUTH), 413, "request_too_large")
    chunked = client.post(
        "/flows/review/threads",
        content=iter([b'{"thread_id": "c", "input": {"topic": "', b"y" * 3000, b'"}}']),
        headers={**AUTH, "Content-Type": "application/json"},
    )
    problem(chunked, 413, "request_too_large")
    deep = '{"input": {"topic": ' + "[" * 70 + "]" * 70 + "}}"
    problem(
        client.post(
            "/flows/review/threads",
            content=deep.encode(),
            headers={**AUTH, "Content-Type": "application/json"},
        ),
        422,
        "request_too_deep",
    )
    assert client.get("/threads", headers=AUTH).json()["total"] == 0


def test_responses_carry_safe_headers(client: TestClient) -> None:
    headers = client.get("/flows", headers=AUTH).headers
    assert headers["x-content-type-options"] == "nosniff"
    assert headers["x-frame-options"] == "DENY"


@pytest.mark.parametrize(
    "options",
    [
        {"token": "short"},
        {"max_body_bytes": 0},
        {"max_depth": -1},
        {"max_background_runs": True},
        {"hub_options": {"ring_size": 0}},
    ],
)
def test_unusable_settings_are_refused_when_the_app_is_made(options: dict[str, Any]) -> None:
    from flowkit.errors import ServerConfigError
    from flowkit.server import create_app
    from flowkit.stores import MemoryStore

    with pytest.raises(ServerConfigError):
        create_app(["review"], store=MemoryStore(), **{"token": TOKEN, **options})


@pytest.mark.parametrize("flows", [[], ["review", "review"], [42]])
def test_the_flows_served_must_be_flows_with_distinct_names(flows: list[Any]) -> None:
    from flowkit.errors import ServerConfigError
    from flowkit.server import create_app
    from flowkit.stores import MemoryStore

    with pytest.raises(ServerConfigError):
        create_app(flows, store=MemoryStore(), token=TOKEN)


# -- free text and metadata an anonymous reader sees ---------------------------------------------

PERSONAL = "zed@example.com"
SECRET = "sk-abcdefabcdef0123456789"


def test_an_anonymous_reader_sees_a_patchs_reason_and_actor_masked(
    make_client: Callable[..., TestClient],
) -> None:
    """The state was masked for an anonymous reader, the reason typed beside it was not (in
    the history and the LangGraph history's metadata); found by a defect hunt."""
    client = make_client(open_reads=True)
    start(client, "d1")
    patch = {"values": {"feedback": f"call {PERSONAL}"},
             "reason": f"asked by {PERSONAL}, password=hunter2hunter2"}  # fmt: skip
    assert client.patch("/threads/d1/state", json=patch, headers=AUTH).status_code == 200
    for headers, shown in (({}, False), (AUTH, True)):
        last = client.get("/threads/d1/history", headers=headers).json()["checkpoints"][-1]
        assert (PERSONAL in last["reason"]) is shown
        assert ("hunter2" in last["reason"]) is shown
        lg = client.post("/langgraph/threads/d1/history", json={"limit": 1}, headers=headers)
        meta = lg.json()[0]["metadata"]
        assert (PERSONAL in meta["reason"]) is shown


def test_langgraph_thread_metadata_is_masked_as_a_state_is(
    make_client: Callable[..., TestClient],
) -> None:
    """Secrets masked for everyone, personal data for an anonymous reader, and an anonymous
    search by metadata compares against what it may see (it confirmed whether an address
    was on the server)."""
    client = make_client(open_reads=True)
    metadata = {"customer": PERSONAL, "api_key": SECRET, "team": "cell-3"}
    made = client.post("/langgraph/threads", json={"metadata": metadata}, headers=AUTH).json()
    path = f"/langgraph/threads/{made['thread_id']}"
    anonymous = client.get(path).json()["metadata"]
    assert anonymous["customer"] == "***" and anonymous["api_key"] == "***"
    assert anonymous["team"] == "cell-3"
    signed_in = client.get(path, headers=AUTH).json()["metadata"]
    assert signed_in["customer"] == PERSONAL and signed_in["api_key"] == "***"
    search = {"metadata": {"customer": PERSONAL}}
    assert client.post("/langgraph/threads/search", json=search).json() == []
    found = client.post("/langgraph/threads/search", json=search, headers=AUTH).json()
    assert [t["thread_id"] for t in found] == [made["thread_id"]]
