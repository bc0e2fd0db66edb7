"""Acceptance 3 and §7: personal slot values never reach logs, events or error messages."""

from __future__ import annotations

from typing import Any

import pytest
import structlog

from flowkit import Runner
from flowkit.dialogue import ActionCall, Dialogue, load_conversations, run_conversations
from flowkit.dialogue.state import DialogueState
from flowkit.testing import capture_events

from .conftest import monday

#: Every requester name the example conversations use, plus the ones the tests below add.
NAMES = ["Sato", "佐藤", "Tanaka Hiroshi", "Yamada"]


def _example_names() -> set[str]:
    tests = load_conversations("robot_cell")
    names = {
        t.slots["requester"]
        for c in tests.conversations
        for t in c.turns
        if t.slots and "requester" in t.slots
    }
    assert names, "the example suite should book with a requester name"
    return names


def test_logs_of_the_whole_example_suite_hold_no_personal_value() -> None:
    names = _example_names() | set(NAMES)
    with structlog.testing.capture_logs() as logs:
        results = run_conversations("robot_cell", "robot_cell")
        bot = Dialogue("robot_cell", clock=monday)
        for text in ("book maintenance for robot 1 tomorrow at 10:00", "Tanaka Hiroshi", "bye"):
            bot.send("p", text)
    assert all(r.passed for r in results)
    turns = [e for e in logs if e["event"] == "dialogue_turn"]
    assert len(turns) >= sum(r.turns for r in results)
    assert {"dialogue_node", "dialogue_ir", "dialogue_turn"} <= {e["event"] for e in logs}
    text = repr(logs)
    for name in names:
        assert name not in text, f"{name!r} leaked into a log line"


def test_the_turn_log_has_the_seed_fields(caplog: pytest.LogCaptureFixture) -> None:
    with structlog.testing.capture_logs() as logs:
        Dialogue("robot_cell", clock=monday).send("x", "book maintenance for robot 1")
    [turn] = [e for e in logs if e["event"] == "dialogue_turn"]
    assert turn["turn_id"] == 1 and turn["intent_type"] == "book_maintenance"
    assert turn["dialogue_mode"] == "SLOT_FILLING" and turn["next_action"] == "clarify"
    assert turn["missing_slots"] == ["date", "time", "requester"]
    assert turn["current_step"] is None and turn["outcome"] == "success"
    assert turn["error_type"] is None and turn["latency_ms"] >= 0
    assert turn["thread_id"] == "x" and turn["node"] == "EG"
    nodes = [e for e in logs if e["event"] == "dialogue_node"]
    assert {e["node"] for e in nodes} >= {"IR", "GST", "SST", "SE", "SFP", "RP", "EG"}
    assert all("latency_ms" in e and e["success"] for e in nodes)


def test_events_carry_no_personal_value(flow: Any) -> None:
    runner: Runner[DialogueState] = Runner(flow, clock=monday)
    with capture_events(runner) as events:
        runner.start("t", {"domain": "robot_cell"})
        runner.resume("t", {"text": "book maintenance for robot 1 tomorrow at 10:00"})
        runner.resume("t", {"text": "Yamada"})
    assert runner.get_state("t").state.slots["requester"] == "Yamada"
    assert "Yamada" not in repr(list(events))


def test_a_failing_action_masks_personal_values_in_its_error() -> None:
    def refuse(call: ActionCall) -> None:
        raise RuntimeError(f"calendar refused the booking for {call.slots['requester']}")

    bot = Dialogue("robot_cell", actions={"book_maintenance": refuse}, clock=monday)
    bot.send("f", "book maintenance for robot 1 tomorrow at 10:00")
    with structlog.testing.capture_logs() as logs:
        reply = bot.send("f", "Yamada")
    state = reply.state
    assert reply.response_id == "action_failed" and "RuntimeError" in reply.text
    assert state.error is not None and state.error.message == (
        "calendar refused the booking for ***"
    )
    assert state.goal_state.status == "failed"
    [call] = state.tool_calls
    assert call.status == "error" and call.args["requester"] == "***"
    assert "Yamada" not in repr(logs)
    [turn] = [e for e in logs if e["event"] == "dialogue_turn"]
    assert (turn["outcome"], turn["error_type"]) == ("failure", "RuntimeError")


def test_tool_calls_mask_personal_arguments() -> None:
    bot = Dialogue("robot_cell", clock=monday)
    bot.send("m", "book maintenance for robot 1 tomorrow at 10:00")
    state = bot.send("m", "Yamada").state
    [call] = state.tool_calls
    assert call.args == {
        "machine": "robot_1",
        "date": "2025-03-11",
        "time": "10:00",
        "requester": "***",
    }
    assert "Yamada" not in repr(state.exec_trace)
