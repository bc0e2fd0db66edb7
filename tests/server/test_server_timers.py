"""The server fires timers: while the app runs, the due timers of every served flow fire every
``timer_poll_s`` seconds (the checkpoint events and the thread's state show the move), the
loop stops with the app, and a server that can change nothing fires nothing."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient
from serve_common import AUTH

from flowkit import Flow, Runner
from flowkit.errors import ServerConfigError
from flowkit.server import create_app
from flowkit.stores import Store
from flowkit.workflows import load_flow

FLOW = load_flow(f"{__file__.rsplit('/', 2)[0]}/flows/short_deadline.py:flow")
START = datetime(2026, 5, 4, 10, 0, tzinfo=UTC)


class Clock:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> datetime:
        return self.now


def clocked(clock: Clock) -> Callable[[Flow, Store], Runner[Any]]:
    return lambda flow, store: Runner(flow, store=store, clock=clock)


def settled(client: TestClient, thread: str, status: str) -> dict[str, Any]:
    deadline = time.monotonic() + 30
    while True:
        data: dict[str, Any] = client.get(f"/threads/{thread}", headers=AUTH).json()
        if data["status"] == status or time.monotonic() > deadline:
            return data
        time.sleep(0.01)


def test_a_deadline_passing_while_the_server_runs_fires_and_shows(
    make_client: Callable[..., TestClient],
) -> None:
    clock = Clock()
    client = make_client(flows=[FLOW], runner_factory=clocked(clock), timer_poll_s=0.02)
    created = client.post("/flows/short_deadline/threads", json={"thread_id": "t"}, headers=AUTH)
    assert created.status_code == 201, created.text
    assert settled(client, "t", "waiting")["status"] == "waiting"
    clock.now += timedelta(seconds=1)
    done = settled(client, "t", "done")
    assert done["status"] == "done" and done["state"]["chased"] == 1
    kinds = [
        c["kind"] for c in client.get("/threads/t/history", headers=AUTH).json()["checkpoints"]
    ]
    assert kinds.count("timer") == 1


def test_a_server_that_cannot_change_threads_fires_no_timers(
    make_client: Callable[..., TestClient], store: Store
) -> None:
    clock = Clock()
    Runner(FLOW, store=store, clock=clock).start("t")
    clock.now += timedelta(days=1)
    client = make_client(
        flows=[FLOW], runner_factory=clocked(clock), timer_poll_s=0.01, token=None,
        open_reads=True,
    )  # fmt: skip
    time.sleep(0.1)  # several polls' worth: none may fire
    assert client.get("/threads/t").json()["status"] == "waiting"


def test_the_timer_loop_stops_with_the_app(store: Store) -> None:
    clock = Clock()
    app = create_app([FLOW], store=store, token="0123456789abcdefXYZ", timer_poll_s=0.01)
    with TestClient(app):
        pass
    Runner(FLOW, store=store, clock=clock).start("t")
    clock.now += timedelta(days=1)
    time.sleep(0.05)  # the app is gone: nothing fires any more
    assert Runner(FLOW, store=store, clock=clock).get_state("t").waiting


@pytest.mark.parametrize("poll", [0, -1, float("inf"), "2", True])
def test_a_timer_poll_that_is_no_positive_time_is_refused(poll: Any, store: Store) -> None:
    with pytest.raises(ServerConfigError, match="timer_poll_s"):
        create_app([FLOW], store=store, timer_poll_s=poll)


def test_a_waiting_threads_state_says_when_its_deadline_passes(
    make_client: Callable[..., TestClient],
) -> None:
    clock = Clock()
    client = make_client(flows=[FLOW], runner_factory=clocked(clock), timer_poll_s=None)
    created = client.post("/flows/short_deadline/threads", json={"thread_id": "d"}, headers=AUTH)
    assert created.status_code == 201, created.text
    data = settled(client, "d", "waiting")
    assert datetime.fromisoformat(data["due"]) == START + timedelta(seconds=0.2)
    client.post("/threads/d/resume", json={"input": {"answered": True}}, headers=AUTH)
    assert settled(client, "d", "done")["due"] is None
