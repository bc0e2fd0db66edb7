"""The one module that talks to ``transitions``.

Each flow compiles to a ``transitions.Machine`` whose states are the flow's nodes, gates and
final states, with one transition per route edge. The runner asks this adapter to move a
cursor along an edge; an edge the flow does not have is refused with a flowkit error.
``transitions``' string callbacks, ``to_<state>()`` helpers and ``MachineError`` never leak out.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable

from transitions import Machine, MachineError
from transitions.core import Event, EventData, State, Transition

from ..errors import RouteError

__all__ = ["MachineAdapter"]


class _Cursor:
    """The model object transitions moves; one per advance, so runs never share state."""

    __slots__ = ("state",)

    def __init__(self, state: str) -> None:
        self.state = state


class _QuietState(State):
    """A state that runs its enter and exit callbacks without logging each call.

    ``transitions`` logs two lines per state change from ``State`` and four from
    ``Transition.execute``, at DEBUG and INFO, on every step: six level checks that were a
    fifth of a trigger's cost, for lines nobody sees (flowkit's own ``node_finished`` debug
    line says where each step went). Everything else is ``transitions``' own code.
    """

    def enter(self, event_data: EventData) -> None:
        event_data.machine.callbacks(self.on_enter, event_data)

    def exit(self, event_data: EventData) -> None:
        event_data.machine.callbacks(self.on_exit, event_data)


class _QuietTransition(Transition):
    """``Transition.execute`` of ``transitions`` 0.9, step for step, without its log lines:
    prepare, conditions, before, the state change (source exit, model set, destination
    enter), after."""

    def execute(self, event_data: EventData) -> bool:
        machine = event_data.machine
        machine.callbacks(self.prepare, event_data)
        if not self._eval_conditions(event_data):
            return False
        machine.callbacks(itertools.chain(machine.before_state_change, self.before), event_data)
        if self.dest:  # None: an internal transition, which changes no state
            self._change_state(event_data)
        machine.callbacks(itertools.chain(self.after, machine.after_state_change), event_data)
        return True


class _Machine(Machine):
    state_cls = _QuietState
    transition_cls = _QuietTransition


def _trigger(source: str, dest: str) -> str:
    return f"{source}->{dest}"


class MachineAdapter:
    """A compiled machine: the legal states and edges of one flow."""

    def __init__(
        self, name: str, *, states: Iterable[str], edges: Iterable[tuple[str, str]], initial: str
    ) -> None:
        self.name = name
        self._edges = frozenset(edges)
        self._machine = _Machine(
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
        # Each edge's own Transition with its event and source state, looked up by the edge
        # itself. `advance` executes that Transition (conditions, callbacks, exit, the state
        # set on the model, enter) as `Event.trigger` would, without the dispatch around it
        # (the event queue and the source lookup): flowkit already knows both, and the
        # dispatch was a third of a step's cost in transitions.
        machine = self._machine
        self._edge_transitions: dict[tuple[str, str], tuple[Transition, Event, State, State]] = {}
        for s, d in self._edges:
            event = machine.events[_trigger(s, d)]
            (transition,) = event.transitions[s]
            self._edge_transitions[(s, d)] = (
                transition, event, machine.get_state(s), machine.get_state(d)
            )  # fmt: skip

    @property
    def states(self) -> frozenset[str]:
        return frozenset(self._machine.states)

    @property
    def edges(self) -> frozenset[tuple[str, str]]:
        return self._edges

    def advance(self, source: str, dest: str) -> str:
        """Move from ``source`` to ``dest`` along a declared edge; return the new state."""
        edge = self._edge_transitions.get((source, dest))
        if edge is None:
            raise RouteError(
                f"Flow `{self.name}` has no route from `{source}` to `{dest}`; add it to the "
                f"flow's routes or fix the route table.",
                table=source,
                node=source,
            )
        transition, event, state, target = edge
        cursor = _Cursor(source)
        machine = self._machine
        if not (
            transition.prepare
            or transition.conditions
            or transition.before
            or transition.after
            or machine.before_state_change
            or machine.after_state_change
            or state.on_exit
            or target.on_enter
            or (target.final and machine.on_final)
        ):
            # Nothing on the edge or its states to call (flowkit registers no callbacks):
            # executing the Transition comes down to its state change, the model set by
            # the machine. Six callback loops and four state lookups were a tenth of a step.
            machine.set_state(target, cursor)
            return cursor.state
        try:
            moved = transition.execute(EventData(state, event, self._machine, cursor, (), {}))
        except MachineError as exc:
            raise RouteError(
                f"Flow `{self.name}` refused `{source} -> {dest}`: {exc.value}",
                table=source,
                node=source,
            ) from exc
        if not moved or cursor.state != dest:  # a condition on the edge said no
            raise RouteError(
                f"Flow `{self.name}` refused `{source} -> {dest}`: the machine did not move.",
                table=source,
                node=source,
            )
        return cursor.state
