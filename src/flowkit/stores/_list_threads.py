"""``list_threads``, ``iter_threads`` and ``count_threads`` for any store.

A store with the ``ThreadIndex`` capability answers from what it keeps per thread; any other
store (a third party's) is listed the old way, by loading each of its threads, so it keeps
working, only slower. ``iter_threads`` walks a whole listing page by page (a command that
prints thousands of threads streams them, and can show progress per thread).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from datetime import datetime

from ..errors import FlowkitError, InvalidListingError
from ._listing import (
    DEFAULT_LIMIT,
    MAX_LIMIT,
    UNREADABLE,
    ThreadPage,
    ThreadQuery,
    ThreadSummary,
    page_of,
    thread_query,
)
from ._protocol import Store, ThreadLog, thread_index

__all__ = ["count_threads", "iter_threads", "list_threads", "summary_of", "unreadable"]

Statuses = str | Iterable[str] | None
When = float | datetime | None


def list_threads(
    store: Store,
    *,
    status: Statuses = None,
    flow: str | None = None,
    updated_before: When = None,
    updated_after: When = None,
    limit: int = DEFAULT_LIMIT,
    cursor: str | None = None,
    order: str = "updated",
) -> ThreadPage:
    """One page of ``store``'s threads (see ``ThreadIndex.list_threads`` for the arguments);
    a store without a thread index has every thread loaded to make it."""
    index = thread_index(store)
    if index is not None:
        return index.list_threads(
            status=status,
            flow=flow,
            updated_before=updated_before,
            updated_after=updated_after,
            limit=limit,
            cursor=cursor,
            order=order,
        )
    query = thread_query(
        status=status,
        flow=flow,
        updated_before=updated_before,
        updated_after=updated_after,
        limit=limit,
        cursor=cursor,
        order=order,
    )
    return page_of(read_summaries(store), query)


def iter_threads(
    store: Store,
    *,
    status: Statuses = None,
    flow: str | None = None,
    updated_before: When = None,
    updated_after: When = None,
    cursor: str | None = None,
    order: str = "updated",
    page_size: int = 1000,
) -> Iterator[ThreadSummary]:
    """Every thread that passes the filters, in ``order``, from after ``cursor``: fetched
    ``page_size`` at a time (a store without a thread index is read once, in one pass)."""
    if isinstance(page_size, bool) or not isinstance(page_size, int):
        raise InvalidListingError(f"page_size is a whole number, not {page_size!r:.40}.")
    query = thread_query(
        status=status,
        flow=flow,
        updated_before=updated_before,
        updated_after=updated_after,
        limit=min(max(page_size, 1), MAX_LIMIT),
        cursor=cursor,
        order=order,
    )
    index = thread_index(store)
    if index is None:
        chosen = [s for s in read_summaries(store) if query.selects(s) and query.follows(s)]
        yield from sorted(chosen, key=query.sort_key)
        return
    while True:
        page = index.list_threads(
            status=status,
            flow=flow,
            updated_before=updated_before,
            updated_after=updated_after,
            limit=query.limit,
            cursor=cursor,
            order=order,
        )
        yield from page.threads
        if page.next_cursor is None:
            return
        cursor = page.next_cursor


def count_threads(
    store: Store,
    *,
    status: Statuses = None,
    flow: str | None = None,
    updated_before: When = None,
    updated_after: When = None,
) -> int:
    """How many of ``store``'s threads pass the filters."""
    index = thread_index(store)
    if index is not None:
        return index.count_threads(
            status=status, flow=flow, updated_before=updated_before, updated_after=updated_after
        )
    query: ThreadQuery = thread_query(
        status=status, flow=flow, updated_before=updated_before, updated_after=updated_after
    )
    return sum(1 for summary in read_summaries(store) if query.selects(summary))


def read_summaries(store: Store) -> Iterator[ThreadSummary]:
    """Every thread's summary, each thread loaded (one that cannot be is ``unreadable``)."""
    for thread_id in store.threads():
        try:
            log = store.load(thread_id)
        except (FlowkitError, OSError) as exc:  # one bad thread must not hide the others
            yield unreadable(thread_id, str(exc))
        else:
            yield summary_of(thread_id, log)


def summary_of(thread_id: str, log: ThreadLog) -> ThreadSummary:
    """Where a loaded thread stands: its last record (or snapshot) and its flow; ``created``
    when the log begins with the thread's first record."""
    last = log.records[-1] if log.records else log.snapshot
    if last is None:
        return unreadable(thread_id, "the store holds no record of it")
    if log.snapshot is not None:
        flow = log.snapshot.flow
        created = None
    else:
        first = log.records[0]
        flow = getattr(first, "flow", None) or "?"
        created = first.ts if first.kind == "start" and first.version == 0 else None
    return ThreadSummary(
        thread_id=thread_id,
        flow=flow,
        status=last.status,
        node=last.next,
        version=last.version,
        updated=last.ts,
        created=created,
        warnings=tuple(log.warnings),
    )


def unreadable(thread_id: str, error: str, *, updated: float = 0.0) -> ThreadSummary:
    """The summary of a thread whose records cannot be read: listed, with why."""
    return ThreadSummary(
        thread_id=thread_id,
        flow="?",
        status=UNREADABLE,
        node="",
        version=-1,
        updated=updated,
        error=error,
    )
