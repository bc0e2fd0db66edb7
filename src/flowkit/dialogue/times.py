"""Times of day in text, English and Japanese, as ``HH:MM``: "7 pm", "19:30", "noon",
"at 9", 午後3時半, and as people say them: "half past seven", "quarter to nine pm",
"seven o'clock in the evening", "at seven".

``find_times`` returns ``(start, end, value)`` spans of an NFKC text; where spans overlap the
caller keeps the longest ("half past seven pm" over "seven pm"). A bare hour is read as the
afternoon's when the text speaks of later in the day ("at 7 tonight": 19:00).
"""

from __future__ import annotations

import re

__all__ = ["TimeSpan", "find_times"]

TimeSpan = tuple[int, int, str]

_HOUR_WORDS = ("one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
               "eleven", "twelve")  # fmt: skip
_HOUR_WORD = "|".join(sorted(_HOUR_WORDS, key=len, reverse=True))
_MARKER = r"(?P<ap>a\.?m\.?|p\.?m\.?)(?!\w)"

_PATTERNS = (
    re.compile(r"\b(?P<h>\d{1,2})(?::(?P<m>\d{2}))?\s*" + _MARKER, re.I),
    re.compile(r"(?P<ap>午前|午後)?(?P<h>\d{1,2})時(?:(?P<half>半)|(?P<m>\d{1,2})分)?"),
    re.compile(r"(?<![\d/:])(?P<h>\d{1,2}):(?P<m>\d{2})(?![\d:])"),
    re.compile(r"\b(?P<word>noon|midday|midnight)\b|(?P<jword>正午)", re.I),
    # "at 9": a bare hour after "at" (with a colon or am/pm the patterns above read it).
    re.compile(r"\bat\s+(?P<h>\d{1,2})(?![\d:.])(?!\s*[ap]\.?m\b)(?!\s*[/%-])", re.I),
)
#: "half past seven", "a quarter to 9 pm", "seven o'clock in the evening", "at seven": kept
#: only with something that makes the number an hour (the fraction, o'clock, am/pm, "at").
_SPOKEN = re.compile(
    r"(?P<at>\bat\s+)?"
    r"(?:\b(?P<frac>half|(?:a\s+)?quarter)\s+(?P<dir>past|after|to|before)\s+)?"
    r"\b(?P<h>\d{1,2}|" + _HOUR_WORD + r")\b(?![:/.,]?\d)"
    r"(?P<oclock>\s*o['’]?\s?clock\b)?"
    r"(?:\s*" + _MARKER + r")?"
    r"(?:\s+(?P<part>in\s+the\s+(?:morning|afternoon|evening)|at\s+night|tonight))?",
    re.I,
)
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
        spoken = _spoken(m, later)
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


def _spoken(m: re.Match[str], later: bool) -> str | None:
    """The ``HH:MM`` of a spoken time, or ``None`` where nothing says the number is an hour."""
    said, frac, part = m["h"].lower(), (m["frac"] or "").lower(), (m["part"] or "").lower()
    if not (frac or m["oclock"] or m["ap"] or m["at"] or part):
        return None
    if said.isdigit() and not (frac or m["oclock"] or part):
        return None  # "7 pm", "at 9": the plain patterns read those
    hour = int(said) if said.isdigit() else _HOUR_WORDS.index(said) + 1
    if not 1 <= hour <= 12:
        return None
    marker = m["ap"]
    if marker is None and part:
        marker = "am" if "morning" in part else "pm"
        if hour == 12 and part in ("at night", "tonight"):
            marker = "am"  # twelve at night: midnight
    minutes = _in_the_day(hour, marker, later) * 60
    if frac:
        size = 30 if frac == "half" else 15
        minutes += -size if m["dir"].lower() in ("to", "before") else size
    minutes %= 24 * 60
    return f"{minutes // 60:02d}:{minutes % 60:02d}"
