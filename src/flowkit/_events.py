"""Events for user interfaces: what the runner reports while it works.

Subscribers get frozen event objects. A failing subscriber is logged and never breaks a run.
``StateChanged.classes`` groups the changed keys by the flow's ``change_classes``
(e.g. critical / progress / approval), so a front end knows what to refresh.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import ClassVar

from ._node import NodeError

__all__ = [
    "Completed",
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


@dataclass(frozen=True, slots=True)
class StateChanged(Event):
    kind: ClassVar[str] = "state_changed"
    node: str
    version: int
    changed: tuple[str, ...]
    classes: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def needs_update(self) -> bool:
        """Whether any classified (UI-relevant) key changed."""
        return any(self.classes.values())


@dataclass(frozen=True, slots=True)
class Waiting(Event):
    kind: ClassVar[str] = "waiting"
    gate: str
    version: int


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


Subscriber = Callable[[Event], None]


def classify_changes(
    changed: tuple[str, ...], classes: Mapping[str, frozenset[str]]
) -> dict[str, tuple[str, ...]]:
    """Group changed keys by class, keeping every class (empty where nothing changed)."""
    return {name: tuple(k for k in changed if k in keys) for name, keys in classes.items()}
