"""A task list is validated as a whole; sub-tasks that call each other in a circle are refused
with a ``TaskCycleError`` naming the circle (inside pydantic's ``ValidationError``, so an LLM
answer with a circle is retried like any invalid answer)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from flowkit.errors import FlowkitError, TaskCycleError
from flowkit.sas.tasks import TaskList, find_cycle


def _task(name: str, *calls: str, kind: str = "GraspTask") -> dict[str, Any]:
    return {"name": name, "type": kind, "sub_tasks": list(calls)}


def _cycle_of(tasks: list[dict[str, Any]]) -> TaskCycleError:
    with pytest.raises(ValidationError) as caught:
        TaskList.model_validate({"tasks": tasks})
    error = caught.value.errors()[0]["ctx"]["error"]
    assert isinstance(error, TaskCycleError)
    return error


def test_two_tasks_calling_each_other_are_refused_naming_the_circle() -> None:
    error = _cycle_of([_task("Main", "A", kind="MainTask"), _task("A", "B"), _task("B", "A")])
    assert error.cycle == ("A", "B", "A")
    assert isinstance(error, FlowkitError)
    assert "A -> B -> A" in str(error)
    assert "remove one of these sub-task calls" in str(error)


def test_a_longer_circle_through_the_main_task() -> None:
    tasks = [_task("Main", "A", kind="MainTask"), _task("A", "B"), _task("B", "Main")]
    assert _cycle_of(tasks).cycle == ("Main", "A", "B", "Main")


def test_shared_sub_tasks_are_not_a_circle() -> None:
    plan = TaskList.model_validate(
        {"tasks": [_task("Main", "A", "B", kind="MainTask"), _task("A", "B"), _task("B")]}
    )
    assert find_cycle(plan.tasks) is None


def test_a_very_long_chain_is_an_answer_not_a_recursion_error() -> None:
    n = 3000
    tasks = [_task("Main", "t0", kind="MainTask")]
    tasks += [_task(f"t{i}", f"t{i + 1}") for i in range(n)] + [_task(f"t{n}", "t0")]
    assert len(_cycle_of(tasks).cycle) == n + 2


def test_other_problems_are_reported_before_the_circle() -> None:
    with pytest.raises(ValidationError, match="calls unknown tasks: Nope"):
        TaskList.model_validate(
            {"tasks": [_task("Main", "A", kind="MainTask"), _task("A", "Nope")]}
        )
