"""Workflow state stores of the quality workflow: the ``WorkflowStateStore`` protocol, the
JSON-file store, and (``pip install 'flowkit-workflows[postgres]'``) the PostgreSQL store, imported
only when asked for."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._protocol import WorkflowStateStore

if TYPE_CHECKING:
    from .jsonfile import JsonWorkflowStateStore
    from .postgres import PostgresWorkflowStateStore

__all__ = ["JsonWorkflowStateStore", "PostgresWorkflowStateStore", "WorkflowStateStore"]


def __getattr__(name: str) -> Any:
    if name == "JsonWorkflowStateStore":
        from .jsonfile import JsonWorkflowStateStore

        return JsonWorkflowStateStore
    if name == "PostgresWorkflowStateStore":
        from .postgres import PostgresWorkflowStateStore

        return PostgresWorkflowStateStore
    raise AttributeError(f"module 'flowkit.quality.stores' has no attribute {name!r}")
