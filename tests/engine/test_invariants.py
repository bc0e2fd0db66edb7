"""Flow invariants: checked on every new state before commit; a violation saves nothing."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import structlog
from pydantic import BaseModel

from flowkit import END, Flow, Gate, Route, RouteTable, Runner, field
from flowkit.errors import FlowDefinitionError, InvariantViolation, RunError
from flowkit.stores import Store


class Tank(BaseModel):
    level: int = 0
    limit: int = 10
    note: str = ""


class Fill(BaseModel):
    amount: int


def within_limit(state: Tank) -> list[str]:
    return [f"level {state.level} exceeds {state.limit}"] if state.level > state.limit else []


def pour(state: Tank) -> dict[str, Any]:
    return {"level": state.level + 4}


def _flow(**extra: Any) -> Flow:
    return Flow(
        name="tank",
        state=Tank,
        start="pour",
        nodes={"pour": pour},
        gates={"more": Gate(Fill, apply=lambda s, v: {"level": s.level + v.amount})},
        routes={
            "pour": RouteTable("after_pour", [Route(field("note"), END)], default="more"),
            "more": "pour",
        },
        **extra,
    )


def test_a_violating_step_raises_and_the_thread_stays_at_its_last_good_checkpoint(
    store: Store,
) -> None:
    runner = Runner(_flow(invariants=[within_limit]), store=store)
    first = runner.start("t")
    assert (first.status, first.node, first.state.level) == ("waiting", "more", 4)
    # The gate input (4 + 3 = 7) is fine; pouring again (11) breaks the invariant.
    with pytest.raises(InvariantViolation) as caught:
        runner.resume("t", {"amount": 3})
    error = caught.value
    assert (error.node, error.thread_id, error.invariants) == ("pour", "t", ["within_limit"])
    assert error.problems == ["within_limit: level 11 exceeds 10"]
    assert "nothing was saved" in str(error) and isinstance(error, RunError)
    # The gate input was committed, the violating step was not.
    now = runner.get_state("t")
    assert (now.status, now.node, now.state.level, now.version) == ("pending", "pour", 7, 2)
    assert error.version == 2
    assert [c.kind for c in runner.history("t")] == ["start", "step", "input"]
    # A fresh runner on the same store sees the same thing (nothing half-written).
    assert Runner(_flow(invariants=[within_limit]), store=store).get_state("t").version == 2


def test_gate_input_that_breaks_an_invariant_leaves_the_thread_waiting() -> None:
    runner = Runner(_flow(invariants={"limit": within_limit}))
    runner.start("t")
    with pytest.raises(InvariantViolation) as caught:
        runner.resume("t", {"amount": 50})
    assert caught.value.node == "more" and caught.value.invariants == ["limit"]
    assert runner.get_state("t").status == "waiting"
    assert runner.resume("t", {"amount": 1}).state.level == 9  # 4 + 1, then poured 4 more


def test_a_patch_that_breaks_an_invariant_is_refused() -> None:
    runner = Runner(_flow(invariants=[within_limit]))
    runner.start("t")
    with pytest.raises(InvariantViolation) as caught:
        runner.update_state("t", {"level": 99}, reason="oops")
    assert caught.value.node == "update_state"
    assert runner.get_state("t").state.level == 4
    assert [c.kind for c in runner.history("t")] == ["start", "step"]


def test_an_invalid_start_state_creates_no_thread() -> None:
    runner = Runner(_flow(invariants=[within_limit]))
    with pytest.raises(InvariantViolation) as caught:
        runner.start("t", {"level": 20})
    assert caught.value.node == "__start__" and caught.value.version is None
    assert "was not created" in str(caught.value)
    assert runner.threads() == []


def test_invariants_may_return_bools_strings_or_raise() -> None:
    def raises(state: Tank) -> list[str]:
        raise KeyError("boom")

    checks = {
        "ok_true": lambda s: True,
        "ok_none": lambda s: None,
        "bool": lambda s: s.level < 0,
        "text": lambda s: "always wrong",
        "raises": raises,
    }
    runner = Runner(_flow(invariants=checks))
    with pytest.raises(InvariantViolation) as caught:
        runner.start("t")
    assert caught.value.invariants == ["bool", "text", "raises"]
    assert caught.value.problems[0] == "bool: does not hold"
    assert caught.value.problems[1] == "text: always wrong"
    assert "raised KeyError" in caught.value.problems[2]


def test_async_runs_check_invariants_too() -> None:
    runner = Runner(_flow(invariants=[within_limit]))
    asyncio.run(runner.astart("t"))
    with pytest.raises(InvariantViolation):
        asyncio.run(runner.aresume("t", {"amount": 3}))
    assert runner.get_state("t").state.level == 7


def test_the_violation_is_logged_by_name_without_the_findings() -> None:
    runner = Runner(_flow(invariants=[within_limit]))
    with structlog.testing.capture_logs() as logs, pytest.raises(InvariantViolation):
        runner.start("t", {"level": 12})
    [entry] = [e for e in logs if e["event"] == "invariant_violated"]
    assert entry["invariants"] == ["within_limit"] and entry["node"] == "__start__"
    assert "12" not in repr(entry)


def test_a_flow_without_invariants_never_checks() -> None:
    flow = _flow()
    assert flow.invariants == ()
    assert flow.to_data()["invariants"] == []
    assert Runner(flow).start("t", {"level": 99}).state.level == 103


def test_non_callable_invariants_are_a_definition_problem() -> None:
    with pytest.raises(FlowDefinitionError) as caught:
        _flow(invariants={"broken": 42})
    assert any("Invariant `broken` is not callable" in p for p in caught.value.problems)
    assert _flow(invariants={"named": within_limit}).to_data()["invariants"] == ["named"]
