"""Entity extraction for the offline recogniser: regex, choice, number, amount, date and time,
in English and Japanese, plus the free-text reply to a question.

Candidates from every entity are collected with their spans and the longest win where they
overlap, so "robot 2" is a machine rather than the number 2. Values are normalised: choice ->
canonical value, date -> ``YYYY-MM-DD``, time -> ``HH:MM``, number and amount -> int or
float (words and digits: ``numbers``). An entity with ``roles`` marks each value with the
role its cue word gives it ("from Berlin": origin, 「パリまで」: destination).
"""

from __future__ import annotations

import bisect
import itertools
import re
import unicodedata
from dataclasses import dataclass, replace
from datetime import date, timedelta

from ..foundation._safe_regex import compile_pattern
from ._models import Domain, EntitySpec
from ._text import has_cjk, normalize
from .numbers import find_amounts, find_numbers, kanji_number
from .state import JsonScalar
from .times import find_times

__all__ = [
    "BUILTIN_ROLES",
    "CORRECTION_CUES",
    "EntityExtractor",
    "Found",
    "corrected",
    "entity_values",
    "is_correction",
    "kanji_number",
]


@dataclass(frozen=True, slots=True)
class Found:
    entity: str
    value: JsonScalar
    start: int
    end: int
    text: str
    role: str | None = None
    #: The slot a unit word after a number names ("3 nights": ``nights``), where several
    #: slots take the entity.
    slot: str | None = None


#: Cue words of the roles every entity knows (a domain adds others under ``roles:``).
BUILTIN_ROLES: dict[str, dict[str, list[str]]] = {
    "origin": {"en": ["from"], "ja": ["から"]},
    "destination": {"en": ["to"], "ja": ["まで", "へ"]},
}


CORRECTION_CUES = (
    r"\bno\b",
    r"\bactually\b",
    r"\bmake it\b",
    r"\bchange\b",
    r"\binstead\b",
    r"\brather\b",
    "やっぱり",
    "やっぱ",
    "いや",
    "じゃなくて",
    "ではなく",
    "変更",
    "に変えて",
)
_CUES = re.compile("|".join(CORRECTION_CUES), re.IGNORECASE)

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


def entity_values(domain: Domain) -> dict[str, str]:
    """Every choice entity's values and synonyms, normalised -> the entity's name."""
    return {
        normalize(word): name
        for name, spec in domain.entities.items()
        for value, by_lang in spec.values.items()
        for word in [value, *(s for synonyms in by_lang.values() for s in synonyms)]
    }


def is_correction(text: str) -> bool:
    """Whether the utterance corrects something said before ("no, make it 3 pm", やっぱり)."""
    return bool(_CUES.search(text))


#: What may stand between a correcting word and the value it brings ("no, make it 10 am",
#: "actually robot 2", 「9時じゃなくて10時」): punctuation and these words only. Anything else
#: ("no later than 10 am", "no smoking, 2 of us") means the word corrects nothing.
_FILLER = re.compile(
    r"(?:[\s,.;:!?、。…-]|\b(?:make|it|it'?s|it\s+is|let'?s|say|i\s+mean|at|on|for|to|from|"
    r"the|a|an|of|than|please|then|do|go|with)\b)*",
    re.IGNORECASE,
)
#: Cues after which the value is the one taken back ("10 am instead of 9 am").
_TAKES_BACK_WHAT_FOLLOWS = ("instead", "rather")


def corrected(found: list[Found], text: str) -> list[Found]:
    """``found`` without the values a correction in the same sentence takes back: "at 9 am,
    no 10 am" keeps 10:00, "robot 1, actually robot 2" robot 2, "10 am instead of 9 am" 10:00.
    A correcting word counts only right before a value of the same entity (and role) as one
    said before it; "no later than 10 am" or "no production on friday" take nothing back."""
    ordered = sorted(found, key=lambda f: f.start)
    starts = [f.start for f in ordered]
    by_key: dict[tuple[str, str | None, str | None], list[Found]] = {}
    for f in ordered:
        by_key.setdefault((f.entity, f.role, f.slot), []).append(f)
    dropped: set[int] = set()
    for cue in _CUES.finditer(text):
        at = bisect.bisect_left(starts, cue.end())
        if at == len(ordered) or not _FILLER.fullmatch(text, cue.end(), ordered[at].start):
            continue
        after = ordered[at]
        same = by_key[(after.entity, after.role, after.slot)]
        earlier = bisect.bisect_right([f.end for f in same], cue.start())
        if earlier == 0:
            continue  # nothing of its kind said before: a first value, not a correction
        takes_back = after if cue.group(0).casefold() in _TAKES_BACK_WHAT_FOLLOWS else None
        dropped.add(id(takes_back or same[earlier - 1]))
    return [f for f in found if id(f) not in dropped] if dropped else found


class EntityExtractor:
    """Finds a domain's entities in text; build once per domain, call for every utterance."""

    def __init__(self, domain: Domain) -> None:
        self.domain = domain
        self._regex = {
            name: [compile_pattern(p, what="pattern", ignore_case=True) for p in spec.patterns]
            for name, spec in domain.entities.items()
            if spec.kind == "regex"
        }
        # Synonym -> canonical value, longest first so "robot 10" beats "robot 1".
        self._choices = {
            name: sorted(
                (
                    (normalize(synonym), value)
                    for value, by_lang in spec.values.items()
                    for synonym in [value, *(s for syns in by_lang.values() for s in syns)]
                ),
                key=lambda pair: -len(pair[0]),
            )
            for name, spec in domain.entities.items()
            if spec.kind == "choice"
        }
        # entity -> role -> cue words: the roles its slots take and those it defines.
        self._roles: dict[str, dict[str, list[str]]] = {}
        for slot in domain.slots.values():
            spec = domain.entities.get(slot.entity or "")
            if slot.role is None or spec is None or slot.entity is None:
                continue
            by_lang = spec.roles.get(slot.role) or BUILTIN_ROLES.get(slot.role, {})
            cues = [c for words in by_lang.values() for c in words]
            self._roles.setdefault(slot.entity, {})[slot.role] = cues
        self._units = _unit_words(domain)

    def extract(self, text: str, today: date) -> list[Found]:
        """Every non-overlapping entity in ``text`` (NFKC-normalised), in order of position."""
        text = unicodedata.normalize("NFKC", text)
        candidates: list[Found] = []
        for name, spec in self.domain.entities.items():
            candidates += self._find(name, spec, text, today)
        chosen: list[Found] = []
        starts: list[int] = []  # the spans taken, which never overlap, sorted by start
        ends: list[int] = []
        for found in sorted(candidates, key=lambda f: (-(f.end - f.start), f.start)):
            at = bisect.bisect_right(starts, found.start)
            if (at and ends[at - 1] > found.start) or (at < len(starts) and starts[at] < found.end):
                continue  # overlaps a longer (or earlier) span taken already
            chosen.append(self._with_unit(self._with_role(found, text), text))
            starts.insert(at, found.start)
            ends.insert(at, found.end)
        return sorted(chosen, key=lambda f: f.start)

    def _with_role(self, found: Found, text: str) -> Found:
        """``found`` with the role a cue word next to it gives (English before the value,
        Japanese after it: "to Paris", 「パリまで」; a number's English cue may follow it, as a
        unit does: "2 adults")."""
        roles = self._roles.get(found.entity)
        if not roles:  # most entities: no role to look for
            return found
        counted = self.domain.entities[found.entity].kind in _COUNTED
        after = text[found.end :].casefold()
        for role, cues in roles.items():
            for cue in cues:
                if has_cjk(cue):
                    hit = text[found.end :].lstrip().startswith(cue)
                else:
                    before = text[: found.start].casefold()
                    word = re.escape(cue.casefold())
                    hit = re.search(rf"(?<!\w){word}\s+$", before) is not None or (
                        counted and re.match(rf"\s+{word}(?:e?s)?(?!\w)", after) is not None
                    )
                if hit:
                    return replace(found, role=role)
        return found

    def _with_unit(self, found: Found, text: str) -> Found:
        """``found`` with the slot the word after it names, for a number several slots take
        ("3 nights for 2 adults": ``nights``, ``adults``); a role said already decides."""
        units = self._units.get(found.entity)
        if not units or found.role is not None:
            return found
        said = re.match(r"\s*([^\W\d_]+)", text[found.end :])
        if said is None:
            return found
        word = said.group(1).casefold()
        named = {slot for unit, slot in units if _same_word(word, unit)}
        return replace(found, slot=named.pop()) if len(named) == 1 else found

    def parse(self, entity: str, raw: JsonScalar, today: date) -> JsonScalar:
        """Normalise a value given from outside (an LLM's answer); ``None`` if it is unusable."""
        spec = self.domain.entities.get(entity)
        if spec is None or raw is None:
            return None
        if spec.kind == "text":
            value = str(raw).strip()
            return value or None
        if spec.kind == "choice" and isinstance(raw, str) and raw in spec.values:
            return raw
        number = isinstance(raw, int | float) and not isinstance(raw, bool)
        if spec.kind in ("number", "amount") and number:
            return raw
        found = self._find(entity, spec, unicodedata.normalize("NFKC", str(raw)), today)
        return found[0].value if found else None

    def strip_text(self, entity: str, text: str) -> str:
        """A free-text reply without the ``strip`` phrases around the value (my name is, です)."""
        spec = self.domain.entities[entity]
        value = unicodedata.normalize("NFKC", text).strip()
        for phrase in sorted((p for ps in spec.strip.values() for p in ps), key=len, reverse=True):
            value = re.sub(rf"^\s*{re.escape(phrase)}\s*", "", value, flags=re.IGNORECASE)
            value = re.sub(rf"\s*{re.escape(phrase)}\s*$", "", value, flags=re.IGNORECASE)
        return value.strip(" 　.,!?。、！？「」\"'")

    def _find(self, name: str, spec: EntitySpec, text: str, today: date) -> list[Found]:
        kind = spec.kind
        if kind == "regex":
            return [
                Found(
                    name,
                    m.group("value") if "value" in pattern.groupindex else m.group(0),
                    m.start(),
                    m.end(),
                    m.group(0),
                )
                for pattern in self._regex[name]
                for m in pattern.finditer(text)
            ]
        if kind == "choice":
            return self._find_choice(name, text)
        if kind in ("number", "amount"):
            spans = find_amounts(text) if kind == "amount" else find_numbers(text)
            return [Found(name, v, start, end, text[start:end]) for start, end, v in spans]
        if kind == "time":
            return _find_times(name, text)
        if kind == "date":
            return _find_dates(name, text, today)
        return []  # text entities fill only the slot that was asked for (see the recogniser)

    def _find_choice(self, name: str, text: str) -> list[Found]:
        folded = text.casefold()
        found: list[Found] = []
        for synonym, value in self._choices[name]:
            if not synonym:
                continue
            if has_cjk(synonym):
                pattern = re.escape(synonym)
            else:  # an English plural is the same value ("2 torque wrenches")
                words = r"[\s_-]*".join(map(re.escape, synonym.split()))
                plural = "(?:e?s)?" if synonym[-1:].isalpha() else ""
                pattern = r"(?<![\w])" + words + plural + r"(?!\w)"
            for m in re.finditer(pattern, folded):
                found.append(Found(name, value, m.start(), m.end(), text[m.start() : m.end()]))
        return found


#: Entity kinds whose values are counted: a unit word follows them.
_COUNTED = ("number", "amount")


def _unit_words(domain: Domain) -> dict[str, list[tuple[str, str]]]:
    """entity -> (word, slot) for a counted entity that several slots take: each slot's name
    ("num_people": "num", "people") and English label words, so the word after a number can
    say which slot it fills."""
    takers: dict[str, list[str]] = {}
    for name, spec in domain.slots.items():
        entity = domain.entities.get(spec.entity or "")
        if entity is not None and entity.kind in _COUNTED and spec.role is None:
            takers.setdefault(spec.entity or "", []).append(name)
    units: dict[str, list[tuple[str, str]]] = {}
    for entity_name, names in takers.items():
        if len(names) < 2:
            continue
        for name in names:
            words = {*name.split("_"), *domain.slots[name].label.get("en", "").split()}
            units[entity_name] = [
                *units.get(entity_name, []),
                *((w.casefold(), name) for w in words if len(w) >= 3),
            ]
    return units


def _same_word(said: str, unit: str) -> bool:
    """Whether ``said`` is ``unit`` or one of its forms: "night"/"nights", "child"/"children"
    (one a start of the other, four letters or more in common)."""
    short, long = sorted((said, unit), key=len)
    return said == unit or (len(short) >= 4 and long.startswith(short))


def _find_times(name: str, text: str) -> list[Found]:
    return [
        Found(name, value, start, end, text[start:end]) for start, end, value in find_times(text)
    ]


def _find_dates(name: str, text: str, today: date) -> list[Found]:
    found: list[Found] = []

    def add(m: re.Match[str], day: date | None) -> None:
        if day is not None:
            found.append(Found(name, day.isoformat(), m.start(), m.end(), m.group(0)))

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

    def __init__(self, found: list[Found]) -> None:
        spans = sorted((f.start, f.end) for f in found)
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
