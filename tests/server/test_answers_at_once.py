"""Two requests sent at once on one thread: exactly one is taken, the other hears 409.

A ``wait: false`` answer (what the review page sends) was checked, answered 202 and run in
the background; two sent at once both heard 202, and then one was dropped quietly or answered
the pause the other's run had moved the thread to, which its sender never saw (found by a
defect hunt: an approval of draft 1 published draft 2).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Annotated, Any

import pytest
from fastapi.testclient import TestClient
from pydantic import BaseModel
from serve_common import AUTH, problem

from flowkit import END, Flow, Gate, Runner, append
from flowkit.stores import InputRecord, Store

#: Set to let ``work`` (the node after the first answer) finish.
GO = threading.Event()


class Doc(BaseModel):
    log: Annotated[list[str], append] = []
    approved: bool = False
    confirmed: bool = False


class Review(BaseModel):
    approved: bool


class Confirm(BaseModel):
    confirmed: bool


def work(state: Doc) -> dict[str, Any]:
    assert GO.wait(30), "the test never let the run go on"
    return {"log": [f"worked (approved={state.approved})"]}


FLOW = Flow(
    name="twice",
    state=Doc,
    start="draft",
    nodes={"draft": lambda s: {"log": ["draft"]}, "work": work},
    # The second gate takes the same answer as the first: an answer meant for the first
    # that reached the second would be taken.
    gates={"review": Gate(Review), "confirm": Gate(Review)},
    routes={"draft": "review", "review": "work", "work": "confirm", "confirm": END},
)


@pytest.fixture
def go() -> Iterator[threading.Event]:
    GO.clear()
    yield GO
    GO.set()  # never leave a background run blocked


def answers(store: Store, thread_id: str) -> list[dict[str, Any]]:
    return [r.input for r in store.records(thread_id) if isinstance(r, InputRecord)]


def wait_until(check: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 20
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def waiting_at_review(client: TestClient, thread_id: str) -> int:
    response = client.post("/flows/twice/threads", json={"thread_id": thread_id}, headers=AUTH)
    assert response.status_code == 201, response.text
    data = response.json()
    assert data["gates"][0]["name"] == "review"
    version: int = data["version"]
    return version


def test_a_second_answer_while_the_first_runs_is_refused_not_dropped(
    make_client: Callable[..., TestClient], store: Store, go: threading.Event
) -> None:
    client = make_client(flows=[FLOW])
    waiting_at_review(client, "t")
    first = client.post(
        "/threads/t/resume", json={"input": {"approved": False}, "wait": False}, headers=AUTH
    )
    assert first.status_code == 202
    for wait in (False, True):  # the review page's answer, and a client that waits
        second = client.post(
            "/threads/t/resume", json={"input": {"approved": True}, "wait": wait}, headers=AUTH
        )
        problem(second, 409, "conflict")
    go.set()
    wait_until(lambda: client.get("/threads/t", headers=AUTH).json()["node"] == "confirm")
    assert answers(store, "t") == [{"approved": False}]
    state = client.get("/threads/t", headers=AUTH).json()["state"]
    assert state["log"] == ["draft", "worked (approved=False)"]


def test_a_patch_or_delete_while_a_background_answer_runs_is_refused(
    make_client: Callable[..., TestClient], store: Store, go: threading.Event
) -> None:
    client = make_client(flows=[FLOW])
    waiting_at_review(client, "t")
    accepted = client.post(
        "/threads/t/resume", json={"input": {"approved": True}, "wait": False}, headers=AUTH
    )
    assert accepted.status_code == 202
    patch = {"values": {"approved": False}, "reason": "second thoughts"}
    problem(client.patch("/threads/t/state", json=patch, headers=AUTH), 409, "conflict")
    problem(client.delete("/threads/t", headers=AUTH), 409, "conflict")
    go.set()
    wait_until(lambda: client.get("/threads/t", headers=AUTH).json()["node"] == "confirm")
    assert client.patch("/threads/t/state", json=patch, headers=AUTH).status_code == 200


def test_two_starts_of_one_id_at_once_one_is_refused_as_existing(
    make_client: Callable[..., TestClient], store: Store, go: threading.Event
) -> None:
    flow = Flow(
        name="slow_start",
        state=Doc,
        start="work",
        nodes={"work": work},
        gates={"confirm": Gate(Confirm)},
        routes={"work": "confirm", "confirm": END},
    )
    client = make_client(flows=[flow])
    body = {"thread_id": "s", "wait": False}
    assert client.post("/flows/slow_start/threads", json=body, headers=AUTH).status_code == 202
    for wait in (False, True):
        refused = client.post("/flows/slow_start/threads", json={**body, "wait": wait},
                              headers=AUTH)  # fmt: skip
        problem(refused, 409, "thread_exists")
    go.set()
    wait_until(lambda: client.get("/threads/s", headers=AUTH).json()["status"] == "waiting")
    assert [r.kind for r in store.records("s")].count("start") == 1


BUSY = threading.Event()


def hold_the_worker(state: Doc) -> dict[str, Any]:
    assert BUSY.wait(30), "the test never let the worker go"
    return {}


BLOCKER = Flow(
    name="blocker", state=Doc, start="hold", nodes={"hold": hold_the_worker},
    routes={"hold": END},
)  # fmt: skip


def test_a_queued_answer_never_answers_a_pause_its_sender_did_not_see(
    make_client: Callable[..., TestClient], store: Store, go: threading.Event
) -> None:
    """Another process moves the thread on to a pause taking the same answer while the
    accepted answer waits for a worker: the answer expects the version it was checked at,
    so it writes nothing (it answered the later pause)."""
    go.set()
    BUSY.clear()
    client = make_client(flows=[FLOW, BLOCKER], max_background_runs=1)
    waiting_at_review(client, "t")
    try:
        occupy = client.post(
            "/flows/blocker/threads", json={"thread_id": "busy", "wait": False}, headers=AUTH
        )
        assert occupy.status_code == 202  # its run holds the one worker until BUSY
        queued = client.post(
            "/threads/t/resume", json={"input": {"approved": False}, "wait": False},
            headers=AUTH,
        )  # fmt: skip
        assert queued.status_code == 202
        moved = Runner(FLOW, store=store).resume("t", {"approved": True})  # another process
        assert moved.gates == ("confirm",)
    finally:
        BUSY.set()
    wait_until(lambda: client.get("/threads/busy", headers=AUTH).json()["status"] == "done")
    time.sleep(0.3)  # the queued run has had its turn
    assert answers(store, "t") == [{"approved": True}]
    assert client.get("/threads/t", headers=AUTH).json()["gates"][0]["name"] == "confirm"


def test_two_langgraph_resumes_sent_at_once_one_wins_the_other_ends_in_conflict(
    make_client: Callable[..., TestClient], store: Store, go: threading.Event
) -> None:
    """``multitask_strategy="enqueue"`` (the default) queues the second behind the first; it
    was decided only when its turn came, with the thread at the next pause, and answered it."""
    client = make_client(flows=[FLOW])
    lg = "/langgraph"
    thread_id = client.post(f"{lg}/threads", json={}, headers=AUTH).json()["thread_id"]
    started = client.post(f"{lg}/threads/{thread_id}/runs/wait",
                          json={"assistant_id": "twice", "input": {}}, headers=AUTH)  # fmt: skip
    assert started.json()["__interrupt__"][0]["id"] == "review"
    runs = []
    for approved in (False, True):
        body = {"assistant_id": "twice", "command": {"resume": {"approved": approved}}}
        created = client.post(f"{lg}/threads/{thread_id}/runs", json=body, headers=AUTH)
        assert created.status_code == 200, created.text
        runs.append(created.json()["run_id"])
    go.set()
    first, second = (
        client.get(f"{lg}/threads/{thread_id}/runs/{run}/join", headers=AUTH).json() for run in runs
    )
    assert first["__interrupt__"][0]["id"] == "confirm"
    assert second["__error__"]["error"] == "conflict"
    assert answers(store, thread_id) == [{"approved": False}]
    statuses = [
        client.get(f"{lg}/threads/{thread_id}/runs/{run}", headers=AUTH).json()["status"]
        for run in runs
    ]
    assert statuses == ["success", "error"]
