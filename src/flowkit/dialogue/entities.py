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
import re
import unicodedata
from dataclasses import dataclass, replace
from datetime import date

from ..foundation._safe_regex import compile_pattern
from ._models import Domain, EntitySpec
from ._text import has_cjk, normalize
from .dates import find_dates
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
    ends = {key: [f.end for f in same] for key, same in by_key.items()}
    dropped: set[int] = set()
    for cue in _CUES.finditer(text):
        at = bisect.bisect_left(starts, cue.end())
        if at == len(ordered) or not _FILLER.fullmatch(text, cue.end(), ordered[at].start):
            continue
        after = ordered[at]
        key = (after.entity, after.role, after.slot)
        same = by_key[key]
        earlier = bisect.bisect_right(ends[key], cue.start())
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
    return [
        Found(name, value, start, end, text[start:end])
        for start, end, value in find_dates(text, today)
    ]
