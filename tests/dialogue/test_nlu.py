"""Understanding: entities in English and Japanese, the offline recogniser's decisions, and
the LLM recogniser with its offline fallback."""

from __future__ import annotations

from datetime import date

import pytest

from flowkit.dialogue import Domain, LLMRecognizer, OfflineRecognizer, TurnContext
from flowkit.dialogue.entities import EntityExtractor, is_correction, kanji_number
from flowkit.errors import LLMTimeoutError, LLMUnavailableError
from flowkit.testing import ScriptedLLM

TODAY = date(2025, 3, 10)  # a Monday


def ctx(expects: str | None = None, lang: str = "en") -> TurnContext:
    return TurnContext(expects=expects, lang=lang, today=TODAY)


@pytest.fixture(scope="module")
def offline(domain: Domain) -> OfflineRecognizer:
    return OfflineRecognizer(domain)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("robot 2 tomorrow at 3 pm", {"machine": "robot_2", "date": "2025-03-11", "time": "15:00"}),
        ("R1 on 3/14 at 9:30am", {"machine": "robot_1", "date": "2025-03-14", "time": "09:30"}),
        (
            "the conveyor next monday at noon",
            {"machine": "conveyor", "date": "2025-03-17", "time": "12:00"},
        ),
        ("friday 14:45", {"date": "2025-03-14", "time": "14:45"}),
        ("march 2nd, 8 p.m.", {"date": "2026-03-02", "time": "20:00"}),
        ("in 3 days", {"date": "2025-03-13"}),
        ("2025-04-01", {"date": "2025-04-01"}),
        ("明日15時にロボット2", {"date": "2025-03-11", "time": "15:00", "machine": "robot_2"}),
        ("明後日の午後3時半", {"date": "2025-03-12", "time": "15:30"}),
        ("来週の水曜日、午前10時", {"date": "2025-03-19", "time": "10:00"}),
        (
            "3月20日 １６：００ ３号機",
            {"date": "2025-03-20", "time": "16:00", "machine": "robot_3"},
        ),
        ("今日の正午、コンベア", {"date": "2025-03-10", "time": "12:00", "machine": "conveyor"}),
        ("5日後", {"date": "2025-03-15"}),
        ("tomorrow at 9", {"date": "2025-03-11", "time": "09:00"}),
        ("robot 1 at 16", {"machine": "robot_1", "time": "16:00"}),
    ],
)
def test_entities_in_both_languages(domain: Domain, text: str, expected: dict[str, str]) -> None:
    found = EntityExtractor(domain).extract(text, TODAY)
    assert {f.entity: f.value for f in found} == expected


def test_impossible_dates_and_times_are_not_entities(domain: Domain) -> None:
    extractor = EntityExtractor(domain)
    assert extractor.extract("2/30 at 25:00", TODAY) == []


def test_kanji_numbers_and_correction_cues() -> None:
    assert [kanji_number(t) for t in ("三", "十五", "二十", "十", "x")] == [3, 15, 20, 10, None]
    assert is_correction("no, make it 3 pm") and is_correction("やっぱり15時で")
    assert not is_correction("book maintenance for robot 2")


@pytest.mark.parametrize(
    ("text", "intent"),
    [
        ("I'd like to book maintenance", "book_maintenance"),
        ("bok maintenence for robot 1 please", "book_maintenance"),
        ("メンテの予約をしたい", "book_maintenance"),
        ("walk me through the changeover", "changeover"),
        ("段取り替えの手順を教えて", "changeover"),
        ("how often do robots need servicing?", "QUESTION"),
        ("ロボットは何キロ持てる？", "QUESTION"),
        ("good morning", "SMALL_TALK"),
        ("ありがとう", "SMALL_TALK"),
        ("never mind", "cancel"),
        ("previous step please", "back"),
        ("what's the weather in Paris?", "OOS"),
        ("tell me a joke", "OOS"),
        ("ラーメン食べたい", "OOS"),
        ("Sato", "OOS"),
    ],
)
def test_offline_intents(offline: OfflineRecognizer, text: str, intent: str) -> None:
    assert offline.understand(text, ctx()).intent_type == intent


def test_an_answer_to_a_question_is_inform_with_the_slot(offline: OfflineRecognizer) -> None:
    name = offline.understand("My name is Sato", ctx(expects="requester"))
    assert name.intent_type == "inform"
    assert [(e.entity, e.value, e.slot) for e in name.entities] == [
        ("person_name", "Sato", "requester")
    ]
    ja = offline.understand("佐藤と申します", ctx(expects="requester", lang="ja"))
    assert [e.value for e in ja.entities] == ["佐藤"]
    hour = offline.understand("9", ctx(expects="time"))
    assert hour.intent_type == "inform" and hour.entities[0].value == "09:00"
    # A clear intent still wins over a pending question.
    assert offline.understand("cancel", ctx(expects="requester")).intent_type == "cancel"
    # Without a pending question a bare value is not understood.
    assert offline.understand("3 pm", ctx()).intent_type == "OOS"


def test_corrections_are_marked(offline: OfflineRecognizer) -> None:
    understood = offline.understand("no, make it 3 pm", ctx(expects="requester"))
    assert understood.intent_type == "inform"
    assert [(e.entity, e.value, e.correction) for e in understood.entities] == [
        ("time", "15:00", True)
    ]


def _answer(
    intent: str,
    entities: list[dict[str, object]] | None = None,
    commands: list[dict[str, object]] | None = None,
) -> dict[str, object]:
    return {"intent": intent, "entities": entities or [], "commands": commands or []}


def test_the_llm_recogniser_maps_intents_entities_and_commands(domain: Domain) -> None:
    llm = ScriptedLLM(
        [
            (
                "Message: service R2",
                _answer(
                    "book_maintenance",
                    [{"entity": "machine", "value": "robot_2"}, {"entity": "time", "value": "3pm"}],
                ),
            ),
            (
                "Message: actually 4",
                _answer(
                    "inform",
                    commands=[{"command": "correct_slot", "slot": "time", "value": "16:00"}],
                ),
            ),
            ("Message: drop it", _answer("OOS", commands=[{"command": "cancel"}])),
            ("Message: payload?", _answer("payload")),
            ("Message: hey", _answer("greet")),
            ("Message: gibberish", _answer("make_coffee")),
        ]
    )
    recognizer = LLMRecognizer(domain)
    first = recognizer.understand("service R2", ctx(), llm)
    assert first.source == "llm" and first.intent_type == "book_maintenance"
    assert {e.entity: e.value for e in first.entities} == {"machine": "robot_2", "time": "15:00"}
    fix = recognizer.understand("actually 4", ctx(expects="date"), llm)
    assert [(e.slot, e.value, e.correction) for e in fix.entities] == [("time", "16:00", True)]
    assert recognizer.understand("drop it", ctx(), llm).intent_type == "cancel"
    assert recognizer.understand("payload?", ctx(), llm).intent_type == "QUESTION"
    assert recognizer.understand("hey", ctx(), llm).intent_type == "SMALL_TALK"
    assert recognizer.understand("gibberish", ctx(), llm).intent_type == "OOS"
    system = llm.calls[0].messages[0]["content"]
    assert "book_maintenance (task)" in system and "payload:" in system


@pytest.mark.parametrize(
    "failure", [LLMTimeoutError("slow"), LLMUnavailableError("down"), "this is not JSON"]
)
def test_any_llm_failure_falls_back_to_offline(domain: Domain, failure: object) -> None:
    llm = ScriptedLLM(default=failure)  # type: ignore[arg-type]
    understood = LLMRecognizer(domain).understand("book maintenance for robot 3", ctx(), llm)
    assert understood.source == "offline" and understood.intent_type == "book_maintenance"


def test_without_an_llm_the_llm_recogniser_is_offline(domain: Domain) -> None:
    assert LLMRecognizer(domain).understand("hello", ctx(), None).source == "offline"
