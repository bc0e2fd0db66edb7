"""Dates in text, English and Japanese, as ``YYYY-MM-DD`` given today's date: today,
tomorrow, in 3 days, next Monday, 2025-04-01, 3/14, 14/03 (day first where only that
reading is a date), March 14, Sept. 3, the 14th of March, March fourteenth, "on the 15th",
3月14日, 三月十四日, 来週水曜 ... A date without a year is its next occurrence (Feb 29: in the
next leap year); only month names count ("15 markers" is no date).

``find_dates`` returns ``(start, end, value)`` spans of an NFKC text; where spans overlap
the caller keeps the longest.
"""

from __future__ import annotations

import bisect
import itertools
import re
from datetime import date, timedelta

from .numbers import kanji_number

__all__ = ["DateSpan", "find_dates"]

DateSpan = tuple[int, int, str]

_WEEKDAYS_EN = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_WEEKDAYS_JA = "月火水木金土日"
_MONTHS_EN = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
#: A month's name or its abbreviation, nothing else: "the 15th March" is not a month "the"
#: with its day lost, and "15 markers" is not the 15th of March.
#: Common misspellings count ("Febuary"); "may" before a verb is the verb ("the 15th may be
#: better").
_MONTH = (
    "jan(?:uary)?|feb(?:ruary|uary|urary)?|mar(?:ch)?|apr(?:il)?"
    r"|may(?!\s+(?:be|have|not|need|want|work|come|go|do|help|i|we|you|it|they)\b)"
    "|june?|july?|aug(?:ust)?|sep(?:t(?:ember|mber)?)?|septmber|oct(?:ober)?|nov(?:ember)?"
    "|dec(?:ember)?"
)

_DATE_RELATIVE = (
    (re.compile(r"\bday after tomorrow\b|明後日|あさって", re.I), 2),
    (re.compile(r"\btoday\b|今日|きょう|本日", re.I), 0),
    (re.compile(r"\btomorrow\b|明日|あした|あす", re.I), 1),
    # A past day is read too, so a slot's `not_past` rule refuses it with its reason.
    (re.compile(r"\byesterday\b|(?<!一)昨日|きのう", re.I), -1),
)
_DATE_IN_DAYS = re.compile(r"\bin (?P<n>\d{1,3}) days?\b|(?P<jn>\d{1,3})日後", re.I)
_DATE_ISO = re.compile(r"\b(?P<y>\d{4})-(?P<m>\d{1,2})-(?P<d>\d{1,2})\b")
_DATE_MD = re.compile(r"(?<![\d/])(?P<m>\d{1,2})/(?P<d>\d{1,2})(?![\d/])")
_DATE_JA = re.compile(r"(?:(?P<y>\d{4})年)?(?P<m>\d{1,2})月(?P<d>\d{1,2})日")
#: A year said after a date ("March 14, 2026", "the 14th of March 2026").
_YEAR = r"(?:,?\s+(?P<{}>(?:19|20)\d{{2}})\b)?"
_DATE_EN = re.compile(
    r"\b(?:(?P<d1>\d{1,2})(?:st|nd|rd|th)?\s+(?P<mon1>"
    + _MONTH
    + r")\.?(?!\w)"
    + _YEAR.format("y1")
    + r"|(?P<mon2>"
    + _MONTH
    + r")\.?\s+(?P<d2>\d{1,2})(?:st|nd|rd|th)?\b"
    + _YEAR.format("y2")
    + r")",
    re.I,
)
_ORDINAL_UNITS = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth",
                  "ninth")  # fmt: skip
_ORDINALS: dict[str, int] = {w: i + 1 for i, w in enumerate(_ORDINAL_UNITS)}
_TEEN_ORDINALS = ("tenth", "eleventh", "twelfth", "thirteenth", "fourteenth", "fifteenth",
                  "sixteenth", "seventeenth", "eighteenth", "nineteenth")  # fmt: skip
_ORDINALS.update({w: 10 + i for i, w in enumerate(_TEEN_ORDINALS)})
_ORDINALS.update({"twentieth": 20, "thirtieth": 30})
_ORDINALS.update({
    f"{tens}{sep}{unit}": base + i + 1
    for tens, base in (("twenty", 20), ("thirty", 30))
    for sep in ("-", " ", "")
    for i, unit in enumerate(_ORDINAL_UNITS)
    if base + i + 1 <= 31
})  # fmt: skip
_ORDINAL = "|".join(sorted(map(re.escape, _ORDINALS), key=len, reverse=True))
#: "the 14th of March", "March the fourteenth", "fourteenth of March", "March 1st".
_DATE_EN_WORDS = re.compile(
    r"\b(?:the\s+)?(?:(?P<d1>\d{1,2})(?:st|nd|rd|th)?|(?P<o1>" + _ORDINAL + r"))\s+of\s+"
    r"(?P<mon1>"
    + _MONTH
    + r")\.?(?!\w)"
    + _YEAR.format("y1")
    + r"|\b(?P<mon2>"
    + _MONTH
    + r")\.?\s+(?:the\s+)?(?P<o2>"
    + _ORDINAL
    + r")\b"
    + _YEAR.format("y2"),
    re.I,
)
#: "on the 15th", "on the fifteenth": a day of this month or, once it is past, of the next.
#: Only after "on" (or as the whole reply): "the 2nd option" is not a date.
_DAY_OF_MONTH = re.compile(
    r"(?:\bon\s+the\s+|^\s*the\s+)(?:(?P<d>\d{1,2})(?:st|nd|rd|th)|(?P<o>" + _ORDINAL + r"))\b"
    r"(?!\s+of\b)",
    re.I,
)
#: What may follow "the 15th" said without "on" for it to be a date: the end of the reply.
_REPLY_END = re.compile(r"\s*(?:please|then|thanks|thank\s+you)?\s*[.!?]*\s*\Z", re.I)
#: 三月十四日, 十二月一日: a month and day in kanji numerals.
_DATE_JA_KANJI = re.compile(
    r"(?P<m>[一二三四五六七八九十]{1,3})月(?P<d>[一二三四五六七八九十]{1,3})日"
)
_WEEKDAY = re.compile(
    r"\b(?P<next>next\s+)?(?P<en>" + "|".join(_WEEKDAYS_EN) + r")\b"
    r"|(?P<jnext>来週の?)?(?P<ja>[月火水木金土日])曜日?",
    re.I,
)


def find_dates(text: str, today: date) -> list[DateSpan]:
    """Every date said in ``text``, overlapping spans included."""
    found: list[DateSpan] = []

    def add(m: re.Match[str], day: date | None) -> None:
        if day is not None:
            found.append((m.start(), m.end(), day.isoformat()))

    for pattern, offset in _DATE_RELATIVE:
        for m in pattern.finditer(text):
            add(m, today + timedelta(days=offset))
    for m in _DATE_IN_DAYS.finditer(text):
        add(m, today + timedelta(days=int(m.group("n") or m.group("jn"))))
    for m in _DATE_ISO.finditer(text):
        add(m, _make_date(int(m["y"]), int(m["m"]), int(m["d"])))
    for m in [*_DATE_MD.finditer(text), *_DATE_JA.finditer(text)]:
        year = m.groupdict().get("y")
        first, second = int(m["m"]), int(m["d"])
        if first > 12 >= second and re.fullmatch(r"\d\d/\d\d", m.group(0)):
            first, second = second, first  # 14/03 (never 24/7 or 16/9): read day first
        add(m, _upcoming(today, first, second, int(year) if year else None))
    for m in _DATE_EN.finditer(text):
        month = (m["mon1"] or m["mon2"])[:3].lower()
        if month in _MONTHS_EN:
            day, year = int(m["d1"] or m["d2"]), m["y1"] or m["y2"]
            add(m, _upcoming(today, _MONTHS_EN.index(month) + 1, day, _year(year)))
    within = _Overlaps(found)  # one pattern's matches never overlap each other
    for m in _DATE_EN_WORDS.finditer(text):
        month = (m["mon1"] or m["mon2"])[:3].lower()
        ordinal = m["o1"] or m["o2"]
        number = _ORDINALS[ordinal.lower()] if ordinal else int(m["d1"])
        if month in _MONTHS_EN and not within(m):
            year = _year(m["y1"] or m["y2"])
            add(m, _upcoming(today, _MONTHS_EN.index(month) + 1, number, year))
    within = _Overlaps(found)
    for m in _DAY_OF_MONTH.finditer(text):
        number = int(m["d"]) if m["d"] else _ORDINALS[m["o"].casefold()]
        said_on = m.group(0).lstrip()[:2].casefold() == "on"
        if not within(m) and (said_on or _REPLY_END.match(text, m.end())):
            add(m, _day_of_month(today, number))
    for m in _DATE_JA_KANJI.finditer(text):
        month_number, day_number = kanji_number(m["m"]), kanji_number(m["d"])
        if month_number and day_number and 1 <= month_number <= 12:
            add(m, _upcoming(today, month_number, day_number, None))
    for m in _WEEKDAY.finditer(text):
        weekday = _WEEKDAYS_EN.index(m["en"].lower()) if m["en"] else _WEEKDAYS_JA.index(m["ja"])
        ahead = (weekday - today.weekday()) % 7 or 7
        if m["next"] or m["jnext"]:
            # "next Monday" / 来週月曜: the one in the following week.
            ahead = 7 - today.weekday() + weekday
        add(m, today + timedelta(days=ahead))
    return found


class _Overlaps:
    """Whether a match overlaps a date found already (one date, read by two patterns), in
    time logarithmic in the dates found (a long text holds thousands)."""

    def __init__(self, found: list[DateSpan]) -> None:
        spans = sorted((start, end) for start, end, _ in found)
        self._starts = [start for start, _ in spans]
        self._reach = list(itertools.accumulate((end for _, end in spans), max))

    def __call__(self, m: re.Match[str]) -> bool:
        before = bisect.bisect_left(self._starts, m.end())  # the spans starting before its end
        return before > 0 and self._reach[before - 1] > m.start()


def _year(said: str | None) -> int | None:
    return int(said) if said else None


def _make_date(year: int, month: int, day: int) -> date | None:
    try:
        return date(year, month, day)
    except ValueError:
        return None


def _day_of_month(today: date, day: int) -> date | None:
    """Day ``day`` of this month if it is still to come, else of the next month that has it."""
    year, month = today.year, today.month
    for _ in range(3):
        candidate = _make_date(year, month, day)
        if candidate is not None and candidate >= today:
            return candidate
        year, month = (year + 1, 1) if month == 12 else (year, month + 1)
    return None


def _upcoming(today: date, month: int, day: int, year: int | None) -> date | None:
    """The date ``month/day`` in ``year``, or its next occurrence from ``today`` (Feb 29:
    in the next leap year)."""
    if year is not None:
        return _make_date(year, month, day)
    for ahead in range(9):
        candidate = _make_date(today.year + ahead, month, day)
        if candidate is not None and candidate >= today:
            return candidate
    return None
