"""What the Postgres store adds to the contract: an explicit schema, deltas, no forks, a lazy
driver and messages that say what to do."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Callable
from typing import Annotated, Any

import pytest
from _pg import require_postgres, session_database
from pydantic import BaseModel

from flowkit import END, Flow, Route, RouteTable, Runner, append, when
from flowkit.errors import ConflictError, StoreError
from flowkit.stores import JsonFileStore, MemoryStore
from flowkit.stores.postgres import INSTALL, SCHEMA_VERSION, PostgresStore, migrate
from flowkit.testing._contract_flows import start_record, step_record


class Chat(BaseModel):
    turn: int = 0
    messages: Annotated[list[str], append] = []


def _talk(state: Chat) -> dict[str, Any]:
    return {"turn": state.turn + 1, "messages": [f"message {state.turn + 1} " + "x" * 40]}


CHAT = Flow(
    name="chat_steps",
    state=Chat,
    start="talk",
    nodes={"talk": _talk},
    routes={
        "talk": RouteTable(
            "until_50", [Route(when("enough", lambda s: s.turn >= 50), END)], default="talk"
        )
    },
)


def _rows(url: str, schema: str, sql: str, *params: object) -> list[tuple[Any, ...]]:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        return conn.execute(sql.format(s=schema), params).fetchall()  # type: ignore[arg-type]


def test_importing_flowkit_and_its_stores_loads_no_driver() -> None:
    code = (
        "import sys, flowkit, flowkit.stores, flowkit.stores.postgres; "
        "flowkit.stores.PostgresStore; "
        "print(','.join(m for m in ('psycopg', 'psycopg_pool') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_a_missing_driver_says_exactly_what_to_install() -> None:
    code = (
        "import sys; sys.modules['psycopg'] = None\n"
        "from flowkit.stores import PostgresStore\n"
        "from flowkit.errors import StoreError\n"
        "try:\n    PostgresStore('postgresql://nobody@127.0.0.1:1/x')\n"
        "except StoreError as exc:\n    print(exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert INSTALL == "pip install 'flowkit-workflows[postgres]'"
    assert INSTALL in out.stdout


@pytest.mark.parametrize("url", ["", "/tmp/store", "mysql://x@y/z", 42])
def test_a_url_that_is_not_postgres_is_refused(url: Any) -> None:
    with pytest.raises(StoreError, match="not a PostgreSQL URL"):
        PostgresStore(url)


def test_an_unreachable_server_is_a_store_error_that_hides_the_password() -> None:
    with pytest.raises(StoreError) as info:
        PostgresStore("postgresql://me:s3cret@127.0.0.1:1/db", connect_timeout=2)
    assert "s3cret" not in str(info.value) and "me:***@127.0.0.1:1" in str(info.value)
    assert "could not be reached" in str(info.value)


@pytest.mark.parametrize("schema", ["Flowkit", "a-b", "x;drop", "", "9x"])
def test_a_schema_name_that_is_not_a_plain_identifier_is_refused(schema: str) -> None:
    with pytest.raises(StoreError, match="Schema name"):
        PostgresStore("postgresql://x@127.0.0.1:1/db", schema=schema)


def test_opening_a_database_without_the_schema_says_to_run_store_init() -> None:
    require_postgres()
    url = session_database()
    with pytest.raises(StoreError) as info:
        PostgresStore(url, schema="never_initialised")
    assert f"flowkit store init {url}" in str(info.value)
    assert _rows(url, "", "SELECT to_regclass('never_initialised.threads')") == [(None,)]


def test_migrate_is_explicit_versioned_and_idempotent(pg: tuple[str, str]) -> None:
    url, schema = pg
    assert migrate(url, schema=schema) == (SCHEMA_VERSION, SCHEMA_VERSION)
    version = _rows(url, schema, "SELECT value FROM {s}.meta WHERE key = 'schema_version'")
    assert version == [(str(SCHEMA_VERSION),)]


def test_a_schema_newer_than_this_flowkit_is_refused(pg: tuple[str, str]) -> None:
    url, schema = pg
    _rows(url, schema, "UPDATE {s}.meta SET value = '99' RETURNING 1")
    with pytest.raises(StoreError, match="newer than this flowkit"):
        PostgresStore(url, schema=schema)
    with pytest.raises(StoreError, match="newer than this flowkit"):
        migrate(url, schema=schema)


def test_each_step_is_one_journal_row_of_its_own_delta(
    open_pg: Callable[..., PostgresStore], pg: tuple[str, str]
) -> None:
    url, schema = pg
    runner = Runner(CHAT, store=open_pg(min_snapshot_bytes=10**9))
    assert runner.start("t").status == "done"
    rows = _rows(url, schema, "SELECT version, length(body) FROM {s}.records ORDER BY version")
    assert [v for v, _ in rows] == list(range(51))
    sizes = [size for _, size in rows[1:]]
    assert max(sizes) - min(sizes) <= 10, "a step's bytes do not grow with the history"
    events = _rows(url, schema, "SELECT version FROM {s}.events ORDER BY xid, seq")
    assert [v for (v,) in events] == list(range(51))


def test_the_same_flow_gives_the_same_history_on_all_three_stores(
    open_pg: Callable[..., PostgresStore], tmp_path: Any
) -> None:
    results = []
    for store in (MemoryStore(), JsonFileStore(tmp_path, fsync=False), open_pg()):
        runner = Runner(CHAT, store=store)
        done = runner.start("t")
        results.append((done.state, [(c.version, c.kind, c.node) for c in runner.history("t")]))
    assert results[0] == results[1] == results[2]


def test_a_stale_writer_gets_conflict_and_the_journal_never_forks(
    open_pg: Callable[..., PostgresStore], pg: tuple[str, str]
) -> None:
    url, schema = pg
    stores = [open_pg() for _ in range(6)]
    stores[0].create("t", start_record())
    wins: list[int] = []
    for version in range(1, 21):
        barrier = threading.Barrier(len(stores))

        def write(index: int, version: int = version, barrier: Any = barrier) -> None:
            barrier.wait()
            try:
                stores[index].append(
                    "t", [step_record(version, {"n": index})], expected_version=version - 1
                )
            except ConflictError:
                return
            wins.append(index)

        threads = [threading.Thread(target=write, args=(i,)) for i in range(len(stores))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert len(wins) == 20
    versions = _rows(url, schema, "SELECT version FROM {s}.records WHERE thread_id = 't'")
    assert sorted(v for (v,) in versions) == list(range(21))


def test_a_lock_outlives_nobody_once_its_lease_expires(
    open_pg: Callable[..., PostgresStore],
) -> None:
    holder, other = open_pg(lease_s=0.6), open_pg()
    lock = holder.lock("t")
    lock.__enter__()
    holder._leases._stop.set()  # the holder stops renewing, as a killed process would
    with pytest.raises(ConflictError, match="being run by another process"), other.lock("t"):
        pass
    deadline = threading.Event()
    for _ in range(50):
        try:
            with other.lock("t"):
                break
        except ConflictError:
            deadline.wait(0.1)
    else:
        pytest.fail("the expired lease was never released")


def test_close_gives_back_the_leases_it_holds(open_pg: Callable[..., PostgresStore]) -> None:
    """A worker stopping with a run still in hand (past its grace) closes its store: the
    store marked itself closed first and every release then failed on it, so the thread
    stayed locked for the rest of the lease (found by a defect hunt)."""
    holder, other = open_pg(lease_s=30), open_pg()
    lock = holder.lock("t")
    lock.__enter__()
    holder.close()
    with other.lock("t"):  # at once, not 30 s later
        pass


@pytest.mark.parametrize("lease", [0, -1, float("inf"), float("nan"), 1e300, True])
def test_a_lease_that_is_not_a_number_of_seconds_up_to_a_day_is_refused(
    open_pg: Callable[..., PostgresStore], lease: float
) -> None:
    """An infinite lease was taken, then every claim failed (PostgreSQL refused the
    interval); found by a defect hunt."""
    with pytest.raises(StoreError, match="lease_s must be"):
        open_pg(lease_s=lease)


def test_a_closed_store_says_so(open_pg: Callable[..., PostgresStore]) -> None:
    store = open_pg()
    store.close()
    with pytest.raises(StoreError, match="is closed"):
        store.threads()
    assert "***" not in repr(store) and "PostgresStore(" in repr(store)


@pytest.mark.parametrize(
    ("damage", "reason"),
    [
        ("overlay(body placing 'X'::bytea from 12 for 1)", "checksum"),
        ("'not json'::bytea", "not a readable"),
        ('\'{"kind": "step"}\'::bytea', "not a readable"),
    ],
)
def test_a_damaged_row_fails_only_its_thread_naming_where(
    open_pg: Callable[..., PostgresStore], pg: tuple[str, str], damage: str, reason: str
) -> None:
    from flowkit.errors import CorruptStoreError

    url, schema = pg
    store = open_pg()
    runner = Runner(CHAT, store=store)
    runner.start("bad")
    runner.start("good")
    escaped = damage.replace("{", "{{").replace("}", "}}")  # _rows formats {s}
    _rows(url, schema, f"UPDATE {{s}}.records SET body = {escaped} "
          "WHERE thread_id = 'bad' AND version = 3 RETURNING 1")  # fmt: skip
    with pytest.raises(CorruptStoreError) as info:
        open_pg().records("bad")
    assert reason in str(info.value) and f"{schema}.records (thread `bad`, version 3)" in str(
        info.value
    )
    assert Runner(CHAT, store=open_pg()).get_state("good").status == "done"
