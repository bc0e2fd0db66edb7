"""Burr's application scenarios, as flowkit behaviour.

Ported from Burr's ``tests/core/test_application.py`` (apache/burr): stepping and running
an application until a halting condition (``test_run``, ``test_run_halt_before``,
``test_app_get_next_step``, ``test_app_step_done``), actions with inputs
(``test_app_step_with_inputs``, ``test_app_step_with_inputs_missing``), a broken action
(``test_app_step_broken``), setting state by hand (``test_app_set_state``), the sync and async
drivers (``test_arun``), ordered sequence ids while streaming
(``test_stream_result_halt_after_unique_ordered_sequence_id``) and forking from another
app's id and sequence id (``test_application_builder_initialize_fork_*``).

Burr's ``halt_before`` / inputs become gates here: a run pauses at a gate and the input is
the gate's answer.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated, Any

import pytest
import structlog
from pydantic import BaseModel

from flowkit import END, Flow, Gate, Route, RouteTable, Runner, append, when
from flowkit.errors import (
    CheckpointNotFoundError,
    InvalidResumeInputError,
    NotWaitingError,
    ThreadExistsError,
    ThreadNotFoundError,
)
from flowkit.stores import JsonFileStore, StartRecord


class Counter(BaseModel):
    count: int = 0
    tracker: Annotated[list[int], append] = []
    result: int | None = None


def count(state: Counter) -> dict[str, Any]:
    return {"count": state.count + 1, "tracker": [state.count + 1]}


def result(state: Counter) -> dict[str, Any]:
    return {"result": state.count}


def _below_ten(state: Counter) -> bool:
    return state.count < 10


UNTIL_TEN = RouteTable(
    "until_ten", [Route(when("below_ten", _below_ten), "counter")], default="result"
)

#: counter loops while count < 10, then result (Burr's ``test_run`` graph).
RUN = Flow(
    name="burr_run",
    state=Counter,
    start="counter",
    nodes={"counter": count, "result": result},
    routes={"counter": UNTIL_TEN, "result": END},
)


class Approve(BaseModel):
    ok: bool = True


#: the same loop, halted before ``result`` by a gate (Burr's ``halt_before=["result"]``).
HALT_BEFORE = Flow(
    name="burr_halt_before",
    state=Counter,
    start="counter",
    nodes={"counter": count, "result": result},
    gates={"before_result": Gate(Approve, apply=lambda state, value: {})},
    routes={
        "counter": RouteTable(
            "until_ten", [Route(when("below_ten", _below_ten), "counter")], default="before_result"
        ),
        "before_result": "result",
        "result": END,
    },
)


class Increment(BaseModel):
    additional_increment: int


class Counted(Counter):
    additional_increment: int = 0


def count_with_input(state: Counted) -> dict[str, Any]:
    total = state.count + 1 + state.additional_increment
    return {"count": total, "tracker": [total]}


#: a counter whose every step needs an input (Burr's counter action with inputs): the gate
#: ``inputs`` takes it, node ``counter`` uses it, and the run waits for the next one.
WITH_INPUTS = Flow(
    name="burr_inputs",
    state=Counted,
    start="inputs",
    nodes={"counter": count_with_input},
    gates={"inputs": Increment},
    routes={"inputs": "counter", "counter": "inputs"},
)


def _store(tmp_path: Path) -> JsonFileStore:
    return JsonFileStore(tmp_path / "store")


def test_run_loops_on_a_condition_until_the_default_transition(tmp_path: Path) -> None:
    # test_run
    runner = Runner(RUN, store=_store(tmp_path))
    done = runner.start("app")
    assert done.status == "done"
    assert (done.state.count, done.state.result) == (10, 10)
    assert done.state.tracker == list(range(1, 11))
    steps = [c.node for c in runner.history("app") if c.kind == "step"]
    assert steps == ["counter"] * 10 + ["result"]


def test_run_halts_before_an_action_without_running_it(tmp_path: Path) -> None:
    # test_run_halt_before: the run stops before `result`, which has not run
    runner = Runner(HALT_BEFORE, store=_store(tmp_path))
    halted = runner.start("app")
    assert halted.waiting and halted.node == "before_result"
    assert (halted.state.count, halted.state.result) == (10, None)
    done = runner.resume("app", {})
    assert done.done and done.state.result == 10
    assert done.state.tracker == list(range(1, 11))  # no counter step ran again


def test_step_with_inputs_applies_them(tmp_path: Path) -> None:
    # test_app_step_with_inputs
    runner = Runner(WITH_INPUTS, store=_store(tmp_path))
    assert runner.start("app").waiting
    stepped = runner.resume("app", {"additional_increment": 1})
    assert stepped.waiting and stepped.node == "inputs"
    assert (stepped.state.count, stepped.state.tracker) == (2, [2])


def test_step_with_missing_inputs_is_refused_and_nothing_changes(tmp_path: Path) -> None:
    # test_app_step_with_inputs_missing
    runner = Runner(WITH_INPUTS, store=_store(tmp_path))
    before = runner.start("app")
    with pytest.raises(InvalidResumeInputError) as caught:
        runner.resume("app", {})
    assert caught.value.gate == "inputs"
    after = runner.get_state("app")
    assert after.waiting and after.version == before.version and after.state.count == 0


def test_inputs_are_not_consumed_across_several_actions(tmp_path: Path) -> None:
    # test_run_with_inputs_multiple_actions: the same input keeps working step after step
    runner = Runner(WITH_INPUTS, store=_store(tmp_path))
    runner.start("app")
    for _ in range(3):
        last = runner.resume("app", {"additional_increment": 8})
    assert last.state.tracker == [9, 18, 27]


class Broken(BaseModel):
    touched: bool = False


def broken_action_unique_name(state: Broken) -> dict[str, Any]:
    raise RuntimeError("this action is broken")


BROKEN = Flow(
    name="burr_broken",
    state=Broken,
    start="broken_action_unique_name",
    nodes={"broken_action_unique_name": broken_action_unique_name},
    routes={"broken_action_unique_name": END},
    error_field=None,
)


def test_a_broken_action_fails_the_thread_and_names_the_action(tmp_path: Path) -> None:
    # test_app_step_broken: Burr raises and logs the action's name; flowkit records the
    # failure as the thread's state (no traceback out of `start`) and logs the node.
    runner = Runner(BROKEN, store=_store(tmp_path))
    with structlog.testing.capture_logs() as logs:
        failed = runner.start("app")
    assert failed.status == "failed" and failed.node == "broken_action_unique_name"
    assert failed.error is not None and failed.error.type == "RuntimeError"
    assert failed.error.node == "broken_action_unique_name"
    assert any(e.get("node") == "broken_action_unique_name" for e in logs)
    assert runner.get_state("app").status == "failed"  # saved as failed, nothing half-done


def test_a_finished_application_has_no_next_step(tmp_path: Path) -> None:
    # test_app_step_done: Burr's step returns None; flowkit says the thread is done
    runner = Runner(RUN, store=_store(tmp_path))
    done = runner.start("app")
    with pytest.raises(NotWaitingError):
        runner.resume("app")
    assert runner.get_state("app").version == done.version


class Ring(BaseModel):
    visits: Annotated[list[str], append] = []


def _visit(name: str) -> Any:
    def visit(state: Ring) -> dict[str, Any]:
        return {"visits": [name]}

    return visit


RING = Flow(
    name="burr_ring",
    state=Ring,
    start="counter_1",
    nodes={name: _visit(name) for name in ("counter_1", "counter_2", "counter_3")},
    routes={
        "counter_1": "counter_2",
        "counter_2": "counter_3",
        # flowkit refuses a loop with no way out, so the ring ends after four rounds
        "counter_3": RouteTable(
            "round",
            [Route(when("fourth_round", lambda s: len(s.visits) >= 12), END)],
            default="counter_1",
        ),
    },
)


def test_the_next_action_is_known_after_each_single_step(tmp_path: Path) -> None:
    # test_app_get_next_step: step one action at a time (leave the stream after one commit)
    runner = Runner(RING, store=_store(tmp_path))
    expected_next = ["counter_2", "counter_3", "counter_1", "counter_2"]
    for turn, following in enumerate(expected_next):
        new = turn == 0
        with runner.stream("ring", None if not new else {}, mode="updates", new=new) as it:
            next(iter(it))
        now = runner.get_state("ring")
        assert (now.status, now.node) == ("pending", following)
        assert len(now.state.visits) == turn + 1


def test_state_set_by_hand_is_where_the_next_step_starts(tmp_path: Path) -> None:
    # test_app_set_state
    runner = Runner(WITH_INPUTS, store=_store(tmp_path))
    runner.start("app")
    runner.resume("app", {"additional_increment": 0})
    patched = runner.update_state("app", {"count": 2}, reason="set by hand")
    assert patched.state.count == 2 and patched.waiting
    assert runner.resume("app", {"additional_increment": 0}).state.count == 3
    patches = [c for c in runner.history("app") if c.kind == "patch"]
    assert [(c.reason, c.state.count) for c in patches] == [("set by hand", 2)]


def test_async_and_sync_drivers_reach_the_same_state(tmp_path: Path) -> None:
    # test_arun / test_app_a_run_async_and_sync
    runner = Runner(RUN, store=_store(tmp_path))
    synced = runner.start("sync")
    asynced = asyncio.run(runner.astart("async"))
    assert asynced.state == synced.state and asynced.version == synced.version


def test_streamed_steps_have_unique_ordered_sequence_ids(tmp_path: Path) -> None:
    # test_stream_result_halt_after_unique_ordered_sequence_id
    runner = Runner(RUN, store=_store(tmp_path))
    it = runner.stream("app", {}, mode="values")
    counts = [state.count for state in it]
    assert counts == [0, *range(1, 11), 10]  # the start, ten counters, the result
    versions = [c.version for c in runner.history("app")]
    assert versions == list(range(len(versions))) and versions[-1] == it.result.version


def test_fork_from_another_app_and_sequence_id(tmp_path: Path) -> None:
    # test_application_builder_initialize_fork_app_id_happy_pth
    store = _store(tmp_path)
    runner = Runner(RUN, store=store)
    runner.start("123")
    forked = runner.fork("123", "test123", at=5)
    assert (forked.status, forked.node, forked.state.count) == ("pending", "counter", 5)
    first = store.records("test123")[0]
    assert isinstance(first, StartRecord)
    assert first.forked_from == {"thread_id": "123", "version": 5}  # the parent pointer
    finished = Runner(RUN, store=JsonFileStore(tmp_path / "store")).resume("test123")
    assert finished.done and finished.state.tracker == list(range(1, 11))
    assert runner.get_state("123").version == 11  # the parent is untouched


def test_fork_refuses_the_same_id_a_missing_app_and_a_missing_sequence_id(tmp_path: Path) -> None:
    # test_application_builder_initialize_fork_errors_on_same_app_id (and missing sources)
    runner = Runner(RUN, store=_store(tmp_path))
    runner.start("123")
    with pytest.raises(ThreadExistsError):
        runner.fork("123", "123")
    with pytest.raises(ThreadNotFoundError):
        runner.fork("no-such-app", "new")
    with pytest.raises(CheckpointNotFoundError):
        runner.fork("123", "new", at=999)
    assert runner.threads() == ["123"]
