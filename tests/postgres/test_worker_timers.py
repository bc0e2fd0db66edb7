"""Workers fire timers: every ``timer_poll_s`` seconds each worker fires the due timers of its
flows (``Runner.fire_due``), and however many workers share the database, each timer fires
once. The clock is injected (``Worker(clock=...)``)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from pydantic import BaseModel

from flowkit import END, Flow, Gate, Runner
from flowkit.errors import RunError
from flowkit.stores.postgres import PostgresStore
from flowkit.workers import Worker

START = datetime(2026, 4, 1, 9, 0, tzinfo=UTC)


class Claim(BaseModel):
    approved: bool = False
    chased: int = 0


class Verdict(BaseModel):
    approved: bool


CLAIMS = Flow(
    name="pg_claims",
    state=Claim,
    start="review",
    nodes={"chase": lambda s: {"chased": s.chased + 1}},
    gates={"review": Gate(Verdict, deadline=timedelta(days=1), on_timeout="chase")},
    routes={"review": END, "chase": END},
)


class Clock:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> datetime:
        return self.now


def _timers(store: PostgresStore, thread_id: str) -> int:
    return [r.kind for r in store.records(thread_id)].count("timer")


def test_a_worker_fires_the_timers_due_when_it_runs(open_pg: Callable[..., PostgresStore]) -> None:
    store = open_pg()
    clock = Clock()
    client = Runner(CLAIMS, store=store, clock=clock)
    for index in range(5):
        client.start(f"c{index}")
    worker = Worker(CLAIMS, store=store, clock=clock)
    assert worker.run(until_idle=True).timers == 0  # nothing due yet
    clock.now += timedelta(days=1)
    assert worker.run(until_idle=True).timers == 5
    for index in range(5):
        assert client.get_state(f"c{index}").state.chased == 1
        assert _timers(store, f"c{index}") == 1
    assert worker.fire_timers() == 0


def test_workers_firing_at_once_fire_each_timer_once(
    open_pg: Callable[..., PostgresStore],
) -> None:
    clock = Clock()
    client = Runner(CLAIMS, store=open_pg(), clock=clock)
    ids = [f"c{index:02d}" for index in range(12)]
    for thread_id in ids:
        client.start(thread_id)
    clock.now += timedelta(days=2)
    workers = [Worker(CLAIMS, store=open_pg(), clock=clock) for _ in range(3)]
    barrier = threading.Barrier(len(workers))
    counts: list[int] = []

    def fire(worker: Worker) -> None:
        barrier.wait()
        counts.append(worker.fire_timers() + worker.fire_timers())

    threads = [threading.Thread(target=fire, args=(w,)) for w in workers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sum(counts) == len(ids)
    check = open_pg()
    assert all(_timers(check, thread_id) == 1 for thread_id in ids)


def test_a_serving_worker_fires_timers_as_they_come_due_and_stops_cleanly(
    open_pg: Callable[..., PostgresStore],
) -> None:
    store = open_pg()
    clock = Clock()
    client = Runner(CLAIMS, store=store, clock=clock)
    client.start("c")
    worker = Worker(CLAIMS, store=store, clock=clock, timer_poll_s=0.02)
    serving = threading.Thread(target=worker.run)
    serving.start()
    try:
        clock.now += timedelta(days=1)
        deadline = time.monotonic() + 30
        while client.get_state("c").status != "done" and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        worker.stop()
        serving.join(30)
    assert not serving.is_alive()
    assert client.get_state("c").state.chased == 1 and worker.stats.timers == 1


def test_a_worker_without_timers_fires_none(open_pg: Callable[..., PostgresStore]) -> None:
    store = open_pg()
    clock = Clock()
    Runner(CLAIMS, store=store, clock=clock).start("c")
    clock.now += timedelta(days=3)
    worker = Worker(CLAIMS, store=store, clock=clock, timer_poll_s=None)
    assert worker.run(until_idle=True).timers == 0
    assert _timers(store, "c") == 0


@pytest.mark.parametrize("poll", [0, -1.0, float("nan"), "2", True])
def test_a_timer_poll_that_is_no_positive_time_is_refused(
    poll: Any, open_pg: Callable[..., PostgresStore]
) -> None:
    with pytest.raises(RunError, match="timer_poll_s"):
        Worker(CLAIMS, store=open_pg(), timer_poll_s=poll)
