"""Goal Policy (GP): what to say about the goal: the current step, the result of a completed
goal, a cancellation, a failure, an action's refusal (with the question for the slot to
change), or a question when no goal is running.

For a goal with ``confirm: true`` GP also asks for the confirmation (``confirm_goal``: the
goal and its filled slots, then "shall I go ahead?"), asks again when the answer was neither
yes nor no (``confirm_repeat``), and after a bare no asks what to change
(``confirm_declined``; the goal stays open with its values, "cancel" drops it).

A goal paused by "stop" is asked about first: "Do you want to continue?" (``continue_goal``,
again as ``continue_repeat`` when the answer was neither yes nor no).
"""

from __future__ import annotations

from typing import Any, Literal

from ...definition._node import Node, node
from ...dialogue.confirm import CHANGE, CONFIRM
from ...dialogue.forms import CONTINUE
from ...dialogue.services import Services
from ...dialogue.state import DialogueState, GoalState, NextAction, ResponsePlan

__all__ = ["make_gp"]


def make_gp(services: Services) -> Node:
    domain, renderer = services.domain, services.renderer

    @node(
        reads=["goal_state", "slots", "error", "messages"], writes=["next_action", "response_plan"]
    )
    def goal_policy(state: DialogueState) -> dict[str, Any]:
        goal = state.goal_state
        spec = domain.goals.get(goal.goal or "")
        action: NextAction = "respond"
        params: dict[str, Any] = {}
        ask: str | None = None
        outcome: Literal["success", "failure"] = "success"
        error_type: str | None = None
        if goal.status == "cancelled":
            response = "goal_cancelled"
        elif goal.status == "failed":
            response, outcome = "action_failed", "failure"
            error_type = state.error.type if state.error else "Error"
            params["error_type"] = error_type
        elif goal.active and goal.paused:
            response = "continue_goal" if goal.command == "stop" else "continue_repeat"
            action, ask = "clarify", CONTINUE
        elif goal.active and goal.confirm and goal.command == "deny":
            response, action, ask = "confirm_declined", "clarify", CHANGE
        elif goal.active and goal.confirm and goal.command == "unclear":
            response, action, ask = "confirm_repeat", "clarify", CONFIRM
        elif goal.active and goal.refusal is not None and not _reconfirm(goal):
            response, outcome, error_type = goal.refusal.response, "failure", "ActionRefused"
            params.update(goal.refusal.params)
            ask = goal.refusal.slot
            if ask is not None:
                action = "clarify"
                params["question"] = domain.text(domain.slots[ask].question, state.lang())
        elif _reconfirm(goal) and spec is not None and spec.mode == "SLOT_FILLING":
            # SE found nothing missing (this turn's values included): confirm before GE runs.
            response, action, ask = "confirm_goal", "clarify", CONFIRM
        elif goal.status == "completed" and spec is not None:
            response = spec.done
        elif goal.active and spec is not None and spec.mode == "STEP_BY_STEP":
            response, action = "present_step", "execute_step"
        else:
            response = {"cancel": "nothing_to_cancel", "deny": "nothing_else"}.get(
                goal.command or "", "no_active_goal"
            )
        plan = ResponsePlan(
            id=response,
            by="GP",
            lang=state.lang(),
            style=renderer.style(response),
            slot=ask,
            params=params,
            outcome=outcome,
            error_type=error_type,
        )
        return {"next_action": action, "response_plan": plan}

    return goal_policy


def _reconfirm(goal: GoalState) -> bool:
    """A confirmed-first goal reached GP from SE (its slots filled this turn): ask to confirm.

    Its action only runs on ``confirm``, so a refusal still on the goal is from an earlier
    turn and the user has just changed the value it asked for.
    """
    return goal.active and goal.confirm and goal.command in ("start", "continue")
