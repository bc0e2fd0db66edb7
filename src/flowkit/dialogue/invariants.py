"""Seed 001 §5 as engine invariants: routing, mode and slot rules checked on every new state
before it is saved (``Flow(invariants=...)``); a violation raises ``InvariantViolation``.

They read ``dialog_state``, which the engine sets to the state the thread moves to before the
check, so "a non-task intent never enters GST" is a rule about a single state. Findings name
slots and states, never slot values.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..routing.dialogue import EP, NON_TASK, NP, RP, SST, TASK_STATES
from ._models import Domain
from .state import DialogueState

__all__ = ["invariants_for"]

Check = Callable[[DialogueState], list[str]]


def invariants_for(domain: Domain) -> dict[str, Check]:
    """The named §5 invariants of ``domain``'s flow."""

    def routing(state: DialogueState) -> list[str]:
        """§5.1: non-task intents stay out of the task branch; task intents do not end in NP."""
        where, intent = state.dialog_state, state.intent_type
        if where in TASK_STATES and intent in NON_TASK:
            return [f"intent `{intent}` is not a task intent but the turn entered {where}"]
        if where == NP and intent not in NON_TASK:
            return [f"task-side intent `{intent}` was routed to NP instead of GST"]
        return []

    def mode(state: DialogueState) -> list[str]:
        """§5.2: an active goal runs in its own mode; STEP_BY_STEP has a valid current step.

        GE may not write ``dialogue_mode`` (§4.1), so after a goal completes the mode stays that
        of the last goal until GST runs again; only an *active* goal must match it.
        """
        goal, found = state.goal_state, []
        if goal.active:
            spec = domain.goals.get(goal.goal or "")
            if spec is None:
                return [f"active goal `{goal.goal}` is not a goal of domain `{domain.name}`"]
            if state.dialogue_mode != spec.mode:
                found.append(
                    f"goal `{goal.goal}` is {spec.mode} but dialogue_mode is {state.dialogue_mode}"
                )
            if spec.mode == "STEP_BY_STEP" and not (
                goal.current_step is not None and 0 <= goal.current_step < len(spec.steps)
            ):
                found.append(
                    f"step-by-step goal `{goal.goal}` has no valid current_step "
                    f"({goal.current_step} of {len(spec.steps)})"
                )
        if state.dialogue_mode == "STEP_BY_STEP" and goal.current_step is None:
            found.append("dialogue_mode is STEP_BY_STEP but goal_state has no current_step")
        plan = state.response_plan
        sfp_planned = state.dialog_state == RP and plan is not None and plan.by == "SFP"
        if sfp_planned and not state.clarifying_question:
            found.append("SFP planned a question without a clarifying_question")
        return found

    def slots(state: DialogueState) -> list[str]:
        """§5.3: missing_slots agrees with slots; SFP never asks when nothing is missing."""
        missing, found = state.missing_slots, []
        both = sorted(set(missing) & set(state.slots))
        if both:
            found.append(f"slots {both} are both filled and missing")
        if len(set(missing)) != len(missing):
            found.append("missing_slots lists a slot twice")
        goal = state.goal_state
        spec = domain.goals.get(goal.goal or "")
        # Until SST has run, a goal started this turn still sees the previous goal's slots;
        # if SST failed, the Error Policy drops that goal before anything else runs.
        settled = not (goal.fresh and state.dialog_state in (SST, EP))
        if goal.active and spec is not None and spec.mode == "SLOT_FILLING" and settled:
            expected = [s for s in domain.required_slots(goal.goal or "") if s not in state.slots]
            # An optional slot whose value SE refused this turn is asked again, with the
            # reason, this turn only (SST's next reckoning leaves it out: it never blocks).
            asked_again = _refused_by_se(state) - set(expected) - set(state.slots)
            if not set(expected) <= set(missing) <= set(expected) | asked_again:
                found.append(
                    f"missing_slots {sorted(missing)} should be {sorted(expected)} "
                    f"for goal `{goal.goal}`"
                )
            stray = sorted(set(state.slots) - set(spec.slots))
            if stray:
                found.append(f"slots {stray} do not belong to goal `{goal.goal}`")
        plan = state.response_plan
        if state.dialog_state == RP and plan is not None and plan.by == "SFP":
            if not missing:
                found.append("SFP asked a question although no slot is missing")
            elif plan.slot not in missing:
                found.append(f"SFP asked for `{plan.slot}`, which is not missing")
        return found

    return {"routing": routing, "mode": mode, "slots": slots}


def _refused_by_se(state: DialogueState) -> set[str]:
    """The slots whose values the last Slot Evaluator run refused (none: empty)."""
    for entry in reversed(state.exec_trace):
        if entry.node == "SE":
            return set(entry.detail.get("rejected", {}))
    return set()


def describe(checks: dict[str, Any]) -> list[str]:
    """One line per invariant: its name and the first line of its docstring."""
    return [f"{name}: {(fn.__doc__ or '').strip().splitlines()[0]}" for name, fn in checks.items()]
