"""Errors of runner calls: a thread that cannot go on as asked (not found, not waiting, moved,
cancelled, past a limit).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ._base import FlowkitError

__all__ = [
    "CheckpointNotFoundError",
    "IncompatibleThreadError",
    "InvalidResumeInputError",
    "InvalidStateError",
    "InvariantViolation",
    "NotWaitingError",
    "QueueClosedError",
    "RecoveryLimitError",
    "RecoveryPolicyError",
    "RunCancelledError",
    "RunError",
    "StepLimitError",
    "ThreadExistsError",
    "ThreadNotFoundError",
    "UnknownGateError",
]


class RunError(FlowkitError):
    """A runner call cannot proceed in the thread's current situation."""

    def __init__(self, message: str, *, thread_id: str) -> None:
        self.thread_id = thread_id
        super().__init__(message)


class ThreadNotFoundError(RunError):
    """No thread with this id exists in the store."""

    def __init__(self, thread_id: str) -> None:
        super().__init__(
            f"Thread `{thread_id}` does not exist; start it first or check the store path.",
            thread_id=thread_id,
        )


class ThreadExistsError(RunError):
    """``start`` was called with the id of an existing thread."""

    def __init__(self, thread_id: str) -> None:
        super().__init__(
            f"Thread `{thread_id}` already exists; resume it, fork it, or pick a new id.",
            thread_id=thread_id,
        )


class NotWaitingError(RunError):
    """``resume`` was called on a thread that is not paused where the caller expected."""

    def __init__(self, message: str, *, thread_id: str, status: str, node: str) -> None:
        self.status = status
        self.node = node
        super().__init__(message, thread_id=thread_id)


class UnknownGateError(RunError):
    """``resume`` named a gate that the flow does not define."""

    def __init__(self, gate: str, *, thread_id: str, gates: Sequence[str]) -> None:
        self.gate = gate
        self.gates = list(gates)
        known = ", ".join(f"`{g}`" for g in self.gates) or "none"
        super().__init__(
            f"Gate `{gate}` is not in this flow (its gates: {known}); resume with one of those.",
            thread_id=thread_id,
        )


class InvalidResumeInputError(RunError):
    """The resume input does not validate against the gate's input model."""

    def __init__(
        self, gate: str, *, thread_id: str, errors: Sequence[dict[str, Any]], detail: str
    ) -> None:
        self.gate = gate
        self.errors = list(errors)
        super().__init__(
            f"Input for gate `{gate}` of thread `{thread_id}` is invalid; the thread still "
            f"waits there, resume again with corrected input:\n{detail}",
            thread_id=thread_id,
        )


class InvalidStateError(RunError):
    """A start state, patch or target state that the flow cannot accept."""


class IncompatibleThreadError(RunError):
    """A stored thread does not fit the flow any more: its gate or node was renamed or
    removed, or its state fails the changed state model, and no migration covers it.

    ``version`` is the journal record where it stopped fitting (its position or state),
    ``flow_version`` the flow version the thread ran under, ``problems`` what does not fit.
    """

    def __init__(
        self,
        message: str,
        *,
        thread_id: str,
        version: int | None = None,
        flow_version: int | None = None,
        problems: Sequence[str] = (),
    ) -> None:
        self.version = version
        self.flow_version = flow_version
        self.problems = list(problems)
        super().__init__(message, thread_id=thread_id)


class StepLimitError(RunError):
    """A single run executed more nodes than the runner's ``step_limit``."""

    def __init__(self, thread_id: str, limit: int, node: str) -> None:
        self.limit = limit
        self.node = node
        super().__init__(
            f"Thread `{thread_id}` ran {limit} steps in one run without pausing or finishing "
            f"(next: `{node}`); check the flow for a loop without exit, or raise step_limit. "
            "Everything so far is saved; resume continues from here.",
            thread_id=thread_id,
        )


class RecoveryLimitError(RunError):
    """A node's process died inside it more often than the runner's
    ``max_recovery_attempts``: it is not run again. Raised by no call; it is the error a
    thread records when it fails for this reason (``NodeError.type``), routed like any."""

    def __init__(self, thread_id: str, node: str, crashes: int, limit: int) -> None:
        self.node = node
        self.crashes = crashes
        self.limit = limit
        super().__init__(
            f"Node `{node}` of thread `{thread_id}` was interrupted by its process dying "
            f"{crashes} times (max_recovery_attempts={limit}); it was not run again. Fix "
            "what kills it, then resume the thread.",
            thread_id=thread_id,
        )


class RunCancelledError(RunError):
    """``Runner.cancel`` stopped the run: the step in progress finished and was saved, then no
    other node ran. The thread stands ``pending`` at ``node``; ``resume`` goes on from there."""

    def __init__(self, thread_id: str, version: int, node: str) -> None:
        self.version = version
        self.node = node
        super().__init__(
            f"The run of thread `{thread_id}` was cancelled after checkpoint {version}; it "
            f"stands at `{node}`, pending. Everything so far is saved; resume it to go on.",
            thread_id=thread_id,
        )


class CheckpointNotFoundError(RunError):
    """A fork or lookup named a checkpoint version the thread does not have."""

    def __init__(self, thread_id: str, version: int, latest: int, *, first: int = 0) -> None:
        self.version = version
        self.latest = latest
        self.first = first
        super().__init__(
            f"Thread `{thread_id}` has no checkpoint {version}; versions run from {first} to "
            f"{latest}" + (" (older history was compacted away)." if first else "."),
            thread_id=thread_id,
        )


class QueueClosedError(FlowkitError):
    """A consumer read a broadcaster queue that is closed, evicted or was never opened."""

    def __init__(self, thread_id: str, why: str) -> None:
        self.thread_id = thread_id
        super().__init__(
            f"No event queue for thread `{thread_id}`: {why}. Open it again with "
            "broadcaster.open(thread_id) and reload the thread's state, since events were missed."
        )


class RecoveryPolicyError(FlowkitError):
    """A recovery policy names states or fields its flow does not have; ``problems`` lists all."""

    def __init__(self, policy: str, flow: str, problems: Sequence[str]) -> None:
        self.policy = policy
        self.flow = flow
        self.problems = list(problems)
        lines = "\n".join(f"  - {p}" for p in self.problems)
        super().__init__(
            f"Recovery policy `{policy}` does not fit flow `{flow}`; fix the policy:\n{lines}"
        )


class InvariantViolation(RunError):  # noqa: N818 - the name the seed's spec uses
    """A step produced a state that breaks one of the flow's invariants.

    Nothing was saved: the thread stays at its last good checkpoint ``version`` (``None``: the
    start state was refused, so the thread does not exist). ``node`` is
    the node, gate, ``update_state`` or ``__start__`` that produced the state; ``problems`` lists
    each broken invariant's findings as ``"name: problem"``; ``invariants`` names them.
    """

    def __init__(
        self,
        *,
        thread_id: str,
        node: str,
        problems: Sequence[str],
        invariants: Sequence[str],
        version: int | None,
    ) -> None:
        self.node = node
        self.problems = list(problems)
        self.invariants = list(invariants)
        self.version = version
        lines = "\n".join(f"  - {p}" for p in self.problems)
        where = (
            f"thread `{thread_id}` was not created"
            if version is None
            else f"thread `{thread_id}` stays at version {version}"
        )
        super().__init__(
            f"`{node}` produced a state that breaks {len(self.invariants)} invariant(s) of the "
            f"flow; nothing was saved and {where}. Fix the node (or the invariant), then "
            f"resume:\n{lines}",
            thread_id=thread_id,
        )
