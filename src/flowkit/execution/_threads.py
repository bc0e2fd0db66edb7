"""The runner's view of its threads: cached cursors kept in step with the store.

Loading asks the store only for records newer than the cached cursor, so a resume in the same
process reads almost nothing; a cursor from another process's writes is caught up by replay.
Commits append one record and take a snapshot when the store asks for one.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any

from pydantic import BaseModel

from ..definition._flow import Flow
from ..definition._jsonform import dump_state, dump_update
from ..errors import (
    ConflictError,
    RunError,
    StoreError,
    ThreadExistsError,
    ThreadNotFoundError,
)
from ..foundation._logging import get_logger
from ..records._records import FORMAT_VERSION, PatchRecord, Snapshot, StartRecord, prebuilt
from ..stores._ids import check_thread_id
from ..stores._protocol import AnyRecord, Store
from ._cursor import Cursor
from ._journal import JournalReader
from ._upgrade import MigrationReport
from .batch._journal import snapshot_items
from .subflows._journal import sub_snapshot

__all__ = ["Threads"]


class Threads:
    """Cursors of one flow's threads in one store (or in memory only, with ``store=None``)."""

    def __init__(
        self, flow: Flow, store: Store | None, stamp: Callable[[], float], cache_size: int
    ) -> None:
        self.flow = flow
        self.store = store
        #: The ``ts`` of every record and snapshot of this runner (``record_clock``).
        self.stamp = stamp
        self._cache: OrderedDict[str, Cursor] = OrderedDict()
        self._cache_size = cache_size
        self._local_locks: dict[str, threading.Lock] = {}
        #: Threads this object holds the lock of (how many holds), and those of them whose
        #: run ``cancel`` asked to stop; ``run_steps`` reads ``cancels`` before each node.
        self._held: dict[str, int] = {}
        self.cancels: set[str] = set()
        self._cancelling = threading.Lock()

    def dump(self, update: Mapping[str, Any], *, thread_id: str, who: str) -> dict[str, Any]:
        """The JSON form of an update, or nothing when there is no store to keep it.

        ``UnstorableValueError`` (nothing written) if JSON cannot carry a value faithfully.
        """
        if self.store is None or not update:
            return {}
        return dump_update(self.flow.schema, update, thread_id=thread_id, who=who)

    def dump_state(self, thread_id: str, state: BaseModel, who: str) -> dict[str, Any]:
        """The JSON form of a whole state, checked like an update."""
        return dump_state(
            state, thread_id=thread_id, who=who, dump=lambda: self.flow.schema.dump_state(state)
        )

    def commit(self, thread_id: str, before: int, after: Cursor, record: AnyRecord | None) -> None:
        store = self.store
        if store is not None and record is not None:
            store.append(thread_id, [record], expected_version=before)
        self.remember(thread_id, after)
        if store is not None and store.snapshot_due(thread_id):
            # Stamped with its record's time: no second clock reading that could fail (a
            # broken Runner clock) after the step is saved.
            self._take_snapshot(store, thread_id, after, None if record is None else record.ts)

    def _take_snapshot(self, store: Store, thread_id: str, after: Cursor, at: float | None) -> None:
        try:
            store.write_snapshot(thread_id, self.snapshot(after, thread_id, at))
        except StoreError as exc:
            # The step is saved; a snapshot only speeds up loading, so a failed one waits for
            # the next commit instead of failing a good step.
            get_logger().warning(
                "snapshot_failed",
                thread_id=thread_id,
                version=after.version,
                error_type=type(exc).__name__,
            )

    def commit_all(
        self, thread_id: str, before: int, after: Cursor, records: Sequence[AnyRecord]
    ) -> None:
        """Commit several records with one append (one fsync, one transaction): a batch's
        calls that finished together. A snapshot, if due, is taken once, at ``after``."""
        store = self.store
        if store is not None and records:
            store.append(thread_id, records, expected_version=before)
        self.remember(thread_id, after)
        if store is not None and records and store.snapshot_due(thread_id):
            self._take_snapshot(store, thread_id, after, records[-1].ts)

    def snapshot(self, cursor: Cursor, thread_id: str, ts: float | None = None) -> Snapshot:
        """The whole position at ``cursor``, stamped ``ts`` (default: now, by the clock)."""
        if ts is None:
            ts = self.stamp()
        return Snapshot(
            version=cursor.version,
            ts=ts,
            next=cursor.node,
            status=cursor.status,
            flow=self.flow.name,
            state=self.dump_state(thread_id, cursor.state, "snapshot"),
            error=cursor.error.model_dump() if cursor.error else None,
            items=snapshot_items(cursor),
            sub=sub_snapshot(self.flow, cursor, thread_id, ts),
            flow_version=self._flow_version,
            entered=cursor.entered,
            pauses=None if cursor.pauses is None else dict(cursor.pauses),
            due=cursor.due,
        )

    @property
    def _flow_version(self) -> int | None:
        # Left out (None) at version 1, so journals of unversioned flows stay as they were.
        return self.flow.version if self.flow.version != 1 else None

    def remember(self, thread_id: str, cursor: Cursor) -> None:
        self._cache[thread_id] = cursor
        self._cache.move_to_end(thread_id)
        if self.store is None:
            return  # without a store the cache is the only copy: never evict
        while len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)

    def lock(self, thread_id: str) -> AbstractContextManager[None]:
        check_thread_id(thread_id)
        held = self.store.lock(thread_id) if self.store is not None else None
        return _Held(self, thread_id, held or self._local_lock(thread_id))

    def cancel(self, thread_id: str) -> bool:
        """Ask the run of ``thread_id`` going on under this object's lock to stop before its
        next node; whether one was going on (a request lasts until that lock is let go)."""
        with self._cancelling:
            if thread_id not in self._held:
                return False
            self.cancels.add(thread_id)
            return True

    def _enter(self, thread_id: str) -> None:
        with self._cancelling:
            self._held[thread_id] = self._held.get(thread_id, 0) + 1

    def _leave(self, thread_id: str) -> None:
        with self._cancelling:
            left = self._held.pop(thread_id) - 1
            if left:
                self._held[thread_id] = left
            else:
                self.cancels.discard(thread_id)

    @contextmanager
    def _local_lock(self, thread_id: str) -> Iterator[None]:
        lock = self._local_locks.setdefault(thread_id, threading.Lock())
        if not lock.acquire(blocking=False):
            raise ConflictError(f"Thread `{thread_id}` is running already.", thread_id=thread_id)
        try:
            yield
        finally:
            lock.release()

    def load(self, thread_id: str, *, migrate: bool = False) -> Cursor:
        """The thread's latest committed cursor.

        A thread of an older flow version comes back upgraded by the flow's migrations; with
        ``migrate=True`` (the caller holds the thread's lock) the upgrade is also committed
        as a ``patch`` record, and only then cached. ``IncompatibleThreadError`` when the
        thread does not fit the flow.
        """
        cursor, report = self.read(thread_id)
        if report is not None and migrate:
            cursor = self.commit_migration(thread_id, cursor, report)
        return cursor

    def read(self, thread_id: str) -> tuple[Cursor, MigrationReport | None]:
        """The thread's position under the flow and, when it stands at an older version,
        what the migrations changed (nothing is written; the upgraded cursor is not cached)."""
        check_thread_id(thread_id)
        cached = self._cache.get(thread_id)
        if self.store is None:
            if cached is None:
                raise ThreadNotFoundError(thread_id)
            return cached, None
        log = self.store.load(thread_id, after=cached.version if cached else None)
        reader = JournalReader(self.flow, thread_id)
        if log.base is not None:
            reader = JournalReader(self.flow, thread_id, cached)
        elif log.snapshot is not None:
            self._check_flow(thread_id, log.snapshot.flow)
            reader.begin_snapshot(log.snapshot)
        else:
            first = log.records[0]
            if isinstance(first, StartRecord):
                self._check_flow(thread_id, first.flow)
        for record in log.records:
            reader.feed(record)
        cursor, report = reader.position()
        if report is None:
            self.remember(thread_id, cursor)
        else:
            self._cache.pop(thread_id, None)
        return cursor, report

    def commit_migration(self, thread_id: str, cursor: Cursor, report: MigrationReport) -> Cursor:
        """Record an upgrade as a ``patch`` holding the whole new position; the new cursor."""
        self.require_store("migrations")
        # Still the same step (its idempotency key must not change): keep where it began.
        after = cursor._replace(version=cursor.version + 1, entered=cursor.step_version)
        position = self.snapshot(after, thread_id)
        reason = f"migrated from version {report.from_version} to {report.to_version}"
        if report.steps:
            reason += ": " + "; ".join(report.steps)
        if report.dropped:
            reason += f" (dropped: {', '.join(report.dropped)})"
        record = PatchRecord(
            version=after.version,
            ts=position.ts,
            next=after.node,
            status=after.status,
            update={k: position.state[k] for k in report.changed if k in position.state},
            reason=reason,
            actor="migration",
            migration={
                "from": report.from_version,
                "to": report.to_version,
                "position": position.model_dump(mode="json"),
            },
        )
        self.commit(thread_id, cursor.version, after, record)
        get_logger().info(
            "thread_migrated",
            thread_id=thread_id,
            from_version=report.from_version,
            to_version=report.to_version,
            version=after.version,
        )
        return after

    def _check_flow(self, thread_id: str, name: str) -> None:
        if name != self.flow.name:
            raise RunError(
                f"Thread `{thread_id}` belongs to flow `{name}`, not `{self.flow.name}`; open it "
                f"with a runner of flow `{name}`.",
                thread_id=thread_id,
            )

    def create(self, thread_id: str, cursor: Cursor, forked_from: Any = None) -> None:
        if self.store is None:
            if thread_id in self._cache:
                raise ThreadExistsError(thread_id)
        else:
            self.store.create(
                thread_id,
                self.start_record(thread_id, cursor, ts=self.stamp(), forked_from=forked_from),
            )
        self.remember(thread_id, cursor)

    def start_record(
        self, thread_id: str, cursor: Cursor, *, ts: float, forked_from: Any = None
    ) -> StartRecord:
        """The start record of a thread standing at ``cursor`` (a new thread, a fork, or the
        new start of a compacted journal: then at the cursor's version).

        Prebuilt like a step's record (``step_record``) but for a fork, whose origin comes
        from the caller."""
        values = {
            "v": FORMAT_VERSION,
            "version": cursor.version,
            "ts": ts,
            "run_id": None,
            "next": cursor.node,
            "status": cursor.status,
            "pauses": None if cursor.pauses is None else dict(cursor.pauses),
            "due": cursor.due,
            "kind": "start",
            "flow": self.flow.name,
            "state": self.dump_state(thread_id, cursor.state, "start"),
            "forked_from": forked_from,
            "error": cursor.error.model_dump() if cursor.error else None,
            "sub": sub_snapshot(self.flow, cursor, thread_id, ts),
            "flow_version": self._flow_version,
            "items": snapshot_items(cursor),
        }
        if forked_from is None:
            return prebuilt(StartRecord, values)
        return StartRecord.model_validate(values)

    def forget(self, thread_id: str) -> None:
        """Drop the cached cursor of a thread deleted or compacted."""
        self._cache.pop(thread_id, None)

    def replay(self, thread_id: str, *, upto: int | None = None) -> Iterator[tuple[Any, Cursor]]:
        """Each record of the thread with the cursor after it, oldest first.

        Checkpoints of an older flow version are shown upgraded by the migrations, where
        they stood (a position the flow no longer has is kept as it was).
        """
        store = self.require_store("history and fork")
        reader = JournalReader(self.flow, check_thread_id(thread_id))
        for record in store.records(thread_id):
            if upto is not None and record.version > upto:
                return
            reader.feed(record)
            cursor = reader.cursor if not reader.behind else reader.position(strict=False)[0]
            assert cursor is not None
            yield record, cursor

    def require_store(self, what: str) -> Store:
        if self.store is None:
            raise RunError(
                f"{what} need a store; this Runner was made with store=None.", thread_id=""
            )
        return self.store

    def ids(self) -> list[str]:
        if self.store is None:
            return sorted(self._cache)
        return self.store.threads()


class _Held:
    """The thread's lock, noting while it is held that a run of the thread may be cancelled
    (``Threads.cancel``). A class, not ``@contextmanager``: every run takes one."""

    __slots__ = ("_held", "_thread_id", "_threads")

    def __init__(
        self, threads: Threads, thread_id: str, held: AbstractContextManager[None]
    ) -> None:
        self._threads = threads
        self._thread_id = thread_id
        self._held = held

    def __enter__(self) -> None:
        self._held.__enter__()
        self._threads._enter(self._thread_id)

    def __exit__(self, *exc: Any) -> None:
        self._threads._leave(self._thread_id)
        self._held.__exit__(*exc)
