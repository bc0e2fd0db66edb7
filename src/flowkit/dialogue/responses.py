"""Response generation: templates per response id and language (the default), and optional
LLM phrasing that falls back to the template on any ``LLMError`` or when no LLM is set.

Templates use ``{name}`` placeholders filled from the plan's parameters, the slot values
(choice values shown by their label in the reply's language), the goal's step and title, and
``{summary}``, the goal's filled slots (``label: value, ...``, for confirmation questions).
Personal slot values never reach the LLM: they go in as placeholders and are put back after.
"""

from __future__ import annotations

import re
import string
from collections.abc import Mapping
from typing import Any

from ..errors import LLMError
from ..foundation._logging import get_logger
from ._defaults import BUILTIN_RESPONSES
from ._models import Domain
from .state import GoalState, JsonScalar, ResponsePlan
from .validation import slot_label

__all__ = ["Renderer", "goal_name"]

_FIELDS = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


class _Values(dict[str, Any]):
    def __missing__(self, key: str) -> str:
        return "{" + key + "}"  # a visible gap beats a crash in front of a user


class Renderer:
    """Turns a ``ResponsePlan`` into text for one domain."""

    def __init__(self, domain: Domain) -> None:
        self.domain = domain

    def template(self, response_id: str, lang: str) -> str:
        spec = self.domain.responses.get(response_id)
        texts: Mapping[str, str] = spec.text if spec else {}
        builtin = BUILTIN_RESPONSES.get(response_id, {})
        return (
            texts.get(lang)
            or builtin.get(lang)
            or self.domain.text({**builtin, **texts}, lang, response_id)
        )

    def style(self, response_id: str) -> str:
        spec = self.domain.responses.get(response_id)
        return (spec.style if spec and spec.style else None) or self.domain.style

    def display(self, slot: str, value: JsonScalar, lang: str) -> str:
        """A slot value as the user should read it (a choice value by its label)."""
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
        template = self.template(plan.id, plan.lang)
        text = template.format_map(_Values(values))
        if template.startswith("{goal}"):
            text = text[:1].upper() + text[1:]  # a goal named after its id opens a sentence
        parts.append(text)
        if plan.resume and question:
            parts.append(self.template("resume_goal", plan.lang).format_map(_Values(values)))
        joiner = "" if plan.lang == "ja" else " "
        return joiner.join(p.strip() for p in parts if p and p.strip())

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


def goal_name(goal: str) -> str:
    """A goal without a ``title`` as users read it: ``book_flight`` -> ``book flight``."""
    return goal.replace("_", " ").strip()


def placeholders(template: str) -> list[str]:
    """The ``{name}`` fields of a template (for checks and docs)."""
    return [name for _, name, _, _ in string.Formatter().parse(template) if name]
