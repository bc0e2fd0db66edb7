"""After PostgreSQL drops connections (a restart, ``pg_terminate_backend``), the store goes on
(issue 23 item 11): the pool never hands out a dead connection, a read whose connection dies
under it is tried once more, and a lease this process could not give back never locks the
process out of its own thread, while other processes still wait for it."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
import pytest
from pydantic import BaseModel

from flowkit import END, Flow, Gate, Route, RouteTable, Runner, when
from flowkit.errors import ConflictError
from flowkit.stores.postgres import PostgresStore
from flowkit.testing._contract_flows import start_record, step_record
from flowkit.workers import Worker

from ._procs import query, wait_for

#: Called (and emptied) by the node of ``ASK``: what a test does while a run holds a lease.
IN_NODE: list[Callable[[], None]] = []


class Ask(BaseModel):
    drafts: int = 0
    by: str = ""


class Answer(BaseModel):
    by: str


def _draft(state: Ask) -> dict[str, Any]:
    while IN_NODE:
        IN_NODE.pop(0)()
    return {"drafts": state.drafts + 1}


ASK = Flow(
    name="pg_ask",
    state=Ask,
    start="draft",
    nodes={"draft": _draft},
    gates={"approve": Gate(Answer, apply=lambda state, answer: {"by": answer.by})},
    routes={
        "draft": RouteTable(
            "after_draft", [Route(when("approved", lambda s: bool(s.by)), END)], default="approve"
        ),
        "approve": "draft",
    },
)


@pytest.fixture(autouse=True)
def _no_hooks_left() -> Iterator[None]:
    IN_NODE.clear()
    yield
    IN_NODE.clear()


def _drop_every_connection(url: str) -> None:
    """Terminate every other session of the database, as a server restart would, and wait
    until they are gone."""
    with psycopg.connect(url, autocommit=True) as admin:
        pids = [
            pid
            for (pid,) in admin.execute(
                "SELECT pid FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()"
            ).fetchall()
        ]
        admin.execute("SELECT pg_terminate_backend(pid) FROM unnest(%s::int[]) AS pid", (pids,))

        def gone() -> bool:
            row = admin.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE pid = ANY(%s)", (pids,)
            ).fetchone()
            return row is not None and row[0] == 0

        wait_for(gone, 30, "the terminated sessions to end")


@contextmanager
def _releases_cut(url: str, schema: str, thread_id: str, cuts: int = 2) -> Iterator[None]:
    """Inside the block, once the thread's lease row exists (call the yielded hook from the
    node that holds it), every attempt to give the lease back has its connection cut while it
    waits, ``cuts`` times: the lease stays behind in the table, as after a restart."""
    holder = psycopg.connect(url)  # a transaction that keeps the lease row locked
    stop = threading.Event()
    cut: list[int] = []

    def lock_the_row() -> None:
        found = holder.execute(
            f"SELECT 1 FROM {schema}.leases WHERE thread_id = %s FOR UPDATE", (thread_id,)
        ).fetchall()
        assert found, "the node runs while its thread's lease is held"
        cutter.start()

    def cut_releases() -> None:
        pattern = f"DELETE FROM {schema}.leases%"
        with psycopg.connect(url, autocommit=True) as admin:
            while len(cut) < cuts and not stop.wait(0.02):
                rows = admin.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE datname = current_database() AND wait_event_type = 'Lock' "
                    "AND query LIKE %s",
                    (pattern,),
                ).fetchall()
                cut.extend(1 for (done,) in rows if done)
        holder.rollback()

    cutter = threading.Thread(target=cut_releases, daemon=True)
    IN_NODE.append(lock_the_row)
    try:
        yield
    finally:
        stop.set()
        if cutter.ident is not None:
            cutter.join()
        holder.close()
    assert len(cut) == cuts, f"{len(cut)} of {cuts} releases were cut"


def test_after_the_server_drops_every_connection_the_next_calls_all_succeed(
    open_pg: Callable[..., PostgresStore], pg: tuple[str, str]
) -> None:
    url, _ = pg
    store = open_pg(pool_size=8)
    store.create("t", start_record())
    busy = threading.Barrier(8)

    def use_a_connection() -> None:  # grow the pool: every connection is one to lose
        with store._conn() as conn:
            busy.wait()
            conn.execute("SELECT 1")

    threads = [threading.Thread(target=use_a_connection) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    _drop_every_connection(url)
    calls: list[Callable[[], object]] = [
        lambda: store.load("t"),
        store.threads,
        lambda: store.records("t"),
        lambda: store.append("t", [step_record(1)], expected_version=0),
        lambda: store.status("t"),
        lambda: store.load("t", after=1),
        lambda: store.append("t", [step_record(2)], expected_version=1),
        lambda: store.last_attempt("t"),
        store.statuses,
        lambda: store.create("u", start_record()),
        lambda: store.next_item("t"),
        lambda: list(store.queued()),
        lambda: store.append("u", [step_record(1)], expected_version=0),
        lambda: store.records("u"),
        store.threads,
    ]
    failed = []
    for index, call in enumerate(calls):
        try:
            call()
        except Exception as exc:
            failed.append((index, type(exc).__name__, str(exc)[:120]))
    assert failed == []
    assert [r.version for r in store.records("t")] == [0, 1, 2]


def test_a_read_whose_connection_dies_under_it_is_tried_once_more(
    open_pg: Callable[..., PostgresStore], pg: tuple[str, str]
) -> None:
    url, schema = pg
    store = open_pg()
    store.create("t", start_record())
    # The first read of the thread list ends its own session mid-query, as a server that
    # restarts between the pool's check and the query would.
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            f"""
        CREATE SEQUENCE {schema}.reads;
        CREATE FUNCTION {schema}.first_read_dies() RETURNS boolean LANGUAGE plpgsql AS $$
        BEGIN
            IF nextval('{schema}.reads') = 1 THEN
                PERFORM pg_terminate_backend(pg_backend_pid());
                PERFORM pg_sleep(5);
            END IF;
            RETURN true;
        END $$;
        ALTER TABLE {schema}.threads RENAME TO threads_table;
        CREATE VIEW {schema}.threads AS SELECT t.* FROM {schema}.threads_table t
            WHERE {schema}.first_read_dies();
        """.encode()
        )
    assert store.threads() == ["t"]
    assert query(url, f"SELECT last_value FROM {schema}.reads") == [(2,)]


def test_a_runner_whose_lease_could_not_be_given_back_takes_its_thread_again_at_once(
    open_pg: Callable[..., PostgresStore], pg: tuple[str, str]
) -> None:
    url, schema = pg
    store, other = open_pg(), open_pg()
    runner = Runner(ASK, store=store)
    with _releases_cut(url, schema, "t"):
        assert runner.start("t").status == "waiting"
    # The lease is still in the table, so another process waits for it ...
    with pytest.raises(ConflictError), other.lock("t"):
        pass

    def other_process_is_excluded() -> None:
        with pytest.raises(ConflictError), other.lock("t"):
            pass

    # ... while this process takes its own thread again at once, and holds it for the run.
    IN_NODE.append(other_process_is_excluded)
    done = runner.resume("t", {"by": "ann"})
    assert done.status == "done" and done.state.by == "ann" and not IN_NODE
    with other.lock("t"):  # given back at the end of the run
        pass


def test_a_worker_whose_lease_could_not_be_given_back_claims_the_thread_again_at_once(
    open_pg: Callable[..., PostgresStore], pg: tuple[str, str]
) -> None:
    url, schema = pg
    store = open_pg()
    client = Runner(ASK, store=store)
    worker = Worker(ASK, store=store)
    client.submit("w", {})
    with _releases_cut(url, schema, "w"):
        assert worker.run_once()
    assert store.status("w").status == "waiting"  # type: ignore[union-attr]
    client.submit("w", {"by": "bob"})
    assert worker.run_once()
    assert client.get_state("w").state.by == "bob"


def test_a_lease_left_behind_is_not_kept_alive_by_the_heartbeat(
    open_pg: Callable[..., PostgresStore], pg: tuple[str, str]
) -> None:
    url, schema = pg
    store, other = open_pg(lease_s=1.0), open_pg()
    runner = Runner(ASK, store=store)
    with _releases_cut(url, schema, "t"):
        runner.start("t")
    with store.lock("held"):  # the heartbeat renews the leases this process still uses

        def taken_over() -> bool:
            try:
                with other.lock("t"):
                    return True
            except ConflictError:
                return False

        wait_for(taken_over, 30, "the lease left behind to expire")
