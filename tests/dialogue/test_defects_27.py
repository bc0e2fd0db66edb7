"""Issue 27's understanding defects, one test each: what Rasa's example bots and people in
`flowkit chat` met (typo tolerance merging antonyms, keywords that are entity values, number
words, two slots on one entity, the reply language, raw goal ids, YAML booleans)."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from flowkit.cli import main
from flowkit.dialogue import Dialogue, OfflineRecognizer, TurnContext, load_domain
from flowkit.dialogue.entities import EntityExtractor
from flowkit.errors import DomainError

from .conftest import monday

TODAY = date(2025, 3, 10)

#: Rasa's moodbot (the `rasa init` bot), its NLU examples as they ship.
MOODBOT: dict[str, Any] = {
    "name": "moodbot",
    "intents": {
        "greet": {
            "kind": "small_talk",
            "response": "utter_greet",
            "examples": {"en": ["hey", "hello", "hi", "hello there", "good morning"]},
        },
        "mood_great": {
            "kind": "small_talk",
            "response": "utter_happy",
            "examples": {
                "en": [
                    "perfect",
                    "great",
                    "amazing",
                    "feeling like a king",
                    "wonderful",
                    "I am feeling very good",
                    "I am great",
                    "I am amazing",
                    "super stoked",
                    "extremely good",
                    "so perfect",
                ]
            },
        },
        "mood_unhappy": {
            "kind": "small_talk",
            "response": "utter_cheer_up",
            "examples": {
                "en": [
                    "my day was horrible",
                    "I am sad",
                    "I don't feel very well",
                    "I am disappointed",
                    "super sad",
                    "I'm so sad",
                    "sad",
                    "very sad",
                    "unhappy",
                    "not good",
                    "terrible",
                ]
            },
            "keywords": {"en": ["horrible", "awful"]},
        },
        "bot_challenge": {
            "kind": "small_talk",
            "response": "utter_iamabot",
            "examples": {
                "en": [
                    "are you a bot?",
                    "are you a human?",
                    "am I talking to a bot?",
                    "am I talking to a human?",
                ]
            },
        },
    },
    "responses": {
        "utter_greet": {"en": "Hey! How are you?"},
        "utter_happy": {"en": "Great, carry on!"},
        "utter_cheer_up": {"en": "Here is something to cheer you up."},
        "utter_iamabot": {"en": "I am a bot, powered by flowkit."},
    },
}

#: A flight booking in English and Japanese: two slots on one entity told apart by roles, a
#: number and an amount, a goal without a title.
FLIGHTS: dict[str, Any] = {
    "name": "flights",
    "languages": ["en", "ja"],
    "intents": {
        "book_flight": {
            "examples": {"en": ["I want to fly", "book a flight"], "ja": ["飛行機を予約したい"]},
            "keywords": {"en": ["fly", "flight"], "ja": ["飛行機", "フライト"]},
        },
        "search_hotels": {
            "examples": {"en": ["find me a place to stay"], "ja": ["泊まる所を探して"]},
            "keywords": {"en": ["hotels", "stay"], "ja": ["ホテル"]},
        },
        "cancel": {
            "kind": "control",
            "examples": {"en": ["cancel"], "ja": ["キャンセル"]},
            "keywords": {"en": ["cancel"], "ja": ["キャンセル"]},
        },
    },
    "entities": {
        "city": {
            "kind": "choice",
            "values": {
                "paris": {"en": ["Paris"], "ja": ["パリ"]},
                "berlin": {"en": ["Berlin"], "ja": ["ベルリン"]},
                "tokyo": {"en": ["Tokyo"], "ja": ["東京"]},
            },
        },
        "place": {
            "kind": "choice",
            "values": {"hotel": {"en": ["hotels", "hotel"], "ja": ["ホテル"]}},
        },
        "count": {"kind": "number"},
        "money": {"kind": "amount"},
    },
    "slots": {
        "origin": {
            "entity": "city",
            "role": "origin",
            "question": {"en": "From where?", "ja": "出発地は？"},
        },
        "destination": {
            "entity": "city",
            "role": "destination",
            "question": {"en": "Where to?", "ja": "行き先は？"},
        },
        "passengers": {
            "entity": "count",
            "question": {"en": "How many passengers?", "ja": "何名ですか？"},
        },
        "budget": {"entity": "money", "question": {"en": "Your budget?", "ja": "ご予算は？"}},
        "kind": {"entity": "place", "question": {"en": "What kind?", "ja": "種類は？"}},
    },
    "goals": {
        "book_flight": {
            "intent": "book_flight",
            "mode": "SLOT_FILLING",
            "slots": ["origin", "destination", "passengers", "budget"],
        },
        "search_hotels": {"intent": "search_hotels", "mode": "SLOT_FILLING", "slots": ["kind"]},
    },
}


def _ctx(lang: str = "en") -> TurnContext:
    return TurnContext(expects=None, lang=lang, today=TODAY)


@pytest.fixture(scope="module")
def moodbot() -> OfflineRecognizer:
    return OfflineRecognizer(load_domain(MOODBOT))


@pytest.fixture(scope="module")
def flights() -> OfflineRecognizer:
    return OfflineRecognizer(load_domain(FLIGHTS))


def _scores(recognizer: OfflineRecognizer, text: str) -> dict[str, float]:
    return {name: score for score, _, name in recognizer.scores(text)}


# 1. The offline recogniser.


def test_typo_tolerance_never_merges_antonyms_or_known_words(moodbot: OfflineRecognizer) -> None:
    # "happy" is one letter off "unhappy": a negation prefix, not a typo.
    assert _scores(moodbot, "happy")["mood_unhappy"] < 0.6
    assert _scores(moodbot, "I am happy")["mood_unhappy"] < 0.6
    # Real typos are still tolerated.
    assert moodbot.understand("I am so saad", _ctx()).match == "mood_unhappy"


def test_a_grammar_variant_of_an_example_matches(moodbot: OfflineRecognizer) -> None:
    understood = moodbot.understand("are you a AI", _ctx())
    assert (understood.intent_type, understood.match) == ("SMALL_TALK", "bot_challenge")
    assert moodbot.understand("are you an AI?", _ctx()).match == "bot_challenge"


def test_intensifiers_do_not_lower_a_match(moodbot: OfflineRecognizer) -> None:
    assert _scores(moodbot, "very terrible")["mood_unhappy"] == 1.0
    assert _scores(moodbot, "really awful")["mood_unhappy"] >= 0.8
    assert moodbot.understand("very terrible", _ctx()).match == "mood_unhappy"


# 2. Keywords that are entity values.


def test_check_warns_about_keywords_that_are_entity_values(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("flights.json").write_text(json.dumps(FLIGHTS), encoding="utf-8")
    assert main(["dialogue", "check", "flights.json"]) == 0
    out = capsys.readouterr().out
    assert "intents.search_hotels.keywords" in out
    assert "`hotels`" in out and "entity `place`" in out
    assert main(["dialogue", "check", "flights.json", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["ok"] and data["warnings"][0]["where"] == "intents.search_hotels.keywords"


def test_a_keyword_that_is_an_entity_value_still_fires(flights: OfflineRecognizer) -> None:
    understood = flights.understand("show me hotels", _ctx())
    assert understood.intent_type == "search_hotels"
    assert [(e.entity, e.value) for e in understood.entities] == [("place", "hotel")]
    assert flights.understand("ホテルを探して", _ctx("ja")).intent_type == "search_hotels"


# 3. Numbers and amounts.


@pytest.mark.parametrize(
    ("text", "entity", "value"),
    [
        ("three", "count", 3),
        ("twenty-one passengers", "count", 21),
        ("one hundred and five", "count", 105),
        ("三つ", "count", 3),
        ("二十一", "count", 21),
        ("２１人", "count", 21),
        ("fifty dollars", "money", 50),
        ("$1,200", "money", 1200),
        ("五十ドル", "money", 50),
        ("３０００円", "money", 3000),
    ],
)
def test_numbers_in_words_and_digits(
    flights: OfflineRecognizer, text: str, entity: str, value: int
) -> None:
    found = EntityExtractor(flights.domain).extract(text, TODAY)
    assert [(f.entity, f.value) for f in found if f.entity == entity] == [(entity, value)]


def test_a_number_word_answers_a_number_question() -> None:
    bot = Dialogue(FLIGHTS, clock=monday)
    bot.send("n", "I want to fly from Paris to Berlin")
    assert bot.send("n", "three").slots["passengers"] == 3
    assert bot.send("n", "fifty dollars").slots["budget"] == 50


# 4. Two slots on one entity.


@pytest.mark.parametrize(
    "text",
    [
        "fly to Paris from Berlin",
        "fly from Berlin to Paris",
        "ベルリンからパリまで飛行機を予約したい",
        "パリへ、ベルリンから飛行機で",
    ],
)
def test_roles_tell_two_slots_of_one_entity_apart(text: str) -> None:
    reply = Dialogue(FLIGHTS, clock=monday).send("r", text)
    assert (reply.slots["origin"], reply.slots["destination"]) == ("berlin", "paris")


def test_an_answer_without_a_role_fills_the_slot_asked_for() -> None:
    bot = Dialogue(FLIGHTS, clock=monday)
    bot.send("a", "I want to fly to Paris")
    assert bot.send("a", "Berlin").slots == {"destination": "paris", "origin": "berlin"}


# 5. The reply language.


def test_a_language_neutral_reply_keeps_the_session_language() -> None:
    bot = Dialogue("robot_cell", clock=monday)
    bot.send("j", "ロボット2のメンテナンスを予約したい")
    reply = bot.send("j", "3/14")
    assert reply.slots["date"] == "2025-03-14"
    assert reply.text == "何時にしますか？（8:00〜18:00）"
    assert bot.send("j", "15:00").text == "ご依頼者のお名前を教えてください。"
    assert bot.send("j", "Sato").text.startswith("2025-03-14 15:00にロボット2のメンテナンスを予約")
    bot.send("j", "ロボット2のメンテナンスを予約したい")
    # A turn in English words switches, as before.
    assert bot.send("j", "what is the maximum payload?").text.startswith("The robots")


# 6. Goal names and missing slots.


def test_a_goal_without_a_title_is_named_readably_and_cancelled_slots_are_not_missing() -> None:
    bot = Dialogue(FLIGHTS, clock=monday)
    assert bot.send("g", "fly from Paris to Tokyo").missing_slots == ["passengers", "budget"]
    cancelled = bot.send("g", "cancel")
    assert cancelled.text == "OK, I cancelled book flight."
    assert cancelled.missing_slots == []
    bot.send("g", "fly from Paris to Tokyo")
    bot.send("g", "2")
    assert bot.send("g", "500 dollars").text == "Book flight: done."


# 7. YAML booleans.


def test_unquoted_yes_and_no_in_yaml_say_what_to_write(tmp_path: Path) -> None:
    path = tmp_path / "yesno.yaml"
    path.write_text(
        "name: yesno\n"
        "intents:\n"
        "  agree:\n"
        "    kind: small_talk\n"
        "    response: ok\n"
        "    keywords: {en: [yes, sure]}\n"
        "    examples: {en: [no problem, 'off']}\n"
        "entities:\n"
        "  answer: {kind: choice, values: {No: {en: [nope]}, maybe: {en: [perhaps]}}}\n"
        "responses:\n"
        "  ok: {en: OK}\n",
        encoding="utf-8",
    )
    with pytest.raises(DomainError) as caught:
        load_domain(path)
    item, key = caught.value.problems
    assert item.startswith("line 6: intents.agree.keywords.en.0: ")
    assert 'YAML reads an unquoted yes as true; write "yes" (in quotes)' in item
    assert key.startswith("line 9: entities.answer.values.No: ")
    assert 'YAML reads an unquoted No as false; write "No" (in quotes)' in key


# from_intent: an intent's meaning as a slot's value.

RESTAURANT: dict[str, Any] = {
    "name": "restaurant",
    "languages": ["en", "ja"],
    "intents": {
        "book_table": {
            "examples": {"en": ["book a table"], "ja": ["席を予約したい"]},
            "keywords": {"en": ["table"], "ja": ["予約"]},
        },
        "no_preference": {
            "kind": "small_talk",
            "response": "ok",
            "examples": {"en": ["anything is fine", "I don't mind"], "ja": ["何でもいい"]},
        },
    },
    "entities": {"count": {"kind": "number"}, "wish": {"kind": "text"}},
    "slots": {
        "people": {"entity": "count", "question": {"en": "For how many?", "ja": "何名様？"}},
        "outdoor": {
            "from_intent": {"affirm": True, "deny": False},
            "question": {"en": "Do you want to sit outside?", "ja": "屋外の席にしますか？"},
        },
        "preferences": {
            "entity": "wish",
            "from_intent": {"deny": "no additional preferences", "no_preference": "none"},
            "question": {"en": "Any preferences?", "ja": "ご希望は？"},
        },
    },
    "goals": {
        "book_table": {
            "intent": "book_table",
            "mode": "SLOT_FILLING",
            "slots": ["people", "outdoor", "preferences"],
        }
    },
    "responses": {"ok": {"en": "OK.", "ja": "はい。"}},
}


def test_from_intent_maps_a_yes_or_a_no_and_an_intent_to_a_slot_value() -> None:
    bot = Dialogue(RESTAURANT, clock=monday)
    bot.send("t", "book a table for four")
    assert bot.send("t", "yes please").slots == {"people": 4, "outdoor": True}
    assert bot.send("t", "no").slots["preferences"] == "no additional preferences"
    bot.send("t", "book a table for 2")
    assert bot.send("t", "いいえ").slots["outdoor"] is False
    assert bot.send("t", "I don't mind").slots["preferences"] == "none"
    bot.send("t", "book a table for 2")
    bot.send("t", "no")
    # A no that says more is the free text, not the mapped value.
    assert bot.send("t", "no meat please").slots["preferences"] == "no meat please"


def test_from_intent_needs_a_known_intent_and_a_slot_needs_an_entity_or_from_intent() -> None:
    broken = {**RESTAURANT, "slots": {**RESTAURANT["slots"]}}
    broken["slots"]["outdoor"] = {
        "from_intent": {"agree": True},
        "question": {"en": "?", "ja": "?"},
    }
    broken["slots"]["people"] = {"question": {"en": "?", "ja": "?"}}
    with pytest.raises(DomainError) as caught:
        load_domain(broken)
    assert caught.value.problems == [
        "slots.people: a slot needs `entity:` or `from_intent:`; add the entity that fills it",
        "slots.outdoor.from_intent: `agree` is not an intent of this domain, nor affirm or deny "
        "(a yes or a no); name one of them",
    ]
