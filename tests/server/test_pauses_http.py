"""Pauses over HTTP: the thread state lists each open pause with its payload, answers address
pauses by id (several in one call), a bare answer with several open is refused, each answer
is validated against its pause's model, and checkpoint events and the WebSocket carry the
payloads, redacted as the state is."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from pause_flows import PAUSE_FLOWS
from serve_common import AUTH, problem

from flowkit.stores import JsonFileStore, MemoryStore, Store


@pytest.fixture(params=["memory", "jsonfile", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    if request.param == "memory":
        yield MemoryStore()
    elif request.param == "postgres":
        from _pg import fresh_schema, require_postgres

        require_postgres()
        from flowkit.stores.postgres import PostgresStore

        with fresh_schema() as (url, schema), PostgresStore(url, schema=schema) as pg_store:
            yield pg_store
    else:
        with JsonFileStore(tmp_path / "store", fsync=False) as file_store:
            yield file_store


@pytest.fixture
def client(make_client: Callable[..., TestClient]) -> TestClient:
    return make_client(flows=PAUSE_FLOWS)


def start(client: TestClient, flow: str, thread: str, **body: Any) -> dict[str, Any]:
    response = client.post(
        f"/flows/{flow}/threads", json={"thread_id": thread, **body}, headers=AUTH
    )
    assert response.status_code == 201, response.text
    data: dict[str, Any] = response.json()
    return data


def resume(client: TestClient, thread: str, **body: Any) -> Any:
    return client.post(f"/threads/{thread}/resume", json=body, headers=AUTH)


def pauses(data: dict[str, Any]) -> dict[str, Any]:
    return {pause["id"]: pause["payload"] for pause in data["pauses"]}


def finished(client: TestClient, thread: str) -> dict[str, Any]:
    """The thread once a background run has finished it (done or failed)."""
    for _ in range(1500):
        data: dict[str, Any] = client.get(f"/threads/{thread}", headers=AUTH).json()
        if data["status"] in ("done", "failed"):
            return data
        time.sleep(0.02)
    raise AssertionError(f"thread {thread} did not finish")


# -- the state lists each open pause with its payload ----------------------------------------


def test_a_gate_payload_comes_with_the_thread_state(client: TestClient) -> None:
    data = start(client, "drafts", "d-1")
    assert data["status"] == "waiting" and data["node"] == "review"
    ((pause, payload),) = pauses(data).items()
    assert pause == "review"
    assert payload["draft"].startswith("Release notes <img")
    assert payload["options"] == ["approve", "reject"]
    (gate,) = data["gates"]
    assert gate["name"] == "review" and gate["description"] == "Approve the draft"
    assert gate["input_schema"]["required"] == ["approved"]
    assert client.get("/threads/d-1", headers=AUTH).json()["pauses"] == data["pauses"]


def test_a_node_that_asks_is_a_pause_with_its_question_and_schema(client: TestClient) -> None:
    data = start(client, "interviews", "i-1")
    assert pauses(data) == {"interview": {"question": "What is your name?", "asked": 1}}
    (gate,) = data["gates"]
    assert gate["name"] == "interview" and gate["input_schema"]["required"] == ["text"]
    data = resume(client, "i-1", input={"text": "Ann"}).json()
    assert pauses(data) == {"interview": {"question": "Which city?", "asked": 2}}
    assert data["state"]["answers"] == ["Ann"]
    data = resume(client, "i-1", input={"text": "Kyoto"}, gate="interview").json()
    assert data["status"] == "done" and data["pauses"] == [] and data["gates"] == []
    assert data["state"]["answers"] == ["Ann", "Kyoto"]


def test_each_map_call_that_asks_is_a_pause_by_id(client: TestClient) -> None:
    data = start(client, "checks", "c-1")
    assert data["status"] == "waiting" and data["node"] == "check"
    assert pauses(data) == {
        "check[0]": {"item": 1, "question": "Is item 1 fine?"},
        "check[2]": {"item": 3, "question": "Is item 3 fine?"},
        "check[4]": {"item": 5, "question": "Is item 5 fine?"},
    }
    assert [g["name"] for g in data["gates"]] == ["check[0]", "check[2]", "check[4]"]
    assert all(g["input_schema"]["required"] == ["ok"] for g in data["gates"])


def test_gate_branches_of_a_parallel_and_a_gate_inside_a_subflow(client: TestClient) -> None:
    data = start(client, "pairs", "p-1")
    assert pauses(data) == {"legal": {"clause": "7.2"}, "tech": None}
    data = resume(client, "p-1", input={"tech": True}, gate="tech").json()
    assert pauses(data) == {"legal": {"clause": "7.2"}}
    data = start(client, "nested", "n-1")
    assert pauses(data) == {"review/approve": {"draft": "parent draft (polished)"}}
    assert data["gates"][0]["input_schema"]["required"] == ["approved"]
    data = resume(client, "n-1", input={"approved": True}, gate="review/approve").json()
    assert data["status"] == "done" and data["state"]["approved"] is True


# -- answers by id, several at once, a bare answer refused -----------------------------------


def test_answers_address_map_calls_by_id_and_several_go_in_one_call(client: TestClient) -> None:
    start(client, "checks", "c-2")
    data = resume(client, "c-2", input={"ok": False, "note": "!"}, gate="check[2]").json()
    assert data["status"] == "waiting"
    first = data["version"]
    assert list(pauses(data)) == ["check[0]", "check[4]"]
    both = {"check[0]": {"ok": True}, "check[4]": {"ok": True, "note": "?"}}
    data = resume(client, "c-2", input=both).json()
    assert data["status"] == "done" and data["pauses"] == []
    assert data["state"]["results"] == ["ok", "auto2", "no!", "auto4", "ok?", "auto6"]
    history = client.get("/threads/c-2/history", headers=AUTH).json()["checkpoints"]
    # Each answer is a checkpoint of its own; the last one lets the Map's join run.
    assert [(c["kind"], c["status"]) for c in history if c["version"] >= first] == [
        ("item", "waiting"), ("item", "waiting"), ("item", "pending"), ("join", "done")
    ]  # fmt: skip


@pytest.mark.parametrize("wait", [True, False])
def test_a_bare_answer_while_several_pauses_are_open_is_refused(
    client: TestClient, wait: bool
) -> None:
    before = start(client, "checks", "c-3")
    body = problem(resume(client, "c-3", input={"ok": True}, wait=wait), 409, "not_waiting")
    assert "check[0]" in body["detail"] and "check[4]" in body["detail"]
    after = client.get("/threads/c-3", headers=AUTH).json()
    assert after["version"] == before["version"] and after["pauses"] == before["pauses"]


@pytest.mark.parametrize("wait", [True, False])
def test_each_answer_is_validated_against_its_pause_model(client: TestClient, wait: bool) -> None:
    before = start(client, "checks", "c-4")
    answers = {"check[0]": {"ok": True}, "check[2]": {"ok": "perhaps"}}
    body = problem(resume(client, "c-4", input=answers, wait=wait), 422, "invalid_gate_input")
    assert body["gate"] == "check[2]"
    assert [e["loc"] for e in body["errors"]] == [["ok"]]
    assert "perhaps" not in json.dumps(body)  # never the input itself
    assert client.get("/threads/c-4", headers=AUTH).json()["version"] == before["version"]


@pytest.mark.parametrize("wait", [True, False])
def test_a_pause_that_is_not_open_or_not_in_the_flow_is_refused(
    client: TestClient, wait: bool
) -> None:
    start(client, "checks", "c-5")
    resume(client, "c-5", input={"ok": True}, gate="check[0]")
    problem(
        resume(client, "c-5", input={"ok": True}, gate="check[0]", wait=wait), 409, "not_waiting"
    )
    body = problem(
        resume(client, "c-5", input={"ok": True}, gate="chek", wait=wait), 422, "unknown_gate"
    )
    assert "chek" in body["detail"]


def test_answers_in_the_background_are_checked_first_then_run(client: TestClient) -> None:
    start(client, "checks", "c-6")
    answers = {"check[0]": {"ok": True}, "check[2]": {"ok": True}, "check[4]": {"ok": False}}
    response = resume(client, "c-6", input=answers, wait=False)
    assert response.status_code == 202
    data = finished(client, "c-6")
    assert data["status"] == "done"
    assert data["state"]["results"] == ["ok", "auto2", "ok", "auto4", "no", "auto6"]


# -- payloads are redacted as the state is ---------------------------------------------------


def test_payloads_are_masked_as_the_state_is(make_client: Callable[..., TestClient]) -> None:
    client = make_client(flows=PAUSE_FLOWS, open_reads=True)
    start(client, "drafts", "d-2")
    principal = pauses(client.get("/threads/d-2", headers=AUTH).json())["review"]
    assert principal["api_key"] == "***"  # a secret, masked for everyone
    assert principal["contact"] == "mail sato@example.com"
    anonymous = client.get("/threads/d-2").json()
    assert "sato@example.com" not in json.dumps(anonymous)
    assert pauses(anonymous)["review"]["api_key"] == "***"
    assert pauses(anonymous)["review"]["options"] == ["approve", "reject"]


def test_a_redact_function_that_drops_the_payloads_hides_them(
    make_client: Callable[..., TestClient],
) -> None:
    def state_fields_only(flow: str, state: Any, principal: str | None) -> dict[str, Any]:
        return {key: value for key, value in state.items() if not key.startswith("__")}

    client = make_client(flows=PAUSE_FLOWS, redact=state_fields_only)
    data = start(client, "drafts", "d-3")
    assert data["pauses"] == [{"id": "review", "payload": None}]
    assert "__pauses__" not in data["state"]


# -- events ----------------------------------------------------------------------------------


def sse_checkpoints(client: TestClient, thread: str, until_version: int) -> list[dict[str, Any]]:
    found = []
    with client.stream(
        "GET", f"/threads/{thread}/events", headers={**AUTH, "Last-Event-ID": "0"}
    ) as stream:
        event = ""
        for line in stream.iter_lines():
            if line.startswith("event: "):
                event = line.removeprefix("event: ")
            elif line.startswith("data: ") and event == "checkpoint":
                found.append(json.loads(line.removeprefix("data: ")))
                if found[-1]["version"] >= until_version:
                    break
    return found


def test_checkpoint_events_carry_each_question_as_it_is_journaled(client: TestClient) -> None:
    data = start(client, "checks", "c-7")
    events = sse_checkpoints(client, "c-7", data["version"])
    # Each Map call's question is a checkpoint of its own, as it is asked (the other calls
    # go on); the last one says the node waits, and for which pauses.
    asked = [(p["id"], p["payload"]["item"]) for e in events for p in e.get("pauses", [])]
    assert sorted(asked) == [("check[0]", 1), ("check[2]", 3), ("check[4]", 5)]
    assert events[-1]["status"] == "waiting"
    assert events[-1]["gates"] == ["check[0]", "check[2]", "check[4]"]
    data = start(client, "interviews", "i-3")
    (step,) = sse_checkpoints(client, "i-3", data["version"])
    assert step["pauses"] == [
        {"id": "interview", "payload": {"question": "What is your name?", "asked": 1}}
    ]
    data = start(client, "nested", "n-2")
    inside = sse_checkpoints(client, "n-2", data["version"])[-1]
    assert inside["pauses"] == [
        {"id": "review/approve", "payload": {"draft": "parent draft (polished)"}}
    ]


def test_checkpoint_events_mask_payloads_as_for_an_anonymous_reader(client: TestClient) -> None:
    data = start(client, "drafts", "d-4")
    (event,) = [e for e in sse_checkpoints(client, "d-4", data["version"]) if "pauses" in e]
    ((pause),) = event["pauses"]
    assert pause["id"] == "review" and pause["payload"]["api_key"] == "***"
    assert "sato@example.com" not in json.dumps(event)  # one event for every subscriber
    assert pause["payload"]["options"] == ["approve", "reject"]


def test_the_websocket_tells_a_principal_each_question_a_node_asks(client: TestClient) -> None:
    start(client, "interviews", "i-2")
    with client.websocket_connect("/threads/i-2/ws", headers=AUTH) as socket:
        socket.send_text("Ann")  # the one open pause takes a text: the node's question
        frame = socket.receive_json()
    assert frame == {
        "type": "pause",
        "id": "interview",
        "payload": {"question": "Which city?", "asked": 2},
    }


def test_text_over_the_websocket_is_refused_while_several_pauses_are_open(
    client: TestClient,
) -> None:
    start(client, "checks", "c-8")
    with client.websocket_connect("/threads/c-8/ws", headers=AUTH) as socket:
        socket.send_text("yes")
        frame = socket.receive_json()
    assert frame["type"] == "error" and frame["code"] == "not_waiting"
    assert "`check[0]`, `check[2]`, `check[4]`" in frame["detail"]


# -- the published document ------------------------------------------------------------------


def test_the_openapi_document_describes_pauses(client: TestClient) -> None:
    document = client.get("/openapi.json").json()
    schemas = document["components"]["schemas"]
    state = schemas["ThreadState"]["properties"]
    assert state["pauses"]["items"] == {"$ref": "#/components/schemas/PauseInfo"}
    assert set(schemas["PauseInfo"]["properties"]) == {"id", "payload"}
    assert "Map call" in schemas["ResumeRequest"]["properties"]["gate"]["description"]
