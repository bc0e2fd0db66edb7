"""Dates in words, English and Japanese (issue #27: "numbers, dates and amounts in English and
Japanese words and digits"): each reads as the same day as its digits do."""

from __future__ import annotations

from datetime import date

import pytest

from flowkit.dialogue.entities import _find_dates

TODAY = date(2026, 11, 27)

DATES = {
    "March 14": "2027-03-14",
    "the 14th of March": "2027-03-14",
    "fourteenth of March": "2027-03-14",
    "March fourteenth": "2027-03-14",
    "march the twenty-first": "2027-03-21",
    "on the 1st of may please": "2027-05-01",
    "December the first": "2026-12-01",
    "三月十四日": "2027-03-14",
    "十二月一日": "2026-12-01",
    "3月14日": "2027-03-14",
}


@pytest.mark.parametrize(("text", "day"), DATES.items(), ids=list(DATES))
def test_a_date_in_words_is_the_day_its_digits_say(text: str, day: str) -> None:
    assert [found.value for found in _find_dates("date", text, TODAY)] == [day]


@pytest.mark.parametrize("text", ["the 31st of February", "十三月一日", "the first of them"])
def test_what_is_not_a_day_is_no_date(text: str) -> None:
    assert _find_dates("date", text, TODAY) == []


@pytest.mark.parametrize("said", ["yesterday", "Yesterday, please", "昨日", "きのう"])
def test_yesterday_is_the_day_before_and_a_booking_refuses_it_as_past(said: str) -> None:
    from flowkit.dialogue import Dialogue

    from .conftest import monday

    assert [found.value for found in _find_dates("date", said, TODAY)] == ["2026-11-26"]
    bot = Dialogue("robot_cell", clock=monday)
    bot.send("y", "book maintenance for robot 1")
    reply = bot.send("y", said)
    assert reply.response_id == "slot_invalid" and reply.missing_slots[0] == "date"
