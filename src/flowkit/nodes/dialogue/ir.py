"""Intent Recognition (IR): the user's text -> ``intent_type`` and ``entities``.

The domain's recogniser answers (offline by default; the LLM one when configured, which falls
back to offline on any LLM failure). The slot the assistant just asked for comes from the last
assistant message, so a bare "3 pm" or 「佐藤です」 is understood as an answer to it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..._node import Context, Node, node
from ...dialogue.nlu import TurnContext
from ...dialogue.state import DialogueState

if TYPE_CHECKING:
    from ...dialogue.services import Services

__all__ = ["make_ir"]


def make_ir(services: Services) -> Node:
    @node(reads=["user_text", "messages", "slots"], writes=["intent_type", "entities"])
    def intent_recognition(state: DialogueState, ctx: Context) -> dict[str, Any]:
        asked = next((m for m in reversed(state.messages) if m.role == "assistant"), None)
        context = TurnContext(
            expects=asked.expects if asked is not None else None,
            lang=state.lang(),
            today=services.today(ctx),
            history=tuple(state.messages[-7:-1]),
            slots=dict(state.slots),
        )
        understood = services.recognizer.understand(state.user_text, context, ctx.llm)
        ctx.log.debug(
            "dialogue_ir",
            intent_type=understood.intent_type,
            confidence=round(understood.confidence, 3),
            source=understood.source,
            entities=[e.entity for e in understood.entities],
        )
        return {"intent_type": understood.intent_type, "entities": understood.entities}

    return intent_recognition
