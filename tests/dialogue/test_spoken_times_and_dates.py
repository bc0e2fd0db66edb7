"""Times and dates as people say them ("half past seven pm", "on the 15th", "14/03"), read by
the offline recogniser's entity extractor on the shared robot-cell domain."""

from __future__ import annotations

from datetime import UTC, date, datetime
from pathlib import Path

import pytest

from flowkit.dialogue import Dialogue, Domain
from flowkit.dialogue.entities import EntityExtractor
from flowkit.dialogue.times import find_times

TODAY = date(2025, 3, 10)  # a Monday


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("half past seven pm", {"time": "19:30"}),
        ("at half past 7", {"time": "07:30"}),
        ("a quarter past 8 pm", {"time": "20:15"}),
        ("quarter to nine in the morning", {"time": "08:45"}),
        ("quarter to one pm", {"time": "12:45"}),
        ("seven pm", {"time": "19:00"}),
        ("seven o'clock in the evening", {"time": "19:00"}),
        ("at 7 o'clock", {"time": "07:00"}),
        ("tomorrow at seven tonight", {"date": "2025-03-11", "time": "19:00"}),
        ("twelve at night", {"time": "00:00"}),
        ("on the 15th", {"date": "2025-03-15"}),
        ("on the fifteenth at noon", {"date": "2025-03-15", "time": "12:00"}),
        ("on the 3rd", {"date": "2025-04-03"}),  # the 3rd of this month is past
        ("the 15th March", {"date": "2025-03-15"}),
        ("14/03", {"date": "2025-03-14"}),  # only a day-first reading is a date
        ("Sept. 3", {"date": "2025-09-03"}),
        ("Mar. 14 at a quarter past ten am", {"date": "2025-03-14", "time": "10:15"}),
        ("at nine thirty pm", {"time": "21:30"}),
        ("at seven thirty", {"time": "07:30"}),
        ("at five to nine", {"time": "08:55"}),
        ("at ten past nine pm", {"time": "21:10"}),
        ("half past noon", {"time": "12:30"}),
        ("a quarter to midnight", {"time": "23:45"}),
        ("quarter to twelve pm", {"time": "23:45"}),
        ("quarter to twelve am", {"time": "11:45"}),
        ("at 2 at night", {"time": "02:00"}),
        ("eleven at night", {"time": "23:00"}),
        ("service robot 2 in the morning", {"machine": "robot_2"}),
        ("please check robot 3 tonight", {"machine": "robot_3"}),
        ("robot two in the morning at 9", {"machine": "robot_2", "time": "09:00"}),
        ("on the 15th please", {"date": "2025-03-15"}),
        ("on the 15th for robot 2", {"date": "2025-03-15", "machine": "robot_2"}),
        ("on the 15th may be better", {"date": "2025-03-15"}),
        ("Febuary 3", {"date": "2026-02-03"}),
        ("25/12", {"date": "2025-12-25"}),
        ("the 15th please", {"date": "2025-03-15"}),  # a whole reply
        ("nine thirty", {"time": "09:30"}),
        ("nine thirty please", {"time": "09:30"}),
    ],
)
def test_spoken_times_and_dates(domain: Domain, text: str, expected: dict[str, str]) -> None:
    found = EntityExtractor(domain).extract(text, TODAY)
    assert {f.entity: f.value for f in found} == expected


@pytest.mark.parametrize(
    "text",
    [
        "I need 15 markers",  # a number, not the 15th of March
        "the 2nd option",  # an ordinal, not a day
        "marketing 5",
        "I have seven",  # a bare number word is no hour
        "13/13",
        "at one point the arm stopped",
        "can you look at three options",
        "running at ten percent",
        "from ten to twelve",  # a range, not 11:50
        "we run 24/7",
        "a 16/9 screen",
        "the 2nd is broken",
        "the 15th may be better",  # "the 15th" alone, not said as a day: no date
    ],
)
def test_what_is_no_date_or_time(domain: Domain, text: str) -> None:
    found = EntityExtractor(domain).extract(text, TODAY)
    assert {f.entity for f in found} <= {"count", "number"}, found


def test_a_correction_says_both_times_in_order() -> None:
    """ "at 7 pm, no 8 pm": both times are read, in the order they were said."""
    assert [value for _, _, value in sorted(find_times("at 7 pm, no 8 pm"))] == ["19:00", "20:00"]


@pytest.mark.parametrize(
    ("today", "expected"),
    [(date(2027, 3, 10), "2028-02-29"), (date(2028, 3, 10), "2032-02-29")],
)
def test_the_29th_of_february_is_the_next_one_there_is(
    domain: Domain, today: date, expected: str
) -> None:
    for text in ("Feb 29", "2/29", "the 29th of February"):
        assert [f.value for f in EntityExtractor(domain).extract(text, today)] == [expected]


def test_a_long_text_full_of_dates_and_times_is_read_whole(domain: Domain) -> None:
    """Thousands of candidates, each checked against the spans taken so far (in log time:
    this was quadratic, seconds for 100 KB; the test asserts the result, never the time)."""
    text = "on the 1st, at 7 pm and the 14th of March; " * 2000
    found = EntityExtractor(domain).extract(text, TODAY)
    assert len(found) == 6000


@pytest.mark.parametrize(
    ("said", "booked"),
    [
        (
            "Book maintenance for robot 2 tomorrow at 9 am, no 10 am",
            "robot 2 on 2025-03-11 at 10:00",
        ),
        (
            "Book maintenance for robot 1 tomorrow at 9 am, actually robot 2",
            "robot 2 on 2025-03-11 at 09:00",
        ),
        ("Book maintenance for robot 2 tomorrow at half past nine am", "at 09:30"),
        ("no, book maintenance for robot 3 tomorrow at 9 am", "robot 3 on 2025-03-11 at 09:00"),
        ("Book maintenance for robot 2 tomorrow, no, friday at 9 am", "on 2025-03-14 at 09:00"),
        ("Book maintenance for robot 2 tomorrow at 9 am, no, half past ten", "at 10:30"),
        ("Book maintenance for robot 2 tomorrow at 10 am instead of 9 am", "at 10:00"),
        ("Book maintenance for robot 2 instead of robot 1, tomorrow at 9 am", "robot 2 on"),
        ("Book maintenance for robot 2 on friday rather than tomorrow, at 9 am", "2025-03-14"),
        # "no" and "change" that correct nothing
        ("Book maintenance for robot 2 tomorrow at 9 am, no later than 10 am", "at 09:00"),
        ("Book maintenance for robot 2 at 9 am tomorrow, the shift change is at 10 am", "09:00"),
        ("Book robot 2 maintenance tomorrow at 9 am, there is no production on friday", "03-11"),
    ],
)
def test_a_correction_in_the_same_sentence_keeps_what_was_said_last(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, said: str, booked: str
) -> None:
    monkeypatch.chdir(tmp_path)
    bot = Dialogue("robot_cell", clock=lambda: datetime(2025, 3, 10, tzinfo=UTC))
    bot.send("op-1", said)
    assert booked in bot.send("op-1", "Sato").text


@pytest.mark.parametrize(
    "said",
    [
        "明日9時じゃなくて10時にロボット2のメンテナンスを予約したい",
        "明日9時、いや10時にロボット2のメンテナンスを予約したい",
    ],
)
def test_a_correction_in_one_japanese_sentence_keeps_what_was_said_last(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, said: str
) -> None:
    monkeypatch.chdir(tmp_path)
    bot = Dialogue("robot_cell", clock=lambda: datetime(2025, 3, 10, tzinfo=UTC))
    bot.send("op-1", said)
    assert "10:00" in bot.send("op-1", "佐藤").text
