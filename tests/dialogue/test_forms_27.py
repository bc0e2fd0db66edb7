"""Issue 27, forms that bend: a test per defect people met in Rasa's example bots and in
`flowkit chat` (corrections at a confirmation, yes after no, the new value after declining,
a first answer that starts with "no", contextual yes/no, "stop" -> "continue?", free text
that is a question)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from flowkit.dialogue import Dialogue, load_domain
from flowkit.dialogue.domain import example_path
from flowkit.dialogue.forms import is_stop, looks_like_question
from flowkit.errors import DomainError
from flowkit.testing import ScriptedLLM

from .conftest import monday
from .test_defects_27 import RESTAURANT

ROBOT_CELL: dict[str, Any] = yaml.safe_load(
    (example_path("robot_cell") or pytest.fail("robot_cell is shipped")).read_text("utf-8")
)
BOOK = "book maintenance for robot 1 tomorrow at 10:00"


def _confirmed() -> dict[str, Any]:
    """robot_cell with its maintenance booking confirmed before it runs."""
    data = copy.deepcopy(ROBOT_CELL)
    data["goals"]["book_maintenance"]["confirm"] = True
    return data


def _asked_to_confirm(bot: Dialogue, thread: str = "c") -> None:
    bot.send(thread, BOOK)
    assert bot.send(thread, "Sato").response_id == "confirm_goal"


def _restaurant(**goal: Any) -> dict[str, Any]:
    data = copy.deepcopy(RESTAURANT)
    data["goals"]["book_table"].update(action="book_table", **goal)
    data["actions"] = {"book_table": {}}
    return data


# 1. Corrections of any filled slot at any time, a confirmation included.


def test_wait_its_a_new_name_at_a_confirmation_is_a_correction_not_a_no() -> None:
    bot = Dialogue(_confirmed(), clock=monday)
    _asked_to_confirm(bot)
    changed = bot.send("c", "Wait, it's Jane Foo")
    assert (changed.intent_type, changed.response_id) == ("inform", "confirm_goal")
    assert changed.slots["requester"] == "Jane Foo" and "requester: Jane Foo" in changed.text
    assert bot.send("c", "yes").response_id == "booking_done"
    assert bot.state("c").tool_calls[-1].args["requester"] == "***", "still masked"


def test_a_correction_of_any_filled_slot_at_any_time() -> None:
    bot = Dialogue(_restaurant(), clock=monday)
    bot.send("t", "book a table for 2")
    bot.send("t", "yes")  # sit outside
    asked = bot.send("t", "actually make it 4 people")  # while "Any preferences?" waits
    assert asked.slots["people"] == 4 and asked.text.startswith("Changed people to 4.")
    assert asked.response_id == "ask_slot" and asked.missing_slots == ["preferences"]
    confirmed = Dialogue(_restaurant(confirm=True), clock=monday)
    for text in ("book a table for 2", "no", "window seat"):
        confirmed.send("t", text)
    changed = confirmed.send("t", "actually make it 4 people")
    assert changed.response_id == "confirm_goal" and changed.slots["people"] == 4


# 2. and 3. After a no: a yes confirms, and the new value is taken (offline and with an LLM).


def test_a_yes_after_a_no_confirms() -> None:
    bot = Dialogue(_confirmed(), clock=monday)
    _asked_to_confirm(bot)
    assert bot.send("c", "no").response_id == "confirm_declined"
    done = bot.send("c", "yes")
    assert (done.intent_type, done.response_id) == ("affirm", "booking_done")


def test_the_new_value_after_declining_is_taken() -> None:
    bot = Dialogue(_confirmed(), clock=monday)
    _asked_to_confirm(bot)
    bot.send("c", "no")
    changed = bot.send("c", "Jane Foo")
    assert changed.response_id == "confirm_goal" and changed.slots["requester"] == "Jane Foo"
    bot.send("c", "no")
    assert bot.send("c", "what is the maximum payload?").intent_type == "QUESTION"


def test_the_new_value_after_declining_reaches_the_llm_recognizer() -> None:
    llm = ScriptedLLM(
        [
            (
                "Message: make it 4 pm",
                '{"intent": "inform", "entities": [], "commands": '
                '[{"command": "correct_slot", "slot": "time", "value": "16:00"}]}',
            )
        ],
        default='{"intent": "OOS", "entities": [], "commands": []}',
    )
    offline = Dialogue(_confirmed(), clock=monday)
    _asked_to_confirm(offline)
    smart = Dialogue(_confirmed(), llm=llm, clock=monday, store=offline.runner.store)
    assert smart.send("c", "no").response_id == "confirm_declined"
    changed = smart.send("c", "make it 4 pm")
    assert changed.response_id == "confirm_goal" and changed.slots["time"] == "16:00"
    smart.send("c", "no")
    # The model understands nothing of a bare name: the free-text slot takes it.
    renamed = smart.send("c", "Jane Foo")
    assert renamed.response_id == "confirm_goal" and renamed.slots["requester"] == "Jane Foo"
    assert [c for c in llm.calls if "Message: Jane Foo" in str(c)], "the message reached it"


# 4. A first answer that starts with "no" is not a change.


def test_a_first_answer_starting_with_no_is_not_announced_as_a_change() -> None:
    plain = copy.deepcopy(RESTAURANT)
    plain["goals"]["book_table"]["slots"] = ["people", "preferences", "outdoor"]
    mapped = copy.deepcopy(plain)
    del plain["slots"]["preferences"]["from_intent"]
    bot = Dialogue(plain, clock=monday)
    assert bot.send("t", "book a table for four").text == "Any preferences?"
    asked = bot.send("t", "no thanks")
    assert asked.slots["preferences"] == "no thanks"
    assert asked.text == "Do you want to sit outside?", "a first fill is not a change"
    bot = Dialogue(mapped, clock=monday)
    bot.send("t", "book a table for four")
    asked = bot.send("t", "no thanks")
    assert asked.slots["preferences"] == "no additional preferences"
    assert asked.text == "Do you want to sit outside?"
    changed = bot.send("t", "actually make it 6")
    assert changed.text.startswith("Changed people to 6."), "a real change still is one"


# 5. What "yes" means depends on the question asked.


def test_yes_means_what_the_question_asked() -> None:
    bot = Dialogue(_restaurant(confirm=True), clock=monday)
    bot.send("t", "book a table for 2")
    assert bot.send("t", "stop").response_id == "continue_goal"
    resumed = bot.send("t", "yes")  # "continue?": continues
    assert resumed.response_id == "ask_slot" and resumed.text == "Do you want to sit outside?"
    filled = bot.send("t", "yes")  # a yes/no slot question: fills the slot
    assert filled.slots["outdoor"] is True and filled.text == "Any preferences?"
    assert bot.send("t", "no").response_id == "confirm_goal"
    done = bot.send("t", "yes")  # a confirmation: confirms
    assert done.response_id == "goal_done" and bot.state("t").goal_state.status == "completed"


# 6. Interruption: "stop" -> "Do you want to continue?"; cancel drops at once; digressions.


def test_stop_asks_to_continue_and_yes_resumes_where_it_was() -> None:
    bot = Dialogue("robot_cell", clock=monday)
    bot.send("s", "book maintenance for robot 1")
    paused = bot.send("s", "stop")
    assert paused.text == "Do you want to continue with the maintenance booking? (yes / no)"
    assert bot.state("s").goal_state.paused and paused.slots == {"machine": "robot_1"}
    again = bot.send("s", "hmm")
    assert again.response_id == "continue_repeat"
    answered = bot.send("s", "what is the maximum payload?")
    assert "7 kg" in answered.text and answered.text.endswith("(yes / no)")
    resumed = bot.send("s", "yes")
    assert resumed.text == "For which day?" and not bot.state("s").goal_state.paused
    assert bot.send("s", "tomorrow").slots == {"machine": "robot_1", "date": "2025-03-11"}


def test_stop_then_no_drops_the_goal_and_says_so() -> None:
    bot = Dialogue("robot_cell", clock=monday)
    bot.send("s", "book maintenance for robot 1")
    bot.send("s", "hold on")
    dropped = bot.send("s", "no")
    assert dropped.text == "OK, I cancelled the maintenance booking."
    assert bot.state("s").goal_state.status == "cancelled"


def test_stop_in_japanese_and_at_a_confirmation() -> None:
    bot = Dialogue("robot_cell", clock=monday)
    bot.send("j", "ロボット1のメンテナンスを予約したい")
    assert bot.send("j", "ストップ").text == "メンテナンス予約を続けますか？（はい／いいえ）"
    assert bot.send("j", "はい").response_id == "ask_slot"
    confirmed = Dialogue(_confirmed(), clock=monday)
    _asked_to_confirm(confirmed)
    assert confirmed.send("c", "stop").response_id == "continue_goal"
    assert confirmed.send("c", "yes").response_id == "confirm_goal", "not run by the yes"
    assert confirmed.state("c").tool_calls == []


def test_stop_during_a_procedure_resumes_at_the_same_step() -> None:
    bot = Dialogue("robot_cell", clock=monday)
    bot.send("p", "start the changeover")
    step = bot.send("p", "next").text
    assert bot.send("p", "stop").response_id == "continue_goal"
    assert bot.send("p", "yes").text == step


def test_cancel_still_drops_at_once_and_a_digression_asks_the_slot_again() -> None:
    bot = Dialogue("robot_cell", clock=monday)
    bot.send("s", "book maintenance for robot 1")
    answered = bot.send("s", "what is the maximum payload?")
    assert answered.text.endswith("Back to the maintenance booking: For which day?")
    assert bot.send("s", "cancel").response_id == "goal_cancelled"


# 7. Free text fills the slot being asked, never with a question or another intent.

CONTACTS: dict[str, Any] = {
    "name": "contacts",
    "intents": {
        "add_contact": {
            "examples": {"en": ["add a contact", "I want to add someone to my contacts"]},
            "keywords": {"en": ["add contact", "new contact"]},
        },
        "greet": {"kind": "small_talk", "response": "hi", "examples": {"en": ["hello"]}},
    },
    "faq": {
        "list_contacts": {
            "questions": {"en": ["what contacts do I have", "list my contacts"]},
            "answer": {"en": "You have 3 contacts."},
        }
    },
    "entities": {"name": {"kind": "text", "strip": {"en": ["it's", "the name is"]}}},
    "slots": {"contact": {"entity": "name", "question": {"en": "What is their name?"}}},
    "goals": {
        "add_contact": {"intent": "add_contact", "mode": "SLOT_FILLING", "slots": ["contact"]}
    },
    "responses": {"hi": {"en": "Hello!"}},
}


@pytest.mark.parametrize(
    ("text", "answer"),
    [
        ("hmm what contacts do I have again?", "You have 3 contacts."),
        ("who did I add yesterday?", "I do not have an answer to that question yet."),
        ("hello", "Hello!"),
    ],
)
def test_free_text_is_not_taken_from_a_question_or_another_intent(text: str, answer: str) -> None:
    bot = Dialogue(CONTACTS, clock=monday)
    bot.send("f", "add a contact")
    reply = bot.send("f", text)
    assert reply.slots == {}, "the question is not the contact's name"
    assert reply.text == f"{answer} Back to add contact: What is their name?"
    assert bot.send("f", "it's Jane Foo").slots == {"contact": "Jane Foo"}


@pytest.mark.parametrize(
    ("text", "stop"),
    [("stop", True), ("Stop please", True), ("hold on", True), ("ストップ", True),
     ("stop the conveyor", False), ("stopwatch", False), ("no", False)],
)  # fmt: skip
def test_is_stop(text: str, stop: bool) -> None:
    assert is_stop(text) is stop


@pytest.mark.parametrize(
    ("text", "question"),
    [("what contacts do I have?", True), ("hmm, who is it", True), ("何件ありますか", True),
     ("Jane Foo", False), ("Whitney Houston", False), ("佐藤です", False)],
)  # fmt: skip
def test_looks_like_question(text: str, question: bool) -> None:
    assert looks_like_question(text) is question


# Per-slot validation messages, falling back to the domain's.


def test_a_slot_words_its_own_refusal_and_falls_back_to_the_domain() -> None:
    data = copy.deepcopy(ROBOT_CELL)
    data["slots"]["time"]["validation"]["messages"] = {
        "earliest": {"en": "The workshop opens at {earliest}; that {label} is too early."}
    }
    data["responses"]["reason_latest"] = {"en": "We close at {latest}.", "ja": "{latest}閉店。"}
    bot = Dialogue(data, clock=monday)
    early = bot.send("v", "book maintenance for robot 1 tomorrow at 7 am")
    assert early.text.startswith("The workshop opens at 08:00; that time is too early. At")
    assert bot.send("v", "at 7 pm").text.startswith("We close at 18:00. At what time?")
    ja = bot.send("w", "明日7時にロボット1のメンテナンスを予約したい")
    assert ja.text.startswith("08:00以降の時刻を指定してください。"), "no Japanese: built-in"
    data["slots"]["date"]["validation"]["messages"] = {"earliest": {"en": "?"}}
    with pytest.raises(DomainError) as caught:
        load_domain(data)
    assert caught.value.problems == [
        "slots.date.validation.messages.earliest: the slot has no `earliest` rule; name one "
        "of its rules (max_days_ahead, not_past)"
    ]
