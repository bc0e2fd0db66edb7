"""The one module that talks to ``transitions``.

Each flow compiles to a ``transitions.Machine`` whose states are the flow's nodes, gates and
final states, with one transition per route edge. The runner asks this adapter to move a
cursor along an edge; an edge the flow does not have is refused with a flowkit error.
``transitions``' string callbacks, ``to_<state>()`` helpers and ``MachineError`` never leak out.
"""

from __future__ import annotations

from collections.abc import Iterable

from transitions import Machine, MachineError

from .errors import RouteError

__all__ = ["MachineAdapter"]


class _Cursor:
    """The model object transitions moves; one per advance, so runs never share state."""

    __slots__ = ("state",)

    def __init__(self, state: str) -> None:
        self.state = state


def _trigger(source: str, dest: str) -> str:
    return f"{source}->{dest}"


class MachineAdapter:
    """A compiled machine: the legal states and edges of one flow."""

    def __init__(
        self, name: str, *, states: Iterable[str], edges: Iterable[tuple[str, str]], initial: str
    ) -> None:
        self.name = name
        self._edges = frozenset(edges)
        self._machine = Machine(
            model=None,
            states=sorted(set(states)),
            transitions=[
                {"trigger": _trigger(s, d), "source": s, "dest": d} for s, d in sorted(self._edges)
            ],
            initial=initial,
            auto_transitions=False,
            ignore_invalid_triggers=False,
            model_override=True,
            name=name,
        )
        # Each edge's event, looked up by the edge itself: cheaper on every step than
        # building the trigger's name and looking that up.
        events = self._machine.events
        self._events = {(s, d): events[_trigger(s, d)] for s, d in self._edges}

    @property
    def states(self) -> frozenset[str]:
        return frozenset(self._machine.states)

    @property
    def edges(self) -> frozenset[tuple[str, str]]:
        return self._edges

    def advance(self, source: str, dest: str) -> str:
        """Move from ``source`` to ``dest`` along a declared edge; return the new state."""
        event = self._events.get((source, dest))
        if event is None:
            raise RouteError(
                f"Flow `{self.name}` has no route from `{source}` to `{dest}`; add it to the "
                f"flow's routes or fix the route table.",
                table=source,
                node=source,
            )
        cursor = _Cursor(source)
        try:
            event.trigger(cursor)
        except MachineError as exc:
            raise RouteError(
                f"Flow `{self.name}` refused `{source} -> {dest}`: {exc.value}",
                table=source,
                node=source,
            ) from exc
        return cursor.state
