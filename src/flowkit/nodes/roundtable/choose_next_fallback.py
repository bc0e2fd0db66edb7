"""``choose_next_fallback``: no accepted nomination (none, refused, or the LLM failed): round
robin after the speaker in registry order, or a random other character from a generator
seeded with ``next.seed``, the session and the turn (the same pick on every replay). Reason
``none`` when nobody is left, which ends the round."""

from __future__ import annotations

import random
from typing import Any

from ...definition._node import Context, Node, node
from ...roundtable.services import Services
from ...roundtable.speaker import fallback_speaker
from ...roundtable.state import RoundtableState
from .extract_next import spoken_ids

__all__ = ["make_choose_next_fallback"]


def make_choose_next_fallback(services: Services) -> Node:
    policy = services.config.next

    @node(
        reads=["current_internal_id", "registry", "spoken_set", "turn_index"],
        writes=["next_internal_id", "next_display_name", "decision_reason"],
    )
    def choose_next_fallback(state: RoundtableState, ctx: Context) -> dict[str, Any]:
        rng = random.Random(f"{policy.seed}:{ctx.thread_id}:{state.turn_index}")
        chosen, reason = fallback_speaker(
            state.current_internal_id or None,
            state.registry,
            policy,
            rng=rng,
            exclude=spoken_ids(state),
        )
        member = state.member(chosen)
        services.operation(
            ctx, "info", "roundtable_next_fallback",
            "NextSpeakerResolver", current=state.current_internal_id, next=chosen,
            reason=reason, failed=state.error.node if state.error else None,
        )  # fmt: skip
        return {
            "next_internal_id": member.internal_id if member else None,
            "next_display_name": member.display_name if member else None,
            "decision_reason": reason,
        }

    return choose_next_fallback
