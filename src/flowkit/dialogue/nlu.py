"""Intent recognition (IR): an offline recogniser (the default) and an LLM recogniser behind
one interface, ``understand(text, context, llm) -> Understanding``.

The offline recogniser scores intents and FAQ questions by fuzzy similarity to their examples
and by keywords, finds entities, and falls back to ``OOS`` under the domain's threshold. The
LLM recogniser asks for intent, entities and commands (set or correct a slot, cancel) as
structured output, with few-shot examples drawn from the domain (``fewshot``), and hands over
to the offline recogniser on any ``LLMError``.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date
from typing import Any, Literal, Protocol

from pydantic import BaseModel, Field

from ..errors import LLMError
from ..foundation._logging import get_logger
from ._models import AFFIRM, DENY, INFORM, Domain
from ._text import best_similarity, keyword_hits, normalize, vocabulary
from .confirm import bare_yes_no
from .entities import EntityExtractor, Found, corrected, entity_values, is_correction
from .fewshot import few_shot, few_shot_text
from .forms import looks_like_question, opens_with_correction
from .privacy import MASK, mask_text
from .state import ChatMessage, Entity, JsonScalar

__all__ = [
    "LLMRecognizer",
    "OfflineRecognizer",
    "Recognizer",
    "TurnContext",
    "Understanding",
    "from_intent",
    "text_change",
]

_STRONG = 0.8  # an intent this sure wins even while a question waits for a slot value
#: A keyword that is also an entity value ("hotels") is a weaker signal: it fires its intent
#: when nothing stronger does, but does not interrupt a question for a slot.
_SHADOWED = 0.75


@dataclass(frozen=True, slots=True)
class TurnContext:
    """What IR knows besides the text: the slot just asked for, the language, today, history,
    and the slot values so far (so the LLM recogniser can keep personal ones from the model)."""

    expects: str | None
    lang: str
    today: date
    history: tuple[ChatMessage, ...] = ()
    slots: Mapping[str, JsonScalar] = field(default_factory=dict)
    #: Personal values said earlier in the conversation (an earlier goal's too): masked in
    #: the LLM's prompts like the current slots' (``said_in_private``).
    said: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Understanding:
    """IR's result: the intent type (OOS / QUESTION / SMALL_TALK / task or control intent /
    inform), the entities, how sure it is, which recogniser answered, and the best match's
    name (a FAQ id or small-talk intent, for the non-task policy)."""

    intent_type: str
    entities: list[Entity] = field(default_factory=list)
    confidence: float = 0.0
    source: Literal["offline", "llm"] = "offline"
    match: str | None = None


class Recognizer(Protocol):
    def understand(self, text: str, context: TurnContext, llm: Any = None) -> Understanding: ...


class OfflineRecognizer:
    """Examples + keywords with fuzzy similarity, entities by rule; no model, no network."""

    def __init__(self, domain: Domain) -> None:
        self.domain = domain
        self.extractor = EntityExtractor(domain)
        langs = domain.languages
        # (kind, name) -> (examples, keywords); every language's phrases count for any input.
        self._candidates: dict[tuple[str, str], tuple[list[str], list[str]]] = {}
        for name, intent in domain.intents.items():
            if intent.external:  # an event's intent is never typed
                continue
            examples = [self._strip(e) for lang in langs for e in intent.examples.get(lang, [])]
            keywords = [k for lang in langs for k in intent.keywords.get(lang, [])]
            self._candidates[(intent.kind, name)] = (examples, keywords)
        for name, faq in domain.faq.items():
            examples = [self._strip(q) for lang in langs for q in faq.questions.get(lang, [])]
            keywords = [k for lang in langs for k in faq.keywords.get(lang, [])]
            self._candidates[("faq", name)] = (examples, keywords)
        phrases = [p for pair in self._candidates.values() for group in pair for p in group]
        #: The words the domain uses: typo tolerance never turns one into another.
        self.known = vocabulary(phrases)
        #: Keywords that are also choice values: entity extraction cuts them out of the text.
        self._shadowed = entity_values(domain)

    def _strip(self, text: str) -> str:
        # Examples lose their entity values too, so "book robot 2" still matches "book it".
        found = self.extractor.extract(text, date(2000, 1, 1))
        return normalize(_remove_spans(text, found))

    def scores(
        self, text: str, kinds: tuple[str, ...] | None = None, found: list[Found] | None = None
    ) -> list[tuple[float, str, str]]:
        """(score, kind, name) for every candidate, best first.

        Entity values are cut out first, so "next Monday" is a date, not the intent `next`.
        A keyword puts a candidate at 0.8 (control intents 0.85), more for more keywords, with
        similarity breaking ties between candidates that share a keyword.
        """
        if found is None:
            found = self.extractor.extract(text, date(2000, 1, 1))
        stripped = normalize(_remove_spans(text, found))
        whole = normalize(text)
        known = self.known
        ranked = []
        for (kind, name), (examples, keywords) in self._candidates.items():
            if kinds is not None and kind not in kinds:
                continue
            score = best_similarity(stripped, examples, known) if stripped else 0.0
            plain = [k for k in keywords if normalize(k) not in self._shadowed]
            hits = keyword_hits(stripped, plain, known)
            if hits:
                base = 0.85 if kind == "control" else 0.8
                score = max(score, min(0.97, base + 0.05 * (hits - 1) + 0.1 * score))
            elif keyword_hits(whole, [k for k in keywords if k not in plain], known):
                score = max(score, _SHADOWED + 0.1 * score)
            ranked.append((score, kind, name))
        return sorted(ranked, key=lambda r: -r[0])

    def best(self, text: str, kinds: tuple[str, ...]) -> tuple[str | None, float]:
        """The best FAQ id or small-talk intent for ``text`` above the threshold (for NP)."""
        ranked = self.scores(text, kinds)
        if ranked and ranked[0][0] >= self.domain.threshold:
            return ranked[0][2], ranked[0][0]
        return None, ranked[0][0] if ranked else 0.0

    def understand(self, text: str, context: TurnContext, llm: Any = None) -> Understanding:
        correction = is_correction(text)
        found = self.extractor.extract(text, context.today)
        if correction:
            found = corrected(found, text)
        entities = [
            Entity(
                entity=f.entity,
                value=f.value,
                text=f.text,
                role=f.role,
                slot=f.slot,
                correction=correction,
            )
            for f in found
        ]
        ranked = self.scores(text, found=found)
        score, kind, name = ranked[0] if ranked else (0.0, "", "")
        threshold = self.domain.threshold
        if context.expects is not None:
            if score >= max(threshold, _STRONG):
                return self._intent(kind, name, score, entities)
            slot_entity = self._slot_entity(context.expects)
            free = slot_entity is not None and self.domain.entities[slot_entity].kind == "text"
            if free and (score >= threshold or looks_like_question(text)):
                # A free-text answer is safe only when it answers: a question or another
                # intent is handled as such (a digression), and the slot is asked again.
                return self._digression(kind, name, score, entities)
            if (
                entities
                and not correction
                and (
                    (free and not _only_values(text, found))
                    or (slot_entity is not None and self._bare_hour(slot_entity, text) is not None)
                )
            ):
                # Words beside the values ("Joe Friday", "Louis 14", "high chair for 1
                # baby"): the reply is the text asked for, not a change of the slots whose
                # values it happens to hold; and a bare "5" to "At what time?" is an hour,
                # not 5 people. A reply of values alone ("3", "to Lyon") or one that says it
                # corrects ("actually 3") still changes them.
                entities = []
            if not entities and slot_entity is not None:
                value = self._context_value(slot_entity, text)
                if value is not None:
                    entities = [
                        Entity(
                            entity=slot_entity,
                            value=value,
                            text=text.strip(),
                            slot=context.expects,
                            correction=correction,
                        )
                    ]
            if entities:
                entities = _answering(entities, context.expects, slot_entity)
                return Understanding(INFORM, entities, max(score, threshold))
        if score >= threshold:
            return self._intent(kind, name, score, entities)
        return Understanding("OOS", entities, score)

    def _digression(
        self, kind: str, name: str, score: float, entities: list[Entity]
    ) -> Understanding:
        if score >= self.domain.threshold:
            return self._intent(kind, name, score, entities)
        return Understanding("QUESTION", entities, score)

    def _slot_entity(self, slot: str) -> str | None:
        spec = self.domain.slots.get(slot)
        return spec.entity if spec is not None else None

    def _context_value(self, entity: str, text: str) -> JsonScalar:
        """A value read only because the question asked for it: a free-text reply, a bare
        hour ("3" for a time), or a choice said a little differently."""
        kind = self.domain.entities[entity].kind
        if kind == "text":
            return self.extractor.strip_text(entity, text) or None
        return self._bare_hour(entity, text)

    def _bare_hour(self, entity: str, text: str) -> str | None:
        """A bare hour ("3") said to a question for ``entity``, a time: its value."""
        bare = normalize(text)
        if self.domain.entities[entity].kind == "time" and re.fullmatch(r"\d{1,2}", bare):
            return f"{int(bare):02d}:00" if int(bare) < 24 else None
        return None

    def _intent(self, kind: str, name: str, score: float, entities: list[Entity]) -> Understanding:
        if kind == "faq":
            return Understanding("QUESTION", entities, score, match=name)
        if kind == "small_talk":
            return Understanding("SMALL_TALK", entities, score, match=name)
        return Understanding(name, entities, score, match=name)


class _LLMEntity(BaseModel):
    entity: str
    value: str | int | float


class _LLMCommand(BaseModel):
    command: Literal["set_slot", "correct_slot", "cancel"]
    slot: str | None = None
    value: str | int | float | None = None


class LLMAnswer(BaseModel):
    """The structured answer the LLM recogniser asks for."""

    intent: str = Field(description="an intent name, a FAQ id, QUESTION, SMALL_TALK or OOS")
    entities: list[_LLMEntity] = []
    commands: list[_LLMCommand] = []


class LLMRecognizer:
    """Asks ``ctx.llm`` for intent, entities and commands; the offline recogniser answers when
    there is no LLM or it fails (timeout, refused connection, an answer off the schema).

    Personal slots (``pii``) stay out of prompts unless the domain opts them in
    (``send_to_llm``): their known values are masked like in logs, and the reply to a
    question for one is understood offline, so the value never reaches the model.
    """

    def __init__(self, domain: Domain, fallback: OfflineRecognizer | None = None) -> None:
        self.domain = domain
        self.offline = fallback or OfflineRecognizer(domain)
        self.private = frozenset(
            name for name, slot in domain.slots.items() if slot.pii and not slot.send_to_llm
        )

    def understand(self, text: str, context: TurnContext, llm: Any = None) -> Understanding:
        if llm is None or context.expects in self.private:
            return self.offline.understand(text, context)
        try:
            answer = llm.complete(self._prompt(text, context), schema=LLMAnswer).parsed
            parsed = answer if isinstance(answer, LLMAnswer) else LLMAnswer.model_validate(answer)
        except LLMError as exc:
            get_logger().info("dialogue_ir_fallback", error_type=type(exc).__name__)
            return self.offline.understand(text, context)
        return self._map(parsed, text, context)

    def _map(self, answer: LLMAnswer, text: str, context: TurnContext) -> Understanding:
        domain, parse = self.domain, self.offline.extractor.parse
        correction = is_correction(text)
        entities: list[Entity] = []
        for item in answer.entities:
            if _masked(item.value):
                continue
            value = parse(item.entity, item.value, context.today)
            if value is not None:
                entities.append(Entity(entity=item.entity, value=value, correction=correction))
        intent = answer.intent
        for command in answer.commands:
            if command.command == "cancel":
                intent = "cancel"
            elif command.slot in domain.slots and not _masked(command.value):
                slot = domain.slots[command.slot]
                if slot.entity is not None:
                    value = parse(slot.entity, command.value, context.today)
                else:  # a from_intent slot takes one of its values
                    known = command.value in slot.from_intent.values()
                    value = command.value if known else None
                if value is not None:
                    entities.append(
                        Entity(
                            entity=slot.entity or "",
                            value=value,
                            slot=command.slot,
                            correction=command.command == "correct_slot",
                        )
                    )
        spec = domain.intents.get(intent)
        if intent in domain.faq:
            return Understanding("QUESTION", entities, 1.0, "llm", match=intent)
        if spec is not None and spec.kind == "small_talk":
            return Understanding("SMALL_TALK", entities, 1.0, "llm", match=intent)
        # An event-only intent (``external: true``) never comes from typed text, whatever the
        # model says: a user must not be able to fake a sensor's or a system's event.
        typed = spec is not None and not spec.external
        known = typed or intent in ("QUESTION", "SMALL_TALK", INFORM, "cancel")
        if not known or (intent == "OOS" and entities and context.expects):
            intent = INFORM if entities and context.expects else "OOS"
        return Understanding(intent, entities, 1.0, "llm")

    def _prompt(self, text: str, context: TurnContext) -> list[dict[str, str]]:
        domain, lang = self.domain, context.lang
        intents = "\n".join(
            f"- {name} ({spec.kind}): {'; '.join(spec.examples.get(lang, [])[:2])}"
            for name, spec in domain.intents.items()
            if not spec.external
        )
        faq = "\n".join(f"- {n}: {f.questions.get(lang, [''])[0]}" for n, f in domain.faq.items())
        slots = "\n".join(
            f"- {n}: "
            + (
                domain.entities[s.entity].kind
                if s.entity is not None
                else "one of " + ", ".join(json.dumps(v) for v in s.from_intent.values())
            )
            for n, s in domain.slots.items()
        )
        # The same masking as logs: known personal values become ***.
        secrets = [str(v) for k, v in context.slots.items() if k in self.private and v]
        secrets += context.said
        history = "\n".join(f"{m.role}: {m.content}" for m in context.history[-4:])
        history, text = mask_text(history, secrets), mask_text(text, secrets)
        system = (
            "You are the language-understanding step of a task-oriented assistant. Classify "
            "the user's last message and extract slot values. Reply with JSON only: "
            '{"intent": ..., "entities": [{"entity": ..., "value": ...}], "commands": '
            '[{"command": "set_slot"|"correct_slot"|"cancel", "slot": ..., "value": ...}]}.\n'
            f"Intents (name (kind): examples):\n{intents}\n"
            f"FAQ ids (use the id as the intent for these questions):\n{faq or '- none'}\n"
            f"Slots (name: kind):\n{slots or '- none'}\n"
            "Use OOS for anything else, and `inform` when the message only gives slot values. "
            f"Dates are YYYY-MM-DD (today is {context.today.isoformat()}); times are HH:MM."
        )
        shots = few_shot(domain, self.offline.extractor, lang, context.today)
        if shots:
            system += f"\nExamples of messages and their answers:\n{few_shot_text(shots)}"
        expects = (
            f"The assistant just asked for slot `{context.expects}`.\n" if context.expects else ""
        )
        user = f"{expects}Conversation so far:\n{history or '(none)'}\n\nMessage: {text}"
        return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def from_intent(
    domain: Domain, slot: str, text: str, understood: Understanding
) -> Understanding | None:
    """The value of ``slot`` (the slot just asked for) its ``from_intent`` gives this reply: a
    bare yes or no (``affirm``/``deny``) or an intent it lists; ``None`` when it gives none.

    Only a bare yes or no counts ("no meat please" is a text answer, not a no), and a strong
    intent it does not list (a question, cancel, another task) is left to handle as usual.
    """
    mapping = domain.slots[slot].from_intent
    if not mapping:
        return None
    said = understood.match or understood.intent_type
    answer = bare_yes_no(text)
    key = {"yes": AFFIRM, "no": DENY}.get(answer or "")
    if key not in mapping:
        key = said if said in mapping else None
    if key is None:
        return None
    value = Entity(entity=domain.slots[slot].entity or "", value=mapping[key], text=text, slot=slot)
    others = [e for e in understood.entities if e.slot != slot]
    return Understanding(INFORM, [value, *others], 1.0, understood.source, match=key)


_NO_OPENER = re.compile(r"^(?:no|nope|nah|いいえ|いや)(?![a-z])[\s,.!、。]*", re.IGNORECASE)


def text_change(
    domain: Domain, offline: OfflineRecognizer, text: str, context: TurnContext, *, strict: bool
) -> Entity | None:
    """The new value of the goal's free-text slot (a name) that ``text`` gives while the user
    confirms or corrects: "Wait, it's Jane Foo" -> Jane Foo.

    Only when exactly one filled slot takes free text, and never for a question, a bare yes or
    no, text with other values in it or text that is another intent. ``strict`` (at a
    confirmation question) also needs a sign that a value follows: an opener that corrects
    (wait, actually, やっぱり) or a phrase the entity strips (it's, my name is); after "what
    would you like to change?" the text alone is the new value.
    """
    texts = [
        name
        for name in context.slots
        if name in domain.slots
        and domain.entities.get(domain.slots[name].entity or "") is not None
        and domain.entities[domain.slots[name].entity or ""].kind == "text"
    ]
    if len(texts) != 1 or bare_yes_no(text) is not None:
        return None
    slot = texts[0]
    entity = domain.slots[slot].entity or ""
    rest = opens_with_correction(text)
    opener = rest is not None
    candidate = rest if rest is not None else _NO_OPENER.sub("", text.strip())
    if not candidate or looks_like_question(candidate) or looks_like_question(text):
        return None
    if offline.extractor.extract(candidate, context.today):
        return None
    ranked = offline.scores(candidate)
    if ranked and ranked[0][0] >= domain.threshold:
        return None
    value = offline.extractor.strip_text(entity, candidate)
    stripped = normalize(value) != normalize(candidate.strip(" .,!?。、！？"))
    if not value or (strict and not (opener or stripped)):
        return None
    return Entity(entity=entity, value=value, text=text.strip(), slot=slot, correction=True)


def _answering(entities: list[Entity], slot: str, entity: str | None) -> list[Entity]:
    """The one value of the asked slot's entity said without a role answers that slot
    ("Berlin" after "From where?"), not the first free slot of the entity."""
    plain = [e for e in entities if e.entity == entity and e.role is None and e.slot is None]
    if len(plain) != 1:
        return entities
    return [e.model_copy(update={"slot": slot}) if e is plain[0] else e for e in entities]


#: Words that say nothing themselves beside a value ("to Lyon", "for 3", 「3人で」).
_FILLERS = frozenset(
    {
        *("a", "an", "the", "to", "for", "at", "on", "in", "of", "and", "with", "by", "from"),
        *("please", "it", "is", "its", "it's", "make", "change", "not", "but", "instead"),
        *("rather", "than", "or", "で", "に", "を", "は", "が", "の", "と", "です"),
    }
)


def _only_values(text: str, found: list[Found]) -> bool:
    """Whether ``text`` holds nothing but the values ``found`` in it (and fillers)."""
    rest = normalize(_remove_spans(text, found))
    return all(word in _FILLERS for word in rest.split())


def _masked(value: object) -> bool:
    """No value (or the mask the model saw instead of one) sets a slot."""
    return value is None or (isinstance(value, str) and MASK in value)


def _remove_spans(text: str, found: list[Found]) -> str:
    text = unicodedata.normalize("NFKC", text)
    for item in sorted(found, key=lambda f: -f.start):
        text = text[: item.start] + " " + text[item.end :]
    return text
