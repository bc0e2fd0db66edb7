"""Non-task Policy (NP): answers QUESTION from the FAQ, SMALL_TALK with its response, and OOS
with the fallback; a goodbye ends the conversation.

When the previous reply asked for a slot, the plan carries that question forward (``resume``)
so the digression does not lose the form the user was filling in.
"""

from __future__ import annotations

from typing import Any

from ...definition._node import Node, node
from ...dialogue.events import current_event
from ...dialogue.services import Services
from ...dialogue.state import DialogueState, NextAction, ResponsePlan

__all__ = ["make_np"]


def make_np(services: Services) -> Node:
    domain, offline, renderer = services.domain, services.offline, services.renderer

    @node(reads=["intent_type", "messages", "exec_trace"], writes=["next_action", "response_plan"])
    def non_task_policy(state: DialogueState) -> dict[str, Any]:
        text, lang = state.last_user_message, state.lang()
        asked = next((m for m in reversed(state.messages) if m.role == "assistant"), None)
        pending = asked.expects if asked is not None else None
        params: dict[str, Any] = {}
        action: NextAction = "respond"
        if state.intent_type == "QUESTION":
            faq, _ = offline.best(text, ("faq",))
            response = "faq_answer" if faq else "faq_unknown"
            if faq:
                params["answer"] = domain.text(domain.faq[faq].answer, lang)
        elif state.intent_type == "SMALL_TALK":
            event = current_event(state)
            name = event.intent if event else offline.best(text, ("small_talk",))[0]
            spec = domain.intents[name] if name else None
            response = spec.response if spec and spec.response else "fallback"
            if spec is not None and spec.ends_conversation:
                action = "end"
        else:
            response, action = "fallback", "fallback"
        plan = ResponsePlan(
            id=response,
            by="NP",
            lang=lang,
            style=renderer.style(response),
            slot=pending if action != "end" else None,
            params=params,
            resume=pending is not None and action != "end",
        )
        return {"next_action": action, "response_plan": plan}

    return non_task_policy
