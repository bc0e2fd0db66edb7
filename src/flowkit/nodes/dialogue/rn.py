"""Response Nodes (RN): render the plan as the assistant's reply and append it to messages.

``RN_template`` fills the response template; ``RN_llm`` lets the runner's LLM phrase it and
falls back to the template without an LLM or on any LLM failure. The reply remembers the slot
it asks for (``expects``), which IR uses to read the next message.
"""

from __future__ import annotations

from typing import Any

from ...definition._node import Context, Node, node
from ...dialogue.confirm import CHANGE, CONFIRM
from ...dialogue.events import current_event
from ...dialogue.forms import CONTINUE
from ...dialogue.services import Services
from ...dialogue.state import ChatMessage, DialogueState, ResponsePlan

__all__ = ["make_rn"]

_READS = ["response_plan", "clarifying_question", "goal_state", "slots", "messages", "exec_trace"]
_WRITES = ["final_answer", "messages"]
#: The question a digression comes back to, by what it asked for.
_AGAIN = {CONFIRM: "confirm_goal", CHANGE: "confirm_declined", CONTINUE: "continue_goal"}


def make_rn(services: Services, *, llm: bool) -> Node:
    renderer, domain = services.renderer, services.domain

    def respond(state: DialogueState, ctx: Context) -> dict[str, Any]:
        plan = state.response_plan
        assert plan is not None, "RP guarantees a plan"
        question = state.clarifying_question if (plan.by == "SFP" or plan.resume) else None
        if plan.resume and plan.slot in domain.slots:
            # Back to the slot that was asked for: its own question (the one SFP asked last
            # may be another slot's, when a goal's refusal asked this one again).
            question = domain.text(domain.slots[plan.slot].question, plan.lang) or question
        elif plan.resume and plan.slot in _AGAIN:
            # Back from a digression to a confirmation (or "continue?") question: ask it
            # again, as GP did.
            again = ResponsePlan(id=_AGAIN[plan.slot], by="GP", lang=plan.lang, slot=plan.slot)
            question = renderer.render(again, state.goal_state, state.slots, None)
        args = (plan, state.goal_state, state.slots, question)
        text = renderer.generate(ctx.llm, *args) if llm else renderer.render(*args)
        event = current_event(state)
        reply = ChatMessage(
            role="assistant",
            content=text,
            lang=plan.lang,
            response_id=plan.id,
            expects=plan.slot,
            # The answer to a reminder delivers it (events.py).
            event=event if event is not None and event.id is not None else None,
        )
        return {"final_answer": text, "messages": [reply]}

    respond.__name__ = "response_llm" if llm else "response_template"
    return node(respond, reads=_READS, writes=_WRITES)
