"""Goal State Tracker (GST): what the user wants done with the goal this turn.

A task intent starts its goal (or continues it when it is already running); ``cancel`` ends
the active goal; ``next`` / ``back`` / ``repeat`` become commands for a step-by-step goal;
the answers to a confirmation question become ``confirm`` (yes: the action runs), ``deny``
(a bare no: the user is asked what to change) and ``unclear`` (asked again); anything else
(``inform``) continues. ``dialogue_mode`` follows the active goal.

A ``stop`` during a goal pauses it (``paused``; GP asks "Do you want to continue?"). While it
is paused, a yes resumes it where it was (the same question is asked again, values said with
the yes are taken), a no drops it (``cancelled``), anything else asks again.
"""

from __future__ import annotations

from typing import Any

from ...definition._node import Node, node
from ...dialogue._models import AFFIRM, DENY, UNCLEAR
from ...dialogue.forms import STOP
from ...dialogue.services import Services
from ...dialogue.state import Command, DialogueState, GoalState

__all__ = ["make_gst"]

_STEP_COMMANDS = ("next", "back", "repeat")
_CONFIRM_COMMANDS: dict[str, Command] = {AFFIRM: "confirm", DENY: "deny", UNCLEAR: "unclear"}


def make_gst(services: Services) -> Node:
    domain = services.domain

    @node(reads=["intent_type", "entities", "goal_state"], writes=["goal_state", "dialogue_mode"])
    def goal_state_tracker(state: DialogueState) -> dict[str, Any]:
        intent = state.intent_type or ""
        goal = state.goal_state
        target = domain.goal_for_intent(intent)
        if target is not None and not (goal.active and goal.goal == target):
            spec = domain.goals[target]
            stepwise = spec.mode == "STEP_BY_STEP"
            started = GoalState(
                goal=target,
                status="active",
                current_step=0 if stepwise else None,
                total_steps=len(spec.steps),
                command="start",
                fresh=True,
                confirm=spec.confirm,
                history=[f"{goal.goal}:abandoned"] if goal.active else [],
            )
            return {"goal_state": started, "dialogue_mode": spec.mode}
        if not goal.active:
            # Nothing runs: GP says there is nothing to cancel, or asks what to do.
            # (A no with nothing running answers "anything else?": GP closes politely.)
            command = {"cancel": "cancel", DENY: "deny"}.get(intent, "continue")
            return {"goal_state": GoalState(command=command), "dialogue_mode": None}
        spec = domain.goals[goal.goal or ""]
        if intent == "cancel":
            ended = goal.model_copy(
                update={
                    "status": "cancelled",
                    "command": "cancel",
                    "fresh": False,
                    "history": [*goal.history, "cancelled"],
                }
            )
            return {"goal_state": ended, "dialogue_mode": None}
        if goal.paused or intent == STOP:
            return {"goal_state": _paused(goal, intent), "dialogue_mode": spec.mode}
        order: Command | str = "continue"
        if intent in _STEP_COMMANDS and spec.mode == "STEP_BY_STEP":
            order = intent
        elif intent in _CONFIRM_COMMANDS and goal.confirm:
            order = _CONFIRM_COMMANDS[intent]
        updated = goal.model_copy(update={"command": order, "fresh": False})
        return {"goal_state": updated, "dialogue_mode": spec.mode}

    return goal_state_tracker


def _paused(goal: GoalState, intent: str) -> GoalState:
    """The goal after ``intent`` while it is paused (or being paused by a stop)."""
    if intent == AFFIRM:  # "yes, continue": back where it was, values said with it taken
        return goal.model_copy(
            update={
                "command": "continue",
                "paused": False,
                "fresh": False,
                "history": [*goal.history, "resumed"],
            }
        )
    if intent == DENY:
        return goal.model_copy(
            update={
                "status": "cancelled",
                "command": "cancel",
                "paused": False,
                "fresh": False,
                "history": [*goal.history, "cancelled"],
            }
        )
    command: Command = "stop" if intent == STOP else "unclear"
    history = [*goal.history, "paused"] if not goal.paused else goal.history
    return goal.model_copy(
        update={"command": command, "paused": True, "fresh": False, "history": history}
    )
