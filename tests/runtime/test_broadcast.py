"""The broadcaster: priorities, coalescing, bounded memory, sync and async consumers."""

from __future__ import annotations

import asyncio
import random
import threading
from collections import Counter
from typing import Any

import pytest
from pydantic import BaseModel
from structlog.testing import capture_logs

from flowkit import (
    END,
    Completed,
    Event,
    Failed,
    Flow,
    Gate,
    NodeError,
    NodeFinished,
    NodeStarted,
    Runner,
    StateChanged,
    TokenStreamed,
    Waiting,
)
from flowkit.errors import QueueClosedError
from flowkit.runtime import Broadcaster, classify_event

ERROR = NodeError(type="ValueError", message="boom", node="n")


def changed(thread: str, node: str, cls: str | None, version: int = 1) -> StateChanged:
    classes = {"critical": (), "progress": (), "approval": ()}
    if cls is not None:
        classes[cls] = ("x",)
    return StateChanged(thread, "r", node, version, ("x",), classes)


@pytest.mark.parametrize(
    ("event", "priority", "type_"),
    [
        (Failed("t", "r", "n", ERROR, 3), "critical", "failed"),
        (Waiting("t", "r", "review", 2), "critical", "waiting"),
        (Completed("t", "r", "__end__", 4), "critical", "completed"),
        (changed("t", "n", "critical"), "critical", "state_changed"),
        (changed("t", "n", "progress"), "progress", "state_changed:n"),
        (TokenStreamed("t", "r", "n", "hel"), "progress", "token:n"),
        (NodeFinished("t", "r", "n", 0.1, 1), "progress", "node_finished:n"),
        (changed("t", "n", "approval"), "normal", "state_changed"),
        (changed("t", "n", None), "normal", "state_changed"),
        (NodeStarted("t", "r", "n", 1), "normal", "node_started"),
    ],
)
def test_events_map_to_the_seed_priorities(event: Event, priority: str, type_: str) -> None:
    assert classify_event(event) == (priority, type_)


def random_event(rng: random.Random, thread: str, i: int) -> Event:
    node = rng.choice(["a", "b", "c"])
    roll = rng.random()
    if roll < 0.03:
        return Waiting(thread, "r", f"gate{i}", i)
    if roll < 0.06:
        return changed(thread, node, "critical", i)
    if roll < 0.35:
        return TokenStreamed(thread, "r", node, f"{i};")
    if roll < 0.55:
        return NodeFinished(thread, "r", node, 0.01, 1)
    if roll < 0.75:
        return changed(thread, node, "progress", i)
    return NodeStarted(thread, "r", node, 1)


def test_ten_thousand_mixed_events_never_lose_a_critical_event() -> None:
    rng = random.Random(5)
    hub = Broadcaster(maxsize=20)
    hub.open("t")
    published: list[Event] = []
    received: list[Any] = []
    for i in range(10_000):
        event = random_event(rng, "t", i)
        published.append(event)
        hub.publish(event)
        assert hub.pending("t") <= 20  # memory stays bounded at every step
        if rng.random() < 0.05:  # a slow consumer: reads a few now and then
            for _ in range(rng.randint(1, 5)):
                envelope = hub.get("t", timeout=0)
                if envelope is not None:
                    received.append(envelope)
    while (envelope := hub.get("t", timeout=0)) is not None:
        received.append(envelope)

    critical_out = [e for e in published if classify_event(e)[0] == "critical"]
    critical_in = [env.event for env in received if env.priority == "critical"]
    assert critical_in == critical_out  # every one, in order
    assert len(critical_out) > 300
    stats = hub.stats()
    assert stats.critical_dropped == 0 and stats.evicted > 1000 and stats.coalesced > 1000
    assert stats.published == 10_000
    assert [env.seq for env in received] == sorted(env.seq for env in received)


def test_a_flood_with_nobody_reading_keeps_every_critical_event_that_fits() -> None:
    rng = random.Random(11)
    hub = Broadcaster(maxsize=20)
    hub.open("t")
    critical_at = set(rng.sample(range(10_000), 16))  # fewer than the queue holds
    expected = []
    for i in range(10_000):
        if i in critical_at:
            event: Event = Waiting("t", "r", f"gate{i}", i)
            expected.append(event)
        else:
            event = random_event(rng, "t", i)
            if classify_event(event)[0] == "critical":
                event = NodeStarted("t", "r", "n", i)
        hub.publish(event)
        assert hub.pending("t") <= 20
    received = [env.event for env in hub.events("t", timeout=0)]
    assert [e for e in received if isinstance(e, Waiting)] == expected
    assert hub.stats().critical_dropped == 0


def test_progress_coalescing_keeps_at_most_one_queued_event_per_type() -> None:
    rng = random.Random(7)
    hub = Broadcaster(maxsize=50)
    hub.open("t")
    for i in range(2_000):
        hub.publish(random_event(rng, "t", i))
        queued = [env for env in hub_peek(hub, "t") if env.priority == "progress"]
        counts = Counter(env.type for env in queued)
        assert all(n == 1 for n in counts.values()), counts


def hub_peek(hub: Broadcaster, thread: str) -> list[Any]:
    slot = hub._slots[thread]
    return list(slot.queue._items.values())


def test_coalesced_tokens_keep_the_whole_text() -> None:
    hub = Broadcaster(maxsize=10)
    hub.open("t")
    for chunk in ["Hel", "lo", " wor", "ld"]:
        hub.publish(TokenStreamed("t", "r", "n", chunk))
    hub.publish(TokenStreamed("t", "r", "n", "!", done=True))
    hub.publish(TokenStreamed("t", "r", "n", "Next"))  # a new answer after a finished one
    texts = [env.event.text for env in hub.events("t", timeout=0)]
    assert texts == ["Hello world!", "Next"]


def test_a_critical_event_past_high_water_evicts_the_oldest_non_critical() -> None:
    hub = Broadcaster(maxsize=10, high_water=0.8)
    hub.open("t")
    for i in range(8):
        hub.publish(NodeStarted("t", "r", f"n{i}", 1))
    hub.publish(Waiting("t", "r", "review", 9))
    kinds = [(env.kind, getattr(env.event, "node", "")) for env in hub.events("t", timeout=0)]
    assert len(kinds) == 8 and kinds[0] == ("node_started", "n1") and kinds[-1][0] == "waiting"


def test_a_queue_full_of_unread_critical_events_gives_up_its_oldest_and_says_so() -> None:
    hub = Broadcaster(maxsize=3)
    hub.open("t")
    with capture_logs() as logs:
        for version in range(5):
            hub.publish(Waiting("t", "r", "review", version))
        hub.publish(NodeStarted("t", "r", "n", 1))  # refused: no room, none evictable
    assert [env.event.version for env in hub.events("t", timeout=0)] == [2, 3, 4]
    stats = hub.stats()
    assert (stats.critical_dropped, stats.dropped) == (2, 1)
    events = [e["event"] for e in logs]
    assert events.count("broadcast_critical_dropped") == 2
    assert events.count("broadcast_queue_full") == 1  # once per episode, not per event


def test_events_for_a_thread_without_a_queue_are_counted_and_reported_once() -> None:
    hub = Broadcaster()
    with capture_logs() as logs:
        for _ in range(3):
            hub.publish(NodeStarted("nobody", "r", "n", 1))
    assert hub.stats().missing == 3
    assert [e["event"] for e in logs] == ["broadcast_queue_missing"]
    assert set(logs[0]) == {"event", "log_level", "thread_id", "event_kind"}  # no state values
    with pytest.raises(QueueClosedError):
        hub.get("nobody", timeout=0)


def test_auto_open_creates_queues_and_the_thread_map_stays_capped() -> None:
    hub = Broadcaster(maxsize=4, max_threads=8, auto_open=True)
    for i in range(1_000):
        hub.publish(NodeStarted(f"t{i}", "r", "n", 1))
        assert len(hub.threads) <= 8
    assert hub.threads == [f"t{i}" for i in range(992, 1000)]
    assert hub.stats().queues_evicted == 992


def test_evicting_idle_queues_wakes_their_consumers() -> None:
    now = [0.0]
    hub = Broadcaster(clock=lambda: now[0])
    hub.open("idle")
    hub.open("busy")
    now[0] = 100.0
    hub.publish(NodeStarted("busy", "r", "n", 1))
    assert hub.evict_idle(60) == ["idle"]
    with pytest.raises(QueueClosedError, match="idle for more than 60 s"):
        hub.get("idle", timeout=0)
    assert hub.threads == ["busy"]


def test_publishing_never_raises_into_the_workflow() -> None:
    def broken(event: Event) -> tuple[Any, str]:
        raise RuntimeError("classifier bug")

    hub = Broadcaster(classify=broken)
    hub.open("t")
    with capture_logs() as logs:
        hub.publish(NodeStarted("t", "r", "n", 1))
    assert logs[0]["event"] == "broadcast_failed" and logs[0]["error_type"] == "RuntimeError"


class Doc(BaseModel):
    text: str = ""
    approved: bool = False


class Approve(BaseModel):
    approved: bool


def _write(state: Doc) -> dict[str, Any]:
    return {"text": "draft"}


def review_flow() -> Flow:
    return Flow(
        name="bc_review",
        state=Doc,
        start="write",
        nodes={"write": _write},
        gates={"review": Gate(Approve)},
        routes={"write": "review", "review": END},
        change_classes={"critical": ["approved"], "progress": ["text"]},
    )


def test_a_sync_consumer_reads_a_runner_in_another_thread() -> None:
    runner: Runner[Doc] = Runner(review_flow())
    hub = Broadcaster()
    detach = hub.attach(runner)
    hub.open("t")
    worker = threading.Thread(target=runner.start, args=("t",))
    worker.start()
    kinds = []
    for envelope in hub.events("t", timeout=60):
        kinds.append(envelope.kind)
        if envelope.kind == "waiting":
            break
    worker.join()
    detach()
    assert kinds[-1] == "waiting" and "node_finished" in kinds


def test_an_async_consumer_reads_a_runner_in_a_worker_thread() -> None:
    runner: Runner[Doc] = Runner(review_flow())
    hub = Broadcaster()
    hub.attach(runner)
    hub.open("t")

    async def ui() -> list[str]:
        seen = []
        runs = asyncio.create_task(asyncio.to_thread(runner.start, "t"))
        async for envelope in hub.aevents("t", timeout=60):
            seen.append(envelope.kind)
            if envelope.kind == "waiting":
                break
        await runs
        await asyncio.to_thread(runner.resume, "t", {"approved": True})
        while (envelope := await hub.aget("t", timeout=60)) is not None:
            seen.append(envelope.kind)
            if envelope.kind == "completed":
                break
        return seen

    seen = asyncio.run(ui())
    assert seen[-1] == "completed" and "waiting" in seen


def test_aget_times_out_and_close_wakes_an_async_waiter() -> None:
    hub = Broadcaster()
    hub.open("t")

    async def scenario() -> None:
        assert await hub.aget("t", timeout=0.01) is None
        waiter = asyncio.create_task(hub.aget("t"))
        await asyncio.sleep(0)
        hub.close("t")
        with pytest.raises(QueueClosedError, match="closed"):
            await waiter

    asyncio.run(scenario())


def test_close_wakes_a_blocked_sync_consumer() -> None:
    hub = Broadcaster()
    hub.open("t")
    outcome: list[str] = []

    def consume() -> None:
        outcome.extend(env.kind for env in hub.events("t"))
        outcome.append("ended")

    reader = threading.Thread(target=consume)
    reader.start()
    hub.publish(NodeStarted("t", "r", "n", 1))
    while hub.pending("t"):
        threading.Event().wait(0.001)
    hub.close("t")
    reader.join(timeout=60)
    assert outcome == ["node_started", "ended"]
