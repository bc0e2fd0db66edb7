"""MemoryStore: threads in a dict, for tests and for runs that need no durability.

It has every optional capability: attempt markers (``AttemptMarks``), a timer index
(``TimerIndex``: thread -> when its timer is due, kept by ``create`` and ``append``) and
thread listings (``ThreadIndex``). A listing needs nothing kept per step: each journal's last
record, already in memory, is where its thread stands.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING

from ..errors import ConflictError, ThreadExistsError, ThreadNotFoundError
from ..records._records import Snapshot, StartRecord
from ._ids import check_thread_id
from ._listing import QueriedListing, ThreadPage, ThreadQuery, ThreadSummary, page_of
from ._protocol import (
    AnyRecord,
    DueTimer,
    RecordRange,
    ThreadLog,
    check_compaction,
    check_versions,
    thread_busy,
)

if TYPE_CHECKING:
    from ..records._marker import AttemptMarker

__all__ = ["MemoryStore"]


class MemoryStore(QueriedListing):
    """Keeps records in memory. Safe to share between threads of one process."""

    def __init__(self) -> None:
        self._journals: dict[str, list[AnyRecord]] = {}
        self._snapshots: dict[str, Snapshot] = {}
        self._attempts: dict[str, AttemptMarker] = {}
        #: When each thread's timer is due (threads without one are not here).
        self._timers: dict[str, float] = {}
        #: When each thread was created (its start record's time), kept through compaction.
        self._created: dict[str, float] = {}
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()

    def _journal(self, thread_id: str) -> list[AnyRecord]:
        journal = self._journals.get(check_thread_id(thread_id))
        if journal is None:
            raise ThreadNotFoundError(thread_id)
        return journal

    def create(self, thread_id: str, record: StartRecord) -> None:
        check_thread_id(thread_id)
        with self._guard:
            if thread_id in self._journals:
                raise ThreadExistsError(thread_id)
            self._journals[thread_id] = [record]
            if record.version == 0:
                self._created[thread_id] = record.ts
            if record.due is not None:
                self._timers[thread_id] = record.due

    def append(
        self, thread_id: str, records: Sequence[AnyRecord], *, expected_version: int
    ) -> None:
        check_thread_id(thread_id)
        if not (  # the engine's one step record: checked inline, the rest in full
            len(records) == 1
            and records[0].version == expected_version + 1
            and records[0].kind != "start"
        ):
            check_versions(thread_id, records, expected_version)
        with self._guard:
            journal = self._journals.get(thread_id)
            if journal is None:
                raise ThreadNotFoundError(thread_id)
            actual = journal[-1].version
            if actual != expected_version:
                raise ConflictError(
                    f"Thread `{thread_id}` is at version {actual}, not {expected_version}; "
                    "another writer got there first. Reload the thread and try again.",
                    thread_id=thread_id,
                    expected=expected_version,
                    actual=actual,
                )
            journal.extend(records)
            due = journal[-1].due
            if due is not None:
                self._timers[thread_id] = due
            elif self._timers:  # a thread without a timer pays one truth test
                self._timers.pop(thread_id, None)

    def load(self, thread_id: str, *, after: int | None = None) -> ThreadLog:
        with self._guard:  # a consistent view while another thread compacts
            journal = self._journal(thread_id)
            first = journal[0].version  # not 0 once compacted
            if after is not None and first <= after < first + len(journal):
                return ThreadLog(records=journal[after - first + 1 :], base=after)
            snapshot = self._snapshots.get(thread_id)
            if snapshot is not None:
                start = snapshot.version - first + 1
                return ThreadLog(records=journal[start:], snapshot=snapshot)
            return ThreadLog(records=list(journal))

    def records(self, thread_id: str) -> list[AnyRecord]:
        return list(self._journal(thread_id))

    def record_range(self, thread_id: str, start: int, stop: int) -> RecordRange:
        with self._guard:
            journal = self._journal(thread_id)
            first, last = journal[0].version, journal[-1].version
            page = journal[max(start - first, 0) : max(stop - first, 0)]
            return RecordRange(page, first, last)

    def snapshot_before(self, thread_id: str, version: int) -> Snapshot | None:
        with self._guard:
            self._journal(thread_id)
            snapshot = self._snapshots.get(thread_id)
        return snapshot if snapshot is not None and snapshot.version <= version else None

    def snapshot_due(self, thread_id: str) -> bool:
        check_thread_id(thread_id)
        return False  # replaying from memory is cheap; snapshots only on request

    def write_snapshot(self, thread_id: str, snapshot: Snapshot) -> None:
        with self._guard:
            journal = self._journal(thread_id)
            latest = journal[-1].version
            if not journal[0].version <= snapshot.version <= latest:
                raise ConflictError(
                    f"Snapshot of version {snapshot.version} does not match thread "
                    f"`{thread_id}` (at {latest}); take it again after reloading.",
                    thread_id=thread_id,
                    expected=snapshot.version,
                    actual=latest,
                )
            self._snapshots[thread_id] = snapshot

    def threads(self) -> list[str]:
        return sorted(self._journals)

    def delete(self, thread_id: str) -> None:
        with self.lock(thread_id), self._guard:
            self._journal(thread_id)
            del self._journals[thread_id]
            self._snapshots.pop(thread_id, None)
            self._attempts.pop(thread_id, None)
            self._timers.pop(thread_id, None)
            self._created.pop(thread_id, None)

    def compact(self, thread_id: str, start: StartRecord) -> int:
        with self.lock(thread_id), self._guard:
            journal = self._journal(thread_id)
            first = journal[0].version
            check_compaction(thread_id, start, first, journal[-1].version)
            dropped = start.version - first + 1
            self._journals[thread_id] = [start, *journal[dropped:]]
            snapshot = self._snapshots.get(thread_id)
            if snapshot is not None and snapshot.version < start.version:
                del self._snapshots[thread_id]
            return dropped

    def _page(self, query: ThreadQuery) -> ThreadPage:
        return page_of(self._summaries(), query)

    def _count(self, query: ThreadQuery) -> int:
        return sum(1 for summary in self._summaries() if query.selects(summary))

    def _summaries(self) -> list[ThreadSummary]:
        with self._guard:
            return [
                ThreadSummary(
                    thread_id=thread_id,
                    flow=getattr(journal[0], "flow", "?"),
                    status=journal[-1].status,
                    node=journal[-1].next,
                    version=journal[-1].version,
                    updated=journal[-1].ts,
                    created=self._created.get(thread_id),
                )
                for thread_id, journal in self._journals.items()
            ]

    def due_timers(
        self,
        until: float,
        *,
        flow: str | None = None,
        limit: int | None = None,
        after: DueTimer | None = None,
    ) -> list[DueTimer]:
        with self._guard:
            found = sorted(
                (
                    DueTimer(thread_id, due)
                    for thread_id, due in self._timers.items()
                    if due <= until
                    and (after is None or (due, thread_id) > (after.due, after.thread_id))
                    and (flow is None or getattr(self._journals[thread_id][0], "flow", "") == flow)
                ),
                key=lambda timer: (timer.due, timer.thread_id),
            )
        return found if limit is None else found[:limit]

    def drop_timer(self, thread_id: str, due: float) -> None:
        with self._guard:
            if self._timers.get(check_thread_id(thread_id)) == due:
                del self._timers[thread_id]

    def mark_attempt(self, thread_id: str, marker: AttemptMarker) -> None:
        self._journal(thread_id)
        self._attempts[thread_id] = marker

    def last_attempt(self, thread_id: str) -> AttemptMarker | None:
        self._journal(thread_id)
        return self._attempts.get(thread_id)

    def lock(self, thread_id: str) -> AbstractContextManager[None]:
        check_thread_id(thread_id)
        lock = self._locks.get(thread_id)
        if lock is None:
            with self._guard:
                lock = self._locks.setdefault(thread_id, threading.Lock())
        return _Held(lock, thread_id)


class _Held:
    """A thread's lock taken without waiting: a second runner gets ``ConflictError``.

    A class, not ``@contextmanager``: every run takes one, and the generator cost a tenth of
    a short run."""

    __slots__ = ("_lock", "_thread_id")

    def __init__(self, lock: threading.Lock, thread_id: str) -> None:
        self._lock = lock
        self._thread_id = thread_id

    def __enter__(self) -> None:
        if not self._lock.acquire(blocking=False):
            raise thread_busy(self._thread_id)

    def __exit__(self, *exc: object) -> None:
        self._lock.release()
