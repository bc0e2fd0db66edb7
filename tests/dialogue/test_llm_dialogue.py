"""The dialogue with an LLM: understanding and phrasing through ``ctx.llm`` (journaled with
the thread), personal values kept from the model, templates when the model fails."""

from __future__ import annotations

from typing import Any

from flowkit.dialogue import Dialogue, build_flow
from flowkit.dialogue.responses import Renderer
from flowkit.dialogue.state import GoalState, ResponsePlan
from flowkit.errors import LLMUnavailableError
from flowkit.testing import ScriptedLLM

from .conftest import monday


def _nlu(intent: str, **extra: Any) -> dict[str, Any]:
    return {"intent": intent, "entities": [], "commands": [], **extra}


def test_an_llm_understands_and_phrases_a_whole_booking() -> None:
    llm = ScriptedLLM(
        [
            (
                "Message: I need the second arm looked at",
                _nlu("book_maintenance", entities=[{"entity": "machine", "value": "robot_2"}]),
            ),
            (
                "Message: day after tomorrow, 2 in the afternoon",
                _nlu(
                    "inform",
                    commands=[
                        {"command": "set_slot", "slot": "date", "value": "2025-03-12"},
                        {"command": "set_slot", "slot": "time", "value": "14:00"},
                    ],
                ),
            ),
            ("Message: hi", _nlu("greet")),
            ("Hello!", "Good morning! How can I help with the cell today?"),
        ]
    )
    bot = Dialogue("robot_cell", llm=llm, clock=monday)
    assert bot.send("l", "hi").text == "Good morning! How can I help with the cell today?"
    assert bot.send("l", "I need the second arm looked at").missing_slots == [
        "date",
        "time",
        "requester",
    ]
    reply = bot.send("l", "day after tomorrow, 2 in the afternoon")
    assert reply.slots == {"machine": "robot_2", "date": "2025-03-12", "time": "14:00"}
    # The name answers a question for a personal slot: understood offline, never sent.
    assert bot.send("l", "Sato").response_id == "booking_done"
    # Every LLM call is in the thread's journal, so replay needs no model.
    assert len(bot.runner.llm_calls("l")) == len(llm.calls) == 4


def test_the_offline_recogniser_answers_when_the_llm_is_down() -> None:
    llm = ScriptedLLM(default=LLMUnavailableError("connection refused"))
    bot = Dialogue("robot_cell", llm=llm, clock=monday)
    reply = bot.send("d", "book maintenance for robot 1 tomorrow at 10:00")
    assert reply.intent_type == "book_maintenance" and reply.missing_slots == ["requester"]
    assert bot.send("d", "hello").text.startswith("Hello! I can book maintenance")


def test_offline_understanding_never_asks_the_llm() -> None:
    llm = ScriptedLLM(default="unused")
    flow = build_flow("robot_cell", understanding="offline")
    from flowkit import Runner

    runner = Runner(flow, llm=llm, clock=monday)
    runner.start("o", {"domain": "robot_cell"})
    runner.resume("o", {"text": "book maintenance for robot 1"})
    assert llm.calls == []


def test_llm_phrasing_never_sees_personal_values(domain: Any) -> None:
    seen: list[str] = []

    def rephrase(prompt: str) -> str:
        seen.append(prompt)
        return prompt.replace("Booked", "I have booked")

    renderer = Renderer(domain)
    plan = ResponsePlan(id="booking_done", by="GP", lang="en", style="llm")
    goal = GoalState(goal="book_maintenance", status="completed", result={"booking_id": "MB-1"})
    slots = {"machine": "robot_1", "date": "2025-03-11", "time": "10:00", "requester": "Sato"}
    text = renderer.generate(ScriptedLLM(default=rephrase), plan, goal, slots, None)
    assert text.startswith("I have booked maintenance of robot 1") and "for Sato." in text
    assert "Sato" not in seen[0] and "{requester}" in seen[0]
    failing = ScriptedLLM(default=LLMUnavailableError("down"))
    assert renderer.generate(failing, plan, goal, slots, None).startswith("Booked maintenance")


def test_a_deeply_nested_llm_answer_falls_back_to_the_offline_recogniser() -> None:
    # 100,000 brackets once raised RecursionError at IR and ended the conversation `failed`.
    llm = ScriptedLLM(default="[" * 100_000 + "]" * 100_000)
    bot = Dialogue("robot_cell", llm=llm, clock=monday)
    reply = bot.send("deep", "book maintenance for robot 1 tomorrow at 10:00")
    assert reply.intent_type == "book_maintenance" and reply.missing_slots == ["requester"]
    # The conversation goes on (phrasing is free text, so the model's brackets are its words).
    assert bot.send("deep", "Sato").response_id == "booking_done"
