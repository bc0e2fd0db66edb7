"""Events for user interfaces: what the runner reports while it works.

Subscribers get frozen event objects. A failing subscriber is logged and never breaks a run.
``StateChanged.classes`` groups the changed keys by the flow's ``change_classes``
(e.g. critical / progress / approval), so a front end knows what to refresh.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ._node_error import NodeError

__all__ = [
    "Completed",
    "Emitted",
    "Event",
    "Failed",
    "NodeFinished",
    "NodeStarted",
    "StateChanged",
    "Subscriber",
    "TokenStreamed",
    "Waiting",
    "classify_changes",
]


@dataclass(frozen=True, slots=True)
class Event:
    kind: ClassVar[str] = "event"
    thread_id: str
    run_id: str | None


@dataclass(frozen=True, slots=True)
class NodeStarted(Event):
    kind: ClassVar[str] = "node_started"
    node: str
    attempt: int


@dataclass(frozen=True, slots=True)
class NodeFinished(Event):
    kind: ClassVar[str] = "node_finished"
    node: str
    latency_s: float
    attempts: int
    error: NodeError | None = None
    #: The node did not run: its update came from the node cache (``attempts`` is 0).
    cached: bool = False


@dataclass(frozen=True, slots=True)
class StateChanged(Event):
    kind: ClassVar[str] = "state_changed"
    node: str
    version: int
    changed: tuple[str, ...]
    classes: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    #: The whole state after the change, and the normalised partial update that made it
    #: (before reducers: what the node returned, or the gate's input as an update). Left out
    #: of equality and repr: they are payload for streams, not the event's identity.
    state: Any = field(default=None, compare=False, repr=False)
    update: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def needs_update(self) -> bool:
        """Whether any classified (UI-relevant) key changed."""
        return any(self.classes.values())


@dataclass(frozen=True, slots=True)
class Waiting(Event):
    """The thread waits at pause ``gate`` (a gate's name, or the id of another pause: a node
    that asked, a ``Map`` call ``node[label]``), which carries ``payload`` (JSON form; ``None``
    when it has none)."""

    kind: ClassVar[str] = "waiting"
    gate: str
    version: int
    payload: Any = None


@dataclass(frozen=True, slots=True)
class Completed(Event):
    kind: ClassVar[str] = "completed"
    node: str
    version: int


@dataclass(frozen=True, slots=True)
class Failed(Event):
    kind: ClassVar[str] = "failed"
    node: str
    error: NodeError
    version: int


@dataclass(frozen=True, slots=True)
class TokenStreamed(Event):
    """A chunk of an LLM answer streamed inside ``node`` (for live UIs; not journaled)."""

    kind: ClassVar[str] = "token"
    node: str
    text: str
    done: bool = False
    #: Which LLM call of the node attempt this chunk belongs to: its index among the calls
    #: journaled for that step (0 for the first).
    call: int = 0


@dataclass(frozen=True, slots=True)
class Emitted(Event):
    """Anything a node sent with ``ctx.emit(value)`` (progress, partial results; not journaled)."""

    kind: ClassVar[str] = "custom"
    node: str
    value: Any


Subscriber = Callable[[Event], None]


def classify_changes(
    changed: tuple[str, ...], classes: Mapping[str, frozenset[str]]
) -> dict[str, tuple[str, ...]]:
    """Group changed keys by class, keeping every class (empty where nothing changed)."""
    return {name: tuple(k for k in changed if k in keys) for name, keys in classes.items()}
