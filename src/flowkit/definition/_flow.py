"""The Flow: an immutable, validated definition of a workflow.

A flow is a state model, nodes, gates, final states and route tables. Building it checks the
whole definition and reports every problem in one ``FlowDefinitionError``, then compiles it to
a ``transitions`` machine. Running it is the ``Runner``'s job.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from datetime import timedelta
from types import MappingProxyType
from typing import Any, Literal, TypeAlias

from pydantic import BaseModel

from ..errors import FlowDefinitionError
from ..records._records import Status
from ._gate import Gate, as_gate
from ._machine import MachineAdapter
from ._migration import Migration, migration_problems
from ._node import Node, NodeFn, as_node
from ._route_table import END, RouteTable, targets_of
from ._state import StateSchema
from ._validate import flow_problems, timeout_edges

__all__ = ["UNSET", "FinalStatus", "Flow", "Invariant"]

FinalStatus = Literal["done", "failed"]

#: ``check(state)`` returning the problems it finds: ``None``/``True``/empty means it holds;
#: a string, an iterable of strings, or ``False`` means it is broken.
Invariant: TypeAlias = Callable[[Any], Any]


class _Unset:
    def __repr__(self) -> str:
        return "UNSET"


#: "Not given": lets ``error_field`` default to ``"error"`` when the model has that field.
UNSET: Any = _Unset()


class Flow:
    """A workflow definition. Immutable once built; shareable across threads and runners.

    ``routes`` maps every node and gate to a target name, ``END`` or a ``RouteTable``.
    ``finals`` names extra terminal states and whether reaching them means done or failed.
    ``change_classes`` groups state fields (e.g. critical / progress / approval) for events.
    When a node raises, the failure is written to ``error_field`` (default ``"error"`` if the
    state has it) and the node's route table decides where to go; without one, the run fails.
    ``invariants`` (callables, or a mapping name -> callable) are checked on every new state
    before it is committed; a broken one raises ``InvariantViolation`` and nothing is saved.
    ``version`` (default 1) is recorded by every thread; ``migrations`` upgrade threads of
    older versions when they are loaded (see ``Migration`` and docs/migrations.md).
    """

    __slots__ = (
        "_frozen",
        "arrivals",
        "change_classes",
        "composite",
        "description",
        "error_field",
        "finals",
        "gates",
        "has_async",
        "invariants",
        "machine",
        "migrations",
        "name",
        "nodes",
        "routes",
        "schema",
        "start",
        "state",
        "statuses",
        "version",
    )

    def __init__(
        self,
        *,
        name: str,
        state: type[BaseModel],
        start: str,
        nodes: Mapping[str, Node | NodeFn],
        routes: Mapping[str, str | RouteTable],
        gates: Mapping[str, Gate | type[BaseModel]] | None = None,
        finals: Mapping[str, FinalStatus] | None = None,
        change_classes: Mapping[str, Iterable[str]] | None = None,
        error_field: str | None = UNSET,
        description: str = "",
        invariants: Mapping[str, Invariant] | Iterable[Invariant] | None = None,
        version: int = 1,
        migrations: Iterable[Migration] = (),
    ) -> None:
        if not (isinstance(state, type) and issubclass(state, BaseModel)):
            raise TypeError(f"Flow state must be a pydantic model class, got {state!r}")
        self.name = name
        self.state = state
        self.start = start
        self.description = description
        self.nodes: Mapping[str, Node] = MappingProxyType({k: as_node(v) for k, v in nodes.items()})
        # Known once here: the sync API asks on every call, and scanning a big flow's nodes
        # each time made a run's cost grow with the size of the flow.
        self.has_async: bool = any(n.is_async for n in self.nodes.values())
        # Nodes the core runs its own way (Map, Parallel, Subflow): one set lookup per step.
        self.composite: frozenset[str] = frozenset(
            name for name, n in self.nodes.items() if n.composite
        )
        self.gates: Mapping[str, Gate] = MappingProxyType(
            {k: as_gate(v) for k, v in (gates or {}).items()}
        )
        #: Gates a thread arrives at with something to carry (a payload, a deadline).
        self.arrivals: frozenset[str] = frozenset(
            name for name, gate in self.gates.items() if gate.on_arrival
        )
        self.finals: Mapping[str, FinalStatus] = MappingProxyType(dict(finals or {}))
        self.routes: Mapping[str, str | RouteTable] = MappingProxyType(dict(routes))
        self.change_classes: Mapping[str, frozenset[str]] = MappingProxyType(
            {k: frozenset(v) for k, v in (change_classes or {}).items()}
        )
        self.schema = StateSchema(state)
        if error_field is UNSET:
            error_field = "error" if "error" in state.model_fields else None
        self.error_field: str | None = error_field
        # An empty tuple is falsy, so flows without invariants pay one truth test per step.
        self.invariants: tuple[tuple[str, Invariant], ...] = _named(invariants)
        self.version = version
        self.migrations: tuple[Migration, ...] = tuple(migrations)

        problems = flow_problems(self)
        problems += migration_problems(self)
        problems += [
            f"Invariant `{name}` is not callable; pass a function (state) -> list of problems."
            for name, check in self.invariants
            if not callable(check)
        ]
        if problems:
            raise FlowDefinitionError(name, problems)
        # A thread's status at each machine state, looked up once per step.
        self.statuses: Mapping[str, Status] = MappingProxyType(
            {
                **{n: "pending" for n in self.nodes},
                **{g: "waiting" for g in self.gates},
                **self.finals,
                END: "done",
            }
        )
        self.machine = MachineAdapter(
            name,
            states=[*self.nodes, *self.gates, *self.finals, END],
            edges=[
                *((s, t) for s, r in self.routes.items() for t in targets_of(r)),
                *timeout_edges(self),  # a deadline that passes moves the thread too
            ],
            initial=start,
        )
        self._frozen = True

    def __setattr__(self, key: str, value: Any) -> None:
        if getattr(self, "_frozen", False):
            raise AttributeError(f"Flow `{self.name}` is immutable; build a new Flow instead.")
        object.__setattr__(self, key, value)

    @property
    def states(self) -> list[str]:
        """Every machine state: nodes, gates, finals and END, in definition order."""
        return [*self.nodes, *self.gates, *self.finals, END]

    def kind_of(self, state: str) -> Literal["node", "gate", "final"]:
        if state in self.nodes:
            return "node"
        if state in self.gates:
            return "gate"
        return "final"

    def final_status(self, state: str) -> FinalStatus:
        return "done" if state == END else self.finals[state]

    def route_table(self, source: str) -> RouteTable | None:
        route = self.routes.get(source)
        return route if isinstance(route, RouteTable) else None

    def next_state(self, source: str, state: BaseModel) -> str:
        route = self.routes[source]
        return route.resolve(state) if isinstance(route, RouteTable) else route

    def to_data(self) -> dict[str, Any]:
        """The flow's shape as plain data: states, gates, routes (tables as data), and, when
        gates have deadlines, ``deadlines``: gate -> ``{"seconds", "on_timeout"}``."""
        data = {
            "name": self.name,
            "description": self.description,
            "version": self.version,
            "state": self.state.__name__,
            "start": self.start,
            "nodes": {
                name: {
                    "reads": sorted(n.reads) if n.reads is not None else None,
                    "writes": sorted(n.writes) if n.writes is not None else None,
                    "timeout": n.timeout,
                    "retry": n.retry.max_attempts if n.retry else 1,
                    **n.shape(),
                }
                for name, n in self.nodes.items()
            },
            "gates": {name: g.input.__name__ for name, g in self.gates.items()},
            "finals": dict(self.finals),
            "invariants": [name for name, _ in self.invariants],
            "routes": {
                s: (r.to_data() if isinstance(r, RouteTable) else r) for s, r in self.routes.items()
            },
        }
        deadlines = {
            name: {
                "seconds": (
                    g.deadline.total_seconds() if isinstance(g.deadline, timedelta) else None
                ),
                "on_timeout": g.on_timeout,
            }
            for name, g in self.gates.items()
            if g.deadline is not None
        }
        if deadlines:  # only then: flows without timers keep the shape they always had
            data["deadlines"] = deadlines
        return data

    def __repr__(self) -> str:
        return (
            f"Flow({self.name!r}, {len(self.nodes)} nodes, {len(self.gates)} gates, "
            f"start={self.start!r})"
        )


def _named(
    invariants: Mapping[str, Invariant] | Iterable[Invariant] | None,
) -> tuple[tuple[str, Invariant], ...]:
    if invariants is None:
        return ()
    if isinstance(invariants, Mapping):
        return tuple((str(name), check) for name, check in invariants.items())
    return tuple((getattr(check, "__name__", repr(check)), check) for check in invariants)
