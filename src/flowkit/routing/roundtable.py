"""Route tables of the roundtable workflow (seed 004 §5), as data.

A round starts when the person speaks at the ``person`` gate and runs the characters' turns
until ``end_or_continue`` ends it; then the table waits at the gate again. The conversation is
a loop through that gate and never ends by itself::

    person -> start_round -> prepare_context -> update_status_thinking -> call_llm
    call_llm -> postprocess_response (answered) | choose_next_fallback (error or timeout)
    postprocess_response -> send_message -> extract_next
    extract_next -> end_or_continue (decided) | choose_next_fallback (undecided, self-nominated)
    choose_next_fallback -> end_or_continue
    end_or_continue -> update_status_idle -> prepare_context (continue)
                     | persist_memory -> update_status_active -> person (the round is over)

A node that raises does not stop the table: the engine writes the failure into ``error``
(``error.node`` names the node) and the node's table routes it the way seed 004 §6 asks, to
the fallback; a failed round start or turn decision ends the round. ``prepare_context``
clears ``error`` at the start of every turn.
"""

from __future__ import annotations

from typing import Final

from ..definition._conditions import Condition, field, not_
from ..definition._route_table import Route, RouteTable

__all__ = [
    "CALL_LLM",
    "CHOOSE_NEXT_FALLBACK",
    "END_OR_CONTINUE",
    "EXTRACT_NEXT",
    "PERSIST_MEMORY",
    "PERSON",
    "POSTPROCESS_RESPONSE",
    "PREPARE_CONTEXT",
    "SEND_MESSAGE",
    "START_ROUND",
    "STATES",
    "UPDATE_STATUS_ACTIVE",
    "UPDATE_STATUS_IDLE",
    "UPDATE_STATUS_THINKING",
    "failed_at",
    "route_after_call_llm",
    "route_after_choose_next_fallback",
    "route_after_end_or_continue",
    "route_after_extract_next",
    "route_after_persist_memory",
    "route_after_postprocess_response",
    "route_after_prepare_context",
    "route_after_send_message",
    "route_after_start_round",
]

PERSON: Final = "person"
START_ROUND: Final = "start_round"
PREPARE_CONTEXT: Final = "prepare_context"
UPDATE_STATUS_THINKING: Final = "update_status_thinking"
CALL_LLM: Final = "call_llm"
POSTPROCESS_RESPONSE: Final = "postprocess_response"
SEND_MESSAGE: Final = "send_message"
EXTRACT_NEXT: Final = "extract_next"
CHOOSE_NEXT_FALLBACK: Final = "choose_next_fallback"
END_OR_CONTINUE: Final = "end_or_continue"
UPDATE_STATUS_IDLE: Final = "update_status_idle"
PERSIST_MEMORY: Final = "persist_memory"
UPDATE_STATUS_ACTIVE: Final = "update_status_active"

STATES: Final = (
    PERSON,
    START_ROUND,
    PREPARE_CONTEXT,
    UPDATE_STATUS_THINKING,
    CALL_LLM,
    POSTPROCESS_RESPONSE,
    SEND_MESSAGE,
    EXTRACT_NEXT,
    CHOOSE_NEXT_FALLBACK,
    END_OR_CONTINUE,
    UPDATE_STATUS_IDLE,
    PERSIST_MEMORY,
    UPDATE_STATUS_ACTIVE,
)


def failed_at(node: str) -> Condition:
    """``node`` failed this turn: it raised, or (``call_llm``) its LLM call failed."""
    return field("error.node").eq(node)


#: A round that cannot start (a bug) goes straight back to the person.
route_after_start_round = RouteTable(
    "route_after_start_round", [Route(failed_at(START_ROUND), PERSON)], default=PREPARE_CONTEXT
)
route_after_prepare_context = RouteTable(
    "route_after_prepare_context",
    [Route(failed_at(PREPARE_CONTEXT), CHOOSE_NEXT_FALLBACK)],
    default=UPDATE_STATUS_THINKING,
)
#: §5: an LLM error or timeout skips the reply and lets the fallback pick the next speaker.
route_after_call_llm = RouteTable(
    "route_after_call_llm",
    [Route(failed_at(CALL_LLM), CHOOSE_NEXT_FALLBACK)],
    default=POSTPROCESS_RESPONSE,
)
route_after_postprocess_response = RouteTable(
    "route_after_postprocess_response",
    [Route(failed_at(POSTPROCESS_RESPONSE), CHOOSE_NEXT_FALLBACK)],
    default=SEND_MESSAGE,
)
#: A reply that could not be delivered still nominates the next speaker.
route_after_send_message = RouteTable("route_after_send_message", [], default=EXTRACT_NEXT)
#: §5: a nomination that was refused (self, USER, unknown, already spoke) or missing -> fallback.
route_after_extract_next = RouteTable(
    "route_after_extract_next",
    [
        Route(failed_at(EXTRACT_NEXT), CHOOSE_NEXT_FALLBACK),
        Route(not_(field("next_internal_id")), CHOOSE_NEXT_FALLBACK),
    ],
    default=END_OR_CONTINUE,
)
route_after_choose_next_fallback = RouteTable(
    "route_after_choose_next_fallback", [], default=END_OR_CONTINUE
)
#: §5: go on with the next speaker, or end the round (memory, then the person's turn).
route_after_end_or_continue = RouteTable(
    "route_after_end_or_continue",
    [
        Route(failed_at(END_OR_CONTINUE), PERSIST_MEMORY),
        Route(field("continue_round"), UPDATE_STATUS_IDLE),
    ],
    default=PERSIST_MEMORY,
)
#: Memory never holds the table up (its node catches its own failures, this is the backstop).
route_after_persist_memory = RouteTable(
    "route_after_persist_memory", [], default=UPDATE_STATUS_ACTIVE
)
