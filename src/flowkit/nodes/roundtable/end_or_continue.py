"""``end_or_continue``: the speaker's turn is over (answered or not); does the round go on?

It goes on while there is a next speaker and the round has turns left: ``auto_loops`` turns
per person message, or with ``auto_loops: 0`` one turn per character; never more than
``max_turns``. A failed turn counts, so a table of failing LLMs still ends its round.
"""

from __future__ import annotations

from typing import Any

from ..._node import Context, Node, node
from ...roundtable.services import Services
from ...roundtable.state import RoundtableState

__all__ = ["make_end_or_continue", "turn_limit"]


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
        ],
        writes=["round_turns", "turn_index", "spoken_set", "continue_round"],
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
        return {
            "round_turns": turns,
            "turn_index": state.turn_index + 1,
            "spoken_set": spoken,
            "continue_round": go_on,
        }

    return end_or_continue
