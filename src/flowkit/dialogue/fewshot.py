"""Few-shot examples for the LLM recogniser, drawn from the domain: its intents' and FAQ
questions' examples in the reply language, each with the answer the model should give (the
intent, and the entity values the offline extractor finds in it).

Bounded so a large domain cannot flood the prompt: one example per intent or FAQ entry in
turn (round robin, in the domain's order), at most ``limit`` of them and ``max_chars``
characters in all; an example longer than a line is skipped. Within an intent, examples with
entity values come first.
"""

from __future__ import annotations

import json
from datetime import date
from itertools import zip_longest
from typing import Final

from ._models import Domain
from .entities import EntityExtractor

__all__ = ["FEW_SHOT_CHARS", "FEW_SHOT_LIMIT", "few_shot", "few_shot_text"]

#: At most this many examples, and this many characters of them, go into one prompt.
FEW_SHOT_LIMIT: Final = 16
FEW_SHOT_CHARS: Final = 2_000
_LONGEST: Final = 160


def _pool(domain: Domain, lang: str) -> list[tuple[str, list[str]]]:
    """(answer intent, its example phrases in ``lang``) per intent and FAQ entry."""

    def pick(localized: dict[str, list[str]]) -> list[str]:
        said = localized.get(lang) or localized.get(domain.default_language) or []
        return [s for s in said if 0 < len(s) <= _LONGEST]

    pool = [(name, pick(spec.examples)) for name, spec in domain.intents.items()]
    pool += [(name, pick(spec.questions)) for name, spec in domain.faq.items()]
    return [(name, phrases) for name, phrases in pool if phrases]


def few_shot(
    domain: Domain,
    extractor: EntityExtractor,
    lang: str,
    today: date,
    *,
    limit: int = FEW_SHOT_LIMIT,
    max_chars: int = FEW_SHOT_CHARS,
) -> list[tuple[str, dict[str, object]]]:
    """(message, the answer the recogniser should give) pairs, bounded as described above."""
    pool = _pool(domain, lang)
    chosen: list[tuple[str, dict[str, object]]] = []
    used = 0
    # Per intent, the examples with entity values in them first: they show the extraction.
    found = {
        text: [{"entity": f.entity, "value": f.value} for f in extractor.extract(text, today)]
        for _, phrases in pool
        for text in phrases
    }
    ordered = [sorted(phrases, key=lambda t: not found[t]) for _, phrases in pool]
    for round_ in zip_longest(*ordered):
        for (name, _), text in zip(pool, round_, strict=True):
            if text is None or len(chosen) >= limit:
                continue
            entities = found[text]
            answer: dict[str, object] = {"intent": name, "entities": entities, "commands": []}
            cost = len(text) + len(json.dumps(answer, ensure_ascii=False))
            if used + cost > max_chars:
                return chosen
            chosen.append((text, answer))
            used += cost
        if len(chosen) >= limit:
            break
    return chosen


def few_shot_text(pairs: list[tuple[str, dict[str, object]]]) -> str:
    """The pairs as prompt lines: ``User: ...`` then ``Answer: {...}``."""
    return "\n".join(
        f"User: {text}\nAnswer: {json.dumps(answer, ensure_ascii=False)}" for text, answer in pairs
    )
