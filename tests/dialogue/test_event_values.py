"""An external event's entity values go through the same rules as typed ones: a choice is
taken by any of its names and stored as its canonical value (so the ledger sees one slot
however the event spelled the machine), a value that is none of the choices, or a time that
is not a time, is refused with the reason, and a value of None was never given."""

from __future__ import annotations

from pathlib import Path

import pytest

from flowkit.dialogue import Dialogue
from flowkit.stores import JsonFileStore

from .conftest import monday

BOOKING = {"date": "2025-03-11", "time": "15:00", "requester": "Suzuki"}


@pytest.mark.parametrize("spelled", ["robot 2", "ROBOT 2", "r2", "ロボット2", "robot_2"])
def test_a_choice_named_by_any_synonym_is_the_same_machine(tmp_path: Path, spelled: str) -> None:
    bot = Dialogue("robot_cell", store=JsonFileStore(tmp_path), clock=monday)
    bot.send("typed", "Book maintenance for robot 2 tomorrow at 3 pm")
    assert bot.send("typed", "Sato").response_id == "booking_done"
    reply = bot.trigger("event", "book_maintenance", {"machine": spelled, **BOOKING})
    assert reply.response_id == "slot_taken", "robot 2 is booked once at 15:00, by Sato"
    assert bot.runner.get_state("typed").state.slots["machine"] == "robot_2"


def test_a_value_that_is_none_of_the_choices_is_refused_with_the_reason() -> None:
    bot = Dialogue("robot_cell", clock=monday)
    reply = bot.trigger("e", "book_maintenance", {"machine": "robot 99", **BOOKING})
    assert reply.response_id == "slot_invalid" and "machine" in reply.missing_slots
    assert "machine" not in bot.runner.get_state("e").state.slots


@pytest.mark.parametrize("time", ["99:99", "7:00", "noon-ish", "15:00:00"])
def test_a_time_that_is_not_hh_mm_is_refused(time: str) -> None:
    bot = Dialogue("robot_cell", clock=monday)
    given = {**BOOKING, "machine": "robot 1", "time": time}
    reply = bot.trigger("e", "book_maintenance", given)
    assert reply.response_id == "slot_invalid" and reply.missing_slots[0] == "time"


def test_an_entity_given_as_none_was_not_given() -> None:
    bot = Dialogue("robot_cell", clock=monday)
    reply = bot.trigger("e", "report_fault", {"faulty_machine": None})
    assert reply.response_id == "ask_slot" and reply.missing_slots == ["faulty_machine"]


def test_an_event_of_the_wrong_shape_is_a_typed_error_and_the_turn_never_runs() -> None:
    from flowkit.errors import DomainError, InvalidResumeInputError

    bot = Dialogue("robot_cell", clock=monday)
    with pytest.raises(DomainError):
        bot.trigger("e", ["report_fault"], {})  # type: ignore[arg-type]
    with pytest.raises(InvalidResumeInputError):
        bot.trigger("e", "report_fault", "faulty_machine=robot 2")  # type: ignore[arg-type]
    assert bot.runner.get_state("e").state.turn_id == 0
