"""Event capture for tests: subscribe a list to a runner and query what happened."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ..records._events import Event

__all__ = ["EventLog", "capture_events"]


class EventLog(list[Event]):
    """The captured events, in order, with small query helpers."""

    def kinds(self) -> list[str]:
        return [e.kind for e in self]

    def of(self, kind: str) -> list[Event]:
        return [e for e in self if e.kind == kind]

    def nodes(self) -> list[str]:
        """Nodes that finished, in order."""
        return [getattr(e, "node", "") for e in self if e.kind == "node_finished"]


@contextmanager
def capture_events(runner: Any) -> Iterator[EventLog]:
    """``with capture_events(runner) as events: ...`` collects every event the runner emits."""
    log = EventLog()
    unsubscribe = runner.subscribe(log.append)
    try:
        yield log
    finally:
        unsubscribe()
