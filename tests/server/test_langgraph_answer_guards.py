"""The LangGraph client API's answers and time travel, guarded: a checkpoint id of digits
only ASCII ones, every answer audited as flowkit's own routes audit it, and a run decided at
one version refused (409, nothing written) if the thread moved before it ran; the updates a
history shows masked as its values are."""

from __future__ import annotations

from typing import Any

import pytest
import structlog
from fastapi.testclient import TestClient
from pydantic import BaseModel
from serve_common import AUTH, TOKEN

from flowkit import END, Flow
from flowkit.errors import ConflictError
from flowkit.examples.review import flow as review
from flowkit.server import create_app
from flowkit.server.langgraph._models import RunCreate
from flowkit.server.langgraph._plan import execute, plan_run
from flowkit.stores import MemoryStore

LG = "/langgraph"


@pytest.fixture
def client() -> TestClient:
    return TestClient(create_app([review], store=MemoryStore(), token=TOKEN))


def _paused(client: TestClient) -> str:
    """A review thread waiting at its gate, started through the LangGraph API."""
    thread_id: str = client.post(f"{LG}/threads", json={}, headers=AUTH).json()["thread_id"]
    run = {"assistant_id": "review", "input": {"topic": "cats"}}
    client.post(f"{LG}/threads/{thread_id}/runs/wait", json=run, headers=AUTH)
    return thread_id


def _history(client: TestClient, thread_id: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = client.post(
        f"{LG}/threads/{thread_id}/history", json={"limit": 100}, headers=AUTH
    ).json()
    return found


@pytest.mark.parametrize("named", ["²", "١", "1²", "𝟙"])
def test_a_checkpoint_id_of_other_digits_is_a_422(client: TestClient, named: str) -> None:
    thread_id = _paused(client)
    before = _history(client, thread_id)
    calls = [
        ("post", f"/threads/{thread_id}/runs/wait",
         {"assistant_id": "review", "checkpoint_id": named}),
        ("post", f"/threads/{thread_id}/state", {"values": {"topic": "x"}, "checkpoint_id": named}),
        ("post", f"/threads/{thread_id}/history", {"before": named}),
        ("get", f"/threads/{thread_id}/state/{named}", None),
    ]  # fmt: skip
    for method, path, body in calls:
        answer = client.request(method, LG + path, json=body, headers=AUTH)
        assert (answer.status_code, answer.json()["code"]) == (422, "invalid_request"), path
    assert _history(client, thread_id) == before  # nothing written


def test_a_checkpoint_id_past_every_version_is_no_checkpoint_not_a_500(
    client: TestClient,
) -> None:
    """Thousands of digits (past what ``int()`` converts) name a version no thread reaches."""
    thread_id = _paused(client)
    whole = _history(client, thread_id)
    named = "9" * 5000
    page = client.post(f"{LG}/threads/{thread_id}/history", json={"before": named}, headers=AUTH)
    assert page.status_code == 200 and page.json() == whole  # before it: every checkpoint
    past = "9" * 30  # past every version, short enough for a run's checkpoint_id
    for path, body in [
        (f"/threads/{thread_id}/state/checkpoint", {"checkpoint": {"checkpoint_id": named}}),
        (f"/threads/{thread_id}/runs/wait", {"assistant_id": "review", "checkpoint_id": past}),
    ]:
        answer = client.post(LG + path, json=body, headers=AUTH)
        assert (answer.status_code, answer.json()["code"]) == (404, "checkpoint_not_found"), path
    assert _history(client, thread_id) == whole  # nothing written


def test_each_langgraph_answer_leaves_an_audit_line_without_values(client: TestClient) -> None:
    thread_id = _paused(client)
    answer = {"assistant_id": "review", "command": {"resume": {"approved": False,
              "feedback": "SECRET-1"}}}  # fmt: skip
    with structlog.testing.capture_logs() as logs:
        client.post(f"{LG}/threads/{thread_id}/runs/wait", json=answer, headers=AUTH)
        client.post(f"{LG}/threads/{thread_id}/state", json={"values": {"topic": "SECRET-2"}},
                    headers=AUTH)  # fmt: skip
        travel = {"assistant_id": "review", "checkpoint_id": "0"}
        client.post(f"{LG}/threads/{thread_id}/runs/wait", json=travel, headers=AUTH)
        streamed = {**answer, "stream_mode": ["values"]}
        client.post(f"{LG}/threads/{thread_id}/runs/stream", json=streamed, headers=AUTH)
        copy = client.post(f"{LG}/threads/{thread_id}/copy", json={}, headers=AUTH).json()
        client.delete(f"{LG}/threads/{copy['thread_id']}", headers=AUTH)
    lines = [line for line in logs if line["event"] == "thread_answered"]
    assert [(x["principal"], x["action"], x["thread_id"], x["pause"]) for x in lines] == [
        ("admin", "resume", thread_id, "review"),
        ("admin", "update", thread_id, None),
        ("admin", "update", thread_id, None),  # the way back to checkpoint 0
        ("admin", "resume", thread_id, None),  # ...and the run from there: nothing answered
        ("admin", "resume", thread_id, "review"),
        ("admin", "fork", thread_id, None),
        ("admin", "delete", copy["thread_id"], None),
    ]
    assert "SECRET" not in str(logs)


@pytest.mark.parametrize(
    "command", [{"resume": {"approved": True}}, {"update": {"topic": "owls"}, "resume": None}]
)
def test_a_run_decided_before_the_thread_moved_is_refused(
    client: TestClient, command: dict[str, Any]
) -> None:
    thread_id = _paused(client)
    app: Any = client.app
    server, registry = app.state.flowkit, app.state.flowkit_langgraph
    command = {key: value for key, value in command.items() if value is not None}
    body = RunCreate(assistant_id="review", command=command)
    decided = plan_run(server, registry, "admin", thread_id, body)  # at the pause, version 1
    travel = {"assistant_id": "review", "checkpoint_id": "0"}  # meanwhile: back to the start
    moved = client.post(f"{LG}/threads/{thread_id}/runs/wait", json=travel, headers=AUTH)
    assert moved.json()["__interrupt__"] == [{"value": None, "id": "review"}]
    before = _history(client, thread_id)
    with pytest.raises(ConflictError):  # a 409 `conflict`
        execute(decided)
    assert _history(client, thread_id) == before  # neither the answer nor the update written


class Vault(BaseModel):
    api_key: str = ""
    password: str = ""


class Login(BaseModel):
    password: str


def _connect(state: Vault) -> dict[str, str]:
    return {"api_key": "sk-SECRET-KEY-1"}


vault = Flow(name="vault", state=Vault, start="connect", nodes={"connect": _connect},
             gates={"login": Login}, routes={"connect": "login", "login": END})  # fmt: skip


def test_history_writes_are_masked_as_the_values_are() -> None:
    client = TestClient(create_app([vault], store=MemoryStore(), token=TOKEN))
    thread_id = client.post(f"{LG}/threads", json={}, headers=AUTH).json()["thread_id"]
    run = {"assistant_id": "vault", "input": {}}
    client.post(f"{LG}/threads/{thread_id}/runs/wait", json=run, headers=AUTH)
    answer = {"assistant_id": "vault", "command": {"resume": {"password": "SECRET-PW-2"}}}
    client.post(f"{LG}/threads/{thread_id}/runs/wait", json=answer, headers=AUTH)
    history = _history(client, thread_id)
    writes = {h["metadata"]["source"]: h["metadata"]["writes"] for h in history}
    assert set(writes["step"]["connect"]) == {"api_key"}  # which fields: kept
    assert set(writes["input"]["login"]) == {"password"}
    assert "SECRET" not in str(history)


def test_a_checkpoint_of_another_thread_is_not_found_here(client: TestClient) -> None:
    thread_id, other = _paused(client), _paused(client)
    theirs = _history(client, other)[-1]["checkpoint"]  # version 0, of the other thread
    before = _history(client, thread_id)
    calls = [
        ("post", f"/threads/{thread_id}/runs/wait",
         {"assistant_id": "review", "checkpoint": theirs}),
        ("post", f"/threads/{thread_id}/runs/wait",
         {"assistant_id": "review", "config": {"configurable": theirs}}),
        ("post", f"/threads/{thread_id}/state", {"values": {"topic": "x"}, "checkpoint": theirs}),
        ("post", f"/threads/{thread_id}/state/checkpoint", {"checkpoint": theirs}),
        ("post", f"/threads/{thread_id}/history", {"before": theirs}),
    ]  # fmt: skip
    for method, path, body in calls:
        answer = client.request(method, LG + path, json=body, headers=AUTH)
        assert (answer.status_code, answer.json()["code"]) == (404, "checkpoint_not_found"), body
        assert other not in answer.text  # the other thread is not named
    assert _history(client, thread_id) == before  # nothing written
    config = {"configurable": {"thread_id": other}}  # a config naming no checkpoint: no travel
    run = {"assistant_id": "review", "config": config}
    again = client.post(f"{LG}/threads/{thread_id}/runs/wait", json=run, headers=AUTH)
    assert again.json()["__interrupt__"] == [{"value": None, "id": "review"}]
    ours = {**before[-1]["checkpoint"]}  # this thread's own: found
    state = client.post(f"{LG}/threads/{thread_id}/state/checkpoint", json={"checkpoint": ours},
                        headers=AUTH)  # fmt: skip
    assert state.json()["checkpoint"] == ours


def test_a_single_interrupt_may_be_answered_by_its_id(client: TestClient) -> None:
    """``Command(resume={interrupt_id: value})`` names the interrupt, as LangGraph takes it
    for one or several; for one it was taken as the answer itself and refused (422)."""
    thread_id = _paused(client)
    run = {"assistant_id": "review", "command": {"resume": {"review": {"approved": True}}}}
    out = client.post(f"{LG}/threads/{thread_id}/runs/wait", json=run, headers=AUTH)
    assert out.status_code == 200, out.text
    assert out.json()["approved"] is True
