"""Error Policy (EP): what to say after a node failed. Not a node of seed 001's matrix: the
seed leaves each node to write ``error`` (§2.4) and its classes open (§8); flowkit routes every
node's failure here (the route tables' ``error.node`` rows) so one failure costs one reply,
never the thread.

The reply is ``error_<class>`` (user / external / internal / policy), a built-in template a
domain may override; the plan carries the error's type and class for EG's turn log. A goal
started this turn whose slot tracking (SST) failed is dropped (``failed``): its slots were
never tracked.
"""

from __future__ import annotations

from typing import Any

from ...definition._node import Node, node
from ...dialogue.state import DialogueState, ResponsePlan
from ...routing.dialogue import SST

__all__ = ["READS", "WRITES", "make_ep"]

READS = frozenset({"error", "messages", "goal_state"})
WRITES = frozenset({"next_action", "response_plan", "goal_state"})


def make_ep() -> Node:
    @node(reads=sorted(READS), writes=sorted(WRITES))
    def error_policy(state: DialogueState) -> dict[str, Any]:
        error = state.error
        error_class = error.error_class if error is not None else "internal"
        response = f"error_{error_class}"
        plan = ResponsePlan(
            id=response,
            by="EP",
            lang=state.lang(),
            # Always the template: an error reply must not depend on the LLM that may be
            # what failed.
            style="template",
            params={
                "error_class": error_class,
                "error_type": error.type if error else "Error",
                "retryable": error.retryable if error else False,
            },
            outcome="failure",
            error_type=error.type if error else "Error",
        )
        update: dict[str, Any] = {"next_action": "fallback", "response_plan": plan}
        goal = state.goal_state
        if error is not None and error.node == SST and goal.active and goal.fresh:
            # The goal started this turn but its slots were never tracked: drop it rather
            # than keep a goal whose missing_slots disagree with its slots (§5.3).
            update["goal_state"] = goal.model_copy(
                update={"status": "failed", "fresh": False, "history": [*goal.history, "failed"]}
            )
        return update

    return error_policy
