"""flowkit: durable, human-in-the-loop, LLM-driven workflows as explicit state machines.

Define a ``Flow`` (state model, nodes, gates, route tables), run it with a ``Runner`` on a
store, pause at gates for people, resume after restarts. See ``docs/`` for the guide.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .definition._ask import Ask
    from .definition._cache_policy import CachePolicy
    from .definition._conditions import all_of, always, any_of, field, not_, when
    from .definition._flow import Flow
    from .definition._gate import Gate
    from .definition._migration import Migration
    from .definition._node import Context, Node, RetryPolicy, node
    from .definition._parallel import Map, Parallel
    from .definition._reducers import Reducer, append, reducer
    from .definition._route_table import END, Resolution, Route, RouteTable
    from .definition._subflow import Subflow
    from .foundation._logging import mask_pii
    from .records._events import (
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
    from .records._node_error import NodeError
    from .runner._fired import Fired
    from .runner._result import Checkpoint, Pause, RunResult
    from .runner._runner import Runner
    from .runner._stream import AsyncStream, Paused, Stream
    from .stores._listing import ThreadPage, ThreadSummary

__version__ = "0.1.0"

__all__ = [
    "END",
    "Ask",
    "AsyncStream",
    "CachePolicy",
    "Checkpoint",
    "Completed",
    "Context",
    "Emitted",
    "Event",
    "Failed",
    "Fired",
    "Flow",
    "Gate",
    "Map",
    "Migration",
    "Node",
    "NodeError",
    "NodeFinished",
    "NodeStarted",
    "Parallel",
    "Pause",
    "Paused",
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
    "ThreadPage",
    "ThreadSummary",
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
    "END": ".definition._route_table",
    "Ask": ".definition._ask",
    "AsyncStream": ".runner._stream",
    "Checkpoint": ".runner._result",
    "Completed": ".records._events",
    "Context": ".definition._node",
    "Emitted": ".records._events",
    "Event": ".records._events",
    "Failed": ".records._events",
    "Fired": ".runner._fired",
    "Flow": ".definition._flow",
    "Gate": ".definition._gate",
    "CachePolicy": ".definition._cache_policy",
    "Map": ".definition._parallel",
    "Migration": ".definition._migration",
    "Node": ".definition._node",
    "NodeError": ".definition._node",
    "NodeFinished": ".records._events",
    "NodeStarted": ".records._events",
    "Parallel": ".definition._parallel",
    "Pause": ".runner._result",
    "Paused": ".runner._stream",
    "Reducer": ".definition._reducers",
    "Resolution": ".definition._route_table",
    "RetryPolicy": ".definition._node",
    "Route": ".definition._route_table",
    "RouteTable": ".definition._route_table",
    "RunResult": ".runner._result",
    "Runner": ".runner._runner",
    "StateChanged": ".records._events",
    "Stream": ".runner._stream",
    "Subflow": ".definition._subflow",
    "ThreadPage": ".stores._listing",
    "ThreadSummary": ".stores._listing",
    "TokenStreamed": ".records._events",
    "Waiting": ".records._events",
    "all_of": ".definition._conditions",
    "always": ".definition._conditions",
    "any_of": ".definition._conditions",
    "append": ".definition._reducers",
    "field": ".definition._conditions",
    "mask_pii": ".foundation._logging",
    "node": ".definition._node",
    "not_": ".definition._conditions",
    "reducer": ".definition._reducers",
    "when": ".definition._conditions",
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
