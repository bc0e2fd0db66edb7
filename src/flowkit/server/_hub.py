"""The event hub: one journal tail per watched thread, fanned out to its subscribers.

Journal records come from the tapped store (``_tap``) and are encoded once into a bounded ring
shared by every subscriber of the thread. A subscriber that asks for records older than the ring
(``Last-Event-ID``) reads them from the store once, at most ``backlog_size`` of them; one that
falls behind the ring after that (a client that does not read) costs nothing more: it is
dropped with a ``lagging`` event whose id is the last version it got, and reconnecting with that
``Last-Event-ID`` resumes where it left off. So no checkpoint is ever lost, and however many
clients lag, each costs at most one store read per connection. Events that are not
journaled (a node started or finished, tokens, ``ctx.emit`` values, and a run's ``Waiting``
for the subscribers whose classifier takes it) go into each subscriber's
own bounded queue with seed 000's rules (``flowkit.runtime``'s ``ThreadQueue``): progress
coalesced per type, other events evicted first when it fills. Checkpoints are always sent
before queued live events (critical first). Memory is bounded by ``ring_size`` per watched
thread and ``queue_size`` per subscriber; a thread is watched only while someone subscribes.

Writes by other processes to the same store are found by a light poll every ``poll_s``, or
at once when something that follows the store's commits (a PostgreSQL ``EventFeed``) calls
``changed``. Everything here runs on the server's event loop; ``appended``, ``deleted``,
``changed`` and ``on_event`` may be called from any thread (they hand over with
``call_soon_threadsafe``).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from ..errors import FlowkitError, ServerConfigError, ThreadNotFoundError
from ..foundation._logging import get_logger
from ..records._events import Emitted, Event, NodeFinished, NodeStarted, TokenStreamed, Waiting
from ..runtime._queue import Envelope, Priority, ThreadQueue, classify_event, merge_progress
from ..stores._protocol import AnyRecord, Store
from ._backlog import encoded_after, latest_version, records_after
from ._frames import checkpoint_frame, deleted_frame, lagging_frame, live_frame
from ._journal import ShowPauses
from ._problems import Problem

__all__ = ["LAGGING", "SHUTTING_DOWN", "Hub", "LiveClassifier", "Subscription"]

#: A live event's priority and coalescing type for one subscription; ``None`` skips it.
LiveClassifier = Callable[[Event], "tuple[Priority, str] | None"]

_TRANSIENT = (NodeStarted, NodeFinished, TokenStreamed, Emitted, Waiting)
#: Most checkpoints sent in one go from the ring, or read from the store at once.
_RING_BATCH = 64
_STORE_BATCH = 500
#: Why every subscription ends when the server stops (a WebSocket then closes "going away").
SHUTTING_DOWN = "the server is shutting down"
#: Why a subscriber that fell behind the ring is dropped (it resumes with Last-Event-ID).
LAGGING = "the client fell behind"


@dataclass(eq=False)
class Subscription:
    """One client's position in one thread's events."""

    thread_id: str
    cursor: int
    private: bool  # may receive tokens and ``ctx.emit`` values (an authenticated principal)
    queue: ThreadQueue
    classify: LiveClassifier
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    live_sent: int = 0
    #: Checkpoints read from the store for this subscriber (its one read), still to send;
    #: whether that read is spent (or never needed: the subscriber started from now).
    backlog: deque[tuple[int, bytes]] = field(default_factory=deque)
    store_read: bool = False
    #: Why the subscription ended, and the frames still to send before it does.
    closed: str | None = None
    final: list[bytes] = field(default_factory=list)

    def end(self, why: str, *frames: bytes) -> None:
        if self.closed is None:
            self.closed = why
            self.final = list(frames)
        self.wake.set()


@dataclass(eq=False)
class _Watch:
    classes: Mapping[str, frozenset[str]]
    ring: deque[tuple[int, bytes]]
    shown: ShowPauses | None = None  # how checkpoints show the payloads of open pauses
    last: int | None = None  # newest journal version known; None until first read
    missed: bool = False  # records arrived before ``last`` was known: look again
    subscribers: set[Subscription] = field(default_factory=set)


class Hub:
    """Journal tails and live events for the threads clients watch."""

    def __init__(
        self,
        store: Store,
        *,
        ring_size: int = 1024,
        backlog_size: int = 2048,
        queue_size: int = 256,
        max_subscribers: int = 2000,
        poll_s: float = 2.0,
        keepalive_s: float = 15.0,
    ) -> None:
        for name, value in (("ring_size", ring_size), ("backlog_size", backlog_size),
                            ("queue_size", queue_size),
                            ("max_subscribers", max_subscribers)):  # fmt: skip
            if not isinstance(value, int) or value < 1:
                raise ServerConfigError(f"`{name}` must be at least 1, not {value!r}.")
        self.store = store  # the store itself, not the tapped one: the hub only reads
        self.ring_size = ring_size
        self.backlog_size = backlog_size
        self.queue_size = queue_size
        self.max_subscribers = max_subscribers
        self.poll_s = poll_s
        self.keepalive_s = keepalive_s
        self._watches: dict[str, _Watch] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._poller: asyncio.Task[None] | None = None
        self._count = 0
        self._closing = False
        self._log = get_logger()

    # -- lifecycle (on the loop) ---------------------------------------------------------------

    def start(self) -> None:
        """Run on the current event loop (the app's lifespan calls this; a subscription
        made on another loop, as test clients without a lifespan do, moves the hub there)."""
        loop = asyncio.get_running_loop()
        if self._loop is loop:
            return
        if self._poller is not None:
            self._poller.cancel()
        self._loop = loop
        self._closing = False
        self._poller = loop.create_task(self._poll())

    async def stop(self) -> None:
        if self._poller is not None:
            self._poller.cancel()
            with contextlib.suppress(asyncio.CancelledError, RuntimeError):
                await self._poller
        self._poller = None
        self.close_streams()
        self._loop = None

    def close_streams(self) -> None:
        """End every subscription and refuse new ones (503): the server is stopping.

        An ASGI server waits for open responses before it stops the app, and an event
        stream never finishes by itself, so whoever runs the server calls this first."""
        self._closing = True
        for watch in self._watches.values():
            for sub in watch.subscribers:
                sub.end(SHUTTING_DOWN)

    async def streams_closed(self, timeout_s: float) -> bool:
        """Wait until every subscriber has gone (their handlers said goodbye), at most
        ``timeout_s``; whether they all did."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while self._count and loop.time() < deadline:
            await asyncio.sleep(0.01)
        return not self._count

    def stats(self) -> dict[str, int]:
        """Sizes of everything the hub holds (memory stays bounded by these)."""
        subs = [s for w in self._watches.values() for s in w.subscribers]
        return {
            "watched_threads": len(self._watches),
            "subscribers": len(subs),
            "ring_events": sum(len(w.ring) for w in self._watches.values()),
            "max_ring": max((len(w.ring) for w in self._watches.values()), default=0),
            "queued_live_events": sum(len(s.queue) for s in subs),
            "max_queue": max((len(s.queue) for s in subs), default=0),
        }

    # -- subscribing (on the loop) ------------------------------------------------------------

    async def subscribe(
        self,
        thread_id: str,
        classes: Mapping[str, frozenset[str]],
        *,
        after: int | None,
        private: bool,
        classify: LiveClassifier = classify_event,
        shown: ShowPauses | None = None,
    ) -> Subscription:
        """Watch ``thread_id`` from journal version ``after`` (``None``: from now);
        ``shown`` redacts the payloads checkpoints carry (the thread's first subscriber's is
        kept for all: a checkpoint is encoded once for every subscriber)."""
        if self._count >= self.max_subscribers:
            raise Problem(
                503,
                "too_many_subscribers",
                f"The server has {self._count} event subscribers, its limit; try again later.",
                headers={"Retry-After": "5"},
            )
        self.start()
        if self._closing:
            raise Problem(
                503,
                "shutting_down",
                "The server is shutting down; reconnect once it is back.",
                headers={"Retry-After": "5"},
            )
        watch = self._watches.get(thread_id)
        fresh = watch is None
        if watch is None:
            watch = _Watch(classes, deque(maxlen=self.ring_size), shown)
            self._watches[thread_id] = watch
        high_water = max(1, int(self.queue_size * 0.8))
        sub = Subscription(
            thread_id, -1, private, ThreadQueue(self.queue_size, high_water), classify
        )
        sub.store_read = after is None  # from now on: the ring has all it will need
        watch.subscribers.add(sub)
        self._count += 1
        try:
            if fresh or watch.last is None:
                latest = await asyncio.to_thread(latest_version, self.store, thread_id)
                if watch.last is None or latest > watch.last:
                    watch.last = latest
                if watch.missed:
                    watch.missed = False
                    self._nudge(thread_id)
            assert watch.last is not None
            sub.cursor = watch.last if after is None else min(after, watch.last)
        except BaseException:
            self.unsubscribe(sub)
            raise
        return sub

    def unsubscribe(self, sub: Subscription) -> None:
        watch = self._watches.get(sub.thread_id)
        if watch is None or sub not in watch.subscribers:
            return
        watch.subscribers.discard(sub)
        self._count -= 1
        if not watch.subscribers:
            del self._watches[sub.thread_id]

    async def next_frames(self, sub: Subscription) -> list[bytes]:
        """What to send next: checkpoints first, then one live event, else a keep-alive
        comment after ``keepalive_s``. An empty list: the subscription has ended."""
        watch = self._watches.get(sub.thread_id)
        while True:
            if sub.closed is not None or watch is None:
                final, sub.final = sub.final, []
                return final
            last = watch.last if watch.last is not None else sub.cursor
            if sub.cursor < last:
                frames = _from_backlog(sub)
                if frames is None:
                    frames = self._from_ring(watch, sub)
                if frames is None and sub.store_read:
                    # Behind the ring again: a client that does not keep up is not read the
                    # journal for again and again; it resumes from its Last-Event-ID.
                    sub.end(LAGGING, lagging_frame(sub.cursor))
                    continue
                if frames is None:
                    frames = await self._from_store(watch, sub)
                if frames:
                    return frames
                if sub.closed is not None:
                    continue
            envelope = sub.queue.take()
            if envelope is not None:
                sub.live_sent += 1
                return [live_frame(envelope.event, f"{sub.cursor}.{sub.live_sent}")]
            sub.wake.clear()
            try:
                await asyncio.wait_for(sub.wake.wait(), self.keepalive_s)
            except TimeoutError:
                return [b": keep-alive\n\n"]

    async def next_live(self, sub: Subscription) -> Envelope | None:
        """The subscription's next live event, waiting for one; ``None`` once it has ended."""
        while True:
            if sub.closed is not None:
                return None
            envelope = sub.queue.take()
            if envelope is not None:
                return envelope
            sub.wake.clear()
            await sub.wake.wait()

    def _from_ring(self, watch: _Watch, sub: Subscription) -> list[bytes] | None:
        ring = watch.ring
        if not ring or ring[0][0] > sub.cursor + 1:
            return None
        start = sub.cursor + 1 - ring[0][0]
        frames = []
        for index in range(start, min(start + _RING_BATCH, len(ring))):
            version, encoded = ring[index]
            frames.append(encoded)
            sub.cursor = version
        return frames

    async def _from_store(self, watch: _Watch, sub: Subscription) -> list[bytes]:
        """The subscriber's one read of the store: up to ``backlog_size`` checkpoints after its
        cursor, encoded off the loop; the first batch of them."""
        sub.store_read = True
        try:
            sub.backlog = await asyncio.to_thread(
                encoded_after, self.store, sub.thread_id, sub.cursor, self.backlog_size,
                watch.classes, watch.shown,
            )  # fmt: skip
        except ThreadNotFoundError:
            sub.end("the thread was deleted", deleted_frame(sub.thread_id))
            return []
        return _from_backlog(sub) or []

    # -- feeding (any thread) ------------------------------------------------------------------

    def appended(self, thread_id: str, records: Sequence[AnyRecord]) -> None:
        loop = self._loop
        if loop is not None and thread_id in self._watches:
            with contextlib.suppress(RuntimeError):  # the loop closed under us
                loop.call_soon_threadsafe(self._on_records, thread_id, tuple(records))

    def deleted(self, thread_id: str) -> None:
        loop = self._loop
        if loop is not None and thread_id in self._watches:
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(self._on_deleted, thread_id)

    def changed(self, thread_id: str) -> None:
        """Another process committed to ``thread_id``: read it now rather than at the next poll."""
        loop = self._loop
        if loop is not None and thread_id in self._watches:
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(self._nudge, thread_id)

    def on_event(self, event: Event) -> None:
        """A runner subscriber: live (not journaled) events of watched threads."""
        loop = self._loop
        if loop is not None and isinstance(event, _TRANSIENT) and event.thread_id in self._watches:
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(self._on_live, event)

    # -- on the loop ---------------------------------------------------------------------------

    def _on_records(
        self, thread_id: str, records: Sequence[AnyRecord], *, from_store: bool = False
    ) -> None:
        watch = self._watches.get(thread_id)
        if watch is None:
            return
        if watch.last is None:
            watch.missed = True
            return
        added = False
        for record in records:
            if record.version <= watch.last:
                continue
            if record.version > watch.last + 1:
                if not from_store:
                    # Another process wrote the records in between: read them (and these)
                    # from the store, so the ring stays whole for the subscribers on it.
                    self._nudge(thread_id)
                    break
                watch.ring.clear()  # the journal itself skips them (compacted): start anew
            watch.ring.append(
                (record.version, checkpoint_frame(record, watch.classes, watch.shown))
            )
            watch.last = record.version
            added = True
        if added:
            for sub in watch.subscribers:
                sub.wake.set()

    def _on_deleted(self, thread_id: str) -> None:
        watch = self._watches.get(thread_id)
        if watch is None:
            return
        watch.ring.clear()
        for sub in watch.subscribers:
            sub.end("the thread was deleted", deleted_frame(thread_id))

    def _on_live(self, event: Event) -> None:
        watch = self._watches.get(event.thread_id)
        if watch is None:
            return
        for sub in watch.subscribers:
            if not sub.private and isinstance(event, TokenStreamed | Emitted | Waiting):
                continue  # values (tokens, emitted values, a pause's payload): principals only
            try:
                found = sub.classify(event)
            except Exception:  # a classifier that fails drops the event, never the stream
                continue
            if found is None:
                continue
            priority, type_ = found
            if sub.queue.put(event, priority, type_, merge_progress).queued:
                sub.wake.set()

    def _nudge(self, thread_id: str) -> None:
        if self._loop is not None:
            self._loop.create_task(self._refresh(thread_id))

    async def _refresh(self, thread_id: str) -> None:
        watch = self._watches.get(thread_id)
        if watch is None or watch.last is None:
            return
        try:
            records = await asyncio.to_thread(
                records_after, self.store, thread_id, watch.last, _STORE_BATCH, True
            )
        except ThreadNotFoundError:
            self._on_deleted(thread_id)
            return
        except (FlowkitError, OSError) as exc:
            self._log.warning(
                "server_poll_failed", thread_id=thread_id, error_type=type(exc).__name__
            )
            return
        if records:
            self._on_records(thread_id, records, from_store=True)
        if len(records) >= _STORE_BATCH:
            self._nudge(thread_id)  # more than one batch was written elsewhere: read on

    async def _poll(self) -> None:
        while True:
            await asyncio.sleep(self.poll_s)
            for thread_id in list(self._watches):
                await self._refresh(thread_id)


def _from_backlog(sub: Subscription) -> list[bytes] | None:
    """The next batch of the subscriber's backlog; ``None`` once it is sent."""
    frames: list[bytes] = []
    while sub.backlog and len(frames) < _RING_BATCH:
        version, encoded = sub.backlog.popleft()
        if version > sub.cursor:
            frames.append(encoded)
            sub.cursor = version
    return frames or None
