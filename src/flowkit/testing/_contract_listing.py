"""The listing half of the store contract: ``flowkit.stores.list_threads`` on any store.

A store with the ``ThreadIndex`` capability answers from its index, any other by having each
thread loaded; either way the pages must be the same: the filters, both orders, cursors that
never give a thread twice nor miss one, and what each summary says.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

import pytest

from ..errors import InvalidCursorError, InvalidListingError
from ..records._records import StartRecord
from ..stores import Store
from ..stores._list_threads import count_threads, iter_threads, list_threads
from ..stores._listing import ThreadSummary, make_cursor
from ._contract_flows import start_record, step_record

__all__ = ["ListingChecks"]

Reopen = Callable[[], Store]
T0 = 1_700_000_000.0


def _thread(
    store: Store,
    thread_id: str,
    *,
    updated: float,
    status: str = "pending",
    flow: str = "contract",
    node: str = "work",
) -> None:
    """A thread of two records: its start at ``T0``, then one at ``updated``."""
    store.create(thread_id, start_record(flow=flow))
    step = step_record(1).model_copy(update={"ts": updated, "status": status, "next": node})
    store.append(thread_id, [step], expected_version=0)


def _ids(summaries: Any) -> list[str]:
    return [s.thread_id for s in summaries]


def _every_page(store: Store, **options: Any) -> list[str]:
    """The ids of a whole listing, paged by cursor."""
    found: list[str] = []
    cursor = None
    while True:
        page = list_threads(store, cursor=cursor, **options)
        found += _ids(page.threads)
        if page.next_cursor is None:
            return found
        assert page.threads, "a page with a next cursor has threads"
        cursor = page.next_cursor


class ListingChecks:
    """Thread listings, filtered, ordered and paged; uses ``store`` and ``reopen``."""

    def test_an_empty_store_lists_no_threads(self, store: Store) -> None:
        page = list_threads(store)
        assert (page.threads, page.next_cursor) == ([], None)
        assert count_threads(store) == 0

    def test_a_summary_says_where_the_thread_stands_after_its_last_record(
        self, store: Store, reopen: Reopen
    ) -> None:
        _thread(store, "t1", updated=T0 + 5, status="waiting", node="review", flow="docs")
        summary = list_threads(reopen()).threads[0]
        assert summary == ThreadSummary(
            thread_id="t1",
            flow="docs",
            status="waiting",
            node="review",
            version=1,
            updated=T0 + 5,
            created=T0,
        )

    def test_threads_are_listed_most_recently_updated_first_or_by_id(
        self, store: Store, reopen: Reopen
    ) -> None:
        for thread_id, updated in [("b", 3.0), ("a", 3.0), ("d", 1.0), ("c", 7.5)]:
            _thread(store, thread_id, updated=T0 + updated)
        assert _ids(list_threads(reopen()).threads) == ["c", "a", "b", "d"]  # ties by id
        assert _ids(list_threads(reopen(), order="id").threads) == ["a", "b", "c", "d"]

    def test_filters_select_by_status_flow_and_update_time(
        self, store: Store, reopen: Reopen
    ) -> None:
        _thread(store, "w1", updated=T0 + 1, status="waiting")
        _thread(store, "w2", updated=T0 + 2, status="waiting", flow="other")
        _thread(store, "d1", updated=T0 + 3, status="done", node="__end__")
        _thread(store, "f1", updated=T0 + 4, status="failed")
        listed = reopen()

        def ids(**filters: Any) -> list[str]:
            found = _ids(list_threads(listed, order="id", **filters).threads)
            assert count_threads(listed, **filters) == len(found)
            return found

        assert ids(status="waiting") == ["w1", "w2"]
        assert ids(status=["done", "failed"]) == ["d1", "f1"]
        assert ids(flow="other") == ["w2"]
        assert ids(flow="contract", status="waiting") == ["w1"]
        assert ids(updated_after=T0 + 2) == ["d1", "f1", "w2"]  # at or after
        assert ids(updated_before=T0 + 2) == ["w1"]  # strictly before
        assert ids(updated_after=T0 + 2, updated_before=T0 + 4) == ["d1", "w2"]
        assert ids(status="pending") == []

    @pytest.mark.parametrize("order", ["updated", "id"])
    def test_cursors_page_through_every_thread_once(
        self, store: Store, reopen: Reopen, order: str
    ) -> None:
        for index in range(7):
            _thread(store, f"t{index}", updated=T0 + index % 3)  # ties within pages
        whole = _ids(list_threads(reopen(), order=order).threads)
        assert sorted(whole) == [f"t{i}" for i in range(7)]
        for limit in (1, 2, 3, 7):
            assert _every_page(reopen(), order=order, limit=limit) == whole
        assert list_threads(reopen(), order=order, limit=7).next_cursor is None
        assert _ids(iter_threads(reopen(), order=order, page_size=2)) == whole

    @pytest.mark.parametrize("order", ["updated", "id"])
    def test_paging_while_threads_come_and_go_never_repeats_nor_misses_one(
        self, store: Store, reopen: Reopen, order: str
    ) -> None:
        for index in range(12):
            _thread(store, f"old-{index:02}", updated=T0 + index)
        doomed = {"old-03", "old-08"}
        seen: list[str] = []
        cursor = None
        for round_ in range(100):
            page = list_threads(reopen(), order=order, limit=3, cursor=cursor)
            seen += _ids(page.threads)
            # Meanwhile: new threads (later and earlier in either order) and deletions.
            _thread(store, f"new-{round_:02}", updated=T0 + 20 + round_)
            _thread(store, f"aaa-{round_:02}", updated=T0 - round_)
            if doomed:
                store.delete(doomed.pop())
            if page.next_cursor is None:
                break
            cursor = page.next_cursor
        assert len(seen) == len(set(seen)), "a thread was listed twice"
        stable = {f"old-{i:02}" for i in range(12)} - {"old-03", "old-08"}
        assert stable <= set(seen), f"missed: {sorted(stable - set(seen))}"

    def test_deleted_threads_leave_and_compacted_ones_stay_as_they_stand(
        self, store: Store, reopen: Reopen
    ) -> None:
        _thread(store, "gone", updated=T0 + 1)
        store.create("kept", start_record())
        steps = [step_record(v) for v in range(1, 4)]
        store.append("kept", steps, expected_version=0)
        before = list_threads(store, order="id").threads[1]
        store.delete("gone")
        start = start_record({"n": 2}).model_copy(update={"version": 2, "ts": steps[1].ts})
        store.compact("kept", start)
        after = list_threads(reopen()).threads
        assert _ids(after) == ["kept"]
        assert after[0].version == before.version == 3 and after[0].updated == steps[2].ts
        assert (after[0].status, after[0].node) == (before.status, before.node)

    def test_a_thread_created_at_a_later_version_has_no_creation_time(
        self, store: Store, reopen: Reopen
    ) -> None:
        start: StartRecord = start_record().model_copy(update={"version": 4, "ts": T0 + 4})
        store.create("copied", start)
        store.append("copied", [step_record(5)], expected_version=4)
        summary = list_threads(reopen()).threads[0]
        assert (summary.version, summary.updated, summary.created) == (5, T0 + 5, None)

    @pytest.mark.parametrize(
        "options",
        [
            {"limit": 0},
            {"limit": 10_001},
            {"limit": True},
            {"limit": "5"},
            {"order": "name"},
            {"status": "sleeping"},
            {"status": []},
            {"updated_before": "yesterday"},
            {"updated_after": float("nan")},
            {"updated_after": 10**400},  # an int no float holds
            {"updated_after": datetime(2026, 1, 1)},  # naive: which of 24 hours?
            {"flow": "\ud800"},  # a lone surrogate: undecodable bytes of a command line
            {"flow": "a\0b"},
            {"flow": "f" * 201},
            {"flow": 7},
        ],
        ids=repr,
    )
    def test_bad_listing_arguments_are_refused_with_a_typed_error(
        self, store: Store, options: dict[str, Any]
    ) -> None:
        with pytest.raises(InvalidListingError):
            list_threads(store, **options)
        # iter_threads: the same refusals; a page size that is no whole number too.
        rest = {k: v for k, v in options.items() if k != "limit"}
        pages: dict[str, Any] = {"page_size": "5"} if "limit" in options else {}
        with pytest.raises(InvalidListingError):
            next(iter_threads(store, **rest, **pages))

    def test_a_cursor_that_is_not_one_or_is_for_another_order_is_refused(
        self, store: Store
    ) -> None:
        for index in range(3):
            _thread(store, f"t{index}", updated=T0 + index)
        by_id = list_threads(store, order="id", limit=1).next_cursor
        by_update = list_threads(store, limit=1).next_cursor
        assert by_id is not None and by_update is not None
        huge = make_cursor("updated", [10**400, "t1"])
        for bad in ("", "not a cursor", "e30", by_id[:-3], "x" * 5000):
            with pytest.raises(InvalidCursorError):
                list_threads(store, order="id", cursor=bad)
        with pytest.raises(InvalidCursorError):  # a time no float holds
            list_threads(store, cursor=huge)
        with pytest.raises(InvalidCursorError, match="order"):
            list_threads(store, cursor=by_id)
        with pytest.raises(InvalidCursorError, match="order"):
            list_threads(store, order="id", cursor=by_update)
        assert issubclass(InvalidCursorError, ValueError)
