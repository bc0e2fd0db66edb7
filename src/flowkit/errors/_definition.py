"""Errors of a flow's definition and of its nodes' contracts: what a flow, a node or a server is
given that cannot work.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from ._base import FlowkitError

__all__ = [
    "AttemptsExhaustedError",
    "FlowDefinitionError",
    "InvalidUpdateError",
    "NodeContractError",
    "NodeStillRunningError",
    "NodeTimeoutError",
    "RouteError",
    "ServerConfigError",
    "SubflowError",
    "UndeclaredWriteError",
    "WorkflowLoadError",
]


class FlowDefinitionError(FlowkitError):
    """A flow definition is inconsistent; ``problems`` lists every problem with its fix."""

    def __init__(self, flow: str, problems: Sequence[str]) -> None:
        self.flow = flow
        self.problems = list(problems)
        lines = "\n".join(f"  - {p}" for p in self.problems)
        count = len(self.problems)
        super().__init__(f"Flow `{flow}` has {count} problem{'s' if count != 1 else ''}:\n{lines}")


class WorkflowLoadError(FlowkitError):
    """A target names no registered workflow, cannot be imported, or is not a Flow."""

    def __init__(self, target: str, message: str) -> None:
        self.target = target
        super().__init__(message)


class RouteError(FlowkitError):
    """A route table could not resolve a target (a condition raised, or a bad state)."""

    def __init__(self, message: str, *, table: str, node: str | None = None) -> None:
        self.table = table
        self.node = node
        super().__init__(message)


class NodeContractError(FlowkitError):
    """A node broke its contract with the engine; fix the node, then resume the thread."""

    def __init__(self, message: str, *, node: str, key: str | None = None) -> None:
        self.node = node
        self.key = key
        super().__init__(message)


class UndeclaredWriteError(NodeContractError):
    """A node returned a key that is not in its declared ``writes``."""


class InvalidUpdateError(NodeContractError):
    """A node returned a value that the state model rejects, or a key it does not have."""


class NodeTimeoutError(FlowkitError):
    """A node ran longer than its timeout."""

    retryable = True

    def __init__(self, node: str, timeout: float) -> None:
        self.node = node
        self.timeout = timeout
        super().__init__(
            f"Node `{node}` did not finish within {timeout:g} s; "
            "raise its timeout or make it faster."
        )


class NodeStillRunningError(FlowkitError):
    """An attempt of a node abandoned at its timeout still runs, so no new attempt starts.

    Python cannot stop a thread: a sync node past its timeout runs on in the background with
    ``ctx.cancelled`` set. The next attempt waits up to ``grace`` seconds for it; this error
    is what it gets when the earlier attempt has not returned by then.
    """

    retryable = False

    def __init__(self, node: str, *, thread_id: str, timeout: float, grace: float) -> None:
        self.node = node
        self.thread_id = thread_id
        self.timeout = timeout
        self.grace = grace
        super().__init__(
            f"Node `{node}` of thread `{thread_id}` was not run again: its earlier attempt, "
            f"abandoned at its {timeout:g} s timeout, was still running {grace:g} s later, and "
            "two attempts of a node never run at once. Make the node return when "
            "`ctx.cancelled` is set, then resume the thread."
        )


class AttemptsExhaustedError(FlowkitError):
    """A node with a ``RetryPolicy`` had made all its attempts when its process died: it is
    not run again. Raised by no call; it is the error the thread records (``NodeError.type``),
    routed like any failure."""


class _RecordedFailure(Protocol):
    """What ``SubflowError`` reads of the failure it wraps (a ``flowkit.NodeError``)."""

    @property
    def type(self) -> str: ...
    @property
    def message(self) -> str: ...
    @property
    def node(self) -> str: ...
    @property
    def retryable(self) -> bool: ...


class SubflowError(FlowkitError):
    """An attempt of a ``Subflow`` node failed: its child failed (a child node with nowhere to
    route, or a final state marked ``failed``) or ran past the node's ``timeout``.

    ``error`` is the failure as the parent records it: its ``type`` names the child's
    exception (``NodeTimeoutError`` for the timeout, ``SubflowFailed`` for a failed final
    state). The node's ``RetryPolicy(retry_on=callable)`` is called with this error, which is
    ``retryable`` when ``error`` is; it is never raised.
    """

    def __init__(self, error: _RecordedFailure) -> None:
        self.error = error
        self.node = error.node
        self.retryable = error.retryable
        super().__init__(f"{error.type}: {error.message}")


class ServerConfigError(FlowkitError):
    """The HTTP server was set up with something that cannot work (a short token, no flows)."""
