"""A maintenance slot is booked once: a second requester (another conversation, another
process on the same store) is told the slot is taken and asked for another time, and the
booking goes through once they pick a free one."""

from __future__ import annotations

from pathlib import Path

from flowkit.dialogue import ActionCall, Dialogue
from flowkit.dialogue.ledger import FileLedger, MemoryLedger
from flowkit.stores import JsonFileStore

from .conftest import monday

ASK = "book maintenance for robot 2 tomorrow at 3 pm"


def test_the_same_slot_is_not_confirmed_to_two_people() -> None:
    bot = Dialogue("robot_cell", clock=monday)
    bot.send("sato", ASK)
    first = bot.send("sato", "Sato")
    assert first.response_id == "booking_done"
    bot.send("tanaka", ASK)
    second = bot.send("tanaka", "Tanaka")
    assert second.response_id == "slot_taken", second.text
    assert "Booked" not in second.text and "Tanaka" not in second.text
    assert second.text == (
        "Sorry, robot 2 is already booked on 2025-03-11 at 15:00. "
        "At what time? Maintenance runs between 08:00 and 18:00."
    )
    state = second.state
    assert state.goal_state.status == "active" and state.missing_slots == []
    assert state.tool_calls[-1].status == "refused"
    assert state.action_history[-1].detail["status"] == "refused"
    assert state.error is not None and state.error.type == "ActionRefused"
    # A bare time answers the question: the booking goes through at the new time.
    third = bot.send("tanaka", "4 pm")
    assert third.response_id == "booking_done", third.text
    assert "16:00" in third.text and "Tanaka" in third.text
    assert (
        third.state.goal_state.result["booking_id"] != first.state.goal_state.result["booking_id"]
    )
    assert third.state.error is None


def test_the_requester_who_holds_the_slot_books_it_again_idempotently() -> None:
    bot = Dialogue("robot_cell", clock=monday)
    bot.send("sato", ASK)
    first = bot.send("sato", "Sato")
    bot.send("sato", ASK)
    again = bot.send("sato", "Sato")
    assert again.response_id == "booking_done"
    assert again.state.goal_state.result == first.state.goal_state.result


def test_bookings_are_shared_by_processes_on_one_store(tmp_path: Path) -> None:
    # Two Dialogue objects on one store folder stand for two `flowkit chat` processes.
    one = Dialogue("robot_cell", store=JsonFileStore(tmp_path), clock=monday)
    one.send("a", ASK)
    assert one.send("a", "Sato").response_id == "booking_done"
    two = Dialogue("robot_cell", store=JsonFileStore(tmp_path), clock=monday)
    two.send("b", ASK)
    assert two.send("b", "Tanaka").response_id == "slot_taken"
    assert list((tmp_path / "ledger").iterdir())


def test_ledgers_claim_a_key_once(tmp_path: Path) -> None:
    for ledger in (MemoryLedger(), FileLedger(tmp_path / "l")):
        assert ledger.get("k") is None
        assert ledger.claim("k", {"by": "a"}) is None
        assert ledger.claim("k", {"by": "b"}) == {"by": "a"}
        assert ledger.get("k") == {"by": "a"}
    assert not [p for p in (tmp_path / "l").iterdir() if p.name.endswith(".tmp")]


def test_a_handler_without_a_ledger_gets_one_in_memory() -> None:
    call = ActionCall(action="a", goal="g")
    assert call.ledger.claim("x", {}) is None
