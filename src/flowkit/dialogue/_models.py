"""The dialogue domain's data models: intents, FAQ, entities, slots, goals, actions and
responses as pydantic models, the intent names IR reserves, and the domain's time zone.

This is the bottom of the package: it imports nothing else of ``flowkit.dialogue``. Loading a
domain from a file and reporting its problems is ``domain`` (via ``_report`` and ``_checks``);
``domain`` re-exports every name here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import UTC, timedelta, timezone, tzinfo
from typing import Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ..errors import DomainError

__all__ = [
    "AFFIRM",
    "CONTROL_INTENTS",
    "DENY",
    "INFORM",
    "NON_TASK_INTENTS",
    "UNCLEAR",
    "ActionSpec",
    "Domain",
    "EntitySpec",
    "FaqSpec",
    "GoalSpec",
    "IntentSpec",
    "Mode",
    "ResponseSpec",
    "SlotSpec",
    "Style",
    "ValidationSpec",
    "WhenSpec",
    "domain_json_schema",
    "parse_timezone",
]

#: Seed 001 §2.1.1: intent types that never enter the task branch (GST).
NON_TASK_INTENTS = ("OOS", "QUESTION", "SMALL_TALK")
#: Built-in control intents a domain gives phrases for; GST gives them their meaning.
CONTROL_INTENTS = ("cancel", "next", "back", "repeat")
#: The intent IR reports when the user only supplies slot values ("3 pm", 「佐藤です」).
INFORM = "inform"
#: IR's answers to a confirmation question (``goals.<name>.confirm``): yes, no, and anything
#: it did not understand as either (the question is asked again).
AFFIRM = "affirm"
DENY = "deny"
UNCLEAR = "unclear"

Mode = Literal["SLOT_FILLING", "STEP_BY_STEP"]
Style = Literal["template", "llm"]


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class IntentSpec(_Spec):
    """An intent: what it means (``kind``) and how users say it, per language."""

    kind: Literal["task", "control", "small_talk"] = Field(
        "task", description="task: starts a goal; control: cancel/next/back/repeat; small_talk"
    )
    examples: dict[str, list[str]] = Field({}, description="language -> example utterances")
    keywords: dict[str, list[str]] = Field({}, description="language -> words that signal it")
    response: str | None = Field(None, description="small_talk: the response id to answer with")
    ends_conversation: bool = Field(False, description="small_talk: finish the conversation")
    external: bool = Field(
        False,
        description=(
            "an event's intent: triggered from outside or scheduled by an action (a reminder), "
            "never recognised in typed text, so it needs no examples"
        ),
    )


class FaqSpec(_Spec):
    """A question the assistant answers (intent type ``QUESTION``)."""

    questions: dict[str, list[str]] = Field(description="language -> ways to ask it")
    keywords: dict[str, list[str]] = {}
    answer: dict[str, str] = Field(description="language -> the answer")


class EntitySpec(_Spec):
    """How to find a value in an utterance.

    ``regex``: ``patterns`` (a group named ``value`` picks the value); ``choice``: canonical
    ``values`` with synonyms per language (fuzzy-matched); ``number`` (digits or words:
    three, twenty-one, 三つ, 二十一); ``amount`` (a number with or without its currency: fifty
    dollars, $1,200, 五十ドル; the value is the number); ``date`` (today,
    tomorrow, 3/14, 3月14日 ...); ``time`` (3 pm, 15:00, 15時半 ...); ``text``: the whole reply
    to the question for a slot, minus ``strip`` phrases (my name is, です).
    """

    kind: Literal["regex", "choice", "number", "amount", "date", "time", "text"]
    patterns: list[str] = []
    roles: dict[str, dict[str, list[str]]] = Field(
        {},
        description=(
            "role -> language -> cue words that give a value that role when said next to it "
            "(English: before it, `from Berlin`; Japanese: after it, `ベルリンから`). `origin` "
            "and `destination` have built-in cues (from/to, から/まで/へ)"
        ),
    )
    values: dict[str, dict[str, list[str]]] = Field(
        {}, description="choice: canonical value -> language -> synonyms"
    )
    strip: dict[str, list[str]] = Field({}, description="text: phrases removed around the value")


class ValidationSpec(_Spec):
    """Rules a slot value must pass; a failure is re-asked with the reason."""

    min: float | None = None
    max: float | None = None
    whole: bool = Field(False, description="a number: a whole one (a count of people, not 2.5)")
    min_length: int | None = Field(None, ge=0)
    max_length: int | None = Field(None, ge=1)
    pattern: str | None = None
    not_past: bool = False
    max_days_ahead: int | None = Field(None, ge=0)
    earliest: str | None = Field(None, pattern=r"^\d{2}:\d{2}$")
    latest: str | None = Field(None, pattern=r"^\d{2}:\d{2}$")
    messages: dict[str, dict[str, str]] = Field(
        {},
        description=(
            "rule -> language -> this slot's reason for refusing a value (e.g. `earliest: "
            "{en: We open at {earliest}.}`); without one, the domain's `reason_<rule>` "
            "response, else the built-in text"
        ),
    )


class SlotSpec(_Spec):
    """A piece of information a goal collects, the question that asks for it, and its rules."""

    entity: str | None = Field(
        None, description="the entity that fills this slot (optional with `from_intent`)"
    )
    from_intent: dict[str, str | bool | int | float] = Field(
        {},
        description=(
            "intent -> the value this slot takes when the user answers its question with that "
            "intent; `affirm` and `deny` are a bare yes and no (read offline, English and "
            "Japanese): {affirm: true, deny: false}"
        ),
    )
    role: str | None = Field(
        None,
        description=(
            "when several slots take one entity: the role of the values this slot takes "
            "(origin, destination, or a role the entity's `roles` define)"
        ),
    )
    question: dict[str, str] = Field(description="language -> the question asking for it")
    label: dict[str, str] = Field({}, description="language -> display name")
    required: bool = Field(
        True,
        description=(
            "false: filled when the user gives it, never asked for, never blocks the goal; "
            "the action gets it when given"
        ),
    )
    pii: bool = Field(False, description="personal data: masked in logs, events and errors")
    send_to_llm: bool = Field(
        False, description="with pii: the value may reach an LLM (else masked in its prompts)"
    )
    validation: ValidationSpec = ValidationSpec()


class GoalSpec(_Spec):
    """A task: the intent that starts it, its mode, its slots or steps, and its action."""

    intent: str
    mode: Mode
    title: dict[str, str] = Field({}, description="language -> name shown to the user")
    slots: list[str] = Field(
        [], description="SLOT_FILLING: its slots; the required ones are asked in order"
    )
    steps: list[dict[str, str]] = Field([], description="STEP_BY_STEP: language -> step text")
    action: str | None = Field(None, description="run when the slots are filled / steps done")
    confirm: bool = Field(
        False,
        description=(
            "SLOT_FILLING with an action: once the required slots are filled, show them and "
            "run the action only after the user says yes"
        ),
    )
    done: str = Field("goal_done", description="response id when the goal completes")


class ActionSpec(_Spec):
    """An action goals run; ``handler`` is ``module:function`` (default: record the slots)."""

    handler: str | None = Field(None, pattern=r"^[\w.]+:[\w.]+$")
    description: str = ""


#: A response text per language: one template, or variations of which one is said per reply.
Texts = dict[str, str | list[str]]
_RESPONSE_KEYS = ("style", "when", "then")


class WhenSpec(_Spec):
    """A variant of a response said when the slots have these values (``when:``)."""

    slots: dict[str, str | bool | int | float | list[str | bool | int | float] | None] = Field(
        description=(
            "slot -> the value it must have (a list: any of them; null: the slot is not "
            "filled); every slot listed must match"
        )
    )
    text: Texts = Field(description="language -> template, or a list of variations")


class ResponseSpec(_Spec):
    """A response template per language; ``style: llm`` lets an LLM phrase it (optional).

    A list of texts is a set of variations (one is chosen per reply); ``when`` gives variants
    for slot values (the first that matches is said instead); ``then`` names responses sent
    after this one in the same turn, each as a message of its own.
    """

    text: Texts
    style: Style | None = None
    when: list[WhenSpec] = Field(
        [], description="variants by slot value; the first whose `slots` all match is said"
    )
    then: list[str] = Field(
        [], description="response ids sent after this one in the same turn, one message each"
    )

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, data: Any) -> Any:
        # `greet: {en: Hi, ja: こんにちは}` is the common case; `text:` only when adding more.
        if isinstance(data, Mapping) and "text" not in data:
            more = {k: data[k] for k in _RESPONSE_KEYS if k in data}
            text = {k: v for k, v in data.items() if k not in _RESPONSE_KEYS}
            return {"text": text, **more}
        return data

    def first(self, lang: str) -> str | None:
        """The text in ``lang`` (its first variation), for messages that take no variations."""
        said = self.text.get(lang)
        if isinstance(said, list):
            return said[0] if said else None
        return said or None


class Domain(_Spec):
    """A whole dialogue domain. Build a flow from it with ``flowkit.dialogue.build_flow``."""

    version: Literal[1] = 1
    name: str = Field(pattern=r"^[a-z][a-z0-9_-]*$")
    description: str = ""
    languages: list[str] = Field(["en"], min_length=1)
    timezone: str = Field(
        "UTC",
        description=(
            "Where the domain's users are: UTC (default), a fixed offset such as +09:00, or an "
            "IANA name such as Asia/Tokyo. The current date there is what today/tomorrow/next "
            "Monday mean and what not_past/max_days_ahead compare with; dates and times users "
            "give are local to it and stored as said, never converted."
        ),
        examples=["UTC", "+09:00", "Asia/Tokyo"],
    )
    threshold: float = Field(0.6, ge=0, le=1, description="below this, an utterance is OOS")
    style: Style = Field("template", description="default response generation")
    persona: dict[str, str] = Field({}, description="language -> system prompt for LLM replies")
    result_inline_bytes: int = Field(1024, ge=0, description="larger results go by reference")
    anything_else: bool = Field(
        False,
        description=(
            "after a task completes, also ask whether there is anything else (the "
            "`anything_else` response, its own message)"
        ),
    )
    intents: dict[str, IntentSpec]
    faq: dict[str, FaqSpec] = {}
    entities: dict[str, EntitySpec] = {}
    slots: dict[str, SlotSpec] = {}
    goals: dict[str, GoalSpec] = {}
    actions: dict[str, ActionSpec] = {}
    responses: dict[str, ResponseSpec] = {}

    @property
    def default_language(self) -> str:
        return self.languages[0]

    def goal_for_intent(self, intent: str) -> str | None:
        for name, goal in self.goals.items():
            if goal.intent == intent:
                return name
        return None

    def required_slots(self, goal: str) -> list[str]:
        """The slots ``goal`` asks for, in order (its slots without ``required: false``)."""
        return [s for s in self.goals[goal].slots if s not in self.slots or self.slots[s].required]

    def pii_slots(self) -> frozenset[str]:
        return frozenset(name for name, slot in self.slots.items() if slot.pii)

    def text(self, localized: Mapping[str, str], lang: str, fallback: str = "") -> str:
        """``localized`` in ``lang``, else in the default language, else ``fallback``."""
        return localized.get(lang) or localized.get(self.default_language) or fallback


def domain_json_schema() -> dict[str, Any]:
    """The JSON schema of a domain file (``schemas/dialogue-domain.schema.json``)."""
    schema = Domain.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = "https://flowkit.dev/schemas/dialogue-domain.schema.json"
    return schema


def parse_timezone(name: str) -> tzinfo:
    """``UTC``, an offset such as ``+09:00``, or an IANA name such as ``Asia/Tokyo``."""
    if name.upper() in ("UTC", "Z"):
        return UTC
    offset = re.fullmatch(r"([+-])(\d{2}):?(\d{2})", name)
    if offset:
        sign = 1 if offset[1] == "+" else -1
        return timezone(sign * timedelta(hours=int(offset[2]), minutes=int(offset[3])))
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise DomainError(
            [f"timezone: `{name}` is unknown; use UTC, an offset like +09:00, or an IANA name"]
        ) from exc
