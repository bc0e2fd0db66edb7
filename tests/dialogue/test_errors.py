"""Seed 001 §2.4's error model: a node that raises, in any of the four classes, is routed by
the dialogue's tables to the Error Policy and answered; the conversation goes on."""

from __future__ import annotations

from typing import Any

import pytest

from flowkit import Flow, Node, Runner
from flowkit.dialogue import build_flow
from flowkit.dialogue.errors import (
    DialogueError,
    DialoguePolicyError,
    DialogueUserError,
    as_dialogue_error,
    classify,
)
from flowkit.dialogue.state import DialogueState
from flowkit.errors import LLMUnavailableError
from flowkit.routing import dialogue as r
from flowkit.testing import capture_events

from .conftest import monday

RAISES = {
    "user": DialogueUserError("the request names no robot cell"),
    "external": ConnectionError("calendar service unreachable"),
    "internal": KeyError("slot"),
    "policy": DialoguePolicyError("bookings for other sites are not allowed"),
}
REPLY = {
    "user": "Sorry, I could not do that as you said it. Could you say it another way?",
    "external": "Sorry, a service I need is not answering right now. Please try again shortly.",
    "internal": "Sorry, something went wrong on my side. Please try again.",
    "policy": "Sorry, I cannot help with that request.",
}


def _with(flow: Flow, name: str, node: Node) -> Flow:
    return Flow(
        name=flow.name,
        state=flow.state,
        start=flow.start,
        nodes={**flow.nodes, name: node},
        gates=dict(flow.gates),
        routes=dict(flow.routes),
        error_field=flow.error_field,
        invariants=dict(flow.invariants),
    )


def _raising(flow: Flow, name: str, exc: Exception) -> Flow:
    real = flow.nodes[name]

    def broken(state: DialogueState) -> dict[str, Any]:
        raise exc

    return _with(flow, name, Node(broken, reads=real.reads, writes=real.writes))


def _path(events: list[Any]) -> list[str]:
    return [e.node for e in events if e.kind == "node_finished"]


@pytest.mark.parametrize("error_class", list(RAISES))
def test_a_node_raising_in_each_class_is_answered_and_the_thread_waits(
    flow: Flow, error_class: str
) -> None:
    runner = Runner(_raising(flow, r.IR, RAISES[error_class]), clock=monday)
    runner.start("t1", {"domain": "robot_cell"})
    with capture_events(runner) as events:
        result = runner.resume("t1", {"text": "book maintenance for cell 2 tomorrow"})
    assert (result.status, result.node) == ("waiting", r.SG)
    assert _path(events) == [r.IR, r.EP, r.RP, r.RN_TEMPLATE, r.EG]
    error = result.state.error
    assert isinstance(error, DialogueError)
    assert (error.error_class, error.node) == (error_class, r.IR)
    assert error.type == type(RAISES[error_class]).__name__
    assert error.retryable is (error_class == "external")
    assert result.state.final_answer == REPLY[error_class]
    assert result.state.response_plan is not None
    assert result.state.response_plan.params["error_class"] == error_class
    assert result.state.next_action == "fallback"


@pytest.mark.parametrize(
    "name", [r.IR, r.NP, r.GST, r.SST, r.SE, r.SFP, r.GP, r.RP, r.RN_TEMPLATE, r.EG]
)
def test_any_node_raising_reaches_the_error_policy_not_a_failed_thread(
    flow: Flow, name: str
) -> None:
    text = {r.NP: "hello", r.GP: "cancel"}.get(name, "book maintenance")
    runner = Runner(_raising(flow, name, ConnectionError("down")), clock=monday)
    runner.start("t2", {"domain": "robot_cell"})
    with capture_events(runner) as events:
        result = runner.resume("t2", {"text": text})
    assert (result.status, result.node) == ("waiting", r.SG), _path(events)
    path = _path(events)
    assert path[-1] == r.EG if name == r.EG else path[path.index(name) + 1] == r.EP
    assert result.state.error is not None and result.state.error.node == name
    if name not in (r.EG, r.RN_TEMPLATE):  # EG only logs; RN_template here always fails
        assert result.state.final_answer == REPLY["external"]


def test_a_response_template_failing_on_the_error_reply_ends_the_turn_without_looping(
    flow: Flow,
) -> None:
    runner = Runner(_raising(flow, r.RN_TEMPLATE, RuntimeError("template bug")), clock=monday)
    runner.start("t3", {"domain": "robot_cell"})
    with capture_events(runner) as events:
        result = runner.resume("t3", {"text": "book maintenance"})
    assert (result.status, result.node) == ("waiting", r.SG)
    assert _path(events)[-4:] == [r.EP, r.RP, r.RN_TEMPLATE, r.EG]


def test_the_next_turn_starts_clean_and_works(flow: Flow) -> None:
    broken = _raising(flow, r.NP, DialoguePolicyError("no small talk"))
    runner = Runner(broken, clock=monday)
    runner.start("t4", {"domain": "robot_cell"})
    assert runner.resume("t4", {"text": "hello"}).state.error is not None
    result = runner.resume("t4", {"text": "book maintenance"})
    assert result.status == "waiting"
    assert result.state.error is None
    assert result.state.goal_state.goal == "book_maintenance"


def test_start_gate_writes_the_thread_id_over_a_plain_runner(runner: Runner[Any]) -> None:
    runner.start("conv-7", {"domain": "robot_cell"})
    assert runner.resume("conv-7", {"text": "hello"}).state.thread_id == "conv-7"


def test_a_failing_action_is_the_goals_failure_with_its_class() -> None:
    def offline(call: Any) -> Any:
        raise LLMUnavailableError("booking backend is down")

    flow = build_flow("robot_cell", actions={"book_maintenance": offline})
    runner = Runner(flow, clock=monday)
    runner.start("t5", {"domain": "robot_cell"})
    with capture_events(runner) as events:
        runner.resume("t5", {"text": "book maintenance for robot 1 tomorrow at 10:00"})
        result = runner.resume("t5", {"text": "Tanaka"})
    assert r.EP not in _path(events)
    assert result.state.goal_state.status == "failed"
    assert result.state.error is not None
    assert (result.state.error.error_class, result.state.error.node) == ("external", r.GE)


def test_classification_of_type_names() -> None:
    assert classify("ActionRefused", False) == "user"
    assert classify("LLMTimeoutError", True) == "external"
    assert classify("SomethingRetryable", True) == "external"
    assert classify("ZeroDivisionError", False) == "internal"
    assert classify("DialoguePolicyError", False) == "policy"
    journal = {"type": "KeyError", "message": "x", "node": "IR", "error_class": "user"}
    stored = DialogueState.model_validate({"error": journal}).error
    assert stored is not None and stored.error_class == "user"  # a stored class is kept
    assert as_dialogue_error(None) is None
