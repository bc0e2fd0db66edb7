"""Actions: handlers by name, results inline or by reference, the step-by-step executor, and
the ``Dialogue`` service on a JSON-file store."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from flowkit.dialogue import ActionCall, ActionResult, Dialogue, FileArtifacts, MemoryArtifacts
from flowkit.dialogue.actions import record_slots, resolve_handlers
from flowkit.errors import DomainError, InvalidResumeInputError, NotWaitingError
from flowkit.stores import JsonFileStore

from .conftest import monday

BOOK = ("book maintenance for robot 2 tomorrow at 3 pm", "Sato")


def test_small_results_stay_inline_and_are_recorded_everywhere() -> None:
    bot = Dialogue("robot_cell", clock=monday)
    reply = bot.send("b", BOOK[0])
    assert reply.missing_slots == ["requester"] and reply.dialogue_mode == "SLOT_FILLING"
    reply = bot.send("b", BOOK[1])
    state = reply.state
    assert reply.response_id == "booking_done" and state.goal_state.status == "completed"
    booking = state.goal_state.result["booking_id"]
    assert isinstance(booking, str) and booking in reply.text
    assert state.tool_result is not None and state.tool_result["data"]["booking_id"] == booking
    assert state.tool_result_ref is None
    [action] = state.action_history
    assert action.detail["action"] == "book_maintenance" and action.detail["status"] == "ok"
    assert [c.name for c in state.tool_calls] == ["book_maintenance"]


def test_large_results_are_stored_by_reference(tmp_path: Path) -> None:
    artifacts = FileArtifacts(tmp_path / "artifacts")
    bot = Dialogue("robot_cell", artifacts=artifacts, clock=monday)
    bot.send("c", "start the changeover")
    for _ in range(4):
        assert bot.send("c", "next").response_id == "present_step"
    reply = bot.send("c", "next")
    state = reply.state
    assert reply.response_id == "changeover_done" and "CO-" in reply.text
    ref = state.tool_result_ref
    assert ref is not None and ref.startswith("sha256:")
    assert state.tool_result == {
        "summary": state.goal_state.result,
        "bytes": len(artifacts.get(ref)),
    }
    assert json.loads(artifacts.get(ref))["checklist"][0]["step"] == 1
    assert state.tool_calls[-1].result_ref == ref
    steps = [e.detail["step"] for e in state.exec_trace if e.kind == "step"]
    assert steps == [1, 2, 3, 4, 5, 5]


def test_the_default_handler_and_handler_overrides(domain: Any) -> None:
    result = record_slots(ActionCall(action="a", goal="g", slots={"x": 1}))
    assert str(result.summary["reference"]).startswith("g-")
    calls: list[ActionCall] = []

    def book(call: ActionCall) -> dict[str, Any]:
        calls.append(call)
        return {"booking_id": "B-1", "extra": {"nested": True}}

    bot = Dialogue("robot_cell", actions={"book_maintenance": book}, clock=monday)
    bot.send("o", BOOK[0])
    assert "B-1" in bot.send("o", BOOK[1]).text
    assert (
        calls[0].slots
        == {"machine": "robot_2", "date": "2025-03-11", "time": "15:00", "requester": "Sato"}
        and calls[0].thread_id == "o"
    )
    with pytest.raises(DomainError, match="declares no such action"):
        resolve_handlers(domain, {"launch_rocket": book})


def test_unimportable_handlers_are_domain_errors(domain: Any) -> None:
    broken = domain.model_copy(
        update={
            "actions": {
                "book_maintenance": domain.actions["book_maintenance"].model_copy(
                    update={"handler": "flowkit.nowhere:book"}
                )
            }
        }
    )
    with pytest.raises(DomainError, match=r"actions\.book_maintenance\.handler: cannot import"):
        resolve_handlers(broken)


def test_artifact_references_are_checked(tmp_path: Path) -> None:
    memory = MemoryArtifacts()
    ref = memory.put(b"{}")
    assert memory.get(ref) == b"{}" and FileArtifacts(tmp_path).put(b"{}") == ref
    with pytest.raises(ValueError, match="not an artifact reference"):
        FileArtifacts(tmp_path).get("sha256:../../etc/passwd")
    with pytest.raises(KeyError, match="FileArtifacts"):
        memory.get("sha256:" + "0" * 64)


def test_conversations_continue_on_a_store_across_service_instances(tmp_path: Path) -> None:
    store = tmp_path / "store"
    with JsonFileStore(store, fsync=False) as first:
        Dialogue("robot_cell", store=first, clock=monday).send("s", BOOK[0])
    with JsonFileStore(store, fsync=False) as second:
        bot = Dialogue("robot_cell", store=second, clock=monday)
        reply = bot.send("s", BOOK[1])
        assert reply.response_id == "booking_done" and reply.turn_id == 2
        assert bot.transcript("s")[0] == ("user", BOOK[0])
        assert bot.send("s", "start the changeover").response_id == "present_step"
        for _ in range(5):
            bot.send("s", "next")
        # The changeover record is large: stored next to the threads, by content hash.
        assert list((store / "artifacts").glob("*.json"))
        assert bot.send("s", "bye").done
        with pytest.raises(NotWaitingError, match="finished"):
            bot.send("s", "hello again")


def test_empty_and_huge_messages_are_refused_and_the_conversation_waits() -> None:
    bot = Dialogue("robot_cell", clock=monday)
    with pytest.raises(InvalidResumeInputError, match="the message is empty"):
        bot.send("e", "   ")
    with pytest.raises(InvalidResumeInputError, match="at most 2000 characters"):
        bot.send("e", "x" * 2001)
    assert bot.runner.get_state("e").status == "waiting"
    assert bot.send("e", "hello").response_id == "greet"


def test_a_conversation_belongs_to_its_domain(tmp_path: Path) -> None:
    other = {
        "name": "other",
        "intents": {"hi": {"kind": "small_talk", "response": "hi", "examples": {"en": ["hi"]}}},
        "responses": {"hi": {"en": "Hi!"}},
    }
    with JsonFileStore(tmp_path, fsync=False) as store:
        Dialogue("robot_cell", store=store).send("d", "hello")
        with pytest.raises(DomainError, match="belongs to domain `robot_cell`"):
            Dialogue(other, store=store).send("d", "hi")


def test_action_results_may_be_models_mappings_or_nothing() -> None:
    from flowkit.dialogue.actions import as_result

    assert as_result(None) == ActionResult()
    assert as_result({"id": 1, "x": [1]}).summary == {"id": 1}
