"""Forms and confirmations as a defect hunt found them wanting, one test per defect: a
refused optional value, a digression after declining a confirmation or after a refusal,
personal values of an earlier goal in the LLM's prompts, the year of an English date, an
event-only intent from the LLM, "yes, I want ..." after "anything else?", a YAML alias that
refers to itself, corrections naming the old value, and a booking ledger on PostgreSQL."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import structlog
import yaml
from _pg import fresh_schema, require_postgres

from flowkit.dialogue import Dialogue, FileLedger, load_domain
from flowkit.errors import DomainError, LLMTimeoutError
from flowkit.testing import ScriptedLLM

from .conftest import monday

TOOLS: dict[str, Any] = yaml.safe_load("""
name: tools
intents:
  borrow: {examples: {en: [I want to borrow a tool]}, keywords: {en: [borrow]}}
entities:
  tool: {kind: choice, values: {wrench: {en: [wrench]}}}
  quantity: {kind: number}
slots:
  tool: {entity: tool, question: {en: "Which tool?"}}
  quantity: {entity: quantity, required: false, question: {en: "How many?"}, validation: {max: 3}}
goals:
  borrow: {intent: borrow, mode: SLOT_FILLING, slots: [tool, quantity], action: lend, done: lent}
actions:
  lend: {}
responses:
  lent: {en: "Lent."}
""")


def test_a_refused_optional_value_is_asked_again_once_and_never_blocks() -> None:
    bot = Dialogue(TOOLS)
    again = bot.send("t", "I want to borrow 9 of them")
    assert again.response_id == "slot_invalid" and "at most 3" in again.text
    assert again.missing_slots[0] == "quantity" and "quantity" not in again.slots
    done = bot.send("t", "a wrench")  # not a quantity: the optional slot stays empty
    assert done.response_id == "lent" and done.state.goal_state.status != "active"
    other = Dialogue(TOOLS)
    other.send("u", "I want to borrow 9 of them")
    assert other.send("u", "2, a wrench").slots == {"tool": "wrench", "quantity": 2}


def test_an_event_with_a_refused_optional_value_leaves_the_conversation_going() -> None:
    bot = Dialogue("robot_cell", clock=monday)
    asked = bot.trigger("e1", "report_fault", {"faulty_machine": "robot 1", "priority": "meh"})
    assert asked.response_id == "slot_invalid" and asked.missing_slots[0] == "priority"
    answered = bot.send("e1", "urgent")
    assert answered.response_id == "confirm_goal" and answered.slots["priority"] == "urgent"


@pytest.mark.parametrize("digression", ["what is the maximum payload?", "hello"])
def test_after_a_no_a_digression_comes_back_to_what_to_change(digression: str) -> None:
    bot = Dialogue("robot_cell", clock=monday)
    bot.send("f", "robot 2 is broken")
    assert bot.send("f", "no").response_id == "confirm_declined"
    aside = bot.send("f", digression)
    assert "What would you like to change?" in aside.text  # asked again after the answer
    changed = bot.send("f", "robot 3")
    assert changed.response_id == "confirm_goal" and changed.slots["faulty_machine"] == "robot_3"
    other = Dialogue("robot_cell", clock=monday)
    other.send("g", "robot 2 is broken")
    other.send("g", "no")
    other.send("g", digression)
    assert other.send("g", "yes").response_id == "fault_reported"  # a later yes still confirms


def test_an_earlier_goals_personal_value_never_reaches_the_llms_prompt() -> None:
    def down(prompt: str) -> str:
        raise LLMTimeoutError("slow")  # understanding falls back offline; the prompts stay

    llm = ScriptedLLM([(lambda text: True, down)])
    bot = Dialogue("robot_cell", llm=llm, clock=monday)
    for text in ["book maintenance for robot 1 tomorrow at 10", "my name is Zebediah Quux",
                 "book maintenance for robot 2", "tomorrow"]:  # fmt: skip
        bot.send("z", text)
    prompts = [" ".join(m["content"] for m in call.messages) for call in llm.calls]
    assert len(prompts) >= 3 and "Conversation so far" in prompts[-1]
    assert not [p for p in prompts if "Zebediah" in p or "Quux" in p]


@pytest.mark.parametrize(
    ("said", "kept"),
    [
        ("March 14, 2025", "2025-03-14"),
        ("the 14th of March 2025", "2025-03-14"),
        ("14 March 2025", "2025-03-14"),
        ("March the fourteenth, 2025", "2025-03-14"),
        ("March 14", "2025-03-14"),
        ("March 14, 2026", None),  # the year said: past the 60 days bookings open ahead
        ("March 4th, 2025", None),  # the year said: in the past (not next year's 4 March)
    ],
)
def test_the_year_of_an_english_date_is_the_one_said(said: str, kept: str | None) -> None:
    bot = Dialogue("robot_cell", clock=monday)  # Monday 2025-03-10
    bot.send("d", "book maintenance for robot 2")
    assert bot.send("d", said).slots.get("date") == kept


def test_after_anything_else_a_yes_with_a_request_is_the_request() -> None:
    bot = Dialogue({**TOOLS, "anything_else": True})
    done = bot.send("a", "I want to borrow a wrench")
    assert done.response_id == "lent" and "anything else" in done.text.lower()
    asked = bot.send("a", "yes, I want to borrow a tool")
    assert asked.state.goal_state.goal == "borrow" and asked.text == "Which tool?"
    assert Dialogue({**TOOLS, "anything_else": True}).send("b", "yes").response_id != "lent"


@pytest.mark.parametrize("text", ["a: &a [*a]\n", "name: x\nintents: &e {a: *e}\n"])
def test_a_yaml_alias_that_refers_to_itself_is_a_problem_not_a_hang(
    tmp_path: Path, text: str
) -> None:
    path = tmp_path / "domain.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(DomainError):
        load_domain(path)


def test_typed_text_never_becomes_an_event_only_intent_even_through_the_llm() -> None:
    domain = yaml.safe_load("""
name: plants
intents:
  greet: {kind: small_talk, response: hi, keywords: {en: [hello]}}
  plant_dry: {external: true}
entities:
  plant: {kind: choice, values: {fern: {en: [fern]}}}
slots:
  plant: {entity: plant, question: {en: "Which plant?"}}
goals:
  dry: {intent: plant_dry, mode: SLOT_FILLING, slots: [plant], done: needs_water}
responses:
  needs_water: {en: "SENSOR: your {plant} is dry!"}
  hi: {en: Hi.}
""")
    said = {"intent": "plant_dry", "entities": [{"entity": "plant", "value": "fern"}],
            "commands": []}  # fmt: skip
    llm = ScriptedLLM([("Message: the fern is dry", said)])
    reply = Dialogue(domain, llm=llm).send("u", "the fern is dry")
    assert reply.intent_type == "OOS" and "SENSOR" not in reply.text
    assert "plant_dry" not in " ".join(m["content"] for m in llm.calls[0].messages)
    event = Dialogue(domain).trigger("v", "plant_dry", {"plant": "fern"})
    assert event.text == "SENSOR: your fern is dry!"  # the event itself still works


def test_a_digression_after_a_refusal_comes_back_to_the_slot_the_refusal_asked_for() -> None:
    bot = Dialogue("robot_cell", clock=monday)
    bot.send("a", "book maintenance for robot 1 tomorrow at 3 pm")
    bot.send("a", "Sato")  # takes 15:00
    bot.send("b", "book maintenance for robot 1 tomorrow at 3 pm")
    refused = bot.send("b", "Abe")
    assert "already booked" in refused.text and "At what time?" in refused.text
    aside = bot.send("b", "hello")
    assert aside.text.endswith(refused.text[refused.text.index("At what time?") :])
    assert "Who is requesting it?" not in aside.text
    assert bot.send("b", "4 pm").slots["time"] == "16:00"


@pytest.mark.parametrize(
    ("said", "slot", "value", "shown"),
    [
        ("change 10 am to 11 am", "time", "11:00", "11:00"),
        ("from 10 to 11 am please, actually", "time", "11:00", "11:00"),
        ("not robot 1, robot 2", "machine", "robot_2", "robot 2"),
    ],
)
def test_a_correction_naming_the_old_and_the_new_value_takes_the_new(
    said: str, slot: str, value: str, shown: str
) -> None:
    bot = Dialogue("robot_cell", clock=monday)
    bot.send("c", "book maintenance for robot 1 tomorrow at 10 am")
    reply = bot.send("c", said)
    assert reply.slots[slot] == value
    assert "Changed" not in reply.text or shown in reply.text  # never a change that did not


def test_a_correction_acknowledges_only_the_slot_it_changed() -> None:
    domain = yaml.safe_load("""
name: trains
intents:
  book: {examples: {en: [book a table]}, keywords: {en: [book]}}
entities:
  city: {kind: choice, values: {paris: {en: [Paris]}, lyon: {en: [Lyon]}},
         roles: {origin: {en: [from]}, destination: {en: [to]}}}
slots:
  from_city: {entity: city, role: origin, question: {en: "From where?"}}
  to_city: {entity: city, role: destination, question: {en: "To where?"}}
  outside: {entity: city, question: {en: "Outside?"}}
goals:
  book: {intent: book, mode: SLOT_FILLING, slots: [from_city, to_city, outside], done: booked}
responses:
  booked: {en: "Booked."}
""")
    bot = Dialogue(domain)
    first = bot.send("t", "book a table from Paris to Lyon")
    assert first.slots == {"from_city": "paris", "to_city": "lyon"}
    changed = bot.send("t", "actually from Lyon")
    assert changed.slots == {"from_city": "lyon", "to_city": "lyon"}
    assert "from city" in changed.text.lower() and "to city" not in changed.text.lower()


def test_two_processes_on_postgres_share_a_ledger_when_given_one(tmp_path: Path) -> None:
    """On a store with no folder the ledger was each Dialogue's own memory, silently: two
    operators (two Dialogue objects, as two processes) both booked the same slot."""
    require_postgres()
    from flowkit.stores.postgres import PostgresStore

    with fresh_schema() as (url, schema), structlog.testing.capture_logs() as logs:
        stores = [PostgresStore(url, schema=schema) for _ in range(2)]
        try:
            alone = Dialogue("robot_cell", store=stores[0], clock=monday)
            assert "dialogue_ledger_in_process" in [e["event"] for e in logs]
            shared = FileLedger(tmp_path / "ledger")
            bots = [Dialogue("robot_cell", store=s, clock=monday, ledger=shared) for s in stores]
            for bot, who in zip(bots, ["Sato", "Abe"], strict=True):
                bot.send(f"op-{who}", "book maintenance for robot 2 tomorrow at 3 pm")
            assert bots[0].send("op-Sato", "Sato").response_id == "booking_done"
            assert "already booked" in bots[1].send("op-Abe", "Abe").text
            del alone
        finally:
            for store in stores:
                store.close()


def test_a_step_by_step_goal_that_replaced_a_form_is_missing_no_slots() -> None:
    bot = Dialogue("robot_cell", clock=monday)
    assert bot.send("a", "book maintenance for robot 1").missing_slots
    switched = bot.send("a", "start the changeover")
    assert switched.dialogue_mode == "STEP_BY_STEP" and switched.missing_slots == []
