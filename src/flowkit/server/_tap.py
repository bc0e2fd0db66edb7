"""The server's runners write through a tapped store: every record that reaches the journal is
handed to the event hub right after the store accepted it.

So live events are built from exactly what was saved, by the same code that replays the
journal to a reconnecting client: the two can never disagree.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Protocol

from ..records._records import Snapshot, StartRecord
from ..stores._list_threads import count_threads, list_threads
from ..stores._listing import ThreadPage
from ..stores._protocol import AnyRecord, AttemptMarks, DueTimer, Store, ThreadLog, TimerIndex

if TYPE_CHECKING:
    from ..records._marker import AttemptMarker

__all__ = ["Creations", "Fanout", "Listener", "TappedStore", "tap"]


class Listener(Protocol):
    """Told of writes; called on the writer's thread, so it must be quick and never raise."""

    def appended(self, thread_id: str, records: Sequence[AnyRecord]) -> None: ...

    def deleted(self, thread_id: str) -> None: ...


class TappedStore:
    """``store`` with every successful create, append and delete reported to ``listener``."""

    def __init__(self, store: Store, listener: Listener) -> None:
        self.inner = store
        self.listener = listener

    def create(self, thread_id: str, record: StartRecord) -> None:
        self.inner.create(thread_id, record)
        self.listener.appended(thread_id, (record,))

    def append(
        self, thread_id: str, records: Sequence[AnyRecord], *, expected_version: int
    ) -> None:
        self.inner.append(thread_id, records, expected_version=expected_version)
        self.listener.appended(thread_id, records)

    def load(self, thread_id: str, *, after: int | None = None) -> ThreadLog:
        return self.inner.load(thread_id, after=after)

    def records(self, thread_id: str) -> list[AnyRecord]:
        return self.inner.records(thread_id)

    def snapshot_due(self, thread_id: str) -> bool:
        return self.inner.snapshot_due(thread_id)

    def write_snapshot(self, thread_id: str, snapshot: Snapshot) -> None:
        self.inner.write_snapshot(thread_id, snapshot)

    def threads(self) -> list[str]:
        return self.inner.threads()

    def delete(self, thread_id: str) -> None:
        self.inner.delete(thread_id)
        self.listener.deleted(thread_id)

    def compact(self, thread_id: str, start: StartRecord) -> int:
        # Records after ``start.version`` keep their versions, so event ids stay valid; a
        # client behind the cut resumes at the new start record.
        return self.inner.compact(thread_id, start)

    def lock(self, thread_id: str) -> AbstractContextManager[None]:
        return self.inner.lock(thread_id)

    # Listings (``ThreadIndex``) read the inner store's index, or load each thread without one.
    def list_threads(self, **options: Any) -> ThreadPage:
        return list_threads(self.inner, **options)

    def count_threads(self, **options: Any) -> int:
        return count_threads(self.inner, **options)

    def __repr__(self) -> str:
        return f"TappedStore({self.inner!r})"


class _TappedMarkingStore(TappedStore):
    """A tapped store whose store keeps attempt markers (``AttemptMarks``) keeps them too."""

    inner: Store

    def mark_attempt(self, thread_id: str, marker: AttemptMarker) -> None:
        marks: AttemptMarks = self.inner  # type: ignore[assignment]
        marks.mark_attempt(thread_id, marker)

    def last_attempt(self, thread_id: str) -> AttemptMarker | None:
        marks: AttemptMarks = self.inner  # type: ignore[assignment]
        return marks.last_attempt(thread_id)


class _TappedTimerStore(TappedStore):
    """A tapped store whose store keeps a timer index (``TimerIndex``) keeps it too."""

    inner: Store

    def due_timers(
        self,
        until: float,
        *,
        flow: str | None = None,
        limit: int | None = None,
        after: DueTimer | None = None,
    ) -> list[DueTimer]:
        timers: TimerIndex = self.inner  # type: ignore[assignment]
        return timers.due_timers(until, flow=flow, limit=limit, after=after)

    def drop_timer(self, thread_id: str, due: float) -> None:
        timers: TimerIndex = self.inner  # type: ignore[assignment]
        timers.drop_timer(thread_id, due)


class _TappedMarkingTimerStore(_TappedMarkingStore, _TappedTimerStore):
    """A tapped store with both capabilities."""


def tap(store: Store, listener: Listener) -> TappedStore:
    """``store`` tapped for ``listener``, keeping its attempt-marker and timer-index
    capabilities if it has them."""
    marks, timers = isinstance(store, AttemptMarks), isinstance(store, TimerIndex)
    if marks and timers:
        return _TappedMarkingTimerStore(store, listener)
    if marks:
        return _TappedMarkingStore(store, listener)
    if timers:
        return _TappedTimerStore(store, listener)
    return TappedStore(store, listener)


class Fanout:
    """Several listeners as one; one that raises never keeps the others from hearing."""

    def __init__(self, *listeners: Listener) -> None:
        self.listeners = listeners

    def appended(self, thread_id: str, records: Sequence[AnyRecord]) -> None:
        for listener in self.listeners:
            with contextlib.suppress(Exception):
                listener.appended(thread_id, records)

    def deleted(self, thread_id: str) -> None:
        for listener in self.listeners:
            with contextlib.suppress(Exception):
                listener.deleted(thread_id)


class Creations:
    """Lets a request that started a run in the background wait until its thread exists."""

    def __init__(self) -> None:
        self._waiting: dict[str, threading.Event] = {}
        self._guard = threading.Lock()

    def expect(self, thread_id: str) -> threading.Event:
        with self._guard:
            return self._waiting.setdefault(thread_id, threading.Event())

    def forget(self, thread_id: str) -> None:
        with self._guard:
            self._waiting.pop(thread_id, None)

    def appended(self, thread_id: str, records: Sequence[AnyRecord]) -> None:
        if records and records[0].kind == "start":
            with self._guard:
                found = self._waiting.get(thread_id)
            if found is not None:
                found.set()

    def deleted(self, thread_id: str) -> None:
        pass
