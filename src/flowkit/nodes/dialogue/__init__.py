"""The nodes of the dialogue workflow (seed 001), one module each, built per domain.

Each factory takes the domain's ``Services`` and returns a node whose ``@node(reads=...,
writes=...)`` is the seed's §4.1 read/write matrix, so the engine rejects any other write.
``MATRIX`` restates the matrix as data; ``EXTRA_READS`` lists what a node reads beyond it,
and why (the matrix is a summary and leaves these inputs out).
"""

from __future__ import annotations

from typing import Final

__all__ = ["EXTRA_READS", "EXTRA_WRITES", "MATRIX"]

#: Seed 001 §4.1, node -> (reads, writes), with §4.1's names. ``tool_*?`` is written out as
#: tool_calls, tool_result and tool_result_ref; SG's "request" is the gate input; EG's
#: "response" is the run result the caller gets, so EG writes no state key.
MATRIX: Final[dict[str, tuple[frozenset[str], frozenset[str]]]] = {
    "SG": (frozenset(), frozenset({"messages", "user_text", "turn_id"})),
    "IR": (frozenset({"user_text", "messages"}), frozenset({"intent_type", "entities"})),
    "NP": (frozenset({"intent_type", "messages"}), frozenset({"next_action", "response_plan"})),
    "GST": (
        frozenset({"intent_type", "entities", "goal_state"}),
        frozenset({"goal_state", "dialogue_mode"}),
    ),
    "SST": (
        frozenset({"entities", "slots", "missing_slots"}),
        frozenset({"slots", "missing_slots"}),
    ),
    "SE": (
        frozenset({"slots", "missing_slots", "entities"}),
        frozenset({"slots", "missing_slots", "exec_trace"}),
    ),
    "GE": (
        frozenset({"goal_state", "slots", "entities"}),
        frozenset(
            {"goal_state", "exec_trace", "tool_calls", "tool_result", "tool_result_ref", "error"}
        ),
    ),
    "SFP": (
        frozenset({"slots", "missing_slots"}),
        frozenset({"next_action", "clarifying_question", "response_plan"}),
    ),
    "GP": (
        frozenset({"goal_state", "slots", "error"}),
        frozenset({"next_action", "response_plan"}),
    ),
    "RP": (frozenset({"response_plan"}), frozenset()),
    "RN": (
        frozenset({"response_plan", "clarifying_question", "goal_state", "slots"}),
        frozenset({"final_answer", "messages"}),
    ),
    "EG": (frozenset({"final_answer", "messages"}), frozenset()),
}

#: Reads beyond §4.1, each with its reason. Writes never go beyond the matrix.
EXTRA_READS: Final[dict[str, dict[str, str]]] = {
    "SG": {
        "turn_id": "numbers the turn: the next id follows the last one",
        "messages": "a message without a language (3/14, 15:00) keeps the user's last one",
    },
    "IR": {
        "slots": "personal values to mask in the LLM's prompt",
        "exec_trace": "a due reminder an action scheduled is the turn's intent (events.py)",
        "goal_state": "the goal whose filled slots a value said again changes (acknowledged)",
    },
    "NP": {"exec_trace": "a due reminder's small-talk intent is the one to answer"},
    "RN": {
        "messages": "an external event or reminder this turn answers (events.py)",
        "exec_trace": "the reminder this reply delivers, marked on the message",
    },
    "SST": {"goal_state": "which goal's slots to track, and whether it started this turn"},
    "SFP": {
        "messages": "the language of the user's turn, to ask in it",
        "exec_trace": "SE's check of this turn: the reason a value was refused, corrections",
    },
    "GP": {"messages": "the language of the user's turn, to answer in it"},
    "EG": {
        "turn_id": "§6 turn log",
        "intent_type": "§6 turn log",
        "dialogue_mode": "§6 turn log",
        "next_action": "§6 turn log",
        "missing_slots": "§6 turn log (names only)",
        "goal_state": "§6 turn log (current_step)",
        "response_plan": "§6 turn log (outcome, error type)",
    },
}

#: Writes beyond §4.1, each with its reason (the matrix's SG row omits keys §2 gives SG).
EXTRA_WRITES: Final[dict[str, dict[str, str]]] = {
    "SG": {
        "thread_id": "§2.1 names Start Gate the owner of thread_id",
        "error": "§2.4 error is the latest failure: a new turn starts without one",
        "slots": "a domain edited since the last turn: the goal under way keeps its slots only",
        "missing_slots": "a domain edited since the last turn: the goal's new required slots",
        "goal_state": "a domain edited since the last turn: a goal it no longer has is cancelled",
    },
}
