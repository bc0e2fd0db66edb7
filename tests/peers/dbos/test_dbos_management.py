"""DBOS peer scenarios: workflow management (cancel, resume, fork, delete, garbage collection).

Ported as flowkit behaviour from dbos-transact-py ``tests/test_workflow_management.py``
(``test_cancel_resume``, ``test_fork_steps``, ``test_fork_from_failure``,
``test_resume_nonexistent_workflow``, ``test_fork_nonexistent_workflow``,
``test_delete_workflow``, ``test_garbage_collection``, ``test_garbage_collection_batched``).
DBOS's fork from a step is ``Runner.fork(at=version)``; its cancel of a thread that is not
running is a patch to a ``failed`` final state, its resume a ``rewind`` to the checkpoint
before the patch.
"""

from __future__ import annotations

import threading
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from flowkit import END, Flow, Runner
from flowkit.errors import (
    CheckpointNotFoundError,
    ConflictError,
    RunCancelledError,
    ThreadNotFoundError,
)
from flowkit.stores import JsonFileStore


class Steps(BaseModel):
    done: list[str] = []
    approved: bool = False


class Approval(BaseModel):
    approved: bool


def _flow(runs: Counter[str], fail_in: set[str] | None = None) -> Flow:
    def step(name: str) -> Any:
        def run(state: Steps) -> dict[str, Any]:
            runs[name] += 1
            if fail_in and name in fail_in:
                raise ConnectionError(f"{name} failed")
            return {"done": [*state.done, name]}

        return run

    return Flow(
        name="dbos_manage",
        state=Steps,
        start="one",
        nodes={"one": step("one"), "two": step("two"), "three": step("three")},
        gates={"approve": Approval},
        routes={"one": "approve", "approve": "two", "two": "three", "three": END},
        finals={"cancelled": "failed"},
    )


def test_a_cancelled_thread_resumes_from_where_it_stood(tmp_path: Path) -> None:
    runs: Counter[str] = Counter()
    with JsonFileStore(tmp_path / "store") as store:
        runner = Runner(_flow(runs), store=store)
        waiting = runner.start("wf-c")
        assert waiting.gates == ("approve",)
        cancelled = runner.update_state("wf-c", goto="cancelled", reason="cancel", actor="ops")
        assert cancelled.status == "failed" and cancelled.node == "cancelled"
        assert cancelled.gates == ()
    with JsonFileStore(tmp_path / "store") as store:  # resumed by another process
        runner = Runner(_flow(runs), store=store)
        back = runner.rewind("wf-c", waiting.version, reason="resume", actor="ops")
        assert back.gates == ("approve",) and back.state.done == ["one"]
        done = runner.resume("wf-c", {"approved": True})
    assert done.done and done.state.done == ["one", "two", "three"]
    assert runs == {"one": 1, "two": 1, "three": 1}


def test_a_running_thread_is_cancelled_at_its_next_step(tmp_path: Path) -> None:
    """DBOS cancel_workflow: the step in progress finishes and is saved, nothing after it runs
    (the run raises RunCancelledError, as DBOS's awaited handle raises); resume goes on."""
    entered, release = threading.Event(), threading.Event()

    def slow(state: Steps) -> dict[str, Any]:
        entered.set()
        release.wait(10)
        return {"done": ["slow"]}

    def after(state: Steps) -> dict[str, Any]:
        return {"done": [*state.done, "after"]}

    flow = Flow(
        name="dbos_cancel_running",
        state=Steps,
        start="slow",
        nodes={"slow": slow, "after": after},
        routes={"slow": "after", "after": END},
    )
    with JsonFileStore(tmp_path / "store") as store:
        runner = Runner(flow, store=store)
        errors: list[BaseException] = []

        def run() -> None:
            try:
                runner.start("wf-run")
            except RunCancelledError as exc:
                errors.append(exc)

        worker = threading.Thread(target=run)
        worker.start()
        try:
            assert entered.wait(10)
            assert runner.cancel("wf-run")
        finally:
            release.set()
            worker.join(10)
        assert [type(e) for e in errors] == [RunCancelledError]
        stopped = Runner(flow, store=store).get_state("wf-run")
        assert (stopped.status, stopped.node, stopped.state.done) == ("pending", "after", ["slow"])
        assert not runner.cancel("wf-run")  # nothing runs now
        assert runner.resume("wf-run").state.done == ["slow", "after"]


def test_a_fork_from_a_step_reuses_the_steps_before_and_reruns_the_rest(tmp_path: Path) -> None:
    runs: Counter[str] = Counter()
    with JsonFileStore(tmp_path / "store") as store:
        runner = Runner(_flow(runs), store=store)
        runner.start("wf-orig")
        done = runner.resume("wf-orig", {"approved": True})
        assert done.done
        after_approval = next(c.version for c in runner.history("wf-orig") if c.kind == "input")
        fork = runner.fork("wf-orig", "wf-fork", at=after_approval)
        assert (fork.status, fork.node) == ("pending", "two")
        assert fork.state.done == ["one"] and fork.state.approved
        forked = runner.resume("wf-fork")
        original = runner.get_state("wf-orig")
    assert forked.done and forked.state.done == ["one", "two", "three"]
    assert runs == {"one": 1, "two": 2, "three": 2}
    assert original.done and original.version == done.version  # untouched


def test_a_fork_of_a_failed_thread_runs_on_when_the_cause_is_fixed(tmp_path: Path) -> None:
    runs: Counter[str] = Counter()
    with JsonFileStore(tmp_path / "store") as store:
        broken = Runner(_flow(runs, fail_in={"three"}), store=store)
        broken.start("wf-fail")
        failed = broken.resume("wf-fail", {"approved": True})
        assert (failed.status, failed.node) == ("failed", "three")
        fixed = Runner(_flow(runs), store=store)
        fork = fixed.fork("wf-fail", "wf-fixed")
        done = fixed.resume("wf-fixed")
        assert fixed.get_state("wf-fail").status == "failed"
    assert done.done and done.state.done == ["one", "two", "three"]
    assert runs == {"one": 1, "two": 1, "three": 2}
    assert fork.status == "failed"


def test_resuming_or_forking_an_unknown_thread_is_a_typed_error(tmp_path: Path) -> None:
    with JsonFileStore(tmp_path / "store") as store:
        runner = Runner(_flow(Counter()), store=store)
        with pytest.raises(ThreadNotFoundError) as resumed:
            runner.resume("wf-none")
        with pytest.raises(ThreadNotFoundError):
            runner.fork("wf-none", "wf-copy")
        with pytest.raises(ThreadNotFoundError):
            runner.get_state("wf-none")
        runner.start("wf-real")
        with pytest.raises(CheckpointNotFoundError):
            runner.fork("wf-real", "wf-copy", at=99)
        assert sorted(runner.threads()) == ["wf-real"]  # no thread was made by a refusal
    assert resumed.value.thread_id == "wf-none"


def test_a_deleted_thread_is_gone_and_its_id_can_start_afresh(tmp_path: Path) -> None:
    runs: Counter[str] = Counter()
    with JsonFileStore(tmp_path / "store") as store:
        runner = Runner(_flow(runs), store=store)
        runner.start("wf-del")
        runner.delete("wf-del")
        with pytest.raises(ThreadNotFoundError):
            runner.get_state("wf-del")
        with pytest.raises(ThreadNotFoundError):
            runner.delete("wf-del")
    with JsonFileStore(tmp_path / "store") as store:
        runner = Runner(_flow(runs), store=store)
        with pytest.raises(ThreadNotFoundError):
            runner.history("wf-del")
        again = runner.start("wf-del")
    assert again.waiting and again.version == 1 and again.state.done == ["one"]
    assert runs == {"one": 2}


def test_garbage_collection_deletes_finished_threads_and_keeps_live_ones(tmp_path: Path) -> None:
    runs: Counter[str] = Counter()
    with JsonFileStore(tmp_path / "store") as store:
        runner = Runner(_flow(runs), store=store)
        for thread_id in ("wf-1", "wf-2", "wf-3"):
            runner.start(thread_id)
        runner.resume("wf-1", {"approved": True})
        runner.resume("wf-3", {"approved": True})
        dry = runner.prune(dry_run=True)
        assert dry.deleted == ("wf-1", "wf-3") and sorted(runner.threads()) == [
            "wf-1",
            "wf-2",
            "wf-3",
        ]
        pruned = runner.prune()
        assert pruned.deleted == ("wf-1", "wf-3")
    with JsonFileStore(tmp_path / "store") as store:
        runner = Runner(_flow(runs), store=store)
        assert runner.threads() == ["wf-2"]
        assert runner.resume("wf-2", {"approved": True}).done


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


def test_garbage_collection_by_age_keeps_recent_threads(tmp_path: Path) -> None:
    clock = Clock()
    with JsonFileStore(tmp_path / "store") as store:
        runner = Runner(_flow(Counter()), store=store, clock=clock)
        runner.start("wf-old")
        runner.resume("wf-old", {"approved": True})
        clock.now += timedelta(days=2)
        runner.start("wf-new")
        runner.resume("wf-new", {"approved": True})
        clock.now += timedelta(hours=1)
        assert runner.prune(older_than=timedelta(days=3)).deleted == ()
        assert runner.prune(older_than=timedelta(days=1)).deleted == ("wf-old",)
        assert runner.threads() == ["wf-new"]


def test_a_running_thread_is_not_deleted_or_collected(tmp_path: Path) -> None:
    entered, release = threading.Event(), threading.Event()

    def slow(state: Steps) -> dict[str, Any]:
        entered.set()
        release.wait(10)
        return {"done": ["slow"]}

    flow = Flow(
        name="dbos_busy_delete",
        state=Steps,
        start="slow",
        nodes={"slow": slow},
        routes={"slow": END},
    )
    results: list[Any] = []
    with JsonFileStore(tmp_path / "store") as store:
        runner = Runner(flow, store=store)
        worker = threading.Thread(target=lambda: results.append(runner.start("wf-busy")))
        worker.start()
        try:
            assert entered.wait(10)
            with JsonFileStore(tmp_path / "store") as other:
                admin = Runner(flow, store=other)
                with pytest.raises(ConflictError):
                    admin.delete("wf-busy")
                assert admin.prune(status=None).busy == ("wf-busy",)
        finally:
            release.set()
            worker.join(10)
        assert results[0].done and runner.get_state("wf-busy").state.done == ["slow"]
