"""A page of a thread's history: the checkpoints of a range of versions, each record with the
cursor after it, at the cost of the page, not of the history.

The page is the ``limit`` records just before version ``before`` (default: all up to the
latest), oldest first. The cursor before the page comes from the latest snapshot the store
keeps at or before it (``HistoryPages.snapshot_before``), replayed up to the page a chunk of
records at a time; without one, from the thread's first record, still a chunk at a time, so
memory holds a chunk and the page whatever the history. A store without ``HistoryPages``
has its whole journal read (``records``) and the page kept.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from ..errors import RunError
from ..stores._protocol import history_pages
from ..stores._record_pages import page_bounds
from ._journal import JournalReader

if TYPE_CHECKING:
    from ..definition._flow import Flow
    from ..records._records import Snapshot
    from ..stores._protocol import AnyRecord, RecordRange, Store
    from ._cursor import Cursor

__all__ = ["check_page", "replay_page"]

#: Records read from the store at a time while replaying up to and through a page.
CHUNK = 512


def check_page(thread_id: str, limit: object, before: object) -> None:
    """``RunError`` unless ``limit`` is ``None`` or a count of 1 or more and ``before`` is
    ``None`` or a version (0 or more)."""
    for name, value, least in (("limit", limit, 1), ("before", before, 0)):
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < least:
            what = "how many checkpoints" if name == "limit" else "a checkpoint version"
            raise RunError(
                f"Cannot page the history of thread `{thread_id}` with {name}={value!r:.40}: "
                f"`{name}` is {what}, a whole number of {least} or more, or None.",
                thread_id=thread_id,
            )


def replay_page(
    flow: Flow, store: Store, thread_id: str, *, limit: int | None, before: int | None
) -> Iterator[tuple[Any, Cursor]]:
    """Each record of the page with the cursor after it, oldest first (see the module doc)."""
    pages = history_pages(store)
    if pages is None:
        records = store.records(thread_id)
        first, last = records[0].version, records[-1].version
        start, stop = page_bounds(first, last, limit=limit, before=before)
        yield from _replay(flow, thread_id, records, None, start, stop)
        return
    head = pages.record_range(thread_id, 0, 0)
    start, stop = page_bounds(head.first, head.last, limit=limit, before=before)
    if start >= stop:
        return
    base = pages.snapshot_before(thread_id, start - 1) if start > head.first else None
    version = head.first if base is None else base.version + 1
    chunks = _chunks(pages.record_range, thread_id, version, stop)
    yield from _replay(flow, thread_id, chunks, base, start, stop)


def _chunks(
    read: Callable[[str, int, int], RecordRange], thread_id: str, version: int, stop: int
) -> Iterator[AnyRecord]:
    """The records from ``version`` to ``stop`` (exclusive), read ``CHUNK`` at a time."""
    while version < stop:
        chunk = read(thread_id, version, min(stop, version + CHUNK)).records
        if not chunk:
            return
        yield from chunk
        version = chunk[-1].version + 1


def _replay(
    flow: Flow,
    thread_id: str,
    records: Iterable[AnyRecord],
    base: Snapshot | None,
    start: int,
    stop: int,
) -> Iterator[tuple[Any, Cursor]]:
    reader = JournalReader(flow, thread_id)
    if base is not None:
        reader.begin_snapshot(base)
    for record in records:
        if record.version >= stop:
            return
        reader.feed(record)
        if record.version >= start:
            cursor = reader.cursor if not reader.behind else reader.position(strict=False)[0]
            assert cursor is not None
            yield record, cursor
