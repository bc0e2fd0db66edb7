"""flowkit: durable, human-in-the-loop, LLM-driven workflows as explicit state machines.

Define a ``Flow`` (state model, nodes, gates, route tables), run it with a ``Runner`` on a
store, pause at gates for people, resume after restarts. See ``docs/`` for the guide.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._cache import CachePolicy
    from ._conditions import all_of, always, any_of, field, not_, when
    from ._events import (
        Completed,
        Emitted,
        Event,
        Failed,
        NodeFinished,
        NodeStarted,
        StateChanged,
        TokenStreamed,
        Waiting,
    )
    from ._flow import Flow
    from ._gate import Gate
    from ._logging import mask_pii
    from ._migration import Migration
    from ._node import Context, Node, NodeError, RetryPolicy, node
    from ._parallel import Map, Parallel
    from ._reducers import Reducer, append, reducer
    from ._result import Checkpoint, RunResult
    from ._route_table import END, Resolution, Route, RouteTable
    from ._runner import Runner
    from ._stream import AsyncStream, Stream
    from ._subflow import Subflow

__version__ = "0.1.0"

__all__ = [
    "END",
    "AsyncStream",
    "CachePolicy",
    "Checkpoint",
    "Completed",
    "Context",
    "Emitted",
    "Event",
    "Failed",
    "Flow",
    "Gate",
    "Map",
    "Migration",
    "Node",
    "NodeError",
    "NodeFinished",
    "NodeStarted",
    "Parallel",
    "Reducer",
    "Resolution",
    "RetryPolicy",
    "Route",
    "RouteTable",
    "RunResult",
    "Runner",
    "StateChanged",
    "Stream",
    "Subflow",
    "TokenStreamed",
    "Waiting",
    "__version__",
    "all_of",
    "always",
    "any_of",
    "append",
    "field",
    "mask_pii",
    "node",
    "not_",
    "reducer",
    "when",
]

# Where each public name lives. The engine builds pydantic models when imported, which costs
# more than the interpreter's own start-up, so `import flowkit` (and `flowkit --help`) defers
# it to the first use of a name; type checkers read the imports above instead.
_LAZY = {
    "END": "._route_table",
    "AsyncStream": "._stream",
    "Checkpoint": "._result",
    "Completed": "._events",
    "Context": "._node",
    "Emitted": "._events",
    "Event": "._events",
    "Failed": "._events",
    "Flow": "._flow",
    "Gate": "._gate",
    "CachePolicy": "._cache",
    "Map": "._parallel",
    "Migration": "._migration",
    "Node": "._node",
    "NodeError": "._node",
    "NodeFinished": "._events",
    "NodeStarted": "._events",
    "Parallel": "._parallel",
    "Reducer": "._reducers",
    "Resolution": "._route_table",
    "RetryPolicy": "._node",
    "Route": "._route_table",
    "RouteTable": "._route_table",
    "RunResult": "._result",
    "Runner": "._runner",
    "StateChanged": "._events",
    "Stream": "._stream",
    "Subflow": "._subflow",
    "TokenStreamed": "._events",
    "Waiting": "._events",
    "all_of": "._conditions",
    "always": "._conditions",
    "any_of": "._conditions",
    "append": "._reducers",
    "field": "._conditions",
    "mask_pii": "._logging",
    "node": "._node",
    "not_": "._conditions",
    "reducer": "._reducers",
    "when": "._conditions",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'flowkit' has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
