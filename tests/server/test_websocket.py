"""The WebSocket in the roundtable origin's protocol: message and status frames out, a person's
text in as the answer to the waiting gate."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
from fastapi.testclient import TestClient
from serve_common import AUTH, TOKEN
from starlette.testclient import WebSocketDenialResponse
from starlette.websockets import WebSocketDisconnect


def frames_until_message(socket: Any) -> list[dict[str, Any]]:
    found = []
    while True:
        frame: dict[str, Any] = socket.receive_json()
        found.append(frame)
        if frame["type"] in ("message", "error"):
            return found


def test_text_answers_the_gate_and_characters_reply_in_the_origins_shapes(
    client: TestClient,
) -> None:
    client.post("/flows/chat/threads", json={"thread_id": "talk"}, headers=AUTH)
    with client.websocket_connect("/threads/talk/ws", headers=AUTH) as socket:
        socket.send_text("hello there")
        frames = frames_until_message(socket)
        assert frames[-1] == {
            "type": "message",
            "speaker": "LUMINA",
            "text": "you said: hello there",
        }
        for frame in frames[:-1]:
            assert set(frame) == {"type", "character", "status"} and frame["type"] == "status"
        socket.send_text('{"type": "message", "text": "again"}')  # JSON works too
        assert frames_until_message(socket)[-1]["text"] == "you said: again"
    state = _settled(client, "/threads/talk")["state"]  # the reply is emitted before its commit
    assert [m["text"] for m in state["messages"]] == [
        "hello there", "you said: hello there", "again", "you said: again"
    ]  # fmt: skip


def test_a_browser_authenticates_with_a_first_frame(client: TestClient) -> None:
    client.post("/flows/chat/threads", json={"thread_id": "talk"}, headers=AUTH)
    with client.websocket_connect("/threads/talk/ws") as socket:
        socket.send_json({"type": "auth", "token": TOKEN})
        socket.send_text("hi")
        assert frames_until_message(socket)[-1]["text"] == "you said: hi"


@pytest.mark.parametrize("first", ['{"type": "auth", "token": "wrong"}', "hello", "{}"])
def test_without_a_valid_token_the_socket_says_why_and_closes(
    client: TestClient, first: str
) -> None:
    client.post("/flows/chat/threads", json={"thread_id": "talk"}, headers=AUTH)
    with client.websocket_connect("/threads/talk/ws") as socket:
        socket.send_text(first)
        assert socket.receive_json()["code"] == "unauthorized"
        with pytest.raises(WebSocketDisconnect) as closed:
            socket.receive_json()
        assert closed.value.code == 4401


def test_a_binary_first_frame_is_refused_like_a_wrong_token(client: TestClient) -> None:
    client.post("/flows/chat/threads", json={"thread_id": "talk"}, headers=AUTH)
    with client.websocket_connect("/threads/talk/ws") as socket:
        socket.send_bytes(b"\xff\x00 not text")
        assert socket.receive_json()["code"] == "unauthorized"
        with pytest.raises(WebSocketDisconnect) as closed:
            socket.receive_json()
        assert closed.value.code == 4401


@pytest.mark.parametrize(
    ("frame", "code"),
    [
        (b"\xff\xfe not text", "bad_request"),
        (b"hello in bytes", "bad_request"),
        # Too deep to read as JSON: taken as typed text, longer than the gate takes.
        ('{"text": ' * 50_000 + '"hi"' + "}" * 50_000, "invalid_gate_input"),
    ],
    ids=["binary, not UTF-8", "binary", "JSON nested past the parser's limit"],
)
def test_a_frame_the_socket_cannot_read_is_answered_and_the_socket_stays_open(
    client: TestClient, frame: str | bytes, code: str
) -> None:
    client.post("/flows/chat/threads", json={"thread_id": "talk"}, headers=AUTH)
    with client.websocket_connect("/threads/talk/ws", headers=AUTH) as socket:
        if isinstance(frame, bytes):
            socket.send_bytes(frame)
        else:
            socket.send_text(frame)
        reply = frames_until_message(socket)[-1]
        assert (reply["type"], reply["code"]) == ("error", code)
        socket.send_text("still here?")
        assert frames_until_message(socket)[-1]["text"] == "you said: still here?"


def test_a_wrong_header_is_refused_before_the_socket_opens(client: TestClient) -> None:
    with (
        pytest.raises((WebSocketDisconnect, WebSocketDenialResponse)),
        client.websocket_connect("/threads/talk/ws", headers={"Authorization": "Bearer no"}),
    ):
        pass


def test_anonymous_readers_may_watch_but_not_speak(make_client: Callable[..., TestClient]) -> None:
    client = make_client(open_reads=True)
    client.post("/flows/chat/threads", json={"thread_id": "talk"}, headers=AUTH)
    with client.websocket_connect("/threads/talk/ws") as socket:
        socket.send_text("let me in")
        assert socket.receive_json() == {
            "type": "error",
            "code": "unauthorized",
            "detail": "Send `Authorization: Bearer <token>` to change threads.",
        }


def test_under_open_reads_the_documented_auth_frame_lets_the_socket_speak_and_hear(
    make_client: Callable[..., TestClient],
) -> None:
    """With open reads a socket starts anonymous; the auth frame a browser sends first was
    ignored, so its valid token was told it was unauthorised (found by a defect hunt)."""
    client = make_client(open_reads=True)
    client.post("/flows/chat/threads", json={"thread_id": "talk"}, headers=AUTH)
    with client.websocket_connect("/threads/talk/ws") as socket:
        socket.send_json({"type": "auth", "token": "wrong"})
        assert socket.receive_json()["code"] == "unauthorized"
        socket.send_text("let me in")
        assert socket.receive_json()["code"] == "unauthorized"  # still anonymous
        socket.send_json({"type": "auth", "token": TOKEN})
        socket.send_text("hi")
        assert frames_until_message(socket)[-1]["text"] == "you said: hi"


def test_errors_come_back_as_frames(client: TestClient) -> None:
    client.post("/flows/review/threads", json={"thread_id": "doc"}, headers=AUTH)
    with client.websocket_connect("/threads/doc/ws", headers=AUTH) as socket:
        socket.send_text("looks good")  # the review gate needs `approved` too
        error = socket.receive_json()
        assert (error["type"], error["code"]) == ("error", "invalid_gate_input")
    with client.websocket_connect("/threads/ghost/ws", headers=AUTH) as socket:
        assert socket.receive_json()["code"] == "thread_not_found"


def test_the_roundtable_workflow_talks_over_the_socket(store: Any, tmp_path: Any) -> None:
    """The real roundtable (its shipped three-character table, scripted LLMs): the person's
    text starts a round; each character's message arrives in the origin's shape."""
    from flowkit.roundtable.demo import REPLIES, demo_llms
    from flowkit.roundtable.logs import RoundLogs
    from flowkit.roundtable.workflow import build_flow
    from flowkit.server import create_app

    logs = RoundLogs(conversation_dir=tmp_path / "talk", operation_dir=tmp_path / "ops")
    table = build_flow("trio-en", llms=demo_llms("en"), logs=logs)
    with TestClient(create_app([table], store=store, token=TOKEN)) as client:
        made = client.post("/flows/roundtable/threads", json={"thread_id": "t"}, headers=AUTH)
        assert made.json()["gates"][0]["name"] == "person"
        view = client.get("/threads/t/view", headers=AUTH).json()
        assert (view["kind"], view["input_field"]) == ("chat", "text")
        with client.websocket_connect("/threads/t/ws", headers=AUTH) as socket:
            socket.send_text(REPLIES["en"]["messages"][0])
            speakers: list[str] = []
            statuses: set[str] = set()
            while len(speakers) < 3:
                frame = socket.receive_json()
                assert frame["type"] in ("message", "status"), frame
                if frame["type"] == "message":
                    assert frame["text"] and set(frame) == {"type", "speaker", "text"}
                    speakers.append(frame["speaker"])
                else:
                    assert set(frame) == {"type", "character", "status"}
                    statuses.add(frame["status"])
        assert len(set(speakers)) == 3  # each character spoke once in the round
        assert statuses <= {"THINKING", "IDLE", "ACTIVE"}
        # The last character's message is an event its node emits before its step, and the
        # round's return to the person, are committed: wait for the run to settle.
        after = _settled(client, "/threads/t")
        assert after["status"] == "waiting" and after["gates"][0]["name"] == "person"


def _settled(client: TestClient, path: str, wait_s: float = 60.0) -> Any:
    """The thread at ``path`` once its run is no longer going on (or after ``wait_s``)."""
    deadline = time.monotonic() + wait_s
    while True:
        thread = client.get(path, headers=AUTH).json()
        if thread["status"] != "pending" or time.monotonic() > deadline:
            return thread
        time.sleep(0.05)
