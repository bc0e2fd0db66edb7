"""Who answered a pause is in the thread's history (issue #26): every way the server answers
(``POST /threads/{id}/resume``, waiting or not; the chat page's socket; a LangGraph
``Command(resume=...)``, run or streamed) journals the principal as the answer's ``actor``, and
``GET /threads/{id}/history`` names each one. The server's own token answers as ``admin``."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
import structlog
from fastapi.testclient import TestClient
from pydantic import BaseModel
from serve_common import AUTH, TOKEN
from serve_flows import chat

from flowkit import END, Flow, Gate, Parallel
from flowkit.foundation._token_hash import hash_token
from flowkit.server import create_app, load_users
from flowkit.stores import MemoryStore


class Signoff(BaseModel):
    legal_ok: bool = False
    tech_ok: bool = False


class Legal(BaseModel):
    legal_ok: bool


class Tech(BaseModel):
    tech_ok: bool


signoff = Flow(
    name="signoff",
    state=Signoff,
    start="review",
    nodes={"review": Parallel({"legal": Gate(Legal), "tech": Gate(Tech)})},
    routes={"review": END},
)
approval = Flow(
    name="approval",
    state=Signoff,
    start="legal",
    nodes={},
    gates={"legal": Legal},
    routes={"legal": END},
)

PEOPLE = {
    "rita": (["reviewer"], "rita-token-0123456789abcdef"),
    "ada": (["admin"], "ada-token-0123456789abcdef"),
}


def bearer(who: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {PEOPLE[who][1]}"}


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    path = tmp_path_factory.mktemp("users") / "users.toml"
    path.write_text(
        "".join(
            f'[users.{name}]\ntoken_hash = "{hash_token(token, n=2**10, r=8, p=1)}"\n'
            f'roles = ["{roles[0]}"]\n'
            for name, (roles, token) in PEOPLE.items()
        )
    )
    path.chmod(0o600)
    app = create_app(
        [signoff, approval, chat],
        store=MemoryStore(),
        token=TOKEN,
        authenticate=load_users(path),
        timer_poll_s=None,
    )
    with TestClient(app) as opened:
        yield opened


def started(client: TestClient, flow: str, thread: str) -> None:
    made = client.post(f"/flows/{flow}/threads", json={"thread_id": thread}, headers=AUTH)
    assert made.status_code == 201, made.text


def answers(client: TestClient, thread: str) -> list[tuple[str, str | None, str | None]]:
    """(kind, node, actor) of each answer in the thread's history."""
    page = client.get(f"/threads/{thread}/history", headers=AUTH).json()["checkpoints"]
    return [(c["kind"], c["node"], c["actor"]) for c in page if c["kind"] in ("input", "item")]


def test_two_people_answer_the_gates_of_one_thread_and_history_names_each(
    client: TestClient,
) -> None:
    started(client, "signoff", "two")
    for who, gate, value in (("rita", "legal", {"legal_ok": True}),
                             ("ada", "tech", {"tech_ok": True})):  # fmt: skip
        answered = client.post(
            "/threads/two/resume", json={"gate": gate, "input": value}, headers=bearer(who)
        )
        assert answered.status_code == 200, answered.text
    assert answers(client, "two") == [("item", "review", "rita"), ("item", "review", "ada")]


def test_the_servers_own_token_answers_as_admin(client: TestClient) -> None:
    started(client, "approval", "by-token")
    client.post("/threads/by-token/resume", json={"input": {"legal_ok": True}}, headers=AUTH)
    assert answers(client, "by-token") == [("input", "legal", "admin")]


def test_an_answer_that_runs_on_in_the_background_names_its_answerer(
    client: TestClient,
) -> None:
    started(client, "approval", "background")
    accepted = client.post(
        "/threads/background/resume",
        json={"input": {"legal_ok": True}, "wait": False},
        headers=bearer("rita"),
    )
    assert accepted.status_code == 202, accepted.text
    deadline = time.monotonic() + 10
    while not answers(client, "background") and time.monotonic() < deadline:
        time.sleep(0.02)
    assert answers(client, "background") == [("input", "legal", "rita")]


def test_an_answer_typed_on_the_chat_page_names_its_answerer(client: TestClient) -> None:
    started(client, "chat", "talk")
    with client.websocket_connect("/threads/talk/ws", headers=bearer("rita")) as socket:
        socket.send_text("hello")
        while socket.receive_json()["type"] != "pause":
            pass
    assert answers(client, "talk") == [("input", "say", "rita")]


def test_an_answer_typed_on_the_chat_page_leaves_an_audit_line(client: TestClient) -> None:
    started(client, "chat", "talk-audited")
    socket = client.websocket_connect("/threads/talk-audited/ws", headers=bearer("rita"))
    with structlog.testing.capture_logs() as logs, socket as ws:
        ws.send_text("SECRET-typed")
        while ws.receive_json()["type"] != "pause":
            pass
    lines = [line for line in logs if line["event"] == "thread_answered"]
    assert [(x["principal"], x["action"], x["thread_id"], x["pause"]) for x in lines] == [
        ("rita", "resume", "talk-audited", "say")
    ]
    assert "SECRET" not in str(logs)


@pytest.mark.parametrize("how", ["wait", "stream"])
def test_a_langgraph_command_resume_names_its_answerer(client: TestClient, how: str) -> None:
    thread = f"lg-{how}"
    started(client, "approval", thread)
    body: dict[str, Any] = {"assistant_id": "approval", "command": {"resume": {"legal_ok": True}}}
    ran = client.post(f"/langgraph/threads/{thread}/runs/{how}", json=body, headers=bearer("ada"))
    assert ran.status_code == 200, ran.text
    assert answers(client, thread) == [("input", "legal", "ada")]


def test_the_token_never_appears_as_an_actor(client: TestClient) -> None:
    started(client, "approval", "no-secret")
    client.post("/threads/no-secret/resume", json={"input": {"legal_ok": True}}, headers=AUTH)
    history = client.get("/threads/no-secret/history", headers=AUTH).text
    assert TOKEN not in history and all(t not in history for _, t in PEOPLE.values())
