"""DBOS peer scenarios: a workflow interrupted by a crash is recovered and finishes.

Ported as flowkit behaviour from dbos-transact-py ``tests/test_dbos.py``
(``test_recovery_workflow``, ``test_recovery_workflow_step``,
``test_duplicate_recovery_does_not_rerun_running_workflow``, ``test_recovery_thread``) and
``tests/test_failures.py`` (``test_nondeterministic_workflow``, ``test_recovery_attempts``,
``test_dead_letter_queue``): a real process is killed mid-step; the thread is found among
the pending ones, resumed by another process and finished, its committed step never run again.
"""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from flowkit import END, Flow, Runner
from flowkit.errors import ConflictError, IncompatibleThreadError
from flowkit.stores import JsonFileStore

from . import _child


def _run_child(
    mode: str, root: Path, thread_id: str, log: Path
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, _child.__file__, mode, str(root), thread_id, str(log)],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )


def _pending(runner: Runner[Any]) -> list[str]:
    """The ids of the runner's flow's pending threads (a crash left them mid-run), by id."""
    page = runner.list_threads(status="pending", order="id")
    return [summary.thread_id for summary in page.threads]


def _ran(log: Path) -> list[str]:
    return [line.split()[0] for line in log.read_text().splitlines()]


@pytest.mark.slow
def test_a_killed_process_leaves_a_pending_thread_another_finishes(tmp_path: Path) -> None:
    root, log = tmp_path / "store", tmp_path / "runs.log"
    crashed = _run_child("crash", root, "wf-1", log)
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr
    assert _ran(log) == ["one", "two"]

    with JsonFileStore(root) as store:
        runner = Runner(_child.TWO_STEPS, store=store)
        pending = runner.get_state("wf-1")
        assert (pending.status, pending.node) == ("pending", "two")
        assert pending.state.steps == ["one"]  # the step that committed is kept
        assert _pending(runner) == ["wf-1"]

    finished = _run_child("finish", root, "wf-1", log)
    assert finished.returncode == 0, finished.stderr
    assert _ran(log) == ["one", "two", "two"]  # `one` never ran again
    with JsonFileStore(root) as store:
        runner = Runner(_child.TWO_STEPS, store=store)
        done = runner.get_state("wf-1")
        assert _pending(runner) == []
    assert done.done and done.state.steps == ["one", "two"] and done.state.value == "bob!"


class Job(BaseModel):
    done: list[str] = []


class Died(BaseException):
    """Stands for the process dying inside a node: nothing in the engine catches it."""


def test_recovering_every_pending_thread_skips_the_finished_ones(tmp_path: Path) -> None:
    runs: Counter[str] = Counter()
    dying = {"wf-a", "wf-b"}

    def work(state: Job) -> dict[str, Any]:
        return {"done": ["work"]}

    def side(state: Job) -> dict[str, Any]:
        runs["side"] += 1
        return {"done": [*state.done, "side"]}

    def flaky(state: Job, ctx: Any) -> dict[str, Any]:
        runs[ctx.thread_id] += 1
        if ctx.thread_id in dying:
            raise Died
        return {"done": [*state.done, "flaky"]}

    flow = Flow(
        name="dbos_recover_all",
        state=Job,
        start="work",
        nodes={"work": work, "side": side, "flaky": flaky},
        routes={"work": "side", "side": "flaky", "flaky": END},
    )
    with JsonFileStore(tmp_path / "store") as store:
        runner = Runner(flow, store=store)
        for thread_id in ("wf-a", "wf-b", "wf-c"):
            with contextlib.suppress(Died):
                runner.start(thread_id)
    dying.clear()
    with JsonFileStore(tmp_path / "store") as store:  # the restarted application
        runner = Runner(flow, store=store)
        assert _pending(runner) == ["wf-a", "wf-b"]
        recovered = [runner.resume(thread_id) for thread_id in _pending(runner)]
        assert [r.status for r in recovered] == ["done", "done"]
        assert all(r.state.done == ["work", "side", "flaky"] for r in recovered)
        assert _pending(runner) == []
    assert runs["side"] == 3  # once per thread: recovery re-ran only the step that died
    assert (runs["wf-a"], runs["wf-b"], runs["wf-c"]) == (2, 2, 1)


def test_recovering_a_thread_that_is_still_running_does_not_run_it_twice(tmp_path: Path) -> None:
    entered, release = threading.Event(), threading.Event()
    calls: list[str] = []

    def long_step(state: Job) -> dict[str, Any]:
        calls.append("long")
        entered.set()
        release.wait(10)
        return {"done": ["long"]}

    flow = Flow(
        name="dbos_busy",
        state=Job,
        start="long",
        nodes={"long": long_step},
        routes={"long": END},
    )
    with JsonFileStore(tmp_path / "store") as store:
        owner = Runner(flow, store=store)
        results: list[Any] = []
        running = threading.Thread(target=lambda: results.append(owner.start("wf-busy")))
        running.start()
        assert entered.wait(10)
        with JsonFileStore(tmp_path / "store") as other_store:
            recoverer = Runner(flow, store=other_store)
            with pytest.raises(ConflictError) as caught:
                recoverer.resume("wf-busy")  # the thread is held: refused, nothing run
            assert caught.value.thread_id == "wf-busy"
        release.set()
        running.join(10)
    assert calls == ["long"]
    assert results[0].done and results[0].state.done == ["long"]


class Order(BaseModel):
    steps: list[str] = []


def _step(name: str) -> Any:
    def run(state: Order) -> dict[str, Any]:
        return {"steps": [*state.steps, name]}

    return run


def test_a_thread_whose_step_is_gone_from_the_flow_is_refused_with_a_typed_error(
    tmp_path: Path,
) -> None:
    def first(state: Order) -> dict[str, Any]:
        return {"steps": ["first"]}

    def second(state: Order) -> dict[str, Any]:
        raise Died

    before = Flow(
        name="dbos_changed",
        state=Order,
        start="first",
        nodes={"first": first, "second": second},
        routes={"first": "second", "second": END},
    )
    with JsonFileStore(tmp_path / "store") as store, pytest.raises(Died):
        Runner(before, store=store).start("wf-old")
    after = Flow(  # deployed without `second`, and without a migration for it
        name="dbos_changed",
        state=Order,
        start="first",
        nodes={"first": first, "third": _step("third")},
        routes={"first": "third", "third": END},
    )
    with JsonFileStore(tmp_path / "store") as store:
        runner = Runner(after, store=store)
        with pytest.raises(IncompatibleThreadError) as caught:
            runner.resume("wf-old")
    assert caught.value.thread_id == "wf-old" and caught.value.problems


def test_a_thread_that_crashes_every_recovery_is_parked_after_the_limit(tmp_path: Path) -> None:
    def poison(state: Job) -> dict[str, Any]:
        raise Died

    flow = Flow(
        name="dbos_poison",
        state=Job,
        start="poison",
        nodes={"poison": poison},
        routes={"poison": END},
    )
    with JsonFileStore(tmp_path / "store") as store:
        runner = Runner(flow, store=store, max_recovery_attempts=2)
        with pytest.raises(Died):
            runner.start("wf-poison")
        for _ in range(2):
            with pytest.raises(Died):
                runner.resume("wf-poison")
        parked = runner.resume("wf-poison")  # a third recovery: over the limit, not run
        assert parked.status == "failed" and parked.error is not None
        assert parked.error.type == "RecoveryLimitError"
        assert runner.get_state("wf-poison").status == "failed"
