"""A thread's rows must read as one unbroken journal, as a journal file must (issue 23 item 10).

A deleted record row, a ``threads.version`` edited by hand or a copied row is reported as
``CorruptStoreError`` naming the thread and the gap, when the thread is loaded and before
anything is written to it; it never loads as a different state, and never turns into a
``ConflictError`` that no reload can cure. Other threads are unaffected. Rows before the
thread's snapshot are not read when it is loaded (opening costs the snapshot and what
follows): damage there is reported when the history is read, or with ``verify_on_open`` by
the load too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from flowkit import Runner
from flowkit.errors import ConflictError, CorruptStoreError
from flowkit.stores._jsonl import encode
from flowkit.stores.postgres import PostgresStore
from flowkit.testing._contract_flows import start_record, step_record

from ._procs import query
from .flows import STEPS

#: Each damage as SQL on thread `bad` (versions 0 to 6), and words the error must carry.
DAMAGE: dict[str, tuple[str, tuple[str, ...]]] = {
    "middle row deleted": (
        "DELETE FROM {s}.records WHERE thread_id = 'bad' AND version = 3",
        ("missing", "3"),
    ),
    "rows 2 to 4 deleted": (
        "DELETE FROM {s}.records WHERE thread_id = 'bad' AND version BETWEEN 2 AND 4",
        ("missing", "2-4"),
    ),
    "last row deleted": (
        "DELETE FROM {s}.records WHERE thread_id = 'bad' AND version = 6",
        ("says version 6", "end at 5"),
    ),
    "version row bumped": (
        "UPDATE {s}.threads SET version = 9 WHERE thread_id = 'bad'",
        ("says version 9", "end at 6"),
    ),
    "version row lowered": (
        "UPDATE {s}.threads SET version = 4 WHERE thread_id = 'bad'",
        ("says version 4", "go on to 6"),
    ),
    "start row deleted": (
        "DELETE FROM {s}.records WHERE thread_id = 'bad' AND version = 0",
        ("version 1", "not a start record"),
    ),
    "a record copied past the end": (
        "INSERT INTO {s}.records (thread_id, version, kind, body) "
        "SELECT thread_id, 7, kind, body FROM {s}.records WHERE thread_id = 'bad' AND version = 6",
        ("says version 6", "go on to 7"),
    ),
    "a second start record in the middle": (
        "UPDATE {s}.records SET kind = 'start', body = %s WHERE thread_id = 'bad' AND version = 3",
        ("start record", "3"),
    ),
}

#: Damage where the version row and the last record disagree: found even by a writer that
#: read the thread before (a gap further back is found by any load that reads the whole run).
AT_THE_END = (
    "last row deleted",
    "version row bumped",
    "version row lowered",
    "a record copied past the end",
)


def _sql(pg: tuple[str, str], sql: str, *params: Any) -> list[tuple[Any, ...]]:
    url, schema = pg
    return query(url, sql.format(s=schema), *params)


def _rows(pg: tuple[str, str], thread_id: str) -> list[tuple[Any, ...]]:
    """Everything stored for the thread's journal: the version row and the record rows."""
    return _sql(
        pg,
        f"SELECT 'thread', version, status, NULL::bytea FROM {{s}}.threads "
        f"WHERE thread_id = '{thread_id}' UNION ALL SELECT kind, version, NULL, body "
        f"FROM {{s}}.records WHERE thread_id = '{thread_id}' ORDER BY 1, 2",
    )


def _seven_records(store: PostgresStore, thread_id: str) -> None:
    store.create(thread_id, start_record())
    store.append(thread_id, [step_record(v) for v in range(1, 7)], expected_version=0)


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_a_broken_journal_is_corrupt_on_load_and_takes_no_write(
    open_pg: Callable[..., PostgresStore], pg: tuple[str, str], damage: str
) -> None:
    writer = open_pg()
    _seven_records(writer, "bad")
    _seven_records(writer, "good")
    sql, words = DAMAGE[damage]
    # A thread restarted at version 3: a start record that reads well there.
    restart = encode("bad", start_record().model_copy(update={"version": 3}))
    _sql(pg, sql + " RETURNING 1", *((restart,) if "%s" in sql else ()))
    before = _rows(pg, "bad")
    store = open_pg()
    for read in (store.load, store.records):
        with pytest.raises(CorruptStoreError) as info:
            read("bad")
        assert info.value.thread_id == "bad"
        assert "`bad`" in str(info.value)
        for word in words:
            assert word in str(info.value)
    for expected in (6, 9, 4, 5, 7):  # a writer that never loaded the thread
        with pytest.raises(CorruptStoreError) as info:
            open_pg().append("bad", [step_record(expected + 1)], expected_version=expected)
        assert info.value.thread_id == "bad"
    if damage in AT_THE_END:  # the writer that wrote it: its knowledge is stale now
        with pytest.raises(CorruptStoreError):
            writer.append("bad", [step_record(7)], expected_version=6)
        with pytest.raises(CorruptStoreError):
            writer.load("bad", after=6)
    assert _rows(pg, "bad") == before
    store.append("good", [step_record(7)], expected_version=6)
    assert [r.version for r in store.load("good").records] == list(range(8))


def test_a_runner_refuses_to_resume_a_broken_thread_and_writes_nothing(
    open_pg: Callable[..., PostgresStore], pg: tuple[str, str]
) -> None:
    runner = Runner(STEPS, store=open_pg())
    assert runner.start("bad", {"seed": 1}).status == "waiting"
    assert runner.start("good", {"seed": 2}).status == "waiting"
    # Record 4 is behind the snapshot taken at the pause: the load checks it on request.
    _sql(pg, "DELETE FROM {s}.records WHERE thread_id = 'bad' AND version = 4 RETURNING 1")
    before = _rows(pg, "bad")
    fresh = Runner(STEPS, store=open_pg(verify_on_open=True))
    with pytest.raises(CorruptStoreError, match="missing"):
        fresh.get_state("bad")
    with pytest.raises(CorruptStoreError, match="missing"):
        fresh.resume("bad", {"by": "ann"})
    assert _rows(pg, "bad") == before
    assert fresh.resume("good", {"by": "ann"}).status == "done"


def test_a_version_row_ahead_of_its_records_is_corrupt_not_a_conflict_forever(
    open_pg: Callable[..., PostgresStore], pg: tuple[str, str]
) -> None:
    runner = Runner(STEPS, store=open_pg())
    runner.start("bad", {"seed": 1})
    _sql(pg, "UPDATE {s}.threads SET version = version + 3 WHERE thread_id = 'bad' RETURNING 1")
    for _ in range(3):  # a reload never cures it, so it must not look like a race
        with pytest.raises(CorruptStoreError) as info:
            Runner(STEPS, store=open_pg()).resume("bad", {"by": "ann"})
        assert not isinstance(info.value, ConflictError)
        assert "says version" in str(info.value)


def test_a_broken_journal_is_found_behind_a_snapshot_and_refuses_compaction(
    open_pg: Callable[..., PostgresStore], pg: tuple[str, str]
) -> None:
    from flowkit.records._records import Snapshot

    writer = open_pg()
    _seven_records(writer, "bad")
    writer.write_snapshot(
        "bad",
        Snapshot(version=5, ts=1.0, flow="contract", next="work", status="pending", state={}),
    )
    _sql(pg, "DELETE FROM {s}.records WHERE thread_id = 'bad' AND version = 2 RETURNING 1")
    before = _rows(pg, "bad")
    with pytest.raises(CorruptStoreError, match="missing"):
        open_pg(verify_on_open=True).load("bad")
    # By default a load reads the snapshot and the rows after it (intact), not the history.
    assert [r.version for r in open_pg().load("bad").records] == [6]
    with pytest.raises(CorruptStoreError, match="missing"):
        open_pg().records("bad")
    start = start_record().model_copy(update={"version": 4})
    with pytest.raises(CorruptStoreError, match="missing"):
        open_pg().compact("bad", start)
    assert _rows(pg, "bad") == before


def test_an_intact_compacted_thread_with_a_snapshot_still_loads(
    open_pg: Callable[..., PostgresStore],
) -> None:
    from flowkit.records._records import Snapshot

    store = open_pg()
    _seven_records(store, "t")
    store.compact("t", start_record().model_copy(update={"version": 3}))
    store.write_snapshot(
        "t",
        Snapshot(version=5, ts=1.0, flow="contract", next="work", status="pending", state={}),
    )
    fresh = open_pg()
    log = fresh.load("t")
    assert log.snapshot is not None and [r.version for r in log.records] == [6]
    assert [r.version for r in fresh.records("t")] == [3, 4, 5, 6]
    fresh.append("t", [step_record(7)], expected_version=6)
    assert [r.version for r in fresh.load("t", after=6).records] == [7]
