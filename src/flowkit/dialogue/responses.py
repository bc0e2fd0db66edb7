"""Response generation: templates per response id and language (the default), and optional
LLM phrasing that falls back to the template on any ``LLMError`` or when no LLM is set.

Templates use ``{name}`` placeholders filled from the plan's parameters, the slot values
(choice values shown by their label in the reply's language), the goal's step and title, and
``{summary}``, the goal's filled slots (``label: value, ...``, for confirmation questions).
Personal slot values never reach the LLM: they go in as placeholders and are put back after.

A response may have variations (a list of texts: one is chosen per reply, by a random number
generator that ``seed`` makes repeatable), variants by slot value (``when:``, the first whose
slots all match), and responses that follow it in the same turn (``then:``), each its own
message; so does "anything else?" after a finished task when the domain asks for it
(``anything_else: true``). The messages of one reply are separated by a line break.
"""

from __future__ import annotations

import random
import re
import string
from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import LLMError
from ..foundation._logging import get_logger
from ._defaults import BUILTIN_RESPONSES
from ._models import Domain, WhenSpec
from .state import GoalState, JsonScalar, ResponsePlan
from .validation import slot_label

__all__ = ["MESSAGE_BREAK", "Renderer", "asked_anything_else", "goal_name", "matches"]

_FIELDS = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
#: Between the messages of one reply (a response and the ones that follow it).
MESSAGE_BREAK = "\n"
_MAX_FOLLOWING = 8  # `then` chains are checked for loops; this bounds a long one


def _same(expected: object, actual: object) -> bool:
    if isinstance(expected, bool) or isinstance(actual, bool):
        return expected is actual
    return expected == actual or str(expected) == str(actual)


def matches(when: WhenSpec, slots: Mapping[str, JsonScalar]) -> bool:
    """Whether every slot ``when`` lists has its value (one of a list; ``null``: unfilled)."""
    for name, expected in when.slots.items():
        actual = slots.get(name)
        if expected is None:
            if actual is not None:
                return False
        elif isinstance(expected, list):
            if actual is None or not any(_same(e, actual) for e in expected):
                return False
        elif actual is None or not _same(expected, actual):
            return False
    return True


class _Values(dict[str, Any]):
    def __missing__(self, key: str) -> str:
        return "{" + key + "}"  # a visible gap beats a crash in front of a user


class Renderer:
    """Turns a ``ResponsePlan`` into text for one domain."""

    def __init__(self, domain: Domain, *, seed: int | None = None) -> None:
        self.domain = domain
        self._random = random.Random(seed)

    def _pick(self, said: str | Sequence[str]) -> str:
        if isinstance(said, str):
            return said
        return self._random.choice(list(said)) if said else ""

    def template(
        self, response_id: str, lang: str, slots: Mapping[str, JsonScalar] | None = None
    ) -> str:
        """The template to fill: the first ``when`` variant the ``slots`` match that has
        text in ``lang``, else the response's text (one of its variations), else built-in."""
        spec = self.domain.responses.get(response_id)
        if spec is not None and slots is not None:
            for variant in spec.when:
                if variant.text.get(lang) and matches(variant, slots):
                    return self._pick(variant.text[lang])
        texts = spec.text if spec else {}
        builtin = BUILTIN_RESPONSES.get(response_id, {})
        said = texts.get(lang) or builtin.get(lang)
        if not said:
            fallback = texts.get(self.domain.default_language) or builtin.get(
                self.domain.default_language
            )
            said = fallback or response_id
        return self._pick(said)

    def following(self, response_id: str) -> list[str]:
        """The responses that follow ``response_id`` in the same turn (``then``, in order)."""
        found: list[str] = []
        todo = list(reversed(self._then(response_id)))
        while todo and len(found) < _MAX_FOLLOWING:
            rid = todo.pop()
            if rid == response_id or rid in found:
                continue
            found.append(rid)
            todo += reversed(self._then(rid))
        return found

    def _then(self, response_id: str) -> list[str]:
        spec = self.domain.responses.get(response_id)
        return list(spec.then) if spec else []

    def style(self, response_id: str) -> str:
        spec = self.domain.responses.get(response_id)
        return (spec.style if spec and spec.style else None) or self.domain.style

    def display(self, slot: str, value: JsonScalar, lang: str) -> str:
        """A slot value as the user should read it (a choice value by its label, a yes or
        no in the user's language)."""
        if isinstance(value, bool):
            return _YES_NO.get(lang, _YES_NO["en"])[0 if value else 1]
        entity = self.domain.entities.get(self.domain.slots[slot].entity or "")
        if entity is not None and entity.kind == "choice" and isinstance(value, str):
            synonyms = entity.values.get(value, {}).get(lang) or []
            return synonyms[0] if synonyms else value
        return "" if value is None else str(value)

    def summary(self, names: list[str], slots: Mapping[str, JsonScalar], lang: str) -> str:
        """The filled ones of ``names`` as the user reads them: ``label: value, ...``.

        Computed when the reply is rendered, never stored in the plan, so a personal value
        stays out of ``response_plan``; ``generate`` hides it from the LLM like any other.
        """
        sep, join = ("：", "、") if lang == "ja" else (": ", ", ")
        return join.join(
            f"{slot_label(self.domain, name, lang)}{sep}{self.display(name, slots[name], lang)}"
            for name in names
            if slots.get(name) is not None and name in self.domain.slots
        )

    def values(
        self, plan: ResponsePlan, goal: GoalState, slots: Mapping[str, JsonScalar]
    ) -> dict[str, Any]:
        lang = plan.lang
        values: dict[str, Any] = {
            name: self.display(name, value, lang)
            for name, value in slots.items()
            if name in self.domain.slots
        }
        spec = self.domain.goals.get(goal.goal or "")
        if spec is not None:
            values["goal"] = self.domain.text(spec.title, lang, goal_name(goal.goal or ""))
            values["summary"] = self.summary(spec.slots, slots, lang)
            values["total"] = len(spec.steps)
            if goal.current_step is not None and spec.steps:
                index = min(goal.current_step, len(spec.steps) - 1)
                values["step"] = index + 1
                values["step_text"] = self.domain.text(spec.steps[index], lang)
        values.update(goal.result)
        values.update(plan.params)
        if plan.slot in self.domain.slots:
            values.setdefault("label", slot_label(self.domain, plan.slot, lang))
        return values

    def render(
        self,
        plan: ResponsePlan,
        goal: GoalState,
        slots: Mapping[str, JsonScalar],
        question: str | None,
    ) -> str:
        """The reply for ``plan``: corrections acknowledged, the template, a pending question."""
        values = self.values(plan, goal, slots)
        if question:
            values.setdefault("question", question)
        parts = [self._corrections(plan, slots)]
        parts.append(self._fill(plan.id, plan.lang, values, slots))
        if plan.resume and question:
            parts.append(self.template("resume_goal", plan.lang).format_map(_Values(values)))
        joiner = "" if plan.lang == "ja" else " "
        messages = [joiner.join(p.strip() for p in parts if p and p.strip())]
        following = self.following(plan.id)
        if self._finished(plan, goal):
            following.append("anything_else")
        messages += [self._fill(rid, plan.lang, values, slots).strip() for rid in following]
        return MESSAGE_BREAK.join(m for m in messages if m)

    def _fill(
        self, response_id: str, lang: str, values: dict[str, Any], slots: Mapping[str, JsonScalar]
    ) -> str:
        template = self.template(response_id, lang, slots)
        text = template.format_map(_Values(values))
        if template.startswith("{goal}"):
            text = text[:1].upper() + text[1:]  # a goal named after its id opens a sentence
        return text

    def _finished(self, plan: ResponsePlan, goal: GoalState) -> bool:
        """A task just completed and the domain asks "anything else?" after one."""
        spec = self.domain.goals.get(goal.goal or "")
        return (
            self.domain.anything_else
            and spec is not None
            and goal.status == "completed"
            and plan.by == "GP"
            and plan.id == spec.done
        )

    def _corrections(self, plan: ResponsePlan, slots: Mapping[str, JsonScalar]) -> str:
        notes = []
        for slot in plan.corrected:
            if slot in slots:
                values = {
                    "label": slot_label(self.domain, slot, plan.lang),
                    "value": self.display(slot, slots[slot], plan.lang),
                }
                notes.append(self.template("slot_corrected", plan.lang).format_map(_Values(values)))
        return ("" if plan.lang == "ja" else " ").join(notes)

    def generate(
        self,
        llm: Any,
        plan: ResponsePlan,
        goal: GoalState,
        slots: Mapping[str, JsonScalar],
        question: str | None,
    ) -> str:
        """LLM phrasing of the rendered template; the template itself on any failure."""
        text = self.render(plan, goal, slots, question)
        if llm is None:
            return text
        hidden = self._hide(text, slots, plan.lang)
        persona = self.domain.text(self.domain.persona, plan.lang, "You are a helpful assistant.")
        messages = [
            {
                "role": "system",
                "content": f"{persona} Rephrase the draft reply naturally in the "
                f"language `{plan.lang}`. Keep every fact and every {{placeholder}} unchanged. "
                "Answer with the reply only.",
            },
            {"role": "user", "content": hidden},
        ]
        try:
            answer = llm.complete(messages).text.strip()
        except LLMError as exc:
            get_logger().info("dialogue_rn_fallback", error_type=type(exc).__name__)
            return text
        if not answer:
            return text
        return self._reveal(answer, slots, plan.lang)

    def _pii(self, slots: Mapping[str, JsonScalar], lang: str) -> dict[str, str]:
        return {
            name: self.display(name, slots[name], lang)
            for name in self.domain.pii_slots()
            if slots.get(name) not in (None, "")
        }

    def _hide(self, text: str, slots: Mapping[str, JsonScalar], lang: str) -> str:
        for name, value in self._pii(slots, lang).items():
            text = text.replace(value, "{" + name + "}")
        return text

    def _reveal(self, text: str, slots: Mapping[str, JsonScalar], lang: str) -> str:
        pii = self._pii(slots, lang)
        return _FIELDS.sub(lambda m: pii.get(m.group(1), m.group(0)), text)


#: A yes-or-no slot's value as the user reads it, by language.
_YES_NO = {"en": ("yes", "no"), "ja": ("はい", "いいえ")}


def asked_anything_else(domain: Domain, response_id: str | None) -> bool:
    """Whether a reply with ``response_id`` ended on "anything else?" (a task's ``done``
    response in a domain with ``anything_else: true``): a bare yes or no answers it."""
    return domain.anything_else and any(g.done == response_id for g in domain.goals.values())


def goal_name(goal: str) -> str:
    """A goal without a ``title`` as users read it: ``book_flight`` -> ``book flight``."""
    return goal.replace("_", " ").strip()


def placeholders(template: str) -> list[str]:
    """The ``{name}`` fields of a template (for checks and docs)."""
    return [name for _, name, _, _ in string.Formatter().parse(template) if name]
