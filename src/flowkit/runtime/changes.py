"""Change detection (seed 000 §4.1): which keys a committed step changed, by UI class.

The engine already groups every commit's changed keys by the flow's ``change_classes`` in
``StateChanged.classes``; ``Changes`` presents that grouping in the seed's shape
(``critical`` / ``progress`` / ``approval`` / ``needs_update``) for live events and for
history alike, with the same ``classify_changes`` function, so the two never disagree.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..definition._flow import Flow
from ..records._events import StateChanged, classify_changes

if TYPE_CHECKING:
    from ..runner._result import Checkpoint

__all__ = ["Changes", "changes_in", "changes_of", "detect_changes"]


@dataclass(frozen=True, slots=True)
class Changes:
    """The keys one commit changed, grouped by class; ``needs_update`` if any class is hit."""

    changed: tuple[str, ...]
    classes: Mapping[str, tuple[str, ...]]

    def of(self, name: str) -> tuple[str, ...]:
        """Changed keys in class ``name`` (empty for a class the flow does not define)."""
        return self.classes.get(name, ())

    @property
    def critical(self) -> tuple[str, ...]:
        return self.of("critical")

    @property
    def progress(self) -> tuple[str, ...]:
        return self.of("progress")

    @property
    def approval(self) -> tuple[str, ...]:
        return self.of("approval")

    @property
    def needs_update(self) -> bool:
        """Whether a front end must refresh: some classified key changed."""
        return any(self.classes.values())

    def to_dict(self) -> dict[str, Any]:
        """The seed's ``detected_changes`` dict: every class as a list, plus ``needs_update``."""
        data: dict[str, Any] = {"critical": [], "progress": [], "approval": []}
        data.update({name: list(keys) for name, keys in self.classes.items()})
        data["needs_update"] = self.needs_update
        return data


def detect_changes(classes: Flow | Mapping[str, Iterable[str]], changed: Iterable[str]) -> Changes:
    """Group ``changed`` keys by ``classes`` (a flow's ``change_classes`` or a plain mapping)."""
    raw = classes.change_classes if isinstance(classes, Flow) else classes
    grouped = {name: frozenset(keys) for name, keys in raw.items()}
    keys = tuple(changed)
    return Changes(keys, classify_changes(keys, grouped))


def changes_of(event: StateChanged) -> Changes:
    """The changes a live ``StateChanged`` event reports (already grouped by the engine)."""
    return Changes(event.changed, event.classes)


def changes_in(flow: Flow, checkpoint: Checkpoint[Any]) -> Changes:
    """The changes of one checkpoint from ``runner.history``, grouped as the live event was."""
    return detect_changes(flow, checkpoint.update)
