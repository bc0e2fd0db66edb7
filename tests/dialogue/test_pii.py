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
    assert {"node_finished", "dialogue_ir", "dialogue_turn"} <= {e["event"] for e in logs}
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
    nodes = [e for e in logs if e["event"] == "node_finished"]
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


def test_a_failing_action_masks_contact_details_that_are_no_slot() -> None:
    def refuse(call: ActionCall) -> None:
        raise RuntimeError("calendar refused: ask ops@example.com or 03-1234-5678")

    bot = Dialogue("robot_cell", actions={"book_maintenance": refuse}, clock=monday)
    bot.send("g", "book maintenance for robot 1 tomorrow at 10:00")
    state = bot.send("g", "Yamada").state
    assert state.error is not None and state.error.message == "calendar refused: ask *** or ***"


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


# -- what reaches an LLM ------------------------------------------------------------------------

_BOOKING = {
    "intent": "book_maintenance",
    "entities": [],
    "commands": [
        {"command": "set_slot", "slot": "machine", "value": "robot_1"},
        {"command": "set_slot", "slot": "date", "value": "2025-03-11"},
        {"command": "set_slot", "slot": "time", "value": "10:00"},
    ],
}


def _scripted_model() -> Any:
    """Books on the first message, greets on every later one; phrases nothing."""
    import json

    from flowkit.testing import ScriptedLLM

    def answer(prompt: str) -> str:
        if "language-understanding step" not in prompt:
            return ""  # an empty phrasing keeps the template
        if prompt.endswith("Message: book maintenance for robot 1 tomorrow at 10:00"):
            return json.dumps(_BOOKING)
        if "Message: Tanaka Hiroshi" in prompt:
            return json.dumps(
                {
                    "intent": "inform",
                    "commands": [
                        {"command": "set_slot", "slot": "requester", "value": "Tanaka Hiroshi"}
                    ],
                }
            )
        # A model echoing the mask must not overwrite the name with it.
        return json.dumps(
            {
                "intent": "greet",
                "commands": [{"command": "correct_slot", "slot": "requester", "value": "***"}],
            }
        )

    return ScriptedLLM(default=answer, match_on="prompt")


_TURNS = [
    "book maintenance for robot 1 tomorrow at 10:00",
    "Tanaka Hiroshi",
    "hello",
    "thanks, Tanaka Hiroshi here again",
    "hi",
    "hello there",
    "good morning",
]


def _chat(domain: Any, thread: str) -> tuple[Any, Any, Any]:
    llm = _scripted_model()
    bot = Dialogue(domain, llm=llm, clock=monday)
    replies = [bot.send(thread, text) for text in _TURNS]
    return llm, bot, replies


def test_personal_values_never_reach_the_llm_unless_the_domain_opts_in(domain: Any) -> None:
    with structlog.testing.capture_logs() as logs:
        llm, bot, replies = _chat(domain, "llm-pii")

    assert replies[1].response_id == "booking_done"
    assert replies[-1].state.slots["requester"] == "Tanaka Hiroshi"  # not "***"
    ir_prompts = [p for p in llm.prompts if "language-understanding step" in p]
    # The answer to "who is requesting?" is understood offline; every other turn asks.
    assert len(ir_prompts) == len(_TURNS) - 1
    assert any("***" in p for p in ir_prompts)  # the history said it; the prompt masks it
    journal = repr(bot.runner.llm_calls("llm-pii"))
    for text in (*llm.prompts, journal, repr(logs)):
        assert "Tanaka" not in text


def test_a_slot_opted_in_with_send_to_llm_is_sent(tmp_path: Any) -> None:
    from pathlib import Path

    import yaml

    import flowkit.dialogue
    from flowkit.dialogue import load_domain

    source = Path(flowkit.dialogue.__file__).parent / "examples" / "robot_cell.yaml"
    data = yaml.safe_load(source.read_text(encoding="utf-8"))
    data["slots"]["requester"]["send_to_llm"] = True
    path = tmp_path / "open_cell.yaml"
    path.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")

    llm, _, replies = _chat(load_domain(path), "opted-in")

    assert replies[1].response_id == "booking_done"
    ir_prompts = [p for p in llm.prompts if "language-understanding step" in p]
    assert len(ir_prompts) == len(_TURNS)
    # The reply itself, then the history of the next turns (the prompt keeps the last four).
    assert all("Tanaka" in p for p in ir_prompts[1:4])


def test_the_llm_recogniser_masks_known_values_and_keeps_private_answers_offline(
    domain: Any,
) -> None:
    from datetime import date

    from flowkit.dialogue import LLMRecognizer, TurnContext
    from flowkit.dialogue.state import ChatMessage
    from flowkit.testing import ScriptedLLM

    llm = ScriptedLLM(default={"intent": "greet"}, match_on="prompt")
    recognizer = LLMRecognizer(domain)
    history = (ChatMessage(role="assistant", content="Booked for Yamada Taro."),)
    known = TurnContext(None, "en", date(2025, 3, 10), history, slots={"requester": "Yamada Taro"})
    assert recognizer.understand("hi, Yamada Taro again", known, llm).source == "llm"
    asking = TurnContext("requester", "en", date(2025, 3, 10))
    answer = recognizer.understand("Yamada Taro", asking, llm)

    assert answer.source == "offline" and answer.entities[0].value == "Yamada Taro"
    assert len(llm.calls) == 1 and "Yamada" not in llm.prompts[0]
    assert "Booked for ***." in llm.prompts[0] and "Message: hi, *** again" in llm.prompts[0]
