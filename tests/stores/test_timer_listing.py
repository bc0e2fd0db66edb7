"""``list_due_timers``: the threads whose timer is due by a time, a page at a time, earliest
first (ties by thread id), from each shipped store's timer index and, for a store without one,
by loading every thread; cursors continue a listing and bad arguments are
``InvalidListingError``."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from contextlib import AbstractContextManager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from _pg import fresh_schema, require_postgres

from flowkit.errors import InvalidCursorError, InvalidListingError
from flowkit.stores import (
    DueTimer,
    JsonFileStore,
    MemoryStore,
    PatchRecord,
    StartRecord,
    Store,
    ThreadLog,
    TimerIndex,
    list_due_timers,
)

T0 = 1_800_000_000.0


def start(flow: str = "f", due: float | None = None) -> StartRecord:
    return StartRecord(version=0, ts=T0, next="g", status="waiting", flow=flow, state={}, due=due)


def patch(version: int, due: float | None, status: str = "waiting") -> PatchRecord:
    return PatchRecord(version=version, ts=T0, next="g", status=status, update={}, due=due)


class Plain:
    """A store without a timer index (a third party's): only the ``Store`` protocol."""

    def __init__(self) -> None:
        self.inner = MemoryStore()

    def create(self, thread_id: str, record: StartRecord) -> None:
        self.inner.create(thread_id, record)

    def append(self, thread_id: str, records: Any, *, expected_version: int) -> None:
        self.inner.append(thread_id, records, expected_version=expected_version)

    def load(self, thread_id: str, *, after: int | None = None) -> ThreadLog:
        return self.inner.load(thread_id, after=after)

    def threads(self) -> list[str]:
        return self.inner.threads()

    def lock(self, thread_id: str) -> AbstractContextManager[None]:
        return self.inner.lock(thread_id)


@pytest.fixture(params=["memory", "jsonfile", "postgres", "plain"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    if request.param == "memory":
        yield MemoryStore()
    elif request.param == "plain":
        plain = Plain()
        assert not isinstance(plain, TimerIndex)
        yield plain
    elif request.param == "jsonfile":
        with JsonFileStore(tmp_path / "store", fsync=False) as opened:
            yield opened
    else:
        require_postgres()
        from flowkit.stores.postgres import PostgresStore

        with fresh_schema() as (url, schema), PostgresStore(url, schema=schema) as opened:
            yield opened


def ids(page: Any) -> list[str]:
    return [timer.thread_id for timer in page.timers]


def test_a_listing_pages_through_the_due_timers_earliest_first(store: Any) -> None:
    # Two share a due time: they come by thread id. One is due later, one has no timer.
    for thread_id, due in [("c", 30), ("a", 10), ("e", 30), ("b", 20), ("d", 50), ("x", None)]:
        store.create(thread_id, start(due=None if due is None else T0 + due))
    first = list_due_timers(store, T0 + 40, limit=2)
    assert first.timers == [DueTimer("a", T0 + 10), DueTimer("b", T0 + 20)]
    assert first.next_cursor is not None
    second = list_due_timers(store, T0 + 40, limit=2, cursor=first.next_cursor)
    assert ids(second) == ["c", "e"]
    assert second.next_cursor is None  # "d" is due after `until`: the listing ends here
    everything = list_due_timers(store, T0 + 50)
    assert ids(everything) == ["a", "b", "c", "e", "d"] and everything.next_cursor is None


def test_a_timer_ended_or_set_meanwhile_is_seen_by_the_next_page(store: Any) -> None:
    for thread_id, due in [("a", 10), ("b", 20), ("c", 30), ("d", 40)]:
        store.create(thread_id, start(due=T0 + due))
    first = list_due_timers(store, T0 + 100, limit=2)
    store.append("c", [patch(1, None, status="done")], expected_version=0)  # answered
    store.create("e", start(due=T0 + 35))
    store.create("early", start(due=T0 + 1))  # before the cursor: the next page is after it
    rest = list_due_timers(store, T0 + 100, limit=10, cursor=first.next_cursor)
    assert ids(first) == ["a", "b"] and ids(rest) == ["e", "d"]


def test_a_listing_by_flow_and_until_as_an_aware_datetime(store: Any) -> None:
    store.create("f1", start("f", due=T0 + 1))
    store.create("g1", start("g", due=T0 + 2))
    store.create("f2", start("f", due=T0 + 3))
    until = datetime.fromtimestamp(T0 + 2, UTC)
    assert ids(list_due_timers(store, until, flow="f")) == ["f1"]
    assert ids(list_due_timers(store, T0 + 3, flow="f")) == ["f1", "f2"]
    assert ids(list_due_timers(store, T0 + 3, flow="nobody")) == []
    # Far beyond any timer: the same as year 9999, whichever store answers.
    assert ids(list_due_timers(store, 1e300)) == ["f1", "g1", "f2"]
    assert ids(list_due_timers(store, -1e300)) == []


@pytest.mark.parametrize(
    ("arguments", "words"),
    [
        ({"until": datetime(2027, 1, 1)}, "naive datetime"),
        ({"until": float("nan")}, "seconds since the epoch"),
        ({"until": "tomorrow"}, "seconds since the epoch"),
        ({"until": True}, "seconds since the epoch"),
        ({"until": T0, "limit": 0}, "from 1 to 10,000"),
        ({"until": T0, "limit": 10_001}, "from 1 to 10,000"),
        ({"until": T0, "limit": 2.0}, "from 1 to 10,000"),
    ],
)
def test_bad_arguments_are_invalid_listings(arguments: dict[str, Any], words: str) -> None:
    with pytest.raises(InvalidListingError, match=words):
        list_due_timers(MemoryStore(), **arguments)


def _b64(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


@pytest.mark.parametrize(
    "cursor",
    [
        "not a cursor",
        "x" * 601,
        _b64("[1, 2]"),
        _b64('{"o": "updated", "k": [1.0, "a"]}'),  # a thread listing's cursor
        _b64('{"o": "due", "k": [1e400, "a"]}'),
        _b64('{"o": "due", "k": [10e20, "a"]}'),
        _b64('{"o": "due", "k": [1.0, "../a"]}'),
        _b64('{"o": "due", "k": [true, "a"]}'),
        _b64('{"o": "due", "k": [1.0]}'),
    ],
)
def test_a_cursor_no_timer_listing_gave_is_refused(cursor: str) -> None:
    store: Store = MemoryStore()
    with pytest.raises(InvalidCursorError, match=r"(no cursor|without it)"):
        list_due_timers(store, T0, cursor=cursor)
