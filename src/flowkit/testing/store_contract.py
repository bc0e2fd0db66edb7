"""The store contract: the pytest suite every ``Store`` must pass, ours and third parties'.

Subclass ``StoreContract`` in a test module (its name must start with ``Test``) and provide a
``store`` fixture giving a fresh, empty store per test. Stores that keep data outside the
object should also override ``reopen``: a function returning a *new* store object over the
same data, so the suite can check what survives a restart::

    class TestMyStore(StoreContract):
        @pytest.fixture
        def store(self, tmp_path):
            with MyStore(tmp_path) as store:
                yield store

        @pytest.fixture
        def reopen(self, tmp_path):
            opened = []

            def again():
                opened.append(MyStore(tmp_path))
                return opened[-1]

            yield again
            for store in opened:
                store.close()

The default ``reopen`` hands back the same object (right for in-memory stores).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

from ..errors import (
    ConflictError,
    InvalidThreadIdError,
    StoreError,
    ThreadExistsError,
    ThreadNotFoundError,
)
from ..records._records import Snapshot
from ..stores import Store, ThreadLog
from ..stores._protocol import AnyRecord
from ._contract_attempts import AttemptMarkChecks
from ._contract_flows import (
    BAD_THREAD_IDS,
    patch_record,
    start_record,
    step_record,
)
from ._contract_lifecycle import LifecycleChecks
from ._contract_listing import ListingChecks
from ._contract_runner import RunnerOverStoreChecks

__all__ = ["StoreContract"]

Reopen = Callable[[], Store]

#: Every store method that takes a thread id, called with a harmless payload.
_STORE_CALLS: dict[str, Callable[[Store, str], Any]] = {
    "create": lambda s, t: s.create(t, start_record()),
    "append": lambda s, t: s.append(t, [step_record(1)], expected_version=0),
    "load": lambda s, t: s.load(t),
    "load_after": lambda s, t: s.load(t, after=0),
    "records": lambda s, t: s.records(t),
    "snapshot_due": lambda s, t: s.snapshot_due(t),
    "write_snapshot": lambda s, t: s.write_snapshot(t, _snapshot(0, {"n": 0})),
    "lock": lambda s, t: s.lock(t).__enter__(),
    "delete": lambda s, t: s.delete(t),
    "compact": lambda s, t: s.compact(t, start_record()),
}


def _snapshot(version: int, state: dict[str, Any], *, flow: str = "contract") -> Snapshot:
    return Snapshot(
        version=version, ts=1_700_000_000.0, next="work", status="pending", flow=flow, state=state
    )


def _versions(log: ThreadLog) -> list[int]:
    return [r.version for r in log.records]


def _grow(store: Store, thread_id: str, steps: int) -> None:
    """Create ``thread_id`` with versions 0..steps."""
    store.create(thread_id, start_record())
    for version in range(1, steps + 1):
        store.append(thread_id, [step_record(version)], expected_version=version - 1)


class StoreContract(RunnerOverStoreChecks, LifecycleChecks, AttemptMarkChecks, ListingChecks):
    """Behaviour every store must have. Subclass it; provide ``store`` (and ``reopen``)."""

    @pytest.fixture
    def store(self) -> Store:
        pytest.fail("Subclass StoreContract and define a `store` fixture returning a fresh store.")

    @pytest.fixture
    def reopen(self, store: Store) -> Reopen:
        return lambda: store

    # -- create, append, load ----------------------------------------------------------------

    def test_create_then_load_from_a_reopened_store_returns_the_start_record(
        self, store: Store, reopen: Reopen
    ) -> None:
        record = start_record({"n": 0, "name": "ünïcode"})
        store.create("t1", record)
        log = reopen().load("t1")
        assert log.snapshot is None and log.base is None and not log.warnings
        assert list(log.records) == [record]

    def test_create_of_an_existing_thread_raises_thread_exists_and_keeps_it(
        self, store: Store, reopen: Reopen
    ) -> None:
        _grow(store, "t1", 2)
        for target in (store, reopen()):
            with pytest.raises(ThreadExistsError):
                target.create("t1", start_record({"n": 99}))
        assert _versions(reopen().load("t1")) == [0, 1, 2]
        assert reopen().records("t1")[0] == start_record()

    def test_appended_records_come_back_in_order_and_identical(
        self, store: Store, reopen: Reopen
    ) -> None:
        odd = {"s": 'q"\n\\ \u2028\x00 🤖', "big": 2**70, "f": 1e-300, "neg": -0.5, "none": None}
        records: list[AnyRecord] = [
            step_record(1, {"nested": {"a": [1, 2, {"b": []}]}, **odd}),
            patch_record(2, {"n": 5}),
            step_record(3),
        ]
        store.create("t1", start_record())
        store.append("t1", records[:2], expected_version=0)
        store.append("t1", records[2:], expected_version=2)
        reopened = reopen()
        assert reopened.records("t1") == [start_record(), *records]
        assert list(reopened.load("t1").records) == [start_record(), *records]

    @pytest.mark.parametrize("expected_version", [0, 1, 3, 7, -1])
    def test_append_at_a_stale_or_future_version_raises_conflict_and_writes_nothing(
        self, store: Store, reopen: Reopen, expected_version: int
    ) -> None:
        _grow(store, "t1", 2)
        with pytest.raises(ConflictError) as info:
            store.append(
                "t1", [step_record(expected_version + 1)], expected_version=expected_version
            )
        assert info.value.thread_id == "t1"
        assert _versions(reopen().load("t1")) == [0, 1, 2]

    def test_append_through_a_stale_store_object_raises_conflict(
        self, store: Store, reopen: Reopen
    ) -> None:
        _grow(store, "t1", 1)
        store.load("t1")  # let the first object cache what it knows
        other = reopen()
        other.append("t1", [step_record(2)], expected_version=1)
        with pytest.raises(ConflictError):
            store.append("t1", [step_record(2, {"n": "lost?"})], expected_version=1)
        store.append("t1", [step_record(3)], expected_version=2)
        assert reopen().records("t1")[2:] == [step_record(2), step_record(3)]

    def test_concurrent_appends_at_one_version_let_exactly_one_through(
        self, store: Store, reopen: Reopen
    ) -> None:
        _grow(store, "t1", 1)
        writers = [store, reopen(), store, reopen()]
        barrier = threading.Barrier(len(writers), timeout=30)
        outcomes: list[str] = []

        def write(index: int) -> None:
            barrier.wait()
            try:
                writers[index].append("t1", [step_record(2, {"n": index})], expected_version=1)
            except ConflictError:
                outcomes.append("conflict")
            else:
                outcomes.append(f"won {index}")

        threads = [threading.Thread(target=write, args=(i,)) for i in range(len(writers))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert len(outcomes) == 4 and outcomes.count("conflict") == 3, outcomes
        winner = int(next(o for o in outcomes if o.startswith("won")).split()[1])
        assert reopen().records("t1")[1:] == [step_record(1), step_record(2, {"n": winner})]

    @pytest.mark.parametrize("versions", [[3], [2, 2], [1], [2, 4]])
    def test_append_refuses_records_that_do_not_continue_the_versions(
        self, store: Store, reopen: Reopen, versions: list[int]
    ) -> None:
        _grow(store, "t1", 1)
        with pytest.raises(StoreError) as info:
            store.append("t1", [step_record(v) for v in versions], expected_version=1)
        assert not isinstance(info.value, ConflictError), "a caller bug, not a race: no retry"
        assert _versions(reopen().load("t1")) == [0, 1]

    def test_load_after_a_version_returns_only_newer_records_or_a_complete_log(
        self, store: Store, reopen: Reopen
    ) -> None:
        _grow(store, "t1", 4)
        for target in (store, reopen()):
            target.load("t1")
            for after in range(5):
                log = target.load("t1", after=after)
                if log.base is not None:  # stores may answer incrementally ...
                    assert log.base == after
                    assert _versions(log) == list(range(after + 1, 5))
                else:  # ... or with the whole thread
                    assert log.snapshot is None and _versions(log) == [0, 1, 2, 3, 4]

    def test_load_after_sees_records_appended_through_another_store_object(
        self, store: Store, reopen: Reopen
    ) -> None:
        _grow(store, "t1", 1)
        store.load("t1")
        reopen().append("t1", [step_record(2)], expected_version=1)
        log = store.load("t1", after=1)
        covered = _versions(log) if log.base is not None else _versions(log)[2:]
        assert covered == [2]

    def test_snapshot_is_returned_by_load_with_only_the_records_after_it(
        self, store: Store, reopen: Reopen
    ) -> None:
        _grow(store, "t1", 3)
        store.write_snapshot("t1", _snapshot(3, {"n": 3}))
        store.append("t1", [step_record(4), step_record(5)], expected_version=3)
        log = reopen().load("t1")
        assert log.snapshot == _snapshot(3, {"n": 3})
        assert _versions(log) == [4, 5]
        assert [r.version for r in reopen().records("t1")] == [0, 1, 2, 3, 4, 5]

    def test_a_newer_snapshot_replaces_the_older_one(self, store: Store, reopen: Reopen) -> None:
        _grow(store, "t1", 2)
        store.write_snapshot("t1", _snapshot(1, {"n": 1}))
        store.write_snapshot("t1", _snapshot(2, {"n": 2}))
        log = reopen().load("t1")
        assert log.snapshot is not None and log.snapshot.version == 2
        assert _versions(log) == []

    def test_snapshot_due_answers_for_a_known_thread(self, store: Store) -> None:
        _grow(store, "t1", 1)
        assert store.snapshot_due("t1") in (True, False)

    def test_threads_lists_created_threads_sorted(self, store: Store, reopen: Reopen) -> None:
        assert store.threads() == []
        for name in ("b-2", "a_1", "c:3", "A@x"):
            store.create(name, start_record())
        with store.lock("only-locked"):
            pass
        assert reopen().threads() == sorted(["b-2", "a_1", "c:3", "A@x"])

    # -- delete ------------------------------------------------------------------------------

    def test_delete_removes_the_thread_and_its_history(self, store: Store, reopen: Reopen) -> None:
        _grow(store, "gone", 3)
        _grow(store, "kept", 1)
        store.write_snapshot("gone", _snapshot(2, {"n": 2}))
        store.delete("gone")
        assert store.threads() == ["kept"]
        assert reopen().threads() == ["kept"]
        with pytest.raises(ThreadNotFoundError):
            reopen().load("gone")
        assert _versions(reopen().load("kept")) == [0, 1]

    def test_a_deleted_id_can_be_started_afresh(self, store: Store, reopen: Reopen) -> None:
        _grow(store, "t1", 2)
        store.delete("t1")
        store.create("t1", start_record())
        log = reopen().load("t1")
        assert log.snapshot is None
        assert _versions(log) == [0]

    # -- errors ------------------------------------------------------------------------------

    @pytest.mark.parametrize("method", sorted(_STORE_CALLS))
    @pytest.mark.parametrize("bad_id", BAD_THREAD_IDS, ids=repr)
    def test_every_method_rejects_invalid_thread_ids(
        self, store: Store, method: str, bad_id: str
    ) -> None:
        with pytest.raises(InvalidThreadIdError):
            _STORE_CALLS[method](store, bad_id)
        assert store.threads() == []

    @pytest.mark.parametrize(
        "method",
        ["append", "load", "load_after", "records", "write_snapshot", "delete", "compact"],
    )
    def test_methods_on_an_unknown_thread_raise_thread_not_found(
        self, store: Store, method: str
    ) -> None:
        _grow(store, "other", 0)
        with pytest.raises(ThreadNotFoundError) as info:
            _STORE_CALLS[method](store, "missing")
        assert info.value.thread_id == "missing"

    # -- locks -------------------------------------------------------------------------------

    def test_lock_is_exclusive_and_released_on_exit(self, store: Store, reopen: Reopen) -> None:
        with store.lock("t1"):
            with pytest.raises(ConflictError), store.lock("t1"):
                pass
            with pytest.raises(ConflictError), reopen().lock("t1"):
                pass
            with store.lock("t2"):  # other threads are independent
                pass
        with store.lock("t1"), reopen().lock("t2"):
            pass

    def test_lock_is_released_when_the_block_raises(self, store: Store) -> None:
        with pytest.raises(KeyError), store.lock("t1"):
            raise KeyError("boom")
        with store.lock("t1"):
            pass

    def test_lock_held_in_one_os_thread_refuses_another(self, store: Store) -> None:
        held, release = threading.Event(), threading.Event()

        def hold() -> None:
            with store.lock("t1"):
                held.set()
                release.wait(30)

        worker = threading.Thread(target=hold)
        worker.start()
        try:
            assert held.wait(30)
            with pytest.raises(ConflictError), store.lock("t1"):
                pass
        finally:
            release.set()
            worker.join()
        with store.lock("t1"):
            pass
