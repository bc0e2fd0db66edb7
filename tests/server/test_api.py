"""Every thread endpoint with good and bad input; every failure a problem with a stable code."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from fastapi.testclient import TestClient
from pydantic import BaseModel
from serve_common import AUTH, TOKEN, problem, start
from serve_flows import desk, tickets

from flowkit import END, Flow, Runner
from flowkit.server import create_app
from flowkit.stores import Store

# -- flows ---------------------------------------------------------------------------------------


def test_flows_lists_each_served_flow_with_its_gates(client: TestClient) -> None:
    flows = {f["name"]: f for f in client.get("/flows", headers=AUTH).json()}
    assert set(flows) == {"review", "counter", "chat", "owned"}
    assert flows["review"]["gates"] == ["review"]
    assert flows["review"]["start"] == "draft"
    assert "topic" in flows["review"]["state_schema"]["properties"]


# -- start ---------------------------------------------------------------------------------------


def test_start_runs_to_the_gate_and_shows_its_input_schema(client: TestClient) -> None:
    data = start(client, input={"topic": "pumps"})
    assert data["status"] == "waiting" and data["node"] == "review" and data["version"] == 1
    assert data["state"]["text"] == "pumps: draft 1"
    (gate,) = data["gates"]
    assert gate["name"] == "review"
    assert gate["input_schema"]["required"] == ["approved"]
    assert gate["input_schema"]["properties"]["feedback"]["maxLength"] == 2000


def test_start_without_an_id_generates_one_from_the_flow_name(client: TestClient) -> None:
    response = client.post("/flows/review/threads", json={}, headers=AUTH)
    assert response.status_code == 201
    assert response.json()["thread_id"].startswith("review-")


def test_start_with_wait_false_answers_202_once_the_thread_exists(client: TestClient) -> None:
    response = client.post(
        "/flows/counter/threads",
        json={"thread_id": "bg", "input": {"steps": 3}, "wait": False},
        headers=AUTH,
    )
    assert response.status_code == 202
    assert response.json() == {"thread_id": "bg", "flow": "counter", "running": True}
    assert client.get("/threads/bg", headers=AUTH).status_code == 200


@pytest.mark.parametrize(
    ("path", "body", "status", "code"),
    [
        ("/flows/nope/threads", {}, 404, "flow_not_served"),
        ("/flows/review/threads", {"input": {"revision": "many"}}, 422, "invalid_state"),
        ("/flows/review/threads", {"colour": "red"}, 422, "invalid_request"),
        ("/flows/review/threads", {"thread_id": "../etc"}, 422, "invalid_request"),
        ("/flows/review/threads", {"thread_id": "a..b"}, 422, "invalid_thread_id"),
        ("/flows/review/threads", {"input": [1, 2]}, 422, "invalid_request"),
        ("/flows/review/threads", {"wait": "soon"}, 422, "invalid_request"),
    ],
)
def test_start_refuses_bad_input(
    client: TestClient, path: str, body: dict[str, Any], status: int, code: str
) -> None:
    problem(client.post(path, json=body, headers=AUTH), status, code)


def test_start_refuses_an_existing_id_and_a_body_that_is_not_json(client: TestClient) -> None:
    start(client)
    body = problem(
        client.post("/flows/review/threads", json={"thread_id": "doc"}, headers=AUTH),
        409,
        "thread_exists",
    )
    assert body["thread_id"] == "doc"
    broken = client.post(
        "/flows/review/threads",
        content=b"{not json",
        headers={**AUTH, "Content-Type": "application/json"},
    )
    problem(broken, 422, "invalid_request")


#: Each operation that takes a JSON body, with a body it accepts.
BODIES = [
    ("POST", "/flows/review/threads", b'{"thread_id": "new"}'),
    ("POST", "/threads/doc/resume", b'{"input": {"approved": true}}'),
    ("POST", "/threads/doc/fork", b"{}"),
    ("PATCH", "/threads/doc/state", b'{"values": {"revision": 2}, "reason": "why"}'),
]


@pytest.mark.parametrize(("method", "path", "body"), BODIES)
@pytest.mark.parametrize(
    ("content_type", "sent"),
    [
        (None, "had no Content-Type"),
        ("text/plain", "had another Content-Type"),
        ("application/x-www-form-urlencoded", "had another Content-Type"),
    ],
)
def test_a_body_not_sent_as_json_is_415_saying_how_to_send_it(
    client: TestClient,
    method: str,
    path: str,
    body: bytes,
    content_type: str | None,
    sent: str,
) -> None:
    start(client)
    headers = {**AUTH, **({"Content-Type": content_type} if content_type else {})}
    refused = problem(client.request(method, path, content=body, headers=headers), 415,
                      "unsupported_media_type")  # fmt: skip
    assert refused["detail"] == (
        f"The body must be JSON sent with `Content-Type: application/json`; this request {sent}."
    )
    as_json = client.request(
        method, path, content=body, headers={**AUTH, "Content-Type": "application/json"}
    )
    assert as_json.status_code < 300, as_json.text


def test_json_of_the_wrong_shape_is_still_422(client: TestClient) -> None:
    start(client)
    wrong = client.post("/threads/doc/resume", json="approve", headers=AUTH)
    body = problem(wrong, 422, "invalid_request")
    [error] = body["errors"]
    assert error["loc"] == ["body"] and error["msg"]  # the reason in pydantic's words
    assert body["detail"] == (
        f"The request is not valid: body: {error['msg']} (1 error(s) in `errors`)."
    )


def test_the_document_promises_415_exactly_where_a_body_is_taken(client: TestClient) -> None:
    paths = client.get("/openapi.json").json()["paths"]
    operations = [op for methods in paths.values() for op in methods.values()]
    flowkit = [op for op in operations if "langgraph" not in op.get("tags", [])]  # its own
    assert sum("requestBody" in op for op in flowkit) == len(BODIES)
    for operation in operations:
        assert ("415" in operation["responses"]) == ("requestBody" in operation), operation
        if "requestBody" in operation:
            media = operation["responses"]["415"]["content"]
            assert list(media) == ["application/problem+json"]


# -- get and list ------------------------------------------------------------------------------


def test_get_shows_where_the_thread_stands(client: TestClient) -> None:
    start(client)
    data = client.get("/threads/doc", headers=AUTH).json()
    assert (data["flow"], data["status"], data["node"]) == ("review", "waiting", "review")
    assert data["error"] is None
    problem(client.get("/threads/ghost", headers=AUTH), 404, "thread_not_found")
    problem(client.get("/threads/a..b", headers=AUTH), 422, "invalid_thread_id")


class _Account(BaseModel):
    user: str = ""


def _lookup(state: _Account) -> dict[str, Any]:
    raise ValueError("no account for taro@example.com, api_key=Zm9vYmFy")


_accounts = Flow(name="accounts", state=_Account, start="lookup", nodes={"lookup": _lookup},
                 routes={"lookup": END}, error_field=None)  # fmt: skip


@pytest.mark.parametrize(
    ("error_text", "message"),
    [
        ("masked", "no account for ***, api_key=***"),
        ("raw", "no account for taro@example.com, api_key=Zm9vYmFy"),
    ],
)
def test_get_shows_a_failed_nodes_error_as_the_runner_stored_it(
    make_client: Any, error_text: str, message: str
) -> None:
    client = make_client(
        flows=[_accounts],
        runner_factory=lambda flow, store: Runner(flow, store=store, error_text=error_text),
    )
    started = client.post("/flows/accounts/threads", json={"thread_id": "a1"}, headers=AUTH)
    assert started.json()["error"] == {"type": "ValueError", "message": message, "node": "lookup"}
    shown = client.get("/threads/a1", headers=AUTH).json()
    assert (shown["status"], shown["error"]["message"]) == ("failed", message)


def test_list_filters_by_status_and_flow_and_pages(client: TestClient) -> None:
    for name in ("a", "b", "c"):
        start(client, name)
    client.post("/threads/b/resume", json={"input": {"approved": True}}, headers=AUTH)
    client.post("/flows/counter/threads", json={"thread_id": "n", "input": {}}, headers=AUTH)

    def ids(**params: Any) -> list[str]:
        response = client.get("/threads", params=params, headers=AUTH)
        assert response.status_code == 200
        return sorted(t["thread_id"] for t in response.json()["threads"])

    assert ids() == ["a", "b", "c", "n"]
    assert ids(status="waiting") == ["a", "c", "n"]
    assert ids(status="done") == ["b"]
    assert ids(flow="counter") == ["n"]
    assert ids(flow="review", status="waiting") == ["a", "c"]
    page = client.get("/threads", params={"limit": 3, "offset": 2}, headers=AUTH).json()
    assert (len(page["threads"]), page["total"], page["limit"], page["offset"]) == (2, 4, 3, 2)
    first = client.get("/threads", params={"limit": 1}, headers=AUTH).json()["threads"][0]
    assert first["thread_id"] == "n"  # most recently updated first


@pytest.mark.parametrize(
    "params", [{"status": "sleeping"}, {"limit": 0}, {"limit": 201}, {"offset": -1}]
)
def test_list_refuses_bad_filters(client: TestClient, params: dict[str, Any]) -> None:
    problem(client.get("/threads", params=params, headers=AUTH), 422, "invalid_request")


# -- history ---------------------------------------------------------------------------------


def test_history_lists_each_checkpoint_with_its_update(client: TestClient) -> None:
    start(client)
    client.post(
        "/threads/doc/resume", json={"input": {"approved": False, "feedback": "more"}}, headers=AUTH
    )
    data = client.get("/threads/doc/history", headers=AUTH).json()
    kinds = [(c["version"], c["kind"], c["node"]) for c in data["checkpoints"]]
    assert kinds == [(0, "start", None), (1, "step", "draft"), (2, "input", "review"),
                     (3, "step", "draft")]  # fmt: skip
    assert data["checkpoints"][2]["update"] == {"approved": False, "feedback": "more"}
    assert data["total"] == 4
    page = client.get("/threads/doc/history", params={"offset": 3}, headers=AUTH).json()
    assert [c["version"] for c in page["checkpoints"]] == [3]
    problem(client.get("/threads/ghost/history", headers=AUTH), 404, "thread_not_found")
    problem(client.get("/threads/doc/history?limit=0", headers=AUTH), 422, "invalid_request")


def test_history_pages_back_from_a_version(client: TestClient) -> None:
    start(client)
    client.post(
        "/threads/doc/resume", json={"input": {"approved": False, "feedback": "more"}}, headers=AUTH
    )

    def page(**params: Any) -> dict[str, Any]:
        response = client.get("/threads/doc/history", params=params, headers=AUTH)
        assert response.status_code == 200, response.text
        return dict(response.json())

    newest = page(limit=2, before=4)
    assert [c["version"] for c in newest["checkpoints"]] == [2, 3]
    assert (newest["total"], newest["before"]) == (4, 4)
    older = page(limit=2, before=newest["checkpoints"][0]["version"])
    assert [c["version"] for c in older["checkpoints"]] == [0, 1]
    assert page(limit=2, before=0)["checkpoints"] == []
    assert [c["version"] for c in page(before=3)["checkpoints"]] == [0, 1, 2]
    assert page()["before"] is None
    problem(client.get("/threads/doc/history?before=-1", headers=AUTH), 422, "invalid_request")
    both = client.get("/threads/doc/history?before=2&offset=1", headers=AUTH)
    problem(both, 422, "invalid_request")


def test_history_and_checkpoint_events_show_the_attempts_of_a_retried_subflow(
    store: Store,
) -> None:
    flow = desk()
    with TestClient(create_app([flow], store=store, token=TOKEN)) as client:
        made = client.post("/flows/desk/threads", json={"thread_id": "d"}, headers=AUTH)
        assert made.json()["status"] == "done"
        history = client.get("/threads/d/history", headers=AUTH).json()["checkpoints"]
        rows = [(c["kind"], c["node"], c["status"], c["attempts"]) for c in history]
        assert rows == [
            ("start", None, "pending", 1),
            ("start", "research", "pending", 1),  # the subflow's first attempt
            ("step", "research/search", "pending", 2),  # failed after two of its own
            ("start", "research#2", "pending", 1),  # the second, afresh
            ("step", "research#2/search", "pending", 2),
            ("step", "research", "done", 2),  # the subflow node's own step: two attempts
        ]
        engine = Runner(flow, store=store).history("d")
        assert rows == [(c.kind, c.node, c.status, c.attempts) for c in engine]
        events = []
        with client.stream(
            "GET", "/threads/d/events", headers={**AUTH, "Last-Event-ID": "0"}
        ) as stream:
            for line in stream.iter_lines():
                if line.startswith("data: ") and '"kind"' in line:
                    events.append(json.loads(line.removeprefix("data: ")))
                    if events[-1]["status"] == "done":
                        break
        assert [(e["kind"], e["node"], e["status"], e["attempts"]) for e in events] == rows[1:]


def test_a_step_taken_from_the_node_cache_shows_no_attempts(store: Store) -> None:
    with TestClient(create_app([tickets], store=store, token=TOKEN)) as client:
        for thread in ("first", "again"):
            client.post("/flows/tickets/threads", json={"thread_id": thread}, headers=AUTH)
        response = client.get("/threads/again/history", headers=AUTH)
        assert response.status_code == 200, response.text
        assert [c["attempts"] for c in response.json()["checkpoints"]] == [1, 0]


# -- resume ----------------------------------------------------------------------------------


def test_resume_answers_the_gate(client: TestClient) -> None:
    start(client)
    response = client.post("/threads/doc/resume", json={"input": {"approved": True}}, headers=AUTH)
    assert response.status_code == 200
    data = response.json()
    assert (data["status"], data["gates"], data["state"]["published"]) == ("done", [], True)


def test_resume_with_invalid_input_is_422_naming_each_field_never_echoing_it(
    client: TestClient,
) -> None:
    start(client)
    secret = "my-personal-note-" * 200
    body = problem(
        client.post(
            "/threads/doc/resume",
            json={"input": {"approved": "perhaps", "feedback": secret}},
            headers=AUTH,
        ),
        422,
        "invalid_gate_input",
    )
    assert body["gate"] == "review"
    assert {tuple(e["loc"]) for e in body["errors"]} == {("approved",), ("feedback",)}
    assert all(set(e) == {"loc", "msg", "type"} for e in body["errors"])
    assert "perhaps" not in str(body) and "my-personal-note" not in str(body)
    assert client.get("/threads/doc", headers=AUTH).json()["status"] == "waiting"


@pytest.mark.parametrize("wait", [True, False])
def test_resume_input_is_checked_before_a_background_run_too(
    client: TestClient, wait: bool
) -> None:
    start(client)
    response = client.post(
        "/threads/doc/resume", json={"input": {"approved": 3.5}, "wait": wait}, headers=AUTH
    )
    problem(response, 422, "invalid_gate_input")


def test_resume_in_the_background_answers_202_and_the_run_goes_on(client: TestClient) -> None:
    start(client)
    response = client.post(
        "/threads/doc/resume", json={"input": {"approved": True}, "wait": False}, headers=AUTH
    )
    assert response.status_code == 202
    for _ in range(200):
        if client.get("/threads/doc", headers=AUTH).json()["status"] == "done":
            break
        time.sleep(0.02)
    assert client.get("/threads/doc", headers=AUTH).json()["status"] == "done"


def test_resume_refusals(client: TestClient) -> None:
    start(client)
    problem(
        client.post(
            "/threads/doc/resume",
            json={"input": {"approved": True}, "expected_version": 0},
            headers=AUTH,
        ),
        409,
        "conflict",
    )
    unknown = problem(
        client.post(
            "/threads/doc/resume", json={"input": {"approved": True}, "gate": "x"}, headers=AUTH
        ),
        422,
        "unknown_gate",
    )
    assert unknown["gates"] == ["review"]
    problem(
        client.post("/threads/doc/resume", json={"inputs": {}}, headers=AUTH),
        422,
        "invalid_request",
    )
    problem(client.post("/threads/ghost/resume", json={}, headers=AUTH), 404, "thread_not_found")
    client.post("/threads/doc/resume", json={"input": {"approved": True}}, headers=AUTH)
    for wait in (True, False):
        problem(
            client.post("/threads/doc/resume", json={"wait": wait}, headers=AUTH),
            409,
            "not_waiting",
        )


# -- fork ------------------------------------------------------------------------------------


def test_fork_starts_a_thread_where_the_original_stood(client: TestClient) -> None:
    start(client)
    client.post("/threads/doc/resume", json={"input": {"approved": True}}, headers=AUTH)
    response = client.post("/threads/doc/fork", json={"at": 1}, headers=AUTH)
    assert response.status_code == 201
    data = response.json()
    assert (data["thread_id"], data["status"], data["node"]) == ("doc-fork-1", "waiting", "review")
    named = client.post("/threads/doc/fork", json={"new_thread_id": "again"}, headers=AUTH)
    assert named.json()["status"] == "done"
    assert client.post("/threads/doc/fork", json={}, headers=AUTH).json()["thread_id"] == (
        "doc-fork-2"
    )


def test_fork_refusals(client: TestClient) -> None:
    start(client)
    body = problem(
        client.post("/threads/doc/fork", json={"at": 9}, headers=AUTH), 404, "checkpoint_not_found"
    )
    assert "0 to 1" in body["detail"]
    problem(client.post("/threads/doc/fork", json={"at": -1}, headers=AUTH), 422, "invalid_request")
    problem(
        client.post("/threads/doc/fork", json={"new_thread_id": "doc"}, headers=AUTH),
        409,
        "thread_exists",
    )
    problem(client.post("/threads/ghost/fork", json={}, headers=AUTH), 404, "thread_not_found")


def test_a_version_sent_as_true_or_false_is_refused_not_taken_for_1_or_0(
    client: TestClient,
) -> None:
    start(client)
    for flag in (True, False):
        calls = [
            client.post("/threads/doc/fork", json={"at": flag}, headers=AUTH),
            client.post("/threads/doc/resume",
                        json={"input": {"approved": True}, "expected_version": flag},
                        headers=AUTH),
            client.patch("/threads/doc/state",
                         json={"values": {"topic": "x"}, "reason": "r", "expected_version": flag},
                         headers=AUTH),
        ]  # fmt: skip
        for answer in calls:
            problem(answer, 422, "invalid_request")
    assert client.get("/threads/doc", headers=AUTH).json()["version"] == 1  # nothing written
    forked = client.post("/threads/doc/fork", json={"at": 1.0}, headers=AUTH)  # 1.0 is whole
    assert forked.status_code == 201


# -- update_state ------------------------------------------------------------------------------


def test_update_state_is_an_audited_checkpoint(client: TestClient) -> None:
    start(client)
    response = client.patch(
        "/threads/doc/state",
        json={"values": {"topic": "valves"}, "reason": "wrong topic"},
        headers=AUTH,
    )
    assert response.status_code == 200
    assert response.json()["state"]["topic"] == "valves"
    last = client.get("/threads/doc/history", headers=AUTH).json()["checkpoints"][-1]
    assert (last["kind"], last["actor"], last["reason"]) == ("patch", "admin", "wrong topic")


def test_update_state_as_a_node_moves_where_its_route_goes(client: TestClient) -> None:
    start(client)  # waiting at the review gate
    response = client.patch(
        "/threads/doc/state",
        json={"values": {"approved": True}, "as_node": "review", "reason": "approved by phone"},
        headers=AUTH,
    )
    assert response.status_code == 200
    body = response.json()
    assert (body["node"], body["status"], body["state"]["approved"]) == ("publish", "pending", True)
    resumed = client.post("/threads/doc/resume", json={}, headers=AUTH)
    assert resumed.json()["status"] == "done" and resumed.json()["state"]["published"]
    problem(
        client.patch(
            "/threads/doc/state", json={"as_node": "review", "goto": "draft"}, headers=AUTH
        ),
        422,
        "invalid_state",
    )


def test_update_state_refusals(client: TestClient) -> None:
    start(client)
    problem(
        client.patch("/threads/doc/state", json={"values": {"revision": "x"}}, headers=AUTH),
        422,
        "invalid_update",
    )
    problem(
        client.patch("/threads/doc/state", json={"goto": "nowhere"}, headers=AUTH),
        422,
        "invalid_state",
    )
    stale = {"values": {"revision": 2}, "expected_version": 7}
    problem(client.patch("/threads/doc/state", json=stale, headers=AUTH), 409, "conflict")
    problem(
        client.patch("/threads/doc/state", json={"values": [1]}, headers=AUTH),
        422,
        "invalid_request",
    )
    version = client.get("/threads/doc", headers=AUTH).json()["version"]
    for empty in ({}, {"values": {}}, {"values": {}, "reason": "", "expected_version": version}):
        # A patch that changes nothing wrote a version of its own (every open review page
        # then met a conflict); found by a defect hunt.
        refused = client.patch("/threads/doc/state", json=empty, headers=AUTH)
        assert "changes nothing" in problem(refused, 422, "invalid_request")["detail"]
    assert client.get("/threads/doc", headers=AUTH).json()["version"] == version


# -- delete ------------------------------------------------------------------------------------


def test_delete_removes_the_thread_and_refuses_while_it_runs(
    client: TestClient, store: Store
) -> None:
    start(client)
    with store.lock("doc"):  # as a run holds it
        problem(client.delete("/threads/doc", headers=AUTH), 409, "conflict")
    response = client.delete("/threads/doc", headers=AUTH)
    assert response.status_code == 204 and response.content == b""
    problem(client.get("/threads/doc", headers=AUTH), 404, "thread_not_found")
    problem(client.delete("/threads/doc", headers=AUTH), 404, "thread_not_found")
    start(client)  # the id is free again
    assert client.get("/threads/doc", headers=AUTH).json()["version"] == 1


def test_unknown_routes_and_methods_are_problems_too(client: TestClient) -> None:
    problem(client.get("/nothing", headers=AUTH), 404, "not_found")
    problem(client.put("/threads/doc", headers=AUTH), 405, "method_not_allowed")


def test_a_wrong_method_is_answered_with_the_methods_the_path_takes(client: TestClient) -> None:
    def allowed(response: Any) -> set[str]:
        problem(response, 405, "method_not_allowed")
        return {method.strip() for method in response.headers["Allow"].split(",")}

    # /threads/{id}: flowkit's GET and DELETE, and the LangGraph client API's PATCH beside them
    assert allowed(client.put("/threads/doc", headers=AUTH)) == {"GET", "PATCH", "DELETE"}
    assert allowed(client.post("/flows", headers=AUTH)) == {"GET"}
    # a path two templates fit is the more specific one's: /threads/search is not a thread
    assert allowed(client.put("/threads/search", headers=AUTH)) == {"POST"}
    assert allowed(client.put("/chat/doc", headers=AUTH)) == {"GET"}  # a page (not documented)
