"""DBOS peer scenarios: child workflows, and progress read while a workflow runs.

Ported as flowkit behaviour from dbos-transact-py ``tests/test_dbos.py``
(``test_child_workflow``, ``test_recovery_workflow_step`` for a child, ``test_set_get_events``)
and ``tests/test_workflow_management.py`` (``test_restart_fromsteps_childwf``). A DBOS child
workflow is a flowkit ``Subflow`` node: its steps are checkpoints of the parent thread, so a
crash inside the child resumes inside it, its finished steps kept. What a workflow has
committed is readable from another process while it still runs (DBOS ``set_event`` /
``get_event``).
"""

from __future__ import annotations

import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from flowkit import END, Flow, Runner, Subflow
from flowkit.stores import JsonFileStore


class Died(BaseException):
    """Stands for the process dying inside a node: nothing in the engine catches it."""


class Inner(BaseModel):
    text: str = ""
    marks: list[str] = []


class Outer(BaseModel):
    text: str = ""
    result: str = ""
    marks: list[str] = []


def _parent(runs: Counter[str], dying: set[str]) -> Flow:
    def mark(name: str) -> Any:
        def run(state: Any) -> dict[str, Any]:
            runs[name] += 1
            if name in dying:
                raise Died
            return {"marks": [*state.marks, name]}

        return run

    child = Flow(
        name="dbos_child",
        state=Inner,
        start="c1",
        nodes={"c1": mark("c1"), "c2": mark("c2")},
        routes={"c1": "c2", "c2": END},
    )
    return Flow(
        name="dbos_parent",
        state=Outer,
        start="p1",
        nodes={
            "p1": mark("p1"),
            "child": Subflow(
                child,
                input=lambda parent: {"text": parent.text},
                output=lambda parent, inner: {
                    "result": f"{inner.text}:{'+'.join(inner.marks)}",
                    "marks": [*parent.marks, "child"],
                },
                writes=["result", "marks"],
            ),
            "p2": mark("p2"),
        },
        routes={"p1": "child", "child": "p2", "p2": END},
    )


def test_a_child_workflow_runs_once_inside_its_parent(tmp_path: Path) -> None:
    runs: Counter[str] = Counter()
    with JsonFileStore(tmp_path / "store") as store:
        done = Runner(_parent(runs, set()), store=store).start("wf-p", {"text": "bob"})
    assert done.done and done.state.result == "bob:c1+c2"
    assert done.state.marks == ["p1", "child", "p2"]
    assert runs == {"p1": 1, "c1": 1, "c2": 1, "p2": 1}


def test_a_crash_inside_a_child_resumes_inside_it(tmp_path: Path) -> None:
    runs: Counter[str] = Counter()
    with JsonFileStore(tmp_path / "store") as store, pytest.raises(Died):
        Runner(_parent(runs, {"c2"}), store=store).start("wf-p", {"text": "bob"})
    with JsonFileStore(tmp_path / "store") as store:  # the restarted application
        runner = Runner(_parent(runs, set()), store=store)
        pending = runner.get_state("wf-p")
        assert (pending.status, pending.node) == ("pending", "child")
        done = runner.resume("wf-p")
    assert done.done and done.state.result == "bob:c1+c2"
    assert runs == {"p1": 1, "c1": 1, "c2": 2, "p2": 1}  # only the step that died ran again


def test_a_fork_inside_a_child_reruns_the_child_from_there(tmp_path: Path) -> None:
    runs: Counter[str] = Counter()
    with JsonFileStore(tmp_path / "store") as store:
        runner = Runner(_parent(runs, set()), store=store)
        runner.start("wf-p", {"text": "bob"})
        inside = [c for c in runner.history("wf-p") if c.node == "child/c1"]
        assert len(inside) == 1
        fork = runner.fork("wf-p", "wf-p2", at=inside[0].version)
        assert fork.status == "pending" and fork.node == "child"
        done = runner.resume("wf-p2")
    assert done.done and done.state.result == "bob:c1+c2"
    assert runs == {"p1": 1, "c1": 1, "c2": 2, "p2": 2}


def test_committed_progress_is_readable_from_another_process_while_running(
    tmp_path: Path,
) -> None:
    entered, release = threading.Event(), threading.Event()

    class Progress(BaseModel):
        stage: str = ""

    def first(state: Progress) -> dict[str, Any]:
        return {"stage": "first done"}

    def second(state: Progress) -> dict[str, Any]:
        entered.set()
        release.wait(10)
        return {"stage": "second done"}

    flow = Flow(
        name="dbos_progress",
        state=Progress,
        start="first",
        nodes={"first": first, "second": second},
        routes={"first": "second", "second": END},
    )
    results: list[Any] = []
    with JsonFileStore(tmp_path / "store") as store:
        worker = threading.Thread(
            target=lambda: results.append(Runner(flow, store=store).start("wf-ev"))
        )
        worker.start()
        try:
            assert entered.wait(10)
            with JsonFileStore(tmp_path / "store") as reader_store:
                seen = Runner(flow, store=reader_store).get_state("wf-ev")
            assert (seen.state.stage, seen.node, seen.status) == ("first done", "second", "pending")
        finally:
            release.set()
            worker.join(10)
    assert results[0].done and results[0].state.stage == "second done"
