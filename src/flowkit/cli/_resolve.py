"""Which flow a stored thread belongs to: its start record names it; the registry or ``--flow``
turns that name into a Flow.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..terminal.errors import CommandError
from ..terminal.inputs import load_target

if TYPE_CHECKING:
    from ..definition._flow import Flow
    from ..stores import Store

__all__ = ["FlowsByName", "flow_name_of", "flow_of_thread"]


def flow_name_of(store: Store, thread_id: str) -> str:
    """The flow name the thread's first record (or snapshot) carries; ``?`` if none."""
    log = store.load(thread_id)
    if log.snapshot is not None:
        return log.snapshot.flow
    first = log.records[0] if log.records else None
    return getattr(first, "flow", None) or "?" if first is not None else "?"


class FlowsByName:
    """Flows by name, loaded once: ``--flow TARGET`` for its own name, else the registry."""

    def __init__(self, explicit: str | None) -> None:
        self.target = explicit
        self.explicit = load_target(explicit) if explicit is not None else None
        self._loaded: dict[str, Flow | None] = {}
        self.problems: dict[str, str] = {}

    def get(self, name: str) -> Flow | None:
        if self.explicit is not None and self.explicit.name == name:
            return self.explicit
        if name not in self._loaded:
            self._loaded[name] = self._load(name)
        return self._loaded[name]

    def _load(self, name: str) -> Flow | None:
        from ..errors import FlowDefinitionError
        from ..workflows import WorkflowLoadError, load_flow, registered

        if self.explicit is not None:
            self.problems[name] = (
                f"the thread's flow is `{name}`, but --flow {self.target} is flow "
                f"`{self.explicit.name}`; pass --flow TARGET naming flow `{name}`"
            )
            return None
        if name not in registered():
            self.problems[name] = (
                f"flow `{name}` is not registered; pass --flow TARGET naming it "
                "(`module:attribute` or `path/to/file.py:attribute`)"
            )
            return None
        try:
            return load_flow(name)
        except (WorkflowLoadError, FlowDefinitionError) as exc:
            self.problems[name] = f"flow `{name}` does not load: {str(exc).splitlines()[0]}"
            return None


def flow_of_thread(store: Store, thread_id: str, explicit: str | None) -> Flow:
    """The flow to run ``thread_id`` with, or a ``CommandError`` saying how to name it."""
    name = flow_name_of(store, thread_id)
    flows = FlowsByName(explicit)
    found = flows.get(name)
    if found is None:
        raise CommandError(f"Thread `{thread_id}`: {flows.problems[name]}.", code=2)
    return found
