"""Times of day in text, English and Japanese, as ``HH:MM``: "7 pm", "19:30", "noon",
"at 9", 午後3時半, and as people say them: "half past seven", "ten to nine pm", "a quarter
to midnight", "nine thirty pm", "seven o'clock in the evening", "two at night", "at seven".

``find_times`` returns ``(start, end, value)`` spans of an NFKC text; where spans overlap the
caller keeps the longest ("half past seven pm" over "seven pm"). A bare hour is read as the
afternoon's when the text speaks of later in the day ("at 7 tonight": 19:00). A number is
read as an hour only with something that says so (am/pm, o'clock, past/to, "at" before it):
"robot 2 in the morning" names a robot, "at one point" no time.
"""

from __future__ import annotations

import re

__all__ = ["TimeSpan", "find_times"]

TimeSpan = tuple[int, int, str]

_HOUR_WORDS = ("one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
               "eleven", "twelve")  # fmt: skip
_HOUR_WORD = "|".join(sorted(_HOUR_WORDS, key=len, reverse=True))
#: Minutes said before past/to ("ten past nine") or after the hour ("nine thirty").
_MINUTE_WORDS = {"five": 5, "ten": 10, "fifteen": 15, "twenty": 20, "twenty-five": 25,
                 "twenty five": 25, "thirty": 30, "forty": 40, "forty-five": 45,
                 "forty five": 45, "fifty": 50, "fifty-five": 55, "fifty five": 55}  # fmt: skip
_MINUTE_WORD = "|".join(sorted(map(re.escape, _MINUTE_WORDS), key=len, reverse=True))
_MARKER = r"(?P<ap>a\.?m\.?|p\.?m\.?)(?!\w)"

_PATTERNS = (
    re.compile(r"\b(?P<h>\d{1,2})(?::(?P<m>\d{2}))?\s*" + _MARKER, re.I),
    re.compile(r"(?P<ap>午前|午後)?(?P<h>\d{1,2})時(?:(?P<half>半)|(?P<m>\d{1,2})分)?"),
    re.compile(r"(?<![\d/:])(?P<h>\d{1,2}):(?P<m>\d{2})(?![\d:])"),
    re.compile(r"\b(?P<word>noon|midday|midnight)\b|(?P<jword>正午)", re.I),
    # "at 9": a bare hour after "at" (with a colon or am/pm the patterns above read it).
    re.compile(r"\bat\s+(?P<h>\d{1,2})(?![\d:.])(?!\s*[ap]\.?m\b)(?!\s*[/%-])", re.I),
)
_SPOKEN = re.compile(
    r"(?P<at>\bat\s+)?"
    r"(?:\b(?P<frac>half|(?:a\s+)?quarter|\d{1,2}|" + _MINUTE_WORD + r")"
    r"(?:\s+minutes?)?\s+(?P<dir>past|after|to|before)\s+)?"
    r"\b(?P<h>\d{1,2}|" + _HOUR_WORD + r"|noon|midday|midnight)\b(?![:/.,]?\d)"
    r"(?:\s+(?P<tail>" + _MINUTE_WORD + r"|o\s?(?:five|5)|\d{2})\b)?"
    r"(?P<oclock>\s*o['’]?\s?clock\b)?"
    r"(?:\s*" + _MARKER + r")?"
    r"(?:\s+(?P<part>in\s+the\s+(?:morning|afternoon|evening)|at\s+night|tonight))?",
    re.I,
)
#: What may follow "at seven" for it to be a time: the end, punctuation, or a word that
#: goes on about when ("at seven tomorrow"), never a noun ("at one point", "at ten percent").
_AFTER_AT = re.compile(
    r"\s*(?:$|[.,;:!?)]|(?:tomorrow|today|tonight|please|then|sharp|on|and|or|for|with|if|"
    r"instead|again|latest|works?)\b)",
    re.I,
)
#: How a reply may end after the value it gives.
_REPLY_END = re.compile(r"\s*(?:please|then|thanks|thank\s+you)?\s*[.!?]*\s*", re.I)
_LATER_IN_THE_DAY = re.compile(
    r"\b(?:tonight|tonite|evening|afternoon)\b|今夜|今晩|夜|夕方", re.IGNORECASE
)


def find_times(text: str) -> list[TimeSpan]:
    """Every time of day said in ``text``, overlapping spans included."""
    found: list[TimeSpan] = []
    later = _LATER_IN_THE_DAY.search(text) is not None
    for pattern in _PATTERNS:
        for m in pattern.finditer(text):
            groups = m.groupdict()
            if groups.get("word") or groups.get("jword"):
                word = (groups.get("word") or "").lower()
                hour, minute = (0, 0) if word == "midnight" else (12, 0)
            else:
                hour = _in_the_day(int(groups["h"]), groups.get("ap"), later)
                minute = 30 if groups.get("half") else int(groups.get("m") or 0)
            if hour <= 23 and minute <= 59:
                found.append((m.start(), m.end(), f"{hour:02d}:{minute:02d}"))
    for m in _SPOKEN.finditer(text):
        spoken = _spoken(m, text, later)
        if spoken is not None:
            found.append((m.start(), m.end(), spoken))
    return found


def _in_the_day(hour: int, marker: str | None, later: bool) -> int:
    """``hour`` on the 24-hour clock, given its am/pm marker (or 午前/午後)."""
    said = (marker or "").lower().replace(".", "")
    if said in ("pm", "午後") and hour < 12:
        return hour + 12
    if said in ("am", "午前") and hour == 12:
        return 0
    if not said and later and 1 <= hour < 12:
        return hour + 12
    return hour


def _spoken(m: re.Match[str], text: str, later: bool) -> str | None:
    """The ``HH:MM`` of a spoken time, or ``None`` where nothing says the number is an hour."""
    said = m["h"].casefold()
    frac, tail, part = (m["frac"] or "").casefold(), m["tail"], (m["part"] or "").casefold()
    # The whole reply is the time: "eleven at night", "nine thirty".
    whole = (part or tail) and not text[: m.start()].strip() and _REPLY_END.fullmatch(text, m.end())
    if not (frac or m["oclock"] or m["ap"] or m["at"] or whole):
        return None  # "robot 2 in the morning", "two fifty": numbers, not an hour
    towards = (m["dir"] or "").casefold() in ("to", "before")
    if towards and frac.rsplit(maxsplit=1)[-1] not in ("half", "quarter") and not m["at"]:
        return None  # "from ten to twelve", "robot 2 to 3": a range, not 11:50
    if said.isdigit() and not (frac or tail or m["oclock"] or part):
        return None  # "7 pm", "at 9": the plain patterns read those
    if not (frac or tail or m["oclock"] or m["ap"] or part) and not _AFTER_AT.match(text, m.end()):
        return None  # "at one point", "at three options"
    offset = _minutes(frac, tail)
    if offset is None:
        return None
    if towards:
        offset = -offset
    if said in ("noon", "midday", "midnight"):  # "half past noon", "a quarter to midnight"
        if m["ap"] or tail:
            return None
        minutes = (720 if said != "midnight" else 1440) + offset
        return _clock(minutes % 1440)
    hour = int(said) if said.isdigit() else _HOUR_WORDS.index(said) + 1
    if not 1 <= hour <= 12:
        return None
    # On the 12-hour clock first (12 o'clock is 0), then the half of the day it falls in:
    # "a quarter to twelve pm" is 23:45, "a quarter to one pm" 12:45.
    twelve = (hour % 12 * 60 + offset) % 720
    return _clock(_half_of_day(twelve, m["ap"], part, later))


def _minutes(frac: str, tail: str | None) -> int | None:
    """Minutes past the hour said by a fraction ("quarter") or a tail ("thirty")."""
    if frac:
        words = frac.rsplit(maxsplit=1)[-1]
        if words in ("half", "quarter"):
            return 30 if words == "half" else 15
        value = int(frac) if frac.isdigit() else _MINUTE_WORDS.get(frac)
        return value if value is not None and 1 <= value <= 59 else None
    if tail:
        said = tail.casefold()
        if said.startswith("o"):
            return 5
        value = int(said) if said.isdigit() else _MINUTE_WORDS[said]
        return value if value <= 59 else None
    return 0


def _half_of_day(twelve: int, marker: str | None, part: str, later: bool) -> int:
    """Minutes since midnight of ``twelve`` (minutes on the 12-hour clock, 12 o'clock = 0)."""
    said = (marker or "").casefold().replace(".", "")
    if said == "pm":
        return twelve + 720
    if said == "am":
        return twelve
    hour = twelve // 60
    if part:
        if "morning" in part:
            return twelve
        if hour == 0 and part in ("at night", "tonight"):
            return twelve  # "twelve at night", "half past twelve tonight": after midnight
        if part == "at night" and hour < 5:
            return twelve  # "two at night": the small hours
        return twelve + 720
    if hour == 0:
        return twelve + 720  # "a quarter past twelve": 12:15
    return twelve + 720 if later else twelve


def _clock(minutes: int) -> str:
    return f"{minutes // 60:02d}:{minutes % 60:02d}"
