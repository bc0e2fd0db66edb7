"""End Gate (EG): closes the turn. The reply is already in ``final_answer`` (the run result is
the response the caller gets); EG logs seed 001 §6's fields for the turn and writes nothing.

The log line carries slot names only, never values, so personal data stays out of logs.
"""

from __future__ import annotations

import time

from ...definition._node import Context, Node, node
from ...dialogue.state import DialogueState

__all__ = ["make_eg"]


def make_eg() -> Node:
    @node(
        reads=[
            "final_answer",
            "messages",
            "turn_id",
            "intent_type",
            "dialogue_mode",
            "next_action",
            "missing_slots",
            "goal_state",
            "response_plan",
        ],
        writes=[],
    )
    def end_gate(state: DialogueState, ctx: Context) -> None:
        arrived = next((m.ts for m in reversed(state.messages) if m.role == "user"), None)
        plan = state.response_plan
        ctx.log.info(
            "dialogue_turn",
            turn_id=state.turn_id,
            intent_type=state.intent_type,
            dialogue_mode=state.dialogue_mode,
            next_action=state.next_action,
            missing_slots=list(state.missing_slots),
            current_step=state.goal_state.current_step,
            response_id=plan.id if plan else None,
            latency_ms=round((time.time() - arrived) * 1000, 1) if arrived else None,
            outcome=plan.outcome if plan else "success",
            error_type=plan.error_type if plan else None,
        )

    return end_gate
