"""``list_due_timers``: the threads whose timer (a gate's deadline, a node's wake-up) is due by
a time, a page at a time, for any store.

A store with the ``TimerIndex`` capability answers from its index (all three shipped stores
keep one), so a page costs the page, whatever the number of threads; any other store has
every thread loaded. Pages are keyset paged in the index's order (due time, then thread id):
a cursor names the last timer handed out, and the next page starts just after it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime

from ..errors import FlowkitError, InvalidCursorError, InvalidListingError
from ._ids import is_thread_id
from ._listing import DEFAULT_LIMIT, MAX_LIMIT, cursor_key, make_cursor
from ._protocol import DueTimer, Store, timer_index

__all__ = ["TimerPage", "list_due_timers", "timer_cursor"]

#: The order a timer listing's cursors are made for (``make_cursor``).
_ORDER = "due"
#: Year 1 to year 9999 in seconds since the epoch: no timer is due outside (a later ``until``
#: lists the same timers as this one, and a database need not read an impossible time).
_FIRST, _LAST = -62_135_596_800.0, 253_402_300_799.0


@dataclass(frozen=True, slots=True)
class TimerPage:
    """One page of due timers, earliest first; ``next_cursor`` continues it (``None``: this
    was the last). An entry may be stale (the thread moved on since its index entry was
    written, see ``TimerIndex``): read the thread to be sure."""

    timers: list[DueTimer]
    next_cursor: str | None = None


def list_due_timers(
    store: Store,
    until: float | datetime,
    *,
    flow: str | None = None,
    limit: int = DEFAULT_LIMIT,
    cursor: str | None = None,
) -> TimerPage:
    """One page of ``store``'s threads (of ``flow``; ``None``: of any) whose timer is due at
    or before ``until`` (seconds since the epoch, or an aware datetime), earliest first (ties
    by thread id), at most ``limit`` (1 to 10,000), starting after ``cursor`` (a page's
    ``next_cursor``). Bad arguments are ``InvalidListingError`` (a cursor not made here,
    ``InvalidCursorError``)."""
    moment = _until(until)
    size = _limit(limit)
    after = _read_cursor(cursor)
    index = timer_index(store)
    if index is not None:
        found = index.due_timers(moment, flow=flow, limit=size + 1, after=after)
    else:
        start = None if after is None else _key(after)
        found = [t for t in _read_timers(store, moment, flow) if start is None or _key(t) > start]
    if len(found) > size:
        return TimerPage(found[:size], timer_cursor(found[size - 1]))
    return TimerPage(found[:size])


def _read_timers(store: Store, until: float, flow: str | None) -> list[DueTimer]:
    """Every due timer of a store without an index, by loading each thread (one that cannot
    be read is left to whoever reads it next)."""
    found = []
    for thread_id in store.threads():
        try:
            log = store.load(thread_id)
        except FlowkitError:
            continue
        last = log.records[-1] if log.records else log.snapshot
        first = log.snapshot or (log.records[0] if log.records else None)
        due = getattr(last, "due", None)
        if due is None or due > until or getattr(last, "status", None) != "waiting":
            continue
        if flow is None or getattr(first, "flow", None) == flow:
            found.append(DueTimer(thread_id, due))
    return sorted(found, key=_key)


def _key(timer: DueTimer) -> tuple[float, str]:
    return (timer.due, timer.thread_id)


def _until(until: float | datetime) -> float:
    if isinstance(until, datetime):
        if until.utcoffset() is None:
            raise InvalidListingError(
                "until is a naive datetime (no time zone), which could mean any of 24 hours; "
                "pass an aware one, e.g. datetime.now(UTC)."
            )
        return min(max(until.timestamp(), _FIRST), _LAST)
    if isinstance(until, bool) or not isinstance(until, int | float) or not math.isfinite(until):
        raise InvalidListingError(
            f"until is a time: seconds since the epoch or an aware datetime, not {until!r:.40}."
        )
    return min(max(float(until), _FIRST), _LAST)


def _limit(limit: int) -> int:
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise InvalidListingError(
            f"limit is a whole number from 1 to {MAX_LIMIT:,}, not {limit!r:.40}."
        )
    return limit


def timer_cursor(timer: DueTimer) -> str:
    """A cursor that continues a listing just after ``timer`` (for a caller that stops
    within a page, e.g. after leaving out the timers it may not show)."""
    return make_cursor(_ORDER, [timer.due, timer.thread_id])


def _read_cursor(cursor: str | None) -> DueTimer | None:
    """The timer a cursor names (``None``: the first page)."""
    if cursor is None:
        return None
    key = cursor_key(cursor, _ORDER)
    if (
        isinstance(key, list)
        and len(key) == 2
        and isinstance(key[0], int | float)
        and not isinstance(key[0], bool)
        and _FIRST <= key[0] <= _LAST
        and isinstance(key[1], str)
        and is_thread_id(key[1])
    ):
        return DueTimer(key[1], float(key[0]))
    raise InvalidCursorError(
        f"Cursor {str(cursor)[:40]!r} is damaged; start from the first page (no cursor)."
    )
