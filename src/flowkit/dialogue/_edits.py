"""A conversation that goes on under a domain edited since its last turn.

A thread keeps the goal under way, its slots and the slots still missing, as the domain had
them. Once a slot is added to that goal or taken out of it (or the goal itself removed), they
no longer agree with the domain, and every later state would fail the flow's slot checks
(``invariants``): the user could not even cancel. The Start Gate brings them in line first:
the goal's slots the domain no longer has are dropped, the required ones it now has are added
to the missing ones (after those already missing, so the question the user is answering stays
first), a step-by-step goal whose steps were taken out goes on from its last step left, and a
goal the domain no longer has (or now has in another mode) is cancelled.
"""

from __future__ import annotations

from typing import Any

from ._models import Domain
from .state import DialogueState

__all__ = ["follow_domain"]


def follow_domain(domain: Domain, state: DialogueState) -> dict[str, Any]:
    """The updates that bring ``state``'s goal in line with ``domain`` (none when it is)."""
    goal = state.goal_state
    if not goal.active:
        return {}
    spec = domain.goals.get(goal.goal or "")
    if (
        spec is None
        or spec.mode != state.dialogue_mode
        or (spec.mode == "STEP_BY_STEP" and not spec.steps)
    ):
        return {
            "goal_state": goal.model_copy(update={"status": "cancelled", "paused": False}),
            "slots": {},
            "missing_slots": [],
        }
    if spec.mode == "STEP_BY_STEP":
        steps, at = len(spec.steps), goal.current_step
        if at is not None and 0 <= at < steps and goal.total_steps == steps:
            return {}
        # Steps taken out: the goal goes on from its last step that is left.
        return {
            "goal_state": goal.model_copy(
                update={"current_step": min(max(at or 0, 0), steps - 1), "total_steps": steps}
            )
        }
    slots = {name: value for name, value in state.slots.items() if name in spec.slots}
    required = [name for name in domain.required_slots(goal.goal or "") if name not in slots]
    kept = [name for name in state.missing_slots if name in spec.slots and name not in slots]
    missing = [*kept, *(name for name in required if name not in kept)]
    if slots == state.slots and missing == state.missing_slots:
        return {}
    return {"slots": slots, "missing_slots": missing}
