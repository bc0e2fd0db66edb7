"""Thread listings on every shipped store while another thread writes, and through a Runner.

The store contract pages with writes between pages; here the writes run on a thread of their
own, at any moment of a page, and a listing must still give no thread twice and miss none
that existed all along (in ``id`` order, not even one updated meanwhile).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _pg import fresh_schema, require_postgres

from flowkit import Runner, ThreadPage, ThreadSummary
from flowkit.examples.review import flow as review
from flowkit.stores import JsonFileStore, MemoryStore, Store, ThreadIndex, list_threads
from flowkit.testing._contract_flows import start_record, step_record


@pytest.fixture(params=["memory", "jsonfile", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    if request.param == "memory":
        yield MemoryStore()
    elif request.param == "postgres":
        require_postgres()
        from flowkit.stores.postgres import PostgresStore

        with fresh_schema() as (url, schema), PostgresStore(url, schema=schema) as pg_store:
            yield pg_store
    else:
        with JsonFileStore(tmp_path / "store", fsync=False) as file_store:
            yield file_store


def test_every_shipped_store_keeps_a_thread_index(store: Store) -> None:
    assert isinstance(store, ThreadIndex)


@pytest.mark.parametrize("order", ["id", "updated"])
def test_paging_while_another_thread_creates_updates_and_deletes_never_repeats_or_misses(
    store: Store, order: str
) -> None:
    stable = [f"s-{index:03}" for index in range(60)]
    for thread_id in stable:
        store.create(thread_id, start_record())
    stop = threading.Event()
    failures: list[BaseException] = []

    def churn() -> None:
        made = 0
        try:
            while not stop.is_set() and made < 150:  # bounded: new ids keep a listing going
                thread_id = f"{'a' if made % 2 else 'z'}-{made:04}"  # both ends of id order
                store.create(thread_id, start_record())
                store.append(thread_id, [step_record(1)], expected_version=0)
                if made % 3 == 0:
                    store.delete(thread_id)
                if order == "id" and made < len(stable):  # updated: moves in "updated" order
                    store.append(stable[made], [step_record(1)], expected_version=0)
                made += 1
        except BaseException as exc:  # pragma: no cover - reported below
            failures.append(exc)

    writer = threading.Thread(target=churn)
    writer.start()
    seen: list[str] = []
    try:
        cursor = None
        while True:
            page: ThreadPage = list_threads(store, order=order, limit=4, cursor=cursor)
            seen += [summary.thread_id for summary in page.threads]
            if page.next_cursor is None:
                break
            cursor = page.next_cursor
    finally:
        stop.set()
        writer.join(timeout=60)
    assert not failures, failures
    assert len(seen) == len(set(seen)), "a thread was listed twice"
    assert set(stable) <= set(seen), f"missed: {sorted(set(stable) - set(seen))}"


def test_a_runner_lists_its_own_flows_threads_unless_asked_for_all(store: Store) -> None:
    runner: Runner[Any] = Runner(review, store=store)
    runner.start("mine-1")
    runner.start("mine-2")
    runner.resume("mine-2", {"approved": True})
    store.create("other", start_record(flow="other"))
    page = runner.list_threads(order="id")
    assert [(s.thread_id, s.status) for s in page.threads] == [
        ("mine-1", "waiting"),
        ("mine-2", "done"),
    ]
    assert all(isinstance(s, ThreadSummary) and s.flow == "review" for s in page.threads)
    assert [s.thread_id for s in runner.list_threads(flow=None, order="id").threads] == [
        "mine-1",
        "mine-2",
        "other",
    ]
    assert [s.thread_id for s in runner.list_threads(status="waiting").threads] == ["mine-1"]
    assert runner.threads() == ["mine-1", "mine-2", "other"]  # ids of the whole store, as ever
    first = runner.list_threads(limit=1)
    assert first.next_cursor is not None
    rest = runner.list_threads(limit=5, cursor=first.next_cursor)
    assert {s.thread_id for s in [*first.threads, *rest.threads]} == {"mine-1", "mine-2"}


class _Plain:
    """A third party's store without ``ThreadIndex``: only the ``Store`` methods."""

    def __init__(self) -> None:
        self.inner = MemoryStore()
        self.loads = 0

    def __getattr__(self, name: str) -> Any:
        if name in ("list_threads", "count_threads"):
            raise AttributeError(name)
        return getattr(self.inner, name)

    def load(self, thread_id: str, **options: Any) -> Any:
        self.loads += 1
        return self.inner.load(thread_id, **options)


def test_a_store_without_an_index_is_listed_by_loading_each_thread() -> None:
    plain = _Plain()
    runner: Runner[Any] = Runner(review, store=plain)  # type: ignore[arg-type]
    runner.start("a")
    runner.start("b")
    assert not isinstance(plain, ThreadIndex)
    plain.loads = 0
    page = runner.list_threads(order="id")
    assert [s.thread_id for s in page.threads] == ["a", "b"] and plain.loads == 2
