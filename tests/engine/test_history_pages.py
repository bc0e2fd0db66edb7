"""History in pages, and opening a thread at the cost of its snapshot, on every shipped store.

``Runner.history(thread, limit=, before=)`` is the ``limit`` checkpoints just before version
``before`` (default: the latest), oldest first, exactly as the whole history shows them; a
page is read alone (``HistoryPages``: a range of records and the snapshot before it). A
durable store takes a snapshot when a thread pauses after enough steps, and at least every
``snapshot_every`` records, so a fresh runner replays only the records after it.
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from flowkit import Flow, Gate, Route, RouteTable, Runner, field
from flowkit.errors import RunError
from flowkit.stores import MemoryStore, Store
from flowkit.stores._protocol import history_pages
from flowkit.stores._record_pages import record_page


class Count(BaseModel):
    count: int = 0
    stop_at: int = 0
    done: bool = False
    fail_at: int = 0


class More(BaseModel):
    stop_at: int


def tick(state: Count) -> dict[str, Any]:
    if state.count + 1 == state.fail_at:
        raise RuntimeError("the thread stops here, not at a pause")
    return {"count": state.count + 1, "done": state.count + 1 >= state.stop_at}


def more(state: Count, answer: More) -> dict[str, Any]:
    return {"stop_at": answer.stop_at, "done": False}


def counter(node: Any = tick) -> Flow:
    """``node`` (``tick``) counts up to ``stop_at``, then gate ``more`` waits for a new one."""
    return Flow(
        name="paged_counter",
        state=Count,
        start="tick",
        nodes={"tick": node},
        gates={"more": Gate(More, apply=more, writes=["stop_at", "done"])},
        routes={
            "tick": RouteTable("after_tick", [Route(field("done"), "more")], default="tick"),
            "more": "tick",
        },
    )


COUNTER = counter()


def waiting_at(runner: Runner[Any, Any], thread_id: str, *stops: int) -> int:
    """Thread ``thread_id`` run to each count in ``stops`` in turn; its latest version."""
    result = runner.start(thread_id, {"stop_at": stops[0]})
    for stop in stops[1:]:
        result = runner.resume(thread_id, {"stop_at": stop})
    assert result.status == "waiting" and result.state.count == stops[-1]
    return result.version


PAGES = [
    (1, None), (5, None), (50, None), (500, None), (None, 0), (None, 1), (None, 70),
    (3, 1), (10, 64), (10, 65), (64, 130), (7, 150), (1, 151), (40, 10_000), (2, 0),
]  # fmt: skip


@pytest.mark.parametrize(("limit", "before"), PAGES)
def test_a_page_of_history_is_the_same_slice_of_the_whole_history(
    every_store: Store, limit: int | None, before: int | None
) -> None:
    runner = Runner(COUNTER, store=every_store)
    waiting_at(runner, "t", 70, 100, 150)
    whole = runner.history("t")
    stop = len(whole) if before is None else min(before, len(whole))
    start = 0 if limit is None else max(0, stop - limit)
    fresh = Runner(COUNTER, store=every_store)  # nothing cached: the page is read alone
    assert fresh.history("t", limit=limit, before=before) == whole[start:stop]


def test_pages_walk_back_through_the_whole_history_without_gaps_or_repeats(
    every_store: Store,
) -> None:
    runner = Runner(COUNTER, store=every_store)
    waiting_at(runner, "t", 90, 200)
    seen: list[int] = []
    page = runner.history("t", limit=37)
    while page:
        seen[:0] = [c.version for c in page]
        page = runner.history("t", limit=37, before=page[0].version)
    assert seen == [c.version for c in runner.history("t")]


def test_a_compacted_thread_pages_from_its_new_start(every_store: Store) -> None:
    runner = Runner(COUNTER, store=every_store)
    latest = waiting_at(runner, "t", 80, 120)
    runner.compact("t", keep=50)
    whole = runner.history("t")
    assert whole[0].kind == "start" and whole[0].version > 0
    assert runner.history("t", limit=10) == whole[-10:]
    assert runner.history("t", limit=1000) == whole
    assert runner.history("t", limit=5, before=whole[0].version) == []
    found = record_page(every_store, "t", limit=10, before=whole[3].version)
    assert [r.version for r in found.records] == [c.version for c in whole[:3]]
    assert (found.first, found.last) == (whole[0].version, latest)


def test_record_pages_count_from_the_end_or_from_an_offset(every_store: Store) -> None:
    runner = Runner(COUNTER, store=every_store)
    latest = waiting_at(runner, "t", 30)
    every = every_store.records("t")
    for kwargs, expected in (
        ({"limit": 4}, every[-4:]),
        ({"limit": 4, "before": 10}, every[6:10]),
        ({"limit": 4, "offset": 0}, every[:4]),
        ({"limit": 4, "offset": latest - 1}, every[-2:]),
        ({"offset": latest + 5}, []),
        ({}, every),
    ):
        found = record_page(every_store, "t", **kwargs)  # type: ignore[arg-type]
        assert list(found.records) == expected, kwargs
        assert (found.first, found.last) == (0, latest)


@pytest.mark.parametrize(
    ("limit", "before"), [(0, None), (-1, None), (True, None), ("5", None), (None, -1), (2, 1.5)]
)
def test_a_page_that_is_not_one_is_refused_with_what_to_give(
    every_store: Store, limit: Any, before: Any
) -> None:
    runner = Runner(COUNTER, store=every_store)
    waiting_at(runner, "t", 5)
    with pytest.raises(RunError, match="whole number") as caught:
        runner.history("t", limit=limit, before=before)
    assert caught.value.thread_id == "t"


def test_every_shipped_store_reads_pages_alone(every_store: Store) -> None:
    assert history_pages(every_store) is every_store


def test_a_durable_store_snapshots_a_pause_so_a_fresh_runner_replays_nothing(
    every_store: Store,
) -> None:
    if isinstance(every_store, MemoryStore):
        pytest.skip("MemoryStore snapshots only on request: replaying memory is cheap")
    runner = Runner(COUNTER, store=every_store)
    version = waiting_at(runner, "t", 20)
    log = every_store.load("t")
    assert log.snapshot is not None and log.snapshot.version == version
    assert list(log.records) == []
    # A pause after a few records only takes none: the journal opens as fast.
    runner.resume("t", {"stop_at": 22})
    log = every_store.load("t")
    assert log.snapshot is not None and log.snapshot.version == version
    assert [r.version for r in log.records] == [version + 1, version + 2, version + 3]


def test_a_durable_store_snapshots_at_least_every_64_records(every_store: Store) -> None:
    if isinstance(every_store, MemoryStore):
        pytest.skip("MemoryStore snapshots only on request: replaying memory is cheap")
    seen: list[tuple[bool, int]] = []

    def peek(state: Count) -> dict[str, Any]:
        if state.count == 300:  # mid-run: what a fresh reader would replay now
            log = every_store.load("t")
            seen.append((log.snapshot is not None, len(log.records)))
        return tick(state)

    assert Runner(counter(peek), store=every_store).start("t", {"stop_at": 400}).status == (
        "waiting"
    )
    assert len(seen) == 1
    has_snapshot, replayed = seen[0]
    assert has_snapshot and 0 < replayed <= 64


def test_a_page_far_back_replays_from_a_snapshot_shortly_before_it(every_store: Store) -> None:
    if isinstance(every_store, MemoryStore):
        pytest.skip("MemoryStore keeps the one snapshot it is given")
    runner = Runner(COUNTER, store=every_store)
    waiting_at(runner, "t", 300)
    pages = history_pages(every_store)
    assert pages is not None
    found = pages.snapshot_before("t", 200)
    assert found is not None and 200 - 64 < found.version <= 200
    assert pages.snapshot_before("t", 5) is None
