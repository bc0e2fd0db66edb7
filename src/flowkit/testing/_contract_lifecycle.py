"""The lifecycle half of the store contract: delete, prune and compaction.

``StoreContract`` inherits these checks; they use its ``store`` and ``reopen`` fixtures.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from ..errors import CheckpointNotFoundError, ConflictError, StoreError, ThreadNotFoundError
from ..records._records import Snapshot, StartRecord
from ..runner._lifecycle import prune_threads
from ..runner._runner import Runner
from ..stores import Store
from ._contract_flows import REVIEW_FLOW, assert_identical, start_record, step_record

__all__ = ["LifecycleChecks"]

Reopen = Callable[[], Store]
T0 = 1_700_000_000.0


def _grown(store: Store, thread_id: str, last: int, *, status: str = "pending") -> None:
    """A thread with records 0..last; the last one in ``status`` at ``T0 + last``."""
    store.create(thread_id, start_record())
    records = [step_record(v) for v in range(1, last + 1)]
    if records:
        records[-1] = records[-1].model_copy(update={"status": status})
    store.append(thread_id, records, expected_version=0)


def _compacted_start(version: int, n: int) -> StartRecord:
    return start_record({"n": n}).model_copy(update={"version": version, "ts": T0 + version})


def _versions(records: Any) -> list[int]:
    return [r.version for r in records]


class LifecycleChecks:
    """Deleting, pruning and compacting threads, on the store and through a runner."""

    # -- delete ------------------------------------------------------------------------------

    def test_delete_of_a_thread_someone_runs_is_a_conflict_and_keeps_it(
        self, store: Store, reopen: Reopen
    ) -> None:
        _grown(store, "busy", 2)
        with store.lock("busy"):
            with pytest.raises(ConflictError):
                store.delete("busy")
            with pytest.raises(ConflictError):
                reopen().delete("busy")
        assert _versions(reopen().records("busy")) == [0, 1, 2]
        store.delete("busy")  # free again
        assert store.threads() == []

    def test_runner_delete_removes_one_thread_and_forgets_it(
        self, store: Store, reopen: Reopen
    ) -> None:
        runner: Runner[Any] = Runner(REVIEW_FLOW, store=store)
        runner.start("gone")
        runner.start("kept")
        runner.delete("gone")
        assert runner.threads() == ["kept"]
        for each in (runner, Runner(REVIEW_FLOW, store=reopen())):
            with pytest.raises(ThreadNotFoundError):
                each.get_state("gone")
        with pytest.raises(ThreadNotFoundError):
            runner.delete("gone")
        runner.start("gone")  # the id can be used again
        assert runner.get_state("gone").version == 1

    def test_runner_delete_of_a_running_thread_is_a_conflict(self, store: Store) -> None:
        runner: Runner[Any] = Runner(REVIEW_FLOW, store=store)
        runner.start("t1")
        with store.lock("t1"), pytest.raises(ConflictError) as caught:
            runner.delete("t1")
        assert caught.value.thread_id == "t1" and "not deleted" in str(caught.value)
        assert runner.get_state("t1").status == "waiting"

    # -- prune -------------------------------------------------------------------------------

    def _aged(self, store: Store) -> None:
        _grown(store, "old-done", 3, status="done")  # last record at T0 + 3
        _grown(store, "old-failed", 3, status="failed")
        _grown(store, "old-waiting", 3, status="waiting")
        _grown(store, "new-done", 50, status="done")  # at T0 + 50

    def test_prune_deletes_old_threads_in_the_given_statuses(
        self, store: Store, reopen: Reopen
    ) -> None:
        self._aged(store)
        now = T0 + 60
        dry = prune_threads(store, now=now, older_than=30, status=("done", "failed"), dry_run=True)
        assert (dry.deleted, dry.dry_run) == (("old-done", "old-failed"), True)
        assert len(store.threads()) == 4  # a dry run deletes nothing
        done = prune_threads(store, now=now, older_than=timedelta(seconds=30), status="done")
        assert done.deleted == ("old-done",) and not done.busy and not done.unreadable
        assert reopen().threads() == ["new-done", "old-failed", "old-waiting"]
        every = prune_threads(store, now=now, older_than=None, status=None)
        assert every.deleted == ("new-done", "old-failed", "old-waiting")
        assert reopen().threads() == []

    def test_prune_keeps_threads_being_run_and_names_them(self, store: Store) -> None:
        self._aged(store)
        with store.lock("old-done"):
            result = prune_threads(store, now=T0 + 60, older_than=0, status="done")
        assert (result.deleted, result.busy) == (("new-done",), ("old-done",))
        assert "old-done" in store.threads()

    def test_prune_selects_by_flow(self, store: Store) -> None:
        store.create("other", start_record(flow="other"))
        _grown(store, "mine", 1)
        result = prune_threads(store, now=T0 + 60, older_than=0, status=None, flow="contract")
        assert result.deleted == ("mine",)
        assert store.threads() == ["other"]

    def test_runner_prune_deletes_its_flows_finished_threads(self, store: Store) -> None:
        now = [datetime(2030, 1, 1, tzinfo=UTC)]
        runner: Runner[Any] = Runner(REVIEW_FLOW, store=store, clock=lambda: now[0])
        for thread in ("a", "b", "c"):
            runner.start(thread)
        runner.resume("a", {"approved": True})
        store.create("not-mine", start_record(flow="other"))
        now[0] += timedelta(days=40)  # the runner's clock stamped the records and ages them
        assert runner.prune(older_than=timedelta(days=30), dry_run=True).deleted == ("a",)
        result = runner.prune(older_than=timedelta(days=30))
        assert result.deleted == ("a",)
        assert runner.threads() == ["b", "c", "not-mine"]
        assert runner.prune(older_than=timedelta(days=50), status=None).deleted == ()
        assert runner.prune(status=("waiting",)).deleted == ("b", "c")
        assert runner.threads() == ["not-mine"]

    # -- compaction --------------------------------------------------------------------------

    def test_compact_replaces_the_oldest_records_by_a_start_record(
        self, store: Store, reopen: Reopen
    ) -> None:
        _grown(store, "t1", 6)
        before = store.records("t1")
        assert store.compact("t1", _compacted_start(3, 3)) == 4
        for each in (store, reopen()):
            records = each.records("t1")
            assert _versions(records) == [3, 4, 5, 6]
            assert records[0] == _compacted_start(3, 3)
            assert records[1:] == before[4:]
            log = each.load("t1")
            assert log.snapshot is None and _versions(log.records) == [3, 4, 5, 6]

    def test_a_compacted_thread_goes_on_growing_and_snapshots(
        self, store: Store, reopen: Reopen
    ) -> None:
        _grown(store, "t1", 4)
        store.write_snapshot("t1", Snapshot(**_snap(2)))
        store.compact("t1", _compacted_start(2, 2))
        store.append("t1", [step_record(5), step_record(6)], expected_version=4)
        with pytest.raises(ConflictError):
            reopen().append("t1", [step_record(5)], expected_version=4)
        store.write_snapshot("t1", Snapshot(**_snap(5)))
        log = reopen().load("t1")
        assert log.snapshot is not None and log.snapshot.version == 5
        assert _versions(log.records) == [6]
        assert _versions(reopen().records("t1")) == [2, 3, 4, 5, 6]
        assert store.compact("t1", _compacted_start(5, 5)) == 4  # records 2 to 5
        assert _versions(reopen().records("t1")) == [5, 6]

    def test_load_after_a_version_compacted_away_returns_a_complete_log(
        self, store: Store, reopen: Reopen
    ) -> None:
        _grown(store, "t1", 5)
        store.load("t1", after=1)  # a store may remember where the journal ended
        other = reopen()
        other.load("t1", after=1)
        store.compact("t1", _compacted_start(3, 3))
        for each in (store, other, reopen()):
            log = each.load("t1", after=1)
            assert log.base is None and log.snapshot is None
            assert _versions(log.records) == [3, 4, 5]
            assert each.load("t1", after=4).records[-1].version == 5

    def test_compact_refuses_a_version_the_journal_does_not_hold(
        self, store: Store, reopen: Reopen
    ) -> None:
        _grown(store, "t1", 3)
        store.compact("t1", _compacted_start(1, 1))
        for bad in (_compacted_start(0, 0), _compacted_start(4, 4)):
            with pytest.raises(StoreError):
                store.compact("t1", bad)
        with pytest.raises(StoreError):
            store.compact("t1", step_record(2))  # type: ignore[arg-type]
        assert _versions(reopen().records("t1")) == [1, 2, 3]

    def test_compact_of_a_running_or_unknown_thread_is_refused(self, store: Store) -> None:
        _grown(store, "t1", 3)
        with store.lock("t1"), pytest.raises(ConflictError):
            store.compact("t1", _compacted_start(2, 2))
        with pytest.raises(ThreadNotFoundError):
            store.compact("missing", _compacted_start(0, 0))
        assert _versions(store.records("t1")) == [0, 1, 2, 3]

    def test_runner_compact_keeps_the_last_checkpoints_and_the_state(
        self, store: Store, reopen: Reopen
    ) -> None:
        runner: Runner[Any] = Runner(REVIEW_FLOW, store=store)
        runner.start("t1")
        runner.resume("t1", {"approved": False, "notes": ["too short"]})
        runner.resume("t1", {"approved": False, "notes": ["still"]})
        live = runner.get_state("t1")
        full = runner.history("t1")
        assert runner.compact("t1", keep=3) == len(full) - 2  # dropped, plus one replaced
        for each in (runner, Runner(REVIEW_FLOW, store=reopen())):
            again = each.get_state("t1")
            assert (again.status, again.node, again.version) == (
                live.status,
                live.node,
                live.version,
            )
            assert_identical(live.state, again.state)
            history = each.history("t1")
            assert [c.version for c in history] == [c.version for c in full[-3:]]
            assert history[0].kind == "start"
            assert_identical(full[-3].state, history[0].state)
        with pytest.raises(CheckpointNotFoundError):
            runner.fork("t1", "early", at=1)
        runner.fork("t1", "late", at=full[-2].version)
        assert runner.resume("t1", {"approved": True}).status == "done"
        assert runner.compact("t1", keep=100) == 0

    def test_runner_compact_of_a_running_thread_is_a_conflict(self, store: Store) -> None:
        runner: Runner[Any] = Runner(REVIEW_FLOW, store=store)
        runner.start("t1")
        runner.resume("t1", {"approved": False})
        with store.lock("t1"), pytest.raises(ConflictError):
            runner.compact("t1", keep=1)
        assert runner.history("t1")[0].version == 0


def _snap(version: int) -> dict[str, Any]:
    return {
        "version": version,
        "ts": T0 + version,
        "next": "work",
        "status": "pending",
        "flow": "contract",
        "state": {"n": version},
    }
