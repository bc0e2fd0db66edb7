"""Node implementations of the shipped workflows, one package per workflow.

Nodes are plain functions; the engine's node API (``node``, ``Context``, ``RetryPolicy``) is
re-exported here for code that writes its own.
"""

from __future__ import annotations

from ..definition._node import Context, Node, RetryPolicy, node
from ..records._node_error import NodeError

__all__ = ["Context", "Node", "NodeError", "RetryPolicy", "node"]
