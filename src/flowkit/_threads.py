"""The runner's view of its threads: cached cursors kept in step with the store.

Loading asks the store only for records newer than the cached cursor, so a resume in the same
process reads almost nothing; a cursor from another process's writes is caught up by replay.
Commits append one record and take a snapshot when the store asks for one.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from datetime import datetime
from typing import Any

from pydantic import BaseModel

from ._batch_journal import items_from_snapshot, snapshot_items
from ._execution import Cursor, replay_record
from ._flow import Flow
from ._jsonform import dump_state, dump_update
from ._logging import get_logger
from ._node import NodeError
from ._records import Snapshot, StartRecord
from ._subflow_journal import sub_from_snapshot, sub_snapshot
from .errors import (
    ConflictError,
    RunError,
    StoreError,
    ThreadExistsError,
    ThreadNotFoundError,
)
from .stores._ids import check_thread_id
from .stores._protocol import AnyRecord, Store

__all__ = ["Threads"]


class Threads:
    """Cursors of one flow's threads in one store (or in memory only, with ``store=None``)."""

    def __init__(
        self, flow: Flow, store: Store | None, clock: Callable[[], datetime], cache_size: int
    ) -> None:
        self.flow = flow
        self.store = store
        self.clock = clock
        self._cache: OrderedDict[str, Cursor] = OrderedDict()
        self._cache_size = cache_size
        self._local_locks: dict[str, threading.Lock] = {}

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
            try:
                store.write_snapshot(thread_id, self.snapshot(after, thread_id))
            except StoreError as exc:
                # The step is saved; a snapshot only speeds up loading, so a failed one waits
                # for the next commit instead of failing a good step.
                get_logger().warning(
                    "snapshot_failed",
                    thread_id=thread_id,
                    version=after.version,
                    error_type=type(exc).__name__,
                )

    def snapshot(self, cursor: Cursor, thread_id: str) -> Snapshot:
        ts = self.clock().timestamp()
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
        )

    def remember(self, thread_id: str, cursor: Cursor) -> None:
        self._cache[thread_id] = cursor
        self._cache.move_to_end(thread_id)
        if self.store is None:
            return  # without a store the cache is the only copy: never evict
        while len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)

    def lock(self, thread_id: str) -> AbstractContextManager[None]:
        check_thread_id(thread_id)
        if self.store is not None:
            return self.store.lock(thread_id)
        return self._local_lock(thread_id)

    @contextmanager
    def _local_lock(self, thread_id: str) -> Iterator[None]:
        lock = self._local_locks.setdefault(thread_id, threading.Lock())
        if not lock.acquire(blocking=False):
            raise ConflictError(f"Thread `{thread_id}` is running already.", thread_id=thread_id)
        try:
            yield
        finally:
            lock.release()

    def load(self, thread_id: str) -> Cursor:
        """The thread's latest committed cursor."""
        check_thread_id(thread_id)
        cached = self._cache.get(thread_id)
        if self.store is None:
            if cached is None:
                raise ThreadNotFoundError(thread_id)
            return cached
        log = self.store.load(thread_id, after=cached.version if cached else None)
        cursor: Cursor | None
        if log.base is not None:
            cursor = cached
        elif log.snapshot is not None:
            snap = log.snapshot
            self._check_flow(thread_id, snap.flow)
            state = self.flow.schema.load_state(snap.state)
            error = NodeError.model_validate(snap.error) if snap.error else None
            items = items_from_snapshot(snap.items)
            sub = sub_from_snapshot(self.flow, snap.next, snap.sub)
            cursor = Cursor(state, snap.next, snap.status, snap.version, error, items, sub)
        else:
            first = log.records[0]
            if isinstance(first, StartRecord):
                self._check_flow(thread_id, first.flow)
            cursor = None
        for record in log.records:
            cursor = replay_record(self.flow, cursor, record)
        assert cursor is not None
        self.remember(thread_id, cursor)
        return cursor

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
            state = self.dump_state(thread_id, cursor.state, "start")
            ts = self.clock().timestamp()
            self.store.create(
                thread_id,
                StartRecord(
                    version=0,
                    ts=ts,
                    next=cursor.node,
                    status=cursor.status,
                    flow=self.flow.name,
                    state=state,
                    forked_from=forked_from,
                    error=cursor.error.model_dump() if cursor.error else None,
                    sub=sub_snapshot(self.flow, cursor, thread_id, ts),
                ),
            )
        self.remember(thread_id, cursor)

    def replay(self, thread_id: str, *, upto: int | None = None) -> Iterator[tuple[Any, Cursor]]:
        """Each record of the thread with the cursor after it, oldest first."""
        store = self.require_store("history and fork")
        cursor: Cursor | None = None
        for record in store.records(check_thread_id(thread_id)):
            if upto is not None and record.version > upto:
                return
            cursor = replay_record(self.flow, cursor, record)
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
