"""Thread listings: what a store tells of each thread without loading it, and the filters,
order and cursors of ``list_threads``.

A ``ThreadSummary`` is where a thread stands after its last record (status, node, version,
when). Listings are keyset paged: a cursor names the sort key of the last thread handed out,
and the next page starts just after it, so a page costs the same wherever it starts, and
threads created or deleted meanwhile never make one appear twice or go missing. Every store
makes and reads cursors here, so a cursor is a cursor, whichever store gave it.
"""

from __future__ import annotations

import base64
import binascii
import heapq
import json
import math
from abc import ABC, abstractmethod
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, TypeGuard, cast

from ..errors import InvalidCursorError, InvalidListingError
from ._ids import is_thread_id

__all__ = [
    "DEFAULT_LIMIT",
    "MAX_LIMIT",
    "STATUSES",
    "UNREADABLE",
    "Order",
    "QueriedListing",
    "ThreadPage",
    "ThreadQuery",
    "ThreadSummary",
    "page_of",
    "thread_query",
]

#: How a listing is sorted: ``updated``, most recently updated first (ties by thread id), or
#: ``id``, by thread id.
Order = Literal["updated", "id"]
#: The status of a thread whose journal cannot be read: listed, never hidden.
UNREADABLE = "unreadable"
STATUSES = frozenset({"pending", "waiting", "done", "failed", UNREADABLE})
DEFAULT_LIMIT = 50
MAX_LIMIT = 10_000
#: A cursor is a short key; anything much longer was not made here.
_MAX_CURSOR = 600


@dataclass(frozen=True, slots=True)
class ThreadSummary:
    """Where a thread stands after its last record, as a listing shows it.

    ``node`` is where it goes next (the record's ``next``), ``updated`` the last record's time
    and ``created`` its start record's (seconds since the epoch; ``None`` once the store no
    longer knows it, e.g. after a compaction dropped the start). A thread that cannot be read
    has status ``unreadable`` and says why in ``error``; ``warnings`` reports a torn last record
    skipped when the thread was last read.
    """

    thread_id: str
    flow: str
    status: str
    node: str
    version: int
    updated: float
    created: float | None = None
    error: str | None = None
    warnings: tuple[str, ...] = ()

    def cursor(self, order: Order = "updated") -> str:
        """A cursor that continues a listing in ``order`` just after this thread."""
        key: list[Any] = [self.updated, self.thread_id] if order == "updated" else [self.thread_id]
        return make_cursor(order, key)


@dataclass(frozen=True, slots=True)
class ThreadPage:
    """One page of a listing; ``next_cursor`` continues it (``None``: this was the last)."""

    threads: list[ThreadSummary]
    next_cursor: str | None = None


@dataclass(frozen=True, slots=True)
class ThreadQuery:
    """A listing's arguments, checked: filters, order, page size and where the page starts
    (``after_updated``/``after_id``, the last thread of the previous page)."""

    statuses: frozenset[str] | None = None
    flow: str | None = None
    updated_before: float | None = None
    updated_after: float | None = None
    limit: int = DEFAULT_LIMIT
    order: Order = "updated"
    after_updated: float | None = None
    after_id: str | None = None

    def selects(self, summary: ThreadSummary) -> bool:
        """Whether ``summary`` passes the filters (wherever the page starts)."""
        return (
            (self.statuses is None or summary.status in self.statuses)
            and (self.flow is None or summary.flow == self.flow)
            and (self.updated_before is None or summary.updated < self.updated_before)
            and (self.updated_after is None or summary.updated >= self.updated_after)
        )

    def follows(self, summary: ThreadSummary) -> bool:
        """Whether ``summary`` comes after the cursor (always, without one)."""
        if self.after_id is None:
            return True
        if self.order == "id":
            return summary.thread_id > self.after_id
        assert self.after_updated is not None
        return summary.updated < self.after_updated or (
            summary.updated == self.after_updated and summary.thread_id > self.after_id
        )

    def sort_key(self, summary: ThreadSummary) -> tuple[Any, ...]:
        if self.order == "id":
            return (summary.thread_id,)
        return (-summary.updated, summary.thread_id)


def thread_query(
    *,
    status: str | Iterable[str] | None = None,
    flow: str | None = None,
    updated_before: float | datetime | None = None,
    updated_after: float | datetime | None = None,
    limit: int = DEFAULT_LIMIT,
    cursor: str | None = None,
    order: str = "updated",
) -> ThreadQuery:
    """``list_threads``'s arguments checked; ``InvalidListingError`` (``InvalidCursorError``
    for the cursor) says what is wrong with them."""
    if order not in ("updated", "id"):
        raise InvalidListingError(
            f"Order {str(order)[:40]!r} is not one a listing knows; use 'updated' (most "
            "recently updated first) or 'id' (by thread id)."
        )
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise InvalidListingError(
            f"A listing's limit is a whole number from 1 to {MAX_LIMIT}, not {limit!r:.40}; "
            "page on with the cursor for more (or iterate with iter_threads)."
        )
    if flow is not None and not _is_name(flow):
        raise InvalidListingError(
            f"flow is a flow's name: a string of at most {_MAX_FLOW_NAME} characters, UTF-8, "
            "without NUL."
        )
    after_updated, after_id = _read_cursor(cursor, cast(Order, order))
    return ThreadQuery(
        statuses=_statuses(status),
        flow=flow,
        updated_before=_seconds("updated_before", updated_before),
        updated_after=_seconds("updated_after", updated_after),
        limit=limit,
        order=cast(Order, order),
        after_updated=after_updated,
        after_id=after_id,
    )


def page_of(summaries: Iterable[ThreadSummary], query: ThreadQuery) -> ThreadPage:
    """The page ``query`` asks for, out of every thread's summary (stores that list from
    memory, or read each thread): the ``limit`` first in order after the cursor."""
    chosen = [s for s in summaries if query.selects(s) and query.follows(s)]
    found = heapq.nsmallest(query.limit + 1, chosen, key=query.sort_key)
    return page_from(found, query)


def page_from(found: list[ThreadSummary], query: ThreadQuery) -> ThreadPage:
    """A page from up to ``limit + 1`` summaries in order (one more than the page shows
    tells whether another page follows, without asking for an empty one)."""
    if len(found) <= query.limit:
        return ThreadPage(found)
    shown = found[: query.limit]
    return ThreadPage(shown, shown[-1].cursor(query.order))


def _statuses(status: str | Iterable[str] | None) -> frozenset[str] | None:
    if status is None:
        return None
    wanted = frozenset([status] if isinstance(status, str) else status)
    unknown = sorted(str(s)[:40] for s in wanted if s not in STATUSES)
    if unknown or not wanted:
        raise InvalidListingError(
            f"Status {', '.join(unknown) or '(none)'} is not one a thread can have; use "
            f"{', '.join(sorted(STATUSES))} (one, or several)."
        )
    return wanted


#: The longest flow name a listing filters by (no flow has a longer one).
_MAX_FLOW_NAME = 200


def _is_name(flow: object) -> bool:
    """Whether ``flow`` can name a flow: what a store can look up, never an encoding error."""
    if not isinstance(flow, str) or len(flow) > _MAX_FLOW_NAME or "\0" in flow:
        return False
    try:
        flow.encode()
    except UnicodeEncodeError:  # a lone surrogate (a command line's undecodable bytes)
        return False
    return True


def _finite(value: object) -> bool:
    """Whether ``value`` is a real number a float holds (not a bool, nan, inf or 10**400)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:  # an int too large for a float
        return False


def _seconds(name: str, value: float | datetime | None) -> float | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        if value.utcoffset() is None:
            raise InvalidListingError(
                f"{name} is a naive datetime (no time zone): which of 24 hours? Give an aware "
                "one (datetime.now(UTC) - ...) or seconds since the epoch."
            )
        return value.timestamp()  # aware: no local time to convert through, never out of range
    if not _finite(value):
        raise InvalidListingError(
            f"{name} is a time: seconds since the epoch or a datetime, not {value!r:.40}."
        )
    return float(value)


def make_cursor(order: str, key: list[Any]) -> str:
    """An opaque cursor: the listing's ``order`` and the sort ``key`` of the row it follows."""
    text = json.dumps({"o": order, "k": key}, separators=(",", ":"))
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def cursor_key(cursor: object, order: str) -> object:
    """The key ``cursor`` holds (unchecked), once it is shown to be a cursor (``make_cursor``)
    of a listing in ``order``; ``InvalidCursorError`` otherwise."""
    try:
        if not isinstance(cursor, str) or len(cursor) > _MAX_CURSOR:
            raise ValueError("not a cursor")
        padded = cursor + "=" * (-len(cursor) % 4)
        data = json.loads(base64.b64decode(padded, altchars=b"-_", validate=True))
        made_for, key = data["o"], data["k"]
    except (ValueError, binascii.Error, TypeError, KeyError):
        raise InvalidCursorError(
            f"Cursor {str(cursor)[:40]!r} is not one a listing gave; start from the first page "
            "(no cursor) and page on with each page's next_cursor."
        ) from None
    if made_for != order:
        raise InvalidCursorError(
            f"The cursor continues a listing in order {str(made_for)[:20]!r}, not {order!r}; "
            "page on in the order it was made for, or start again without it."
        )
    return key


def _read_cursor(cursor: str | None, order: Order) -> tuple[float | None, str | None]:
    """The sort key a cursor holds, checked against the listing's order."""
    if cursor is None:
        return None, None
    key = cursor_key(cursor, order)
    if order == "id" and _is_key(key, 1):
        return None, key[0]
    if order == "updated" and _is_key(key, 2):
        return float(key[0]), key[1]
    raise InvalidCursorError(
        f"Cursor {str(cursor)[:40]!r} is damaged; start from the first page (no cursor)."
    )


def _is_key(key: object, size: int) -> TypeGuard[list[Any]]:
    """Whether ``key`` is a cursor's key: ``[thread id]`` or ``[updated, thread id]``."""
    if not isinstance(key, list) or len(key) != size or not isinstance(key[-1], str):
        return False
    if not is_thread_id(key[-1]):
        return False
    if size == 1:
        return True
    return _finite(key[0])


class QueriedListing(ABC):
    """``list_threads`` and ``count_threads`` for a store: the arguments checked into a
    ``ThreadQuery`` once, here; the store answers ``_page`` and ``_count`` (a store that
    lacks one cannot be made)."""

    def list_threads(
        self,
        *,
        status: str | Iterable[str] | None = None,
        flow: str | None = None,
        updated_before: float | datetime | None = None,
        updated_after: float | datetime | None = None,
        limit: int = DEFAULT_LIMIT,
        cursor: str | None = None,
        order: str = "updated",
    ) -> ThreadPage:
        query = thread_query(
            status=status,
            flow=flow,
            updated_before=updated_before,
            updated_after=updated_after,
            limit=limit,
            cursor=cursor,
            order=order,
        )
        return self._page(query)

    def count_threads(
        self,
        *,
        status: str | Iterable[str] | None = None,
        flow: str | None = None,
        updated_before: float | datetime | None = None,
        updated_after: float | datetime | None = None,
    ) -> int:
        query = thread_query(
            status=status, flow=flow, updated_before=updated_before, updated_after=updated_after
        )
        return self._count(query)

    @abstractmethod
    def _page(self, query: ThreadQuery) -> ThreadPage:
        """The page ``query`` asks for."""

    @abstractmethod
    def _count(self, query: ThreadQuery) -> int:
        """How many threads pass ``query``'s filters."""
