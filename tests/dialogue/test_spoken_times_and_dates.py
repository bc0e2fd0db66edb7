"""Times and dates as people say them ("half past seven pm", "on the 15th", "14/03"), read by
the offline recogniser's entity extractor on the shared robot-cell domain."""

from __future__ import annotations

from datetime import date

import pytest

from flowkit.dialogue import Domain
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
    ],
)
def test_what_is_no_date_or_time(domain: Domain, text: str) -> None:
    found = EntityExtractor(domain).extract(text, TODAY)
    assert {f.entity for f in found} <= {"count", "number"}, found


def test_a_correction_says_both_times_in_order() -> None:
    """ "at 7 pm, no 8 pm": both times are read, in the order they were said."""
    assert [value for _, _, value in sorted(find_times("at 7 pm, no 8 pm"))] == ["19:00", "20:00"]
