"""Slot Filling Policy (SFP): asks for the first missing slot, in the user's language.

A value SE refused this turn is asked again with the reason ("The earliest possible time is
08:00."), and corrections are acknowledged ("Changed time to 15:00."). SFP only runs while a
slot is missing (seed 001 §5.3), so it always has a question to ask.
"""

from __future__ import annotations

from typing import Any

from ...definition._node import Node, node
from ...dialogue.services import Services
from ...dialogue.state import DialogueState, ResponsePlan
from ...dialogue.validation import reason_text

__all__ = ["make_sfp"]


def make_sfp(services: Services) -> Node:
    domain, renderer = services.domain, services.renderer

    @node(
        reads=["slots", "missing_slots", "messages", "exec_trace"],
        writes=["next_action", "clarifying_question", "response_plan"],
    )
    def slot_filling_policy(state: DialogueState) -> dict[str, Any]:
        lang = state.lang()
        slot = state.missing_slots[0]
        question = domain.text(domain.slots[slot].question, lang)
        check = state.exec_trace[-1].detail if state.exec_trace else {}
        refused = check.get("rejected", {}).get(slot)
        params: dict[str, Any] = {}
        response = "ask_slot"
        if refused is not None:
            response = "slot_invalid"
            details = {k: v for k, v in refused.items() if k != "reason"}
            params["reason"] = reason_text(domain, slot, refused["reason"], details, lang)
        plan = ResponsePlan(
            id=response,
            by="SFP",
            lang=lang,
            style=renderer.style(response),
            slot=slot,
            params=params,
            corrected=[s for s in check.get("corrected", []) if s in state.slots],
        )
        return {"next_action": "clarify", "clarifying_question": question, "response_plan": plan}

    return slot_filling_policy
