"""Slot State Tracker (SST): puts this turn's entities into the active goal's slots.

An entity fills the slot it names (an LLM command, the reply to a question), else the slot
of its role ("from Berlin" fills the slot with ``role: origin``), else the first unfilled
slot of the goal that takes that entity, else it replaces that slot's value (the user changed
their mind). ``missing_slots`` is what the goal still needs, in its order: its
required slots only, so an optional slot (``required: false``) is kept when the user gives it
but never asked for.
"""

from __future__ import annotations

from typing import Any

from ...definition._node import Node, node
from ...dialogue._models import Domain
from ...dialogue.services import Services
from ...dialogue.state import DialogueState, Entity, JsonScalar

__all__ = ["make_sst"]


def make_sst(services: Services) -> Node:
    domain = services.domain

    @node(
        reads=["entities", "slots", "missing_slots", "goal_state"],
        writes=["slots", "missing_slots"],
    )
    def slot_state_tracker(state: DialogueState) -> dict[str, Any]:
        goal = state.goal_state
        wanted = domain.goals[goal.goal or ""].slots
        slots: dict[str, JsonScalar] = (
            {} if goal.fresh else {k: v for k, v in state.slots.items() if k in wanted}
        )
        assigned: set[str] = set()
        for entity in _changes(state.entities, slots, wanted, domain):
            takers = [s for s in wanted if domain.slots[s].entity == entity.entity]
            if entity.role is not None:
                # A role picks its slot; a role no slot takes leaves the rest to choose from.
                roled = [s for s in takers if domain.slots[s].role == entity.role]
                takers = roled or [s for s in takers if domain.slots[s].role is None] or takers
            if entity.slot in wanted:
                target: str | None = entity.slot
            else:
                target = next((s for s in takers if s not in slots and s not in assigned), None)
                target = target or next((s for s in takers if s not in assigned), None)
            if target is not None:
                slots[target] = entity.value
                assigned.add(target)
        missing = [s for s in domain.required_slots(goal.goal or "") if s not in slots]
        return {"slots": slots, "missing_slots": missing}

    return slot_state_tracker


def _changes(
    entities: list[Entity], slots: dict[str, JsonScalar], wanted: list[str], domain: Domain
) -> list[Entity]:
    """``entities`` without a filled slot's old value said beside its new one ("change 10 am
    to 11 am", "not robot 1, robot 2"): the new one changes it, whichever comes first. Only
    for a slot that is the one taker of its entity, with no role (a role says which is which)."""

    def restated(entity: Entity) -> bool:
        takers = [s for s in wanted if domain.slots[s].entity == entity.entity]
        if entity.role is not None or len(takers) != 1 or slots.get(takers[0]) != entity.value:
            return False
        return any(
            other.entity == entity.entity and other.role is None and other.value != entity.value
            for other in entities
        )

    return [entity for entity in entities if not restated(entity)]
