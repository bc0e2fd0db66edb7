"""``extract_next``: the reply's nomination (``[Next: …]`` / ``{"next": …}``, last one wins),
matched and judged by ``flowkit.roundtable.speaker``. An accepted one decides the next
speaker (reason ``tag`` or ``fuzzy``); anything else leaves it to the fallback.

With ``auto_loops: 0`` each character speaks once per round, so a nomination of one that has
spoken is refused (``spoken``) too.
"""

from __future__ import annotations

from typing import Any

from ...definition._node import Context, Node, node
from ...roundtable.services import Services
from ...roundtable.speaker import match_nomination
from ...roundtable.state import RoundtableState

__all__ = ["make_extract_next", "spoken_ids"]


def spoken_ids(state: RoundtableState) -> frozenset[str]:
    """Who may not speak again this round: those in ``spoken_set`` when ``auto_loops`` is 0."""
    if state.auto_loops > 0:
        return frozenset()
    return frozenset(m.internal_id for m in state.registry if m.display_name in state.spoken_set)


def make_extract_next(services: Services) -> Node:
    policy = services.config.next

    @node(
        reads=["last_response_text", "current_internal_id", "registry", "spoken_set"],
        writes=[
            "nomination",
            "refusal",
            "next_internal_id",
            "next_display_name",
            "decision_reason",
        ],
    )
    def extract_next(state: RoundtableState, ctx: Context) -> dict[str, Any]:
        found = match_nomination(
            state.last_response_text or "",
            state.current_internal_id,
            state.registry,
            policy,
            exclude=spoken_ids(state),
        )
        accepted = found.refusal is None and found.internal_id is not None
        member = state.member(found.internal_id) if accepted else None
        services.operation(
            ctx, "info", "roundtable_next_extracted", "NextSpeakerResolver",
            extracted_raw=found.raw, normalized=found.normalized,
            matched_id=found.internal_id, reason=found.method if accepted else None,
            refusal=found.refusal,
        )  # fmt: skip
        return {
            "nomination": found.raw,
            "refusal": found.refusal,
            "next_internal_id": member.internal_id if member else None,
            "next_display_name": member.display_name if member else None,
            "decision_reason": found.method if member else None,
        }

    return extract_next
