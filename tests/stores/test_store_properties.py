"""Properties of both stores over random record sequences, snapshots and reopenings.

Whatever is appended comes back identical and in order, from the same store object or a
new one; loading from any snapshot plus the records after it covers exactly the journal;
and a flow resumed through freshly opened stores ends exactly where an in-memory run does.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from _pg import fresh_schema, require_postgres
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from structlog.testing import capture_logs

from flowkit import Runner
from flowkit.records._records import InputRecord, PatchRecord, Snapshot, StartRecord, StepRecord
from flowkit.stores import JsonFileStore, MemoryStore, Store, ThreadLog
from flowkit.stores._protocol import AnyRecord
from flowkit.testing._contract_flows import assert_identical

from .conftest import TALLY

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**80), max_value=2**80)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3)
    ),
    max_leaves=12,
)
updates = st.dictionaries(st.text(min_size=1, max_size=8), json_values, max_size=4)
record_kinds = st.sampled_from(["step", "input", "patch"])
# A script is a list of actions: append a batch of records, snapshot, or reopen the store.
actions = st.lists(
    st.one_of(
        st.tuples(st.just("append"), st.lists(st.tuples(record_kinds, updates), max_size=4)),
        st.tuples(st.just("snapshot"), st.integers(0, 10**6)),
        st.tuples(st.just("reopen"), st.none()),
    ),
    max_size=12,
)


def make_record(kind: str, version: int, update: dict[str, Any]) -> AnyRecord:
    common: dict[str, Any] = {"version": version, "ts": 1.5 * version, "next": "n"}
    if kind == "step":
        return StepRecord(**common, status="pending", node="n", update=update, run_id="r")
    if kind == "input":
        return InputRecord(**common, status="pending", gate="g", input=update, update=update)
    return PatchRecord(**common, status="waiting", update=update, reason="why", actor="me")


@contextmanager
def store_factory(kind: str) -> Iterator[Any]:
    """Yield ``reopen()``: the same MemoryStore, or a new JsonFileStore on one folder, or a new
    PostgresStore on one fresh schema."""
    if kind == "memory":
        memory = MemoryStore()
        yield lambda: memory
        return
    if kind == "postgres":
        with postgres_factory() as reopen_pg:
            yield reopen_pg
        return
    opened: list[JsonFileStore] = []
    with tempfile.TemporaryDirectory() as tmp:

        def reopen() -> Store:
            opened.append(JsonFileStore(Path(tmp), fsync=False))
            return opened[-1]

        try:
            yield reopen
        finally:
            for store in opened:
                store.close()


@contextmanager
def postgres_factory() -> Iterator[Any]:
    require_postgres()
    from flowkit.stores.postgres import PostgresStore

    opened: list[PostgresStore] = []
    with fresh_schema() as (url, schema):

        def reopen() -> Store:
            opened.append(PostgresStore(url, schema=schema, pool_size=2))
            return opened[-1]

        try:
            yield reopen
        finally:
            for store in opened:
                store.close()


def latest_version(log: ThreadLog) -> int:
    """The newest version a log covers (incremental, from a snapshot, or complete)."""
    if log.records:
        return log.records[-1].version
    if log.base is not None:
        return log.base
    assert log.snapshot is not None, "a complete log has at least the start record"
    return log.snapshot.version


def same_records(expected: list[AnyRecord], actual: list[AnyRecord]) -> None:
    assert len(actual) == len(expected)
    for want, got in zip(expected, actual, strict=True):
        assert type(got) is type(want)
        assert_identical(want.model_dump(), got.model_dump(), f"record {want.version}")


@pytest.mark.parametrize("kind", ["memory", "jsonfile", "postgres"])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(script=actions, start_state=updates)
def test_random_record_sequences_come_back_identical_through_snapshots_and_reopening(
    kind: str, script: list[tuple[str, Any]], start_state: dict[str, Any]
) -> None:
    with store_factory(kind) as reopen:
        store = reopen()
        written: list[AnyRecord] = [
            StartRecord(version=0, ts=0.0, next="n", status="pending", flow="f", state=start_state)
        ]
        store.create("t", written[0])
        snapshot_at: int | None = None
        for action, payload in script:
            if action == "append":
                batch = [
                    make_record(k, len(written) + i, update)
                    for i, (k, update) in enumerate(payload)
                ]
                store.append("t", batch, expected_version=len(written) - 1)
                written += batch
            elif action == "snapshot":
                snapshot_at = payload % len(written)
                state = {"at": snapshot_at}
                store.write_snapshot(
                    "t",
                    Snapshot(
                        version=snapshot_at, ts=0, next="n", status="pending", flow="f", state=state
                    ),
                )
            else:
                store = reopen()
            log = store.load("t", after=len(written) - 1)
            assert latest_version(log) == len(written) - 1

        fresh = reopen()
        same_records(written, fresh.records("t"))
        log = fresh.load("t")
        assert not log.warnings
        if snapshot_at is None:
            assert log.snapshot is None
            same_records(written, list(log.records))
        else:
            assert log.snapshot is not None and log.snapshot.version == snapshot_at
            same_records(written[snapshot_at + 1 :], list(log.records))


# -- a flow resumed through fresh stores equals an in-memory reference run -----------------------


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    values=st.lists(st.integers(-(10**12), 10**12), min_size=1, max_size=25),
    min_snapshot_bytes=st.integers(0, 3000),
    ratio=st.floats(0.0, 3.0),
    reopen_every=st.integers(1, 4),
)
def test_resuming_through_fresh_stores_with_snapshots_matches_an_in_memory_run(
    values: list[int], min_snapshot_bytes: int, ratio: float, reopen_every: int
) -> None:
    reference: Runner[Any] = Runner(TALLY, store=MemoryStore())
    expected = [reference.start("t")]
    for value in values:
        expected.append(reference.resume("t", {"value": value}))

    with tempfile.TemporaryDirectory() as tmp, capture_logs():
        opened: list[JsonFileStore] = []

        def runner() -> Runner[Any]:
            opened.append(
                JsonFileStore(
                    tmp, fsync=False, min_snapshot_bytes=min_snapshot_bytes, snapshot_ratio=ratio
                )
            )
            return Runner(TALLY, store=opened[-1])

        try:
            current = runner()
            assert current.start("t").state == expected[0].state
            for index, value in enumerate(values, start=1):
                if index % reopen_every == 0:
                    current = runner()
                    seen = current.get_state("t")
                    assert (seen.state, seen.version) == (
                        expected[index - 1].state,
                        expected[index - 1].version,
                    )
                got = current.resume("t", {"value": value})
                assert (got.state, got.version, got.status) == (
                    expected[index].state,
                    expected[index].version,
                    expected[index].status,
                )
            final = runner()
            assert final.get_state("t").state == expected[-1].state
            assert final.history("t")[-1].state == expected[-1].state
        finally:
            for store in opened:
                store.close()
