"""A page of a thread's records from any store: what ``flowkit history`` and the server's
history route list, read at the cost of the page where the store has ``HistoryPages``.

Pages count back from the end (``before``, default the latest) or forward from the start
(``offset``, the server's older way to page); both are oldest first. A store without
``HistoryPages`` has all its records read and the page cut from them.
"""

from __future__ import annotations

from ._protocol import RecordRange, Store, history_pages

__all__ = ["page_bounds", "record_page"]


def page_bounds(
    first: int, last: int, *, limit: int | None, before: int | None, offset: int | None = None
) -> tuple[int, int]:
    """The versions ``start`` (included) and ``stop`` (excluded) of a page of a journal that
    holds ``first`` to ``last``; see ``record_page``."""
    if offset is not None:
        start = first + offset
        return start, (last + 1 if limit is None else min(last + 1, start + limit))
    stop = last + 1 if before is None else min(before, last + 1)
    return (first if limit is None else max(first, stop - limit)), stop


def record_page(
    store: Store,
    thread_id: str,
    *,
    limit: int | None = None,
    before: int | None = None,
    offset: int | None = None,
) -> RecordRange:
    """The records of a page, oldest first, with the thread's first and latest versions:
    with ``offset``, the ``limit`` records from the ``offset``-th one on (0: the first);
    else the ``limit`` records just before version ``before`` (default: up to the latest).
    ``limit=None``: no limit."""
    pages = history_pages(store)
    if pages is None:
        records = store.records(thread_id)
        first, last = records[0].version, records[-1].version
    else:
        head = pages.record_range(thread_id, 0, 0)
        first, last = head.first, head.last
    start, stop = page_bounds(first, last, limit=limit, before=before, offset=offset)
    if start >= stop:
        return RecordRange([], first, last)
    if pages is None:
        return RecordRange(records[start - first : stop - first], first, last)
    return pages.record_range(thread_id, start, stop)
