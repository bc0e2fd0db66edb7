"""Slot Evaluator (SE): checks every slot value against its rules; a refused value leaves
``slots`` and goes first in ``missing_slots``, so it is asked again with the reason.

One ``exec_trace`` entry per turn records what was filled, refused (reason codes) and
corrected, by slot name only; the policy (SFP) reads it to phrase the next question.
"""

from __future__ import annotations

from typing import Any

from ...definition._node import Context, Node, node
from ...dialogue.services import Services
from ...dialogue.state import DialogueState, Entity, TraceEntry
from ...dialogue.validation import check_value

__all__ = ["make_se"]


def make_se(services: Services) -> Node:
    domain = services.domain

    @node(
        reads=["slots", "missing_slots", "entities"],
        writes=["slots", "missing_slots", "exec_trace"],
    )
    def slot_evaluator(state: DialogueState, ctx: Context) -> dict[str, Any]:
        today = services.today(ctx)
        slots = dict(state.slots)

        def saying(name: str) -> list[Entity]:
            """This turn's entities that name slot ``name``'s value (a role: its slot's)."""
            spec = domain.slots[name]
            return [
                e
                for e in state.entities
                if (e.entity, e.value) == (spec.entity or "", slots[name])
                and e.role in (None, spec.role)
            ]

        filled = [name for name in slots if name in domain.slots and saying(name)]
        corrected = [name for name in filled if any(e.correction for e in saying(name))]
        rejected: dict[str, dict[str, Any]] = {}
        for name, value in list(slots.items()):
            if name not in domain.slots:
                continue
            problem = check_value(domain, name, value, today)
            if problem is not None:
                code, params = problem
                rejected[name] = {"reason": code, **params}
                del slots[name]
        # Asked again first, with the reason; an optional slot only where it has a question
        # (it is asked this turn only, and never blocks its goal).
        again = [n for n in rejected if domain.slots[n].required or domain.slots[n].question]
        missing = [*again, *(m for m in state.missing_slots if m not in rejected)]
        entry = TraceEntry(
            node="SE",
            kind="slots",
            detail={
                "filled": [n for n in filled if n not in rejected],
                "rejected": rejected,
                "corrected": [n for n in corrected if n not in rejected],
                "missing": missing,
            },
        )
        return {"slots": slots, "missing_slots": missing, "exec_trace": [entry]}

    return slot_evaluator
