"""What the hub reads from the store: where a thread stands, the records after a version, and a
subscriber's backlog of checkpoints, encoded (all run in a worker thread, off the loop)."""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping

from ..errors import ThreadNotFoundError
from ..stores._protocol import AnyRecord, Store
from ._frames import checkpoint_frame
from ._journal import ShowPauses

__all__ = ["encoded_after", "latest_version", "records_after"]


def latest_version(store: Store, thread_id: str) -> int:
    log = store.load(thread_id)
    last = log.records[-1] if log.records else log.snapshot
    if last is None:
        raise ThreadNotFoundError(thread_id)
    return last.version


def records_after(
    store: Store, thread_id: str, after: int, limit: int, cheap: bool = False
) -> list[AnyRecord]:
    """Up to ``limit`` records newer than ``after``, oldest first.

    ``cheap``: first ask for an incremental load (nearly free when nothing changed)."""
    if cheap:
        log = store.load(thread_id, after=after)
        if log.base == after:
            return list(log.records[:limit])
        newest = log.records[-1] if log.records else log.snapshot
        if newest is None or newest.version <= after:
            return []
        found = [r for r in log.records if r.version > after]
        if found and found[0].version == after + 1:
            return found[:limit]
    found = []
    for record in store.records(thread_id):
        if record.version > after:
            found.append(record)
            if len(found) >= limit:
                break
    return found


def encoded_after(
    store: Store,
    thread_id: str,
    after: int,
    limit: int,
    classes: Mapping[str, frozenset[str]],
    shown: ShowPauses | None = None,
) -> deque[tuple[int, bytes]]:
    return deque(
        (record.version, checkpoint_frame(record, classes, shown))
        for record in records_after(store, thread_id, after, limit)
    )
