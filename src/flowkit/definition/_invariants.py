"""Flow invariants: checks every new state must pass before the engine commits it.

A flow without invariants never calls into this module. A broken invariant raises
``InvariantViolation`` from ``start``/``resume``/``update_state`` and nothing is saved, so a
store never holds a state the flow's own rules call invalid.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import InvariantViolation
from ..foundation._logging import get_logger

if TYPE_CHECKING:
    from ._flow import Flow

__all__ = ["check_invariants", "findings"]


def findings(result: Any) -> list[str]:
    """An invariant's return value as a list of problems (empty when it holds)."""
    if result is None or result is True:
        return []
    if result is False:
        return ["does not hold"]
    if isinstance(result, str):
        return [result]
    return [str(problem) for problem in result]


def check_invariants(
    flow: Flow, thread_id: str, node: str, state: Any, version: int | None
) -> None:
    """Raise ``InvariantViolation`` when ``state``, made by ``node``, breaks an invariant.

    ``version`` is the thread's last committed version (``None`` before the thread exists).
    """
    problems: list[str] = []
    broken: list[str] = []
    for name, check in flow.invariants:
        try:
            found = findings(check(state))
        except Exception as exc:  # an invariant that cannot decide must not let a state pass
            found = [f"the check raised {type(exc).__name__}; make it total over the state"]
        if found:
            broken.append(name)
            problems.extend(f"{name}: {problem}" for problem in found)
    if problems:
        # Names only: an invariant's findings may quote state values, which may be personal.
        get_logger().warning(
            "invariant_violated", thread_id=thread_id, node=node, invariants=broken
        )
        raise InvariantViolation(
            thread_id=thread_id, node=node, problems=problems, invariants=broken, version=version
        )
