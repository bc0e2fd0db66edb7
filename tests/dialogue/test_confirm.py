"""Goal confirmation (``confirm: true``) and optional slots (``required: false``), end to end
with the offline recogniser: a filled goal asks before its action runs; yes runs it, a bare
no asks what to change, new values are confirmed again, anything else asks again; an
optional slot is kept when given, never asked for, and reaches the action only when given."""

from __future__ import annotations

import copy
import logging
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from flowkit.dialogue import ActionCall, ActionRefused, ActionResult, Dialogue, load_domain
from flowkit.dialogue.confirm import NO, YES, yes_no
from flowkit.dialogue.domain import example_path
from flowkit.errors import DomainError
from flowkit.testing import ScriptedLLM, capture_events

from .conftest import monday

ROBOT_CELL: dict[str, Any] = yaml.safe_load(
    (example_path("robot_cell") or pytest.fail("robot_cell is shipped")).read_text("utf-8")
)
BOOK = "book maintenance for robot 1 tomorrow at 10:00"


def _domain(**changes: Any) -> dict[str, Any]:
    """robot_cell with its maintenance booking confirmed first (and ``changes`` applied)."""
    data = copy.deepcopy(ROBOT_CELL)
    data["goals"]["book_maintenance"]["confirm"] = True
    for path, value in changes.items():
        *parents, last = path.split("__")
        here = data
        for key in parents:
            here = here[key]
        here[last] = value
    return data


@pytest.mark.parametrize(
    ("text", "answer"),
    [
        ("yes", "yes"),
        ("Yes!", "yes"),
        ("y", "yes"),
        ("OK", "yes"),
        ("okay, go ahead", "yes"),
        ("sure", "yes"),
        ("no problem", "yes"),
        ("ｙｅｓ", "yes"),
        ("はい", "yes"),
        ("はい、お願いします", "yes"),
        ("うん", "yes"),
        ("お願いします", "yes"),
        ("no", "no"),
        ("No, 3 pm", "no"),
        ("n", "no"),
        ("nope", "no"),
        ("not yet", "no"),
        ("いいえ", "no"),
        ("いや", "no"),
        ("やめて", "no"),
        ("違います", "no"),
        ("nothing", None),
        ("next", None),
        ("yesterday", None),
        ("okinawa", None),
        ("robot 2", None),
        ("hmm", None),
        ("", None),
        ("うーん", None),
    ],
)
def test_yes_no_recognises_english_and_japanese(text: str, answer: str | None) -> None:
    assert yes_no(text) == answer


@given(st.sampled_from(YES), st.sampled_from([", ", " ", "! ", "、", "。"]), st.text(max_size=20))
def test_a_yes_phrase_followed_by_anything_is_yes(phrase: str, sep: str, rest: str) -> None:
    assert yes_no(phrase + sep + rest) == "yes"


@given(st.sampled_from(NO))
def test_every_no_phrase_alone_is_no(phrase: str) -> None:
    assert yes_no(phrase) == "no"


@given(st.sampled_from(YES))
def test_every_yes_phrase_alone_is_yes(phrase: str) -> None:
    assert yes_no(phrase) == "yes"


def test_a_filled_goal_asks_first_and_yes_runs_the_action() -> None:
    bot = Dialogue(_domain(), clock=monday)
    bot.send("c", BOOK)
    asked = bot.send("c", "Sato")
    assert asked.response_id == "confirm_goal" and asked.next_action == "clarify"
    assert asked.text == (
        "Shall I go ahead with the maintenance booking (machine: robot 1, date: 2025-03-11, "
        "time: 10:00, requester: Sato)? (yes / no)"
    )
    assert bot.state("c").tool_calls == [], "nothing runs before the yes"
    assert bot.state("c").goal_state.status == "active"
    done = bot.send("c", "yes")
    assert done.intent_type == "affirm" and done.response_id == "booking_done"
    assert bot.state("c").goal_state.status == "completed"
    assert [call.name for call in bot.state("c").tool_calls] == ["book_maintenance"]


def test_anything_else_asks_again_and_a_bare_no_asks_what_to_change() -> None:
    bot = Dialogue(_domain(), clock=monday)
    for text in (BOOK, "Sato"):
        bot.send("c", text)
    again = bot.send("c", "hmm")
    assert (again.intent_type, again.response_id) == ("unclear", "confirm_repeat")
    assert again.text.startswith("Please answer yes or no: shall I go ahead")
    declined = bot.send("c", "no")
    assert (declined.intent_type, declined.response_id) == ("deny", "confirm_declined")
    assert bot.state("c").goal_state.status == "active" and bot.state("c").tool_calls == []
    changed = bot.send("c", "at 4 pm")
    assert changed.response_id == "confirm_goal" and changed.slots["time"] == "16:00"
    assert "time: 16:00" in changed.text
    assert bot.send("c", "yes").response_id == "booking_done"
    assert bot.state("c").tool_calls[-1].args["time"] == "16:00"


def test_no_with_a_new_value_changes_it_and_confirms_again() -> None:
    bot = Dialogue(_domain(), clock=monday)
    for text in (BOOK, "Sato"):
        bot.send("c", text)
    changed = bot.send("c", "no, 3 pm")
    assert changed.intent_type == "inform" and changed.response_id == "confirm_goal"
    assert changed.slots["time"] == "15:00" and bot.state("c").tool_calls == []


def test_a_question_in_between_is_answered_and_the_confirmation_asked_again() -> None:
    bot = Dialogue("robot_cell", clock=monday)
    bot.send("d", "robot 2 is broken")
    answered = bot.send("d", "what is the maximum payload?")
    assert answered.intent_type == "QUESTION" and "7 kg" in answered.text
    assert answered.text.endswith(
        "Back to the fault report: Shall I go ahead with the fault report (machine: robot 2)? "
        "(yes / no)"
    )
    assert bot.send("d", "thanks").text.endswith("(yes / no)")
    assert bot.send("d", "yes").response_id == "fault_reported", "still read as yes or no"


def test_cancel_during_confirmation_drops_the_goal() -> None:
    bot = Dialogue(_domain(), clock=monday)
    for text in (BOOK, "Sato"):
        bot.send("c", text)
    reply = bot.send("c", "cancel")
    assert reply.response_id == "goal_cancelled" and bot.state("c").tool_calls == []


def test_japanese_confirmation() -> None:
    bot = Dialogue(_domain(), clock=monday)
    bot.send("j", "明日10時にロボット1のメンテナンスを予約したい")
    asked = bot.send("j", "佐藤です")
    assert asked.response_id == "confirm_goal"
    assert asked.text.startswith("メンテナンス予約（設備：ロボット1、日付：2025-03-11")
    assert bot.send("j", "いいえ").response_id == "confirm_declined"
    assert bot.send("j", "11時で").response_id == "confirm_goal"
    assert bot.send("j", "はい").response_id == "booking_done"


def test_a_refusal_after_yes_asks_for_the_slot_then_confirms_the_new_value() -> None:
    def book(call: ActionCall) -> ActionResult:
        if call.slots["time"] == "10:00":
            raise ActionRefused("slot_taken", slot="time")
        return ActionResult(summary={"booking_id": "MB-1"})

    bot = Dialogue(_domain(), actions={"book_maintenance": book}, clock=monday)
    for text in (BOOK, "Sato"):
        bot.send("c", text)
    refused = bot.send("c", "yes")
    assert refused.response_id == "slot_taken" and refused.next_action == "clarify"
    again = bot.send("c", "11:00")
    assert again.response_id == "confirm_goal", "the new value is confirmed, not re-refused"
    assert bot.send("c", "yes").response_id == "booking_done"


def test_yes_and_no_never_reach_the_llm() -> None:
    offline = Dialogue(_domain(), clock=monday)  # to the question without an LLM
    for text in (BOOK, "Sato"):
        offline.send("o", text)
    llm = ScriptedLLM(default='{"intent": "OOS", "entities": [], "commands": []}')
    smart = Dialogue(_domain(), llm=llm, clock=monday, store=offline.runner.store)
    assert smart.send("o", "no").response_id == "confirm_declined"
    # What to change is understood by the model (this one understands nothing: asked again).
    assert smart.send("o", "at 4 pm").response_id == "confirm_repeat"
    calls = len(llm.calls)
    assert smart.send("o", "yes").response_id == "booking_done"
    assert len(llm.calls) == calls == 1, "only the change went to the model; yes and no did not"


def test_the_confirmation_keeps_personal_values_out_of_events_and_logs(
    caplog: pytest.LogCaptureFixture,
) -> None:
    bot = Dialogue(_domain(), clock=monday)
    with caplog.at_level(logging.DEBUG, logger="flowkit"), capture_events(bot.runner) as events:
        bot.send("c", BOOK)
        asked = bot.send("c", "Kobayashi")
    assert "Kobayashi" in asked.text, "the user sees their own request"
    assert bot.state("c").response_plan is not None
    assert "Kobayashi" not in repr(bot.state("c").response_plan), "the plan holds no value"
    assert "Kobayashi" not in caplog.text
    assert "Kobayashi" not in repr(list(events))


def _optional_domain() -> dict[str, Any]:
    data = _domain()
    data["goals"]["book_maintenance"]["confirm"] = False
    data["slots"]["time"]["required"] = False
    return data


def test_an_optional_slot_is_never_asked_and_never_blocks_the_goal() -> None:
    bot = Dialogue(_optional_domain(), clock=monday)
    first = bot.send("o", "book maintenance for robot 1 tomorrow")
    assert first.missing_slots == ["requester"], "time is optional: not missing"
    done = bot.send("o", "Sato")
    assert done.response_id == "booking_done"
    assert "time" not in bot.state("o").tool_calls[-1].args, "not given, not passed"


def test_an_optional_slot_given_is_kept_and_reaches_the_action() -> None:
    seen: list[dict[str, Any]] = []

    def book(call: ActionCall) -> ActionResult:
        seen.append(dict(call.slots))
        return ActionResult(summary={"booking_id": "MB-2"})

    bot = Dialogue(_optional_domain(), actions={"book_maintenance": book}, clock=monday)
    bot.send("o", "book maintenance for robot 1 tomorrow at 9 am")
    bot.send("o", "Sato")
    assert seen == [
        {"machine": "robot_1", "date": "2025-03-11", "time": "09:00", "requester": "Sato"}
    ]


def test_the_shipped_fault_report_confirms_and_passes_its_optional_priority() -> None:
    bot = Dialogue("robot_cell", clock=monday)
    assert bot.send("f", "robot 2 is broken").response_id == "confirm_goal"
    assert bot.send("f", "yes").response_id == "fault_reported"
    assert bot.state("f").tool_calls[-1].args == {"faulty_machine": "robot_2"}
    assert bot.state("f").tool_result == {
        "summary": {"report_id": bot.state("f").goal_state.result["report_id"]},
        "data": {"priority": "normal"},
    }


@pytest.mark.parametrize(
    ("changes", "problem"),
    [
        (
            {"goals__book_maintenance__action": None},
            "goals.book_maintenance.confirm: the goal has no action, so there is nothing to "
            "confirm; add `action:` or remove `confirm`",
        ),
        (
            {"goals__changeover__confirm": True},
            "goals.changeover.confirm: only SLOT_FILLING goals ask for confirmation; remove "
            "`confirm` or make the goal SLOT_FILLING",
        ),
        (
            {"intents__affirm": {"keywords": {"en": ["yes"], "ja": ["はい"]}}},
            "intents.affirm: `affirm` is reserved for task intents: IR reports `affirm` for a "
            'yes to a confirmation or a "continue?" question, and the goal would take it for '
            "that; rename it, or make it `kind: small_talk` (an answer outside a form)",
        ),
    ],
)
def test_check_refuses_confirmation_that_cannot_work(changes: dict[str, Any], problem: str) -> None:
    with pytest.raises(DomainError) as caught:
        load_domain(_domain(**changes))
    assert problem in caught.value.problems


def test_required_false_and_confirm_are_in_the_schema() -> None:
    from flowkit.dialogue import domain_json_schema

    defs = domain_json_schema()["$defs"]
    assert defs["SlotSpec"]["properties"]["required"]["default"] is True
    assert defs["GoalSpec"]["properties"]["confirm"]["default"] is False
