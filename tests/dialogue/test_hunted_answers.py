"""Answers to a slot question as a defect hunt found them misread: a name holding a date, a
time or a number ("Joe Friday", "Louis 14") taken as a change of those slots, a bare value
for a filled slot replacing it unannounced, and a bare hour to a time question read as a
number of people."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from flowkit.dialogue import Dialogue, load_domain

from .conftest import monday

LOAN: dict[str, Any] = yaml.safe_load("""
name: loan
intents:
  borrow: {examples: {en: [I want to borrow a tool]}, keywords: {en: [borrow]}}
entities:
  tool:
    kind: choice
    values: {torque_wrench: {en: [torque wrench, wrench]}, multimeter: {en: [multimeter]}}
  quantity: {kind: number}
  person: {kind: text, strip: {en: [my name is]}}
  note: {kind: text}
  hour: {kind: time}
slots:
  tool: {entity: tool, question: {en: "Which tool?"}}
  quantity: {entity: quantity, question: {en: "How many?"}, validation: {max: 12}}
  borrower: {entity: person, question: {en: "Who is borrowing it?"}}
  at: {entity: hour, question: {en: "At what time?"}}
  note: {entity: note, question: {en: "Any notes?"}}
goals:
  borrow:
    intent: borrow
    mode: SLOT_FILLING
    slots: [tool, quantity, borrower, at, note]
    action: lend
    done: lent
actions:
  lend: {}
responses:
  lent: {en: "Lent."}
""")


@pytest.fixture
def bot() -> Dialogue:
    return Dialogue(load_domain(LOAN), clock=monday)


def test_a_name_holding_a_weekday_or_an_hour_is_the_name_asked_for() -> None:
    bot = Dialogue("robot_cell", clock=monday)
    asked = bot.send("n", "Book maintenance for robot 2 tomorrow at 3 pm")
    assert asked.missing_slots == ["requester"]

    reply = bot.send("n", "Joe Friday")

    assert reply.slots["requester"] == "Joe Friday"
    assert (reply.slots["date"], reply.slots["time"]) == (asked.slots["date"], "15:00")


@pytest.mark.parametrize(
    ("asked", "said"),
    [("borrower", "Louis 14"), ("note", "needs 1 spare battery"), ("borrower", "my name is June")],
)
def test_free_text_with_words_beside_a_number_fills_the_text_slot(
    bot: Dialogue, asked: str, said: str
) -> None:
    bot.send("t", "I want to borrow a torque wrench")
    reply = bot.send("t", "3")
    if asked == "note":
        bot.send("t", "Ann")
        reply = bot.send("t", "at 10")
    assert reply.missing_slots[0] == asked

    reply = bot.send("t", said)

    assert reply.slots["quantity"] == 3
    assert reply.slots[asked] == said.removeprefix("my name is ")
    assert "Changed" not in reply.text


@pytest.mark.parametrize(
    ("said", "slot", "shown"), [("5", "quantity", "5"), ("the multimeter", "tool", "multimeter")]
)
def test_a_bare_value_for_a_filled_slot_changes_it_and_says_so(
    bot: Dialogue, said: str, slot: str, shown: str
) -> None:
    bot.send("c", "I want to borrow a torque wrench")
    before = bot.send("c", "3")
    assert before.missing_slots[0] == "borrower"

    reply = bot.send("c", said)

    assert reply.slots[slot] != before.slots[slot]
    assert f"Changed {slot} to {shown}." in reply.text
    assert reply.missing_slots[0] == "borrower"  # and the question is asked again


def test_a_first_answer_is_not_announced_as_a_change(bot: Dialogue) -> None:
    bot.send("f", "I want to borrow a torque wrench")
    reply = bot.send("f", "2")
    assert reply.slots["quantity"] == 2 and "Changed" not in reply.text


def test_a_bare_hour_answers_the_time_question_not_the_number_slot(bot: Dialogue) -> None:
    bot.send("h", "I want to borrow a torque wrench")
    bot.send("h", "3")
    asked = bot.send("h", "Ann")
    assert asked.missing_slots[0] == "at", asked.text

    reply = bot.send("h", "5")

    assert reply.slots["at"] == "05:00"
    assert reply.slots["quantity"] == 3


TABLE: dict[str, Any] = yaml.safe_load("""
name: table
intents:
  book: {examples: {en: [book a table]}, keywords: {en: [book]}}
entities:
  dish: {kind: choice, values: {taco: {en: [taco]}, dumpling: {en: [dumpling]}}}
  hour: {kind: time}
slots:
  dish: {entity: dish, question: {en: "Which dish?"}}
  at: {entity: hour, question: {en: "At what time?"}}
  outside:
    from_intent: {affirm: true, deny: false}
    question: {en: "Do you want to sit outside?"}
goals:
  book:
    intent: book
    mode: SLOT_FILLING
    slots: [dish, at, outside]
    action: reserve
    confirm: true
    done: booked
actions:
  reserve: {}
responses:
  booked: {en: "Booked."}
""")


def test_a_yes_or_no_slot_is_shown_as_yes_or_no_at_the_confirmation() -> None:
    bot = Dialogue(load_domain(TABLE), clock=monday)
    bot.send("y", "book a table, tacos at 19:00")
    reply = bot.send("y", "yes")
    assert "outside: yes" in reply.text and "True" not in reply.text


@pytest.mark.parametrize(
    ("said", "dish"), [("book 2 tacos", "taco"), ("book some dumplings at 8 pm", "dumpling")]
)
def test_a_plural_names_the_same_choice(said: str, dish: str) -> None:
    reply = Dialogue(load_domain(TABLE), clock=monday).send("p", said)
    assert reply.slots["dish"] == dish


@pytest.mark.parametrize(
    ("said", "at"),
    [
        ("book a table tonight at 8", "20:00"),
        ("book a table at 7 this evening", "19:00"),
        ("book a table at 3 in the afternoon", "15:00"),
        ("book a table at 9 tomorrow morning", "09:00"),
        ("book a table tonight at 8 am", "08:00"),
    ],
)
def test_an_hour_said_with_evening_words_is_after_noon(said: str, at: str) -> None:
    reply = Dialogue(load_domain(TABLE), clock=monday).send("e", said)
    assert reply.slots["at"] == at


def _confirming(domain: dict[str, Any], thread: str) -> Dialogue:
    bot = Dialogue(load_domain(domain), clock=monday)
    bot.send(thread, "book a table, tacos at 19:00")
    assert bot.send(thread, "yes").response_id == "confirm_goal"
    return bot


@pytest.mark.parametrize(
    ("said", "answer"),
    [
        ("indeed", "booked"),
        ("that sounds good", "booked"),
        ("I don't think so", "confirm_declined"),
        ("not really", "confirm_declined"),
    ],
)
def test_common_yes_and_no_phrases_answer_a_confirmation(said: str, answer: str) -> None:
    bot = _confirming(TABLE, "c")
    assert bot.send("c", said).response_id == answer


@pytest.mark.parametrize(("said", "answer"), [("aye", "booked"), ("nay", "confirm_declined")])
def test_the_domains_own_affirm_and_deny_intents_answer_a_confirmation(
    said: str, answer: str
) -> None:
    domain = {
        **TABLE,
        "intents": {
            **TABLE["intents"],
            "affirm": {"kind": "small_talk", "response": "booked", "examples": {"en": ["aye"]}},
            "deny": {"kind": "small_talk", "response": "booked", "examples": {"en": ["nay"]}},
        },
    }
    bot = _confirming(domain, "c")
    assert bot.send("c", said).response_id == answer


HOTEL: dict[str, Any] = yaml.safe_load("""
name: hotel
intents:
  book_room: {examples: {en: [book a room]}, keywords: {en: [room]}}
entities:
  count: {kind: number}
slots:
  adults: {entity: count, question: {en: "How many adults?"}}
  children: {entity: count, question: {en: "How many children?"}}
  nights: {entity: count, question: {en: "How many nights?"}}
goals:
  book_room:
    intent: book_room
    mode: SLOT_FILLING
    slots: [adults, children, nights]
    action: book
actions:
  book: {}
""")


@pytest.mark.parametrize(
    ("said", "slots"),
    [
        ("book a room for 3 nights for 2 adults", {"nights": 3, "adults": 2}),
        ("book a room for 2 adults and 1 child", {"adults": 2, "children": 1}),
        ("book a room for 2", {"adults": 2}),
    ],
)
def test_the_word_after_a_number_says_which_slot_it_fills(said: str, slots: dict[str, int]) -> None:
    reply = Dialogue(load_domain(HOTEL), clock=monday).send("h", said)
    assert reply.slots == slots


def test_a_number_with_its_unit_changes_that_slot_when_another_is_asked() -> None:
    bot = Dialogue(load_domain(HOTEL), clock=monday)
    bot.send("h", "book a room for 2 adults")
    asked = bot.send("h", "0")
    assert asked.missing_slots == ["nights"]
    reply = bot.send("h", "3 children")
    assert reply.slots == {"adults": 2, "children": 3}
    assert "Changed children to 3." in reply.text


def test_a_whole_number_rule_refuses_a_fraction_with_its_reason() -> None:
    domain = {
        **HOTEL,
        "slots": {
            **HOTEL["slots"],
            "adults": {
                "entity": "count",
                "question": {"en": "How many adults?"},
                "validation": {"whole": True},
            },
        },
    }
    bot = Dialogue(load_domain(domain), clock=monday)
    reply = bot.send("w", "book a room for 2.5 adults")
    assert "adults" not in reply.slots
    assert reply.text == "adults must be a whole number. How many adults?"
    assert bot.send("w", "2").slots == {"adults": 2}
