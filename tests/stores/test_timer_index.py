"""The stores' timer index (``TimerIndex``): kept by ``create`` and ``append`` from the last
record's ``due``, asked for the threads due by a time (earliest first, by flow, at most a
limit), and cleared by ``delete``. The JSON-file store writes a timer's file before the record
that sets it and removes it after the record that ends it, so a crash leaves at worst a stale
file, which ``fire_due`` drops; a thread without timers never touches the index."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from _pg import fresh_schema, require_postgres
from pydantic import BaseModel

from flowkit import END, Flow, Gate, Runner
from flowkit.errors import StoreError
from flowkit.stores import (
    DueTimer,
    JsonFileStore,
    MemoryStore,
    PatchRecord,
    StartRecord,
    Store,
    TimerIndex,
)

T0 = 1_800_000_000.0
NOW = datetime(2027, 1, 15, 8, 0, tzinfo=UTC)


class Ticket(BaseModel):
    answered: bool = False


TICKETS = Flow(
    name="tickets",
    state=Ticket,
    start="wait",
    nodes={"chase": lambda s: {}},
    gates={"wait": Gate(Ticket, deadline=timedelta(hours=1), on_timeout="chase")},
    routes={"wait": END, "chase": "wait"},
)
QUIET = Flow(
    name="quiet",
    state=Ticket,
    start="wait",
    nodes={"note": lambda s: {}},
    gates={"wait": Ticket},
    routes={"wait": "note", "note": "wait"},
)


def start(flow: str = "f", due: float | None = None) -> StartRecord:
    return StartRecord(version=0, ts=T0, next="g", status="waiting", flow=flow, state={}, due=due)


def patch(version: int, due: float | None) -> PatchRecord:
    return PatchRecord(version=version, ts=T0, next="g", status="waiting", update={}, due=due)


@pytest.fixture(params=["memory", "jsonfile", "postgres"])
def reopen(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[], Any]]:
    """A maker of store objects over one place (the memory store: always the same one)."""
    opened: list[Any] = []
    if request.param == "memory":
        memory = MemoryStore()
        yield lambda: memory
        return
    if request.param == "jsonfile":

        def again() -> Any:
            opened.append(JsonFileStore(tmp_path / "store", fsync=False))
            return opened[-1]

        yield again
    else:
        require_postgres()
        from flowkit.stores.postgres import PostgresStore

        with fresh_schema() as (url, schema):

            def again() -> Any:
                opened.append(PostgresStore(url, schema=schema))
                return opened[-1]

            yield again
    for store in opened:
        store.close()


def test_every_shipped_store_keeps_a_timer_index(reopen: Callable[[], Store]) -> None:
    assert isinstance(reopen(), TimerIndex)


def test_the_last_records_due_is_the_threads_timer(reopen: Callable[[], Any]) -> None:
    store = reopen()
    store.create("a", start(due=T0 + 60))
    store.create("b", start())
    assert store.due_timers(T0 + 60) == [DueTimer("a", T0 + 60)]
    assert store.due_timers(T0 + 59.999) == []  # due at or before `until`, never after
    store.append("b", [patch(1, T0 + 30)], expected_version=0)
    assert store.due_timers(T0 + 100) == [DueTimer("b", T0 + 30), DueTimer("a", T0 + 60)]
    store.append("a", [patch(1, T0 + 90)], expected_version=0)  # a new deadline
    store.append("b", [patch(1 + 1, None)], expected_version=1)  # answered: no timer
    assert store.due_timers(T0 + 100) == [DueTimer("a", T0 + 90)]
    # Another object on the same place sees the same, and keeps it as it writes.
    other = reopen()
    assert other.due_timers(T0 + 100) == [DueTimer("a", T0 + 90)]
    other.append("a", [patch(2, None), patch(3, T0 + 10)], expected_version=1)
    assert store.due_timers(T0 + 100) == [DueTimer("a", T0 + 10)]
    store.append("a", [patch(4, None)], expected_version=3)
    assert other.due_timers(T0 + 100) == []


def test_due_timers_by_flow_earliest_first_and_at_most_a_limit(reopen: Callable[[], Any]) -> None:
    store = reopen()
    for index, (thread_id, flow) in enumerate([("x", "f"), ("y", "g"), ("z", "f"), ("w", "f")]):
        store.create(thread_id, start(flow, due=T0 + 10 * (4 - index)))
    assert [t.thread_id for t in store.due_timers(T0 + 100)] == ["w", "z", "y", "x"]
    assert [t.thread_id for t in store.due_timers(T0 + 100, flow="f")] == ["w", "z", "x"]
    assert [t.thread_id for t in store.due_timers(T0 + 100, flow="f", limit=2)] == ["w", "z"]
    assert store.due_timers(T0 + 100, flow="nobody") == []


def test_delete_and_a_stale_drop_leave_the_right_entries(reopen: Callable[[], Any]) -> None:
    store = reopen()
    store.create("a", start(due=T0 + 5))
    store.create("b", start(due=T0 + 6))
    store.drop_timer("a", T0 + 4)  # not the thread's timer: kept
    assert [t.thread_id for t in store.due_timers(T0 + 10)] == ["a", "b"]
    store.drop_timer("a", T0 + 5)
    store.delete("b")
    assert store.due_timers(T0 + 10) == []
    store.drop_timer("gone", T0)  # nothing there: no error


# -- the JSON-file store's files -------------------------------------------------------------------


def test_a_thread_without_timers_never_touches_the_index(tmp_path: Path) -> None:
    with JsonFileStore(tmp_path, fsync=False) as store:
        runner = Runner(QUIET, store=store)
        runner.start("t")
        for _ in range(5):
            runner.resume("t", {"answered": True})
        assert store.due_timers(T0 * 2) == []
    assert not (tmp_path / "timers").exists()


def test_a_timer_file_left_by_a_crash_is_dropped_when_found_stale(tmp_path: Path) -> None:
    with JsonFileStore(tmp_path, fsync=False) as store:
        runner = Runner(TICKETS, store=store, clock=lambda: NOW)
        runner.start("t")
        assert runner.resume("t", {"answered": True}).done
        # As if a crash came after a new timer's file and before its record.
        (tmp_path / "timers" / f"{int(T0 * 1000)}~t").write_text("tickets")
        assert [t.thread_id for t in store.due_timers(T0 + 1)] == ["t"]
        assert runner.fire_due(now=NOW + timedelta(days=3650)) == []
        assert store.due_timers(T0 + 1) == []
        assert [c.kind for c in runner.history("t")] == ["start", "input"]  # nothing fired


def test_a_timer_file_that_cannot_be_written_fails_the_step_and_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with JsonFileStore(tmp_path, fsync=False) as store:
        store.create("t", start())

        def refuse(*args: Any, **kwargs: Any) -> None:
            raise StoreError("disk full")

        monkeypatch.setattr(store._timers, "add", refuse)
        with pytest.raises(StoreError, match="disk full"):
            store.append("t", [patch(1, T0 + 60)], expected_version=0)
        assert [r.version for r in store.records("t")] == [0]  # never a timer without its file
        monkeypatch.undo()
        store.append("t", [patch(1, T0 + 60)], expected_version=0)
        assert store.due_timers(T0 + 60) == [DueTimer("t", T0 + 60)]


def test_stray_names_in_the_timers_folder_are_ignored(tmp_path: Path) -> None:
    with JsonFileStore(tmp_path, fsync=False) as store:
        store.create("t", start(due=T0))
        folder = tmp_path / "timers"
        for stray in ("notes.txt", "12~../x", "abc~t", ".12~t.x1y2.tmp"):
            (folder / stray.replace("/", "_")).write_text("f")
        assert store.due_timers(T0 + 1) == [DueTimer("t", T0)]


# -- PostgreSQL: the schema's upgrade ------------------------------------------------------------


def test_a_version_1_schema_is_upgraded_with_the_timer_column() -> None:
    require_postgres()
    import psycopg

    from flowkit.stores.postgres import SCHEMA_VERSION, PostgresStore, migrate
    from flowkit.stores.postgres._schema import _MIGRATIONS

    with fresh_schema() as (url, _):
        schema = "t_timers_v1"
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(_MIGRATIONS[0].format(s=schema).encode())
            conn.execute(f"INSERT INTO {schema}.meta VALUES ('schema_version', '1')".encode())
        try:
            with pytest.raises(StoreError, match="flowkit store init"):
                PostgresStore(url, schema=schema)
            assert migrate(url, schema=schema) == (1, SCHEMA_VERSION)
            with PostgresStore(url, schema=schema) as store:
                store.create("t", start(due=T0 + 1))
                assert store.due_timers(T0 + 1) == [DueTimer("t", T0 + 1)]
        finally:
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute(f"DROP SCHEMA {schema} CASCADE".encode())


def test_postgres_event_rows_tell_a_sleeping_thread_from_one_at_a_gate() -> None:
    from flowkit.stores import StepRecord
    from flowkit.stores.postgres._eventrows import event_body, to_events

    def step(pauses: dict[str, Any] | None) -> StepRecord:
        return StepRecord(
            version=1, ts=T0, next="nap", status="waiting", node="nap", update={}, pauses=pauses
        )

    asked = to_events("t", 1, event_body(step({"nap": {"payload": "ok?"}})))
    asleep = to_events("t", 1, event_body(step({"nap": {"wake": T0 + 60}})))
    assert [e.kind for e in asked][-1] == "waiting"
    assert "waiting" not in [e.kind for e in asleep]
