"""flowkit: durable, human-in-the-loop, LLM-driven workflows as explicit state machines.

Define a ``Flow`` (state model, nodes, gates, route tables), run it with a ``Runner`` on a
store, pause at gates for people, resume after restarts. See ``docs/`` for the guide.
"""

from __future__ import annotations

from ._conditions import all_of, always, any_of, field, not_, when
from ._events import (
    Completed,
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
from ._node import Context, Node, NodeError, RetryPolicy, node
from ._reducers import Reducer, append, reducer
from ._result import Checkpoint, RunResult
from ._route_table import END, Resolution, Route, RouteTable
from ._runner import Runner

__version__ = "0.1.0"

__all__ = [
    "END",
    "Checkpoint",
    "Completed",
    "Context",
    "Event",
    "Failed",
    "Flow",
    "Gate",
    "Node",
    "NodeError",
    "NodeFinished",
    "NodeStarted",
    "Reducer",
    "Resolution",
    "RetryPolicy",
    "Route",
    "RouteTable",
    "RunResult",
    "Runner",
    "StateChanged",
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
