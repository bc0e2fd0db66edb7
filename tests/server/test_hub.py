"""The hub on its own: seed 000's rules per subscriber (checkpoints first, progress coalesced,
bounded queues) and a ring that never grows past its size."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from serve_flows import counter

from flowkit import Runner
from flowkit.records._events import NodeFinished, NodeStarted, TokenStreamed
from flowkit.server._hub import SHUTTING_DOWN, Hub
from flowkit.server._problems import Problem
from flowkit.server._tap import tap
from flowkit.stores import MemoryStore


def decode(frames: list[bytes]) -> list[tuple[str, str, Any]]:
    """(event, id, data) of each frame."""
    found = []
    for raw in b"".join(frames).decode().split("\n\n"):
        fields = dict(line.split(": ", 1) for line in raw.splitlines() if ": " in line)
        if "event" in fields:
            found.append((fields["event"], fields.get("id", ""), json.loads(fields["data"])))
    return found


async def drain(hub: Hub, sub: Any) -> list[tuple[str, str, Any]]:
    """Everything the subscription has to send now."""
    found: list[tuple[str, str, Any]] = []
    hub.keepalive_s = 0.05
    while True:
        frames = await hub.next_frames(sub)
        if frames == [b": keep-alive\n\n"] or not frames:
            return found
        found += decode(frames)


def test_checkpoints_go_first_and_progress_coalesces() -> None:
    async def main() -> None:
        store = MemoryStore()
        hub = Hub(store, queue_size=8, ring_size=16)
        hub.start()
        runner = Runner(counter, store=tap(store, hub))
        runner.start("c", {"steps": 30})
        sub = await hub.subscribe("c", counter.change_classes, after=0, private=True)
        # A slow client: live events pile up while it reads nothing. The oldest plain ones
        # make room; progress of one node coalesces (the newest wins, tokens are joined).
        for index in range(20):
            hub._on_live(NodeStarted("c", "r", f"n{index}", 1))
        for index in range(50):
            hub._on_live(NodeFinished("c", "r", "tick", 0.001 * index, 1))
            hub._on_live(TokenStreamed("c", "r", "tick", f"t{index} "))
        await asyncio.to_thread(runner.resume, "c", {"go": True})
        await asyncio.sleep(0.05)  # the tap's hand-over runs on the loop
        sent = await drain(hub, sub)
        names = [name for name, _, _ in sent]
        first_live = names.index(next(n for n in names if n != "checkpoint"))
        assert names[:first_live] == ["checkpoint"] * 31  # every checkpoint, first
        assert [data["version"] for _, _, data in sent[:first_live]] == list(range(1, 32))
        live = sent[first_live:]
        assert len(live) <= 8  # the queue's bound
        finished = [d for n, _, d in live if n == "node_finished"]
        assert finished == [{"node": "tick", "latency_s": 0.049, "attempts": 1}]  # the newest
        (tokens,) = [d for n, _, d in live if n == "token"]
        assert tokens["text"].startswith("t0 t1 ") and tokens["text"].endswith("t49 ")
        started = [d["node"] for n, _, d in live if n == "node_started"]
        assert started == [f"n{i}" for i in range(20 - len(started), 20)]  # the newest kept
        assert all(event_id.startswith("31.") for _, event_id, _ in live)
        assert hub.stats()["max_ring"] <= 16 and hub.stats()["max_queue"] <= 8
        hub.unsubscribe(sub)
        assert hub.stats()["watched_threads"] == 0
        await hub.stop()

    asyncio.run(main())


def test_without_a_principal_no_tokens_or_emitted_values_are_queued() -> None:
    async def main() -> None:
        store = MemoryStore()
        hub = Hub(store)
        hub.start()
        Runner(counter, store=tap(store, hub)).start("c")
        sub = await hub.subscribe("c", counter.change_classes, after=None, private=False)
        hub._on_live(TokenStreamed("c", "r", "tick", "secret text"))
        hub._on_live(NodeStarted("c", "r", "tick", 1))
        assert [name for name, _, _ in await drain(hub, sub)] == ["node_started"]
        await hub.stop()

    asyncio.run(main())


def test_subscribers_past_the_limit_get_503() -> None:
    async def main() -> None:
        from flowkit.server._problems import Problem

        store = MemoryStore()
        hub = Hub(store, max_subscribers=2)
        hub.start()
        Runner(counter, store=tap(store, hub)).start("c")
        for _ in range(2):
            await hub.subscribe("c", {}, after=None, private=True)
        try:
            await hub.subscribe("c", {}, after=None, private=True)
        except Problem as problem:
            assert (problem.status, problem.code) == (503, "too_many_subscribers")
        else:
            raise AssertionError("a third subscriber was let in")
        await hub.stop()

    asyncio.run(main())


def test_closing_the_streams_ends_every_subscription_and_refuses_new_ones() -> None:
    async def main() -> None:
        store = MemoryStore()
        hub = Hub(store)
        Runner(counter, store=tap(store, hub)).start("c", {"steps": 3})
        sse = await hub.subscribe("c", counter.change_classes, after=None, private=True)
        socket = await hub.subscribe("c", counter.change_classes, after=None, private=True)
        waiting = asyncio.ensure_future(hub.next_frames(sse))
        await asyncio.sleep(0)  # the stream waits for its next event
        hub.close_streams()
        assert await waiting == []  # the event stream ends
        assert await hub.next_live(socket) is None  # the WebSocket's sender stops
        assert sse.closed == socket.closed == SHUTTING_DOWN
        with pytest.raises(Problem) as refused:
            await hub.subscribe("c", counter.change_classes, after=None, private=True)
        assert (refused.value.status, refused.value.code) == (503, "shutting_down")
        hub.unsubscribe(sse)
        assert not await hub.streams_closed(timeout_s=0.01)  # one handler has not said goodbye
        hub.unsubscribe(socket)
        assert await hub.streams_closed(timeout_s=0.01)
        await hub.stop()

    asyncio.run(main())


class CountingStore:
    """A store that counts what the hub reads from it: journal reads (``records``) and the
    records they parsed, and loads (a subscription's first look at where the thread is)."""

    def __init__(self, inner: MemoryStore) -> None:
        self.inner = inner
        self.reads = 0
        self.loads = 0
        self.parsed = 0

    def records(self, thread_id: str) -> Any:
        found = self.inner.records(thread_id)
        self.reads += 1
        self.parsed += len(found)
        return found

    def load(self, thread_id: str, *, after: int | None = None) -> Any:
        log = self.inner.load(thread_id, after=after)
        self.loads += 1
        return log

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


async def follow(hub: Hub, after: int, last: int) -> tuple[list[int], int]:
    """Read the thread from ``after`` as an EventSource does: on ``lagging``, reconnect with
    the id it carries. The checkpoint versions received, and the connections it took."""
    versions: list[int] = []
    connections = 0
    while not versions or versions[-1] < last:
        connections += 1
        sub = await hub.subscribe("c", counter.change_classes, after=after, private=True)
        for name, event_id, data in await drain(hub, sub):
            if name == "checkpoint":
                versions.append(data["version"])
            after = int(event_id.partition(".")[0])  # the Last-Event-ID it would send
        hub.unsubscribe(sub)
        assert connections < 50, "no progress"
    return versions, connections


def test_clients_that_do_not_read_are_dropped_without_reading_the_journal_and_resume() -> None:
    async def main() -> None:
        inner = MemoryStore()
        store = CountingStore(inner)
        hub = Hub(store, ring_size=16, poll_s=3600)  # type: ignore[arg-type]
        hub.start()
        runner = Runner(counter, store=tap(inner, hub))
        runner.start("c", {"steps": 1200})
        # 20 clients that do not read: their streams wait while the whole run is written.
        idle = [
            await hub.subscribe("c", counter.change_classes, after=None, private=True)
            for _ in range(20)
        ]
        start = idle[0].cursor
        await asyncio.to_thread(runner.resume, "c", {"go": True})
        await asyncio.sleep(0.05)  # the tap's hand-over runs on the loop
        last = store.inner.records("c")[-1].version
        store.reads = store.parsed = store.loads = 0
        for sub in idle:
            # Far behind the ring: dropped at once, with the id to resume from.
            assert await drain(hub, sub) == [
                ("lagging", str(start), {"version": start, "detail": ANY_TEXT})
            ]
            hub.unsubscribe(sub)
        assert (store.reads, store.parsed, store.loads) == (0, 0, 0)
        # Each comes back with Last-Event-ID: one read of its backlog, every event once.
        for _ in idle:
            versions, connections = await follow(hub, start, last)
            assert versions == list(range(start + 1, last + 1))
            assert connections == 1
        assert store.reads == len(idle)
        assert store.parsed == len(idle) * len(store.inner.records("c"))
        await hub.stop()

    asyncio.run(main())


def test_a_backlog_past_its_bound_is_sent_over_several_connections_once_each() -> None:
    async def main() -> None:
        inner = MemoryStore()
        store = CountingStore(inner)
        hub = Hub(store, ring_size=16, backlog_size=100, poll_s=3600)  # type: ignore[arg-type]
        hub.start()
        runner = Runner(counter, store=tap(inner, hub))
        runner.start("c", {"steps": 450})
        await asyncio.to_thread(runner.resume, "c", {"go": True})
        last = store.inner.records("c")[-1].version
        store.reads = 0
        versions, connections = await follow(hub, 0, last)
        assert versions == list(range(1, last + 1))  # in order, none twice, none missed
        assert connections == store.reads == 5  # 100 records each: at most one read each
        await hub.stop()

    asyncio.run(main())


class _AnyText:
    def __eq__(self, other: object) -> bool:
        return isinstance(other, str) and bool(other)

    __hash__ = None  # type: ignore[assignment]


ANY_TEXT: Any = _AnyText()
