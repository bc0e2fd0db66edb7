"""The robot-flow workflow (sas): natural language -> reviewed plan -> Blockly robot program.

``from flowkit.sas import flow`` gives the Flow; run it with a ``flowkit.Runner``. The offline
robot-program toolkit (catalog, compile, validate, decompile) lives in ``flowkit.robot``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..definition._flow import Flow
    from ..nodes.sas.review import ReviewInput
    from .state import SasConfig, SasState
    from .tasks import TaskDefinition, TaskList, TaskType

__all__ = [
    "ReviewInput",
    "SasConfig",
    "SasState",
    "TaskDefinition",
    "TaskList",
    "TaskType",
    "flow",
]

_LAZY = {
    "flow": ".workflow",
    "ReviewInput": "..nodes.sas.review",
    "SasConfig": ".state",
    "SasState": ".state",
    "TaskDefinition": ".tasks",
    "TaskList": ".tasks",
    "TaskType": ".tasks",
}


def __getattr__(name: str) -> Any:
    # The flow pulls in the robot toolkit; load it only when asked for.
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module 'flowkit.sas' has no attribute {name!r}")


flow: Flow
