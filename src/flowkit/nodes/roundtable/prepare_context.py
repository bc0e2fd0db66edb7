"""``prepare_context``: the nominated character takes the turn; its prompt is assembled from
the rules, its persona, the others at the table, the conversation so far and the memory.

Everything the last turn left behind (reply, nomination, error) is cleared here, so each
turn's routes see only that turn.
"""

from __future__ import annotations

import os
from typing import Any

from ...definition._node import Context, Node, node
from ...foundation._logging import log_content
from ...roundtable._defaults import NO_MEMORY
from ...roundtable.prompt import describe_others, other_characters, render_template
from ...roundtable.services import Services
from ...roundtable.state import RoundtableState

__all__ = ["make_prepare_context"]


def make_prepare_context(services: Services) -> Node:
    config = services.config
    nothing = NO_MEMORY.get(config.language, NO_MEMORY["en"])

    @node(
        reads=[
            "next_internal_id",
            "registry",
            "conversation_log",
            "user_input",
            "memory_context",
        ],
        writes=[
            "current_internal_id",
            "current_display_name",
            "persona_prompt",
            "prompt",
            "request_id",
            "last_response_text",
            "display_text",
            "nomination",
            "refusal",
            "decision_reason",
            "next_internal_id",
            "next_display_name",
            "error",
        ],
    )
    def prepare_context(state: RoundtableState, ctx: Context) -> dict[str, Any]:
        speaker = state.member(state.next_internal_id) or state.registry[0]
        persona = config.persona(speaker.internal_id)
        others, other_ids = describe_others(other_characters(state.registry, speaker.internal_id))
        values = {
            "character_name": speaker.display_name,
            "character_id": speaker.internal_id,
            "persona_prompt": persona.strip(),
            "other_characters": others,
            "other_ids": other_ids,
            "conversation_log": state.conversation_log_text or nothing,
            "user_input": state.user_input or "",
            "memory": state.memory_context or nothing,
        }
        values["response_constraints"] = render_template(
            config.rule("response_constraints"), values
        ).strip()
        values["flow_rules"] = render_template(config.rule("flow_rules"), values).strip()
        prompt = render_template(config.rule("prompt_template"), values)
        request_id = os.urandom(6).hex()
        services.operation(
            ctx,
            "info",
            "roundtable_turn_started",
            "ConversationLoop",
            character=speaker.internal_id,
            request_id=request_id,
            turn=state.turn_index + 1,
        )
        if log_content():
            ctx.log.debug("roundtable_prompt", request_id=request_id, prompt=prompt)
        return {
            "current_internal_id": speaker.internal_id,
            "current_display_name": speaker.display_name,
            "persona_prompt": persona,
            "prompt": prompt,
            "request_id": request_id,
            "last_response_text": None,
            "display_text": None,
            "nomination": None,
            "refusal": None,
            "decision_reason": None,
            "next_internal_id": None,
            "next_display_name": None,
            "error": None,
        }

    return prepare_context
