"""``end_or_continue``: the speaker's turn is over (answered or not); does the round go on?

It goes on while there is a next speaker and the round has turns left: ``auto_loops`` turns
per person message, or with ``auto_loops: 0`` one turn per character; never more than
``max_turns``. A failed turn counts, so a table of failing LLMs still ends its round; a turn
that failed before its reply reached the table is kept in ``round_failures`` with its error.
"""

from __future__ import annotations

from typing import Any

from ...definition._node import Context, Node, node
from ...roundtable.services import Services
from ...roundtable.state import RoundtableState, TurnFailure
from ...routing import roundtable as r

__all__ = ["make_end_or_continue", "turn_limit"]

#: A failure in one of these leaves the speaker's turn without a reply.
_BEFORE_THE_REPLY = frozenset(
    {r.PREPARE_CONTEXT, r.UPDATE_STATUS_THINKING, r.CALL_LLM, r.POSTPROCESS_RESPONSE,
     r.SEND_MESSAGE}
)  # fmt: skip


def turn_limit(state: RoundtableState) -> int:
    """How many characters' turns this round has."""
    wanted = state.auto_loops if state.auto_loops > 0 else len(state.registry)
    return min(wanted, state.max_turns)


def make_end_or_continue(services: Services) -> Node:
    @node(
        reads=[
            "round_turns",
            "turn_index",
            "spoken_set",
            "current_display_name",
            "next_internal_id",
            "decision_reason",
            "auto_loops",
            "max_turns",
            "current_internal_id",
            "error",
            "round_failures",
        ],
        writes=["round_turns", "turn_index", "spoken_set", "continue_round", "round_failures"],
    )
    def end_or_continue(state: RoundtableState, ctx: Context) -> dict[str, Any]:
        turns = state.round_turns + 1
        spoken = list(state.spoken_set)
        if state.current_display_name and state.current_display_name not in spoken:
            spoken.append(state.current_display_name)
        go_on = (
            state.next_internal_id is not None
            and state.decision_reason != "none"
            and turns < turn_limit(state)
        )
        services.operation(
            ctx, "info", "roundtable_turn_finished", "ConversationLoop",
            character=state.current_internal_id, round_turns=turns,
            reason=state.decision_reason, next=state.next_internal_id if go_on else None,
        )  # fmt: skip
        update: dict[str, Any] = {
            "round_turns": turns,
            "turn_index": state.turn_index + 1,
            "spoken_set": spoken,
            "continue_round": go_on,
        }
        if state.error is not None and state.error.node in _BEFORE_THE_REPLY:
            failure = TurnFailure(
                internal_id=state.current_internal_id,
                character=state.current_display_name or state.current_internal_id,
                error=state.error,
            )
            update["round_failures"] = [*state.round_failures, failure]
        return update

    return end_or_continue
