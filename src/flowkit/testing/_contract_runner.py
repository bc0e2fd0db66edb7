"""The runner half of the store contract: history, fork, patches and exact types over a store.

``StoreContract`` inherits these checks; they use its ``store`` and ``reopen`` fixtures.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from ..definition._flow import Flow
from ..errors import (
    CheckpointNotFoundError,
    ConflictError,
    InvalidThreadIdError,
    ThreadExistsError,
    ThreadNotFoundError,
)
from ..records._records import Snapshot, StartRecord
from ..runner._runner import Runner
from ..stores import Store
from ._contract_flows import REVIEW_FLOW, STAMP, TYPES_FLOW, assert_identical, rich_values

__all__ = ["RunnerOverStoreChecks"]

Reopen = Callable[[], Store]

_RUNNER_CALLS: dict[str, Callable[[Runner[Any], str], Any]] = {
    "start": lambda r, t: r.start(t),
    "resume": lambda r, t: r.resume(t, {"approved": True}),
    "get_state": lambda r, t: r.get_state(t),
    "history": lambda r, t: r.history(t),
    "fork_from": lambda r, t: r.fork(t, "fork-target"),
    "fork_to": lambda r, t: r.fork("existing", t),
    "update_state": lambda r, t: r.update_state(t, {"drafts": 3}),
}


def _runner(flow: Flow, store: Store) -> Runner[Any]:
    return Runner(flow, store=store)


class RunnerOverStoreChecks:
    """A runner on the store keeps every promise it makes on ``MemoryStore``."""

    def _reviewed(self, store: Store) -> Runner[Any]:
        """Thread t1: draft, rejected with a note, draft again, approved, published."""
        runner = _runner(REVIEW_FLOW, store)
        runner.start("t1")
        runner.resume("t1", {"approved": False, "notes": ["too short"]})
        runner.resume("t1", {"approved": True})
        return runner

    def test_runner_state_survives_reopening(self, store: Store, reopen: Reopen) -> None:
        live = self._reviewed(store).get_state("t1")
        again = _runner(REVIEW_FLOW, reopen()).get_state("t1")
        assert (again.status, again.node, again.version) == ("done", live.node, live.version)
        assert_identical(live.state, again.state)

    def test_history_has_every_checkpoint_in_order(self, store: Store, reopen: Reopen) -> None:
        self._reviewed(store)
        history = _runner(REVIEW_FLOW, reopen()).history("t1")
        assert [(c.version, c.kind, c.node, c.next) for c in history] == [
            (0, "start", None, "draft"),
            (1, "step", "draft", "review"),
            (2, "input", "review", "draft"),
            (3, "step", "draft", "review"),
            (4, "input", "review", "publish"),
            (5, "step", "publish", "__end__"),
        ]
        assert [c.state.drafts for c in history] == [0, 1, 1, 2, 2, 2]
        assert history[-1].state.notes == ["draft 1", "too short", "draft 2", "published"]

    def test_fork_at_every_version_stands_where_the_original_stood(
        self, store: Store, reopen: Reopen
    ) -> None:
        history = self._reviewed(store).history("t1")
        runner = _runner(REVIEW_FLOW, reopen())
        for checkpoint in history:
            fork_id = f"fork-{checkpoint.version}"
            forked = runner.fork("t1", fork_id, at=checkpoint.version)
            again = _runner(REVIEW_FLOW, reopen()).get_state(fork_id)
            for result in (forked, again):
                assert (result.node, result.status) == (checkpoint.next, checkpoint.status)
                assert_identical(checkpoint.state, result.state)
            start = reopen().records(fork_id)[0]
            assert isinstance(start, StartRecord)
            assert start.forked_from == {"thread_id": "t1", "version": checkpoint.version}
        resumed = runner.resume("fork-1", {"approved": True})
        assert resumed.status == "done" and resumed.state.notes == ["draft 1", "published"]
        assert _runner(REVIEW_FLOW, reopen()).get_state("t1").version == 5

    @pytest.mark.parametrize("at", [-1, 6, 100])
    def test_fork_outside_the_history_raises_checkpoint_not_found(
        self, store: Store, at: int
    ) -> None:
        runner = self._reviewed(store)
        with pytest.raises(CheckpointNotFoundError):
            runner.fork("t1", "t2", at=at)
        assert store.threads() == ["t1"]

    def test_fork_into_an_existing_thread_raises_thread_exists_and_keeps_it(
        self, store: Store, reopen: Reopen
    ) -> None:
        runner = self._reviewed(store)
        runner.start("t2")
        with pytest.raises(ThreadExistsError):
            runner.fork("t1", "t2", at=3)
        assert _runner(REVIEW_FLOW, reopen()).get_state("t2").version == 1

    def test_update_state_is_a_patch_checkpoint_with_reason_and_actor(
        self, store: Store, reopen: Reopen
    ) -> None:
        runner = _runner(REVIEW_FLOW, store)
        runner.start("t1")
        patched = runner.update_state(
            "t1", {"drafts": 10, "notes": ["fixed"]}, reason="typo", actor="alice"
        )
        assert (patched.version, patched.state.drafts, patched.node) == (2, 10, "review")
        last = _runner(REVIEW_FLOW, reopen()).history("t1")[-1]
        assert (last.kind, last.reason) == ("patch", "typo")
        assert last.update == {"drafts": 10, "notes": ["fixed"]}
        assert last.state.notes == ["draft 1", "fixed"]
        record = reopen().records("t1")[-1]
        assert (record.kind, getattr(record, "actor", None)) == ("patch", "alice")
        resumed = _runner(REVIEW_FLOW, reopen()).resume("t1", {"approved": True})
        assert resumed.status == "done" and resumed.state.drafts == 10

    def test_resume_with_a_stale_expected_version_raises_conflict(
        self, store: Store, reopen: Reopen
    ) -> None:
        first = _runner(REVIEW_FLOW, store)
        seen = first.start("t1").version
        second = _runner(REVIEW_FLOW, reopen())
        second.resume("t1", {"approved": False}, expected_version=seen)
        with pytest.raises(ConflictError):
            first.resume("t1", {"approved": True}, expected_version=seen)
        state = _runner(REVIEW_FLOW, reopen()).get_state("t1")
        assert (state.state.drafts, state.state.approved, state.version) == (2, False, 3)

    def test_types_round_trip_exactly_through_a_reopened_store(
        self, store: Store, reopen: Reopen
    ) -> None:
        runner = _runner(TYPES_FLOW, store)
        waiting = runner.start("t1")
        assert waiting.node == "stamp"
        assert_identical(type(waiting.state)(**rich_values()), waiting.state)
        done = runner.resume("t1", STAMP)
        fresh = _runner(TYPES_FLOW, reopen())
        assert_identical(done.state, fresh.get_state("t1").state)
        history = fresh.history("t1")
        assert_identical(waiting.state, history[1].state)
        assert_identical(done.state, history[-1].state)
        fresh.fork("t1", "t2", at=1)
        assert_identical(done.state, fresh.resume("t2", STAMP).state)

    def test_state_loaded_from_a_snapshot_equals_full_replay(
        self, store: Store, reopen: Reopen
    ) -> None:
        runner = _runner(TYPES_FLOW, store)
        waiting = runner.start("t1")
        store.write_snapshot(
            "t1",
            Snapshot(
                version=waiting.version,
                ts=0.0,
                next=waiting.node,
                status=waiting.status,
                flow=TYPES_FLOW.name,
                state=waiting.state.model_dump(mode="json"),
            ),
        )
        reopened = reopen()
        assert reopened.load("t1").snapshot is not None
        from_snapshot = _runner(TYPES_FLOW, reopened)
        assert_identical(waiting.state, from_snapshot.get_state("t1").state)
        done = from_snapshot.resume("t1", STAMP)
        assert_identical(_runner(TYPES_FLOW, reopen()).history("t1")[-1].state, done.state)

    @pytest.mark.parametrize("method", sorted(_RUNNER_CALLS))
    @pytest.mark.parametrize("bad_id", ["../../etc", "", "a/b", ".hidden"], ids=repr)
    def test_runner_calls_reject_invalid_thread_ids(
        self, store: Store, method: str, bad_id: str
    ) -> None:
        runner = _runner(REVIEW_FLOW, store)
        runner.start("existing")
        with pytest.raises(InvalidThreadIdError):
            _RUNNER_CALLS[method](runner, bad_id)
        assert store.threads() == ["existing"]

    @pytest.mark.parametrize(
        "method", ["resume", "get_state", "history", "fork_from", "update_state"]
    )
    def test_runner_calls_on_an_unknown_thread_raise_thread_not_found(
        self, store: Store, method: str
    ) -> None:
        runner = _runner(REVIEW_FLOW, store)
        with pytest.raises(ThreadNotFoundError):
            _RUNNER_CALLS[method](runner, "missing")
        assert store.threads() == []
