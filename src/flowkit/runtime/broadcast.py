"""The event broadcaster: per-thread bounded queues that user interfaces consume.

Subscribe it to a runner (``broadcaster.attach(runner)``); each event lands in its thread's
queue with a priority (seed 000 §4.2): terminal and waiting events and critical state
changes are ``critical``, progress changes, streamed tokens and finished nodes are
``progress`` (coalesced per type), the rest ``normal``. Consumers read with ``get`` /
``events`` from threads or ``aget`` / ``aevents`` from asyncio; the runner may publish from
any thread. Publishing never raises: a full or missing queue is counted and logged.
"""

from __future__ import annotations

import math
import threading
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import suppress
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import QueueClosedError
from ..foundation._logging import get_logger
from ..records._events import Event
from ._queue import (
    Classifier,
    Envelope,
    Merge,
    Priority,
    QueueStats,
    ThreadQueue,
    classify_event,
    merge_progress,
)

if TYPE_CHECKING:
    import asyncio

__all__ = [
    "BroadcastStats",
    "Broadcaster",
    "Classifier",
    "Envelope",
    "Priority",
    "classify_event",
    "merge_progress",
]


@dataclass(frozen=True, slots=True)
class BroadcastStats:
    """Totals across queues, including closed ones; ``missing``: events for no open queue."""

    queues: int
    published: int
    delivered: int
    coalesced: int
    evicted: int
    dropped: int
    critical_dropped: int
    missing: int
    queues_evicted: int


@dataclass(eq=False)
class _Slot:
    queue: ThreadQueue
    ready: threading.Condition
    waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = field(
        default_factory=list
    )
    closed: str | None = None
    last_used: float = 0.0
    full_reported: bool = False


def _wake(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


class Broadcaster:
    """Per-thread event queues of at most ``maxsize`` events, for at most ``max_threads``.

    Queues exist from ``open(thread_id)`` (or, with ``auto_open=True``, from a thread's first
    event) until ``close``; opening one more than ``max_threads`` closes the least recently
    used. Past ``high_water`` (a fraction of ``maxsize``) critical events evict non-critical.
    """

    def __init__(
        self,
        *,
        maxsize: int = 1000,
        high_water: float = 0.8,
        max_threads: int = 1000,
        auto_open: bool = False,
        classify: Classifier = classify_event,
        merge: Merge | None = merge_progress,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if max_threads < 1:
            raise ValueError(f"max_threads must be at least 1, got {max_threads}")
        self.maxsize = maxsize
        self.high_water = max(1, min(maxsize, math.ceil(high_water * maxsize)))
        ThreadQueue(maxsize, self.high_water)  # check the bounds now, not at the first event
        self.max_threads = max_threads
        self.auto_open = auto_open
        self.classify = classify
        self.merge = merge
        self.clock = clock
        self._lock = threading.Lock()
        self._slots: OrderedDict[str, _Slot] = OrderedDict()
        self._closed_stats = QueueStats()
        self._missing = 0
        self._queues_evicted = 0
        self._missing_reported: OrderedDict[str, None] = OrderedDict()
        self._closed: OrderedDict[str, str] = OrderedDict()  # why recent queues went away
        self._log = get_logger()

    # -- queues --------------------------------------------------------------------------------

    def attach(self, runner: Any) -> Callable[[], None]:
        """Publish every event of ``runner``; returns the function that detaches again."""
        unsubscribe: Callable[[], None] = runner.subscribe(self.publish)
        return unsubscribe

    def open(self, thread_id: str) -> None:
        """Start queueing events of ``thread_id`` (a no-op if its queue is open)."""
        with self._lock:
            self._open(thread_id)

    def close(self, thread_id: str) -> None:
        """Drop the thread's queue; its waiting consumers get ``QueueClosedError``."""
        with self._lock:
            slot = self._slots.pop(thread_id, None)
            if slot is not None:
                self._shut(thread_id, slot, "it was closed")

    def evict_idle(self, idle_s: float) -> list[str]:
        """Close queues unused (no event in or out) for ``idle_s`` seconds; their ids."""
        with self._lock:
            cutoff = self.clock() - idle_s
            idle = [t for t, slot in self._slots.items() if slot.last_used <= cutoff]
            for thread_id in idle:
                self._evict(thread_id, f"it was idle for more than {idle_s:g} s")
            return idle

    @property
    def threads(self) -> list[str]:
        """Ids of the open queues, least recently used first."""
        with self._lock:
            return list(self._slots)

    def pending(self, thread_id: str) -> int:
        """How many events wait in the thread's queue (0 if it has none)."""
        with self._lock:
            slot = self._slots.get(thread_id)
            return len(slot.queue) if slot else 0

    def stats(self, thread_id: str | None = None) -> BroadcastStats:
        """Counters of one thread's open queue, or of the whole broadcaster."""
        with self._lock:
            total = QueueStats()
            if thread_id is not None:
                slot = self._slots.get(thread_id)
                if slot is not None:
                    total.add(slot.queue.stats)
                return _stats(total, int(slot is not None), 0, 0)
            total.add(self._closed_stats)
            for slot in self._slots.values():
                total.add(slot.queue.stats)
            return _stats(total, len(self._slots), self._missing, self._queues_evicted)

    # -- publishing ------------------------------------------------------------------------------

    def publish(self, event: Event) -> None:
        """Queue ``event`` for its thread's consumers. Never raises into the caller."""
        try:
            priority, type_ = self.classify(event)
            with self._lock:
                self._publish(event, priority, type_)
        except Exception as exc:  # the workflow must never feel a UI problem
            self._log.error(
                "broadcast_failed",
                thread_id=getattr(event, "thread_id", None),
                event_kind=getattr(event, "kind", None),
                error_type=type(exc).__name__,
            )

    def _publish(self, event: Event, priority: Priority, type_: str) -> None:
        thread_id = event.thread_id
        slot = self._slots.get(thread_id)
        if slot is None:
            if not self.auto_open:
                self._missing += 1
                self._report_missing(thread_id, event.kind)
                return
            slot = self._open(thread_id)
        else:
            self._slots.move_to_end(thread_id)
        slot.last_used = self.clock()
        result = slot.queue.put(event, priority, type_, self.merge)
        if result.critical_dropped:
            self._log.error(
                "broadcast_critical_dropped",
                thread_id=thread_id,
                queued=len(slot.queue),
                event_kind=event.kind,
            )
        if (result.evicted or not result.queued) and not slot.full_reported:
            slot.full_reported = True  # once per episode: the UI has fallen behind
            self._log.warning(
                "broadcast_queue_full",
                thread_id=thread_id,
                queued=len(slot.queue),
                critical=slot.queue.critical,
                maxsize=self.maxsize,
            )
        if result.queued:
            slot.ready.notify()
            for loop, future in slot.waiters:
                _call_soon(loop, future)
            slot.waiters.clear()

    def _report_missing(self, thread_id: str, kind: str) -> None:
        # Threads nobody watches are normal; say so once per thread, in bounded memory.
        if thread_id in self._missing_reported:
            return
        self._missing_reported[thread_id] = None
        if len(self._missing_reported) > 1024:
            self._missing_reported.popitem(last=False)
        self._log.info("broadcast_queue_missing", thread_id=thread_id, event_kind=kind)

    def _open(self, thread_id: str) -> _Slot:
        slot = self._slots.get(thread_id)
        if slot is None:
            while len(self._slots) >= self.max_threads:
                oldest = next(iter(self._slots))
                self._evict(
                    oldest, f"the broadcaster keeps at most {self.max_threads} queues and it "
                    "was the least recently used"
                )  # fmt: skip
            queue = ThreadQueue(self.maxsize, self.high_water)
            slot = _Slot(queue, threading.Condition(self._lock))
            self._slots[thread_id] = slot
            self._missing_reported.pop(thread_id, None)
            self._closed.pop(thread_id, None)
        self._slots.move_to_end(thread_id)
        slot.last_used = self.clock()
        return slot

    def _evict(self, thread_id: str, why: str) -> None:
        slot = self._slots.pop(thread_id)
        self._queues_evicted += 1
        self._log.warning("broadcast_queue_evicted", thread_id=thread_id, queued=len(slot.queue))
        self._shut(thread_id, slot, f"it was evicted: {why}")

    def _shut(self, thread_id: str, slot: _Slot, why: str) -> None:
        slot.closed = why
        self._closed[thread_id] = why
        if len(self._closed) > 1024:
            self._closed.popitem(last=False)
        self._closed_stats.add(slot.queue.stats)
        slot.ready.notify_all()
        for loop, future in slot.waiters:
            _call_soon(loop, future)
        slot.waiters.clear()

    # -- consuming -------------------------------------------------------------------------------

    def _slot(self, thread_id: str) -> _Slot:
        slot = self._slots.get(thread_id)
        if slot is None:
            why = self._closed.get(thread_id, "it was never opened")
            raise QueueClosedError(thread_id, why)
        return slot

    def _take(self, thread_id: str, slot: _Slot) -> Envelope | None:
        envelope = slot.queue.take()
        if envelope is not None:
            slot.last_used = self.clock()
            if slot.closed is None:
                self._slots.move_to_end(thread_id)
            if len(slot.queue) < self.high_water:
                slot.full_reported = False
        return envelope

    def get(self, thread_id: str, timeout: float | None = None) -> Envelope | None:
        """The thread's next event, waiting up to ``timeout`` seconds (``None``: forever).

        Returns ``None`` on timeout; raises ``QueueClosedError`` if the queue is or gets closed.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._lock:
            slot = self._slot(thread_id)
            while True:
                if slot.closed is not None:
                    raise QueueClosedError(thread_id, slot.closed)
                envelope = self._take(thread_id, slot)
                if envelope is not None:
                    return envelope
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return None
                slot.ready.wait(remaining)

    async def aget(self, thread_id: str, timeout: float | None = None) -> Envelope | None:
        """``get`` for asyncio: waits without blocking the event loop."""
        import asyncio

        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        while True:
            with self._lock:
                slot = self._slot(thread_id)
                if slot.closed is not None:
                    raise QueueClosedError(thread_id, slot.closed)
                envelope = self._take(thread_id, slot)
                if envelope is not None:
                    return envelope
                remaining = None if deadline is None else deadline - loop.time()
                if remaining is not None and remaining <= 0:
                    return None
                future: asyncio.Future[None] = loop.create_future()
                slot.waiters.append((loop, future))
            try:
                await asyncio.wait_for(future, remaining)
            except TimeoutError:
                return None
            finally:
                with self._lock:
                    if (loop, future) in slot.waiters:
                        slot.waiters.remove((loop, future))
            if slot.closed is not None:
                raise QueueClosedError(thread_id, slot.closed)

    def events(self, thread_id: str, *, timeout: float | None = None) -> Iterator[Envelope]:
        """Iterate the thread's events until its queue closes or ``timeout`` passes idle."""
        while True:
            try:
                envelope = self.get(thread_id, timeout)
            except QueueClosedError:
                return
            if envelope is None:
                return
            yield envelope

    async def aevents(
        self, thread_id: str, *, timeout: float | None = None
    ) -> AsyncIterator[Envelope]:
        """``events`` for asyncio: ``async for envelope in broadcaster.aevents(thread_id)``."""
        while True:
            try:
                envelope = await self.aget(thread_id, timeout)
            except QueueClosedError:
                return
            if envelope is None:
                return
            yield envelope

    def __repr__(self) -> str:
        return f"Broadcaster({len(self._slots)} queues, maxsize={self.maxsize})"


def _call_soon(loop: asyncio.AbstractEventLoop, future: asyncio.Future[None]) -> None:
    # RuntimeError: that consumer's event loop is closed; nobody waits there any more.
    with suppress(RuntimeError):
        loop.call_soon_threadsafe(_wake, future)


def _stats(total: QueueStats, queues: int, missing: int, evicted: int) -> BroadcastStats:
    return BroadcastStats(
        queues=queues,
        published=total.published,
        delivered=total.delivered,
        coalesced=total.coalesced,
        evicted=total.evicted,
        dropped=total.dropped,
        critical_dropped=total.critical_dropped,
        missing=missing,
        queues_evicted=evicted,
    )
