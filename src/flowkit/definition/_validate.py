"""Static checks of a flow definition: every problem at once, each with its fix."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ..foundation._known_fields import suggest
from ..records._node_error import NodeError
from ._faithful import loose_fields
from ._parallel import Parallel
from ._route_table import END, RouteTable, targets_of
from ._shape import FlowShape

__all__ = ["flow_problems", "timeout_edges"]


def flow_problems(flow: FlowShape) -> list[str]:
    problems: list[str] = []
    problems += _name_problems(flow)
    problems += _route_problems(flow)
    problems += _field_problems(flow)
    problems += _graph_problems(flow)
    problems += _parallel_problems(flow)
    problems += _timer_problems(flow)
    for name, node in flow.nodes.items():
        problems += node.definition_problems(name)
    return problems


def _name_problems(flow: FlowShape) -> list[str]:
    found: list[str] = []
    for name in sorted(set(flow.nodes) & set(flow.gates)):
        found.append(f"`{name}` is both a node and a gate; rename one of them.")
    for name in sorted((set(flow.nodes) | set(flow.gates)) & set(flow.finals)):
        found.append(f"`{name}` is a final state and also a node or gate; rename one of them.")
    if END in flow.nodes or END in flow.gates or END in flow.finals:
        found.append(f"`{END}` is reserved for flowkit.END; rename that node.")
    if flow.start not in flow.nodes and flow.start not in flow.gates:
        found.append(
            f"Start `{flow.start}` is not a node or gate of this flow"
            f"{suggest(flow.start, [*flow.nodes, *flow.gates])}; add it or fix start=."
        )
    return found


def _route_problems(flow: FlowShape) -> list[str]:
    found: list[str] = []
    states = set(flow.nodes) | set(flow.gates)
    targets_known = states | set(flow.finals) | {END}
    for source in flow.routes:
        if source not in states:
            found.append(
                f"Route from `{source}`: `{source}` is not a node or gate of this flow"
                f"{suggest(source, states)}; add it or remove the route."
            )
    for name in sorted(states):
        if name in flow.routes:
            continue
        if name in flow.gates:
            found.append(
                f"Gate `{name}` has no route, so it can never be resumed; add routes['{name}']."
            )
        else:
            found.append(
                f"Node `{name}` has no route; add routes['{name}'] (a target, a RouteTable or END)."
            )
    for source, route in flow.routes.items():
        for target in sorted(targets_of(route)):
            if target not in targets_known:
                found.append(
                    f"Route `{source} -> {target}`: `{target}` is not in this flow"
                    f"{suggest(target, targets_known)}; add it or fix the route."
                )
        if isinstance(route, RouteTable):
            found.extend(route.problems())
        if source in flow.gates and targets_of(route) <= {source}:
            found.append(
                f"Gate `{source}` only routes back to itself, so resuming it can never move on; "
                "route it somewhere else."
            )
    return found


def _field_problems(flow: FlowShape) -> list[str]:
    found: list[str] = []
    model_name = flow.state.__name__
    fields = set(flow.state.model_fields)

    def unknown(keys: Iterable[str], what: str) -> None:
        for key in sorted(set(keys) - fields):
            found.append(
                f"{what} `{key}`, which {model_name} has no field for"
                f"{suggest(key, fields)}; add the field or fix the name."
            )

    for name, node in flow.nodes.items():
        if node.writes is not None:
            unknown(node.writes, f"Node `{name}` declares a write to")
        if node.reads is not None:
            unknown(node.reads, f"Node `{name}` declares a read of")
    for name, gate in flow.gates.items():
        if gate.apply is None:
            unknown(gate.default_writes, f"Gate `{name}` copies its input field")
        elif gate.writes is not None:
            unknown(gate.writes, f"Gate `{name}` declares a write to")
    for name, node in flow.nodes.items():
        asks = node.asks  # what the answer to the node's question (ctx.ask) looks like
        if asks is not None and asks.apply is None:
            unknown(asks.default_writes, f"Node `{name}` copies its answer's field")
        elif asks is not None and asks.writes is not None:
            unknown(asks.writes, f"Node `{name}` declares its answer writes to")
    for source, route in flow.routes.items():
        if isinstance(route, RouteTable):
            unknown(route.fields(), f"Route table `{route.name}` (after `{source}`) reads")
    for klass, keys in flow.change_classes.items():
        unknown(keys, f"Change class `{klass}` lists")
    if flow.error_field is not None:
        if flow.error_field not in fields:
            found.append(
                f"error_field `{flow.error_field}` is not a field of {model_name}; add "
                f"`{flow.error_field}: NodeError | None = None` or pass error_field=None."
            )
        else:
            sample = NodeError(type="X", message="x", node="x")
            if not flow.schema.accepts(flow.error_field, sample):
                found.append(
                    f"Field `{flow.error_field}` of {model_name} cannot hold a NodeError; type it "
                    "`NodeError | None = None`, or pass error_field=None."
                )
            elif flow.error_field in loose_fields(flow.state):
                found.append(
                    f"Field `{flow.error_field}` of {model_name} admits any type, so a NodeError "
                    "kept there would read back as a dict after a resume; type it "
                    "`NodeError | None = None`, or pass error_field=None."
                )
    if "dialog_state" in fields:
        for state in sorted(set(flow.nodes) | set(flow.gates) | set(flow.finals)):
            if not flow.schema.accepts("dialog_state", state):
                found.append(
                    f"`dialog_state` of {model_name} cannot hold `{state}`, which the engine "
                    "mirrors into it; add the value to its type."
                )
    return found


def _graph_problems(flow: FlowShape) -> list[str]:
    found: list[str] = []
    edges: dict[str, set[str]] = {}
    for source, route in flow.routes.items():
        edges.setdefault(source, set()).update(targets_of(route))
    for source, target in timeout_edges(flow):  # a deadline's route is a route too
        edges.setdefault(source, set()).add(target)
    states = set(flow.nodes) | set(flow.gates)
    reachable = _reach(flow.start, edges)
    for name in sorted(states - reachable):
        found.append(
            f"`{name}` is unreachable from start `{flow.start}`; route to it or remove it."
        )
    # A run rests at END, at a final state, at a gate or at a node that asks (ctx.ask). A
    # cycle through one (a chat session, a robot cell between operator inputs) waits there for
    # its next input and is a legitimate shape; only a loop of nodes that never reaches a
    # resting place spins forever.
    asking = {name for name, node in flow.nodes.items() if node.asks is not None}
    resting = set(flow.finals) | {END} | set(flow.gates) | asking
    reverse: dict[str, set[str]] = {}
    for source, targets in edges.items():
        for target in targets:
            reverse.setdefault(target, set()).add(source)
    can_rest: set[str] = set()
    for place in resting:
        can_rest |= _reach(place, reverse)
    for name in sorted((states & reachable) - can_rest):
        found.append(
            f"`{name}` is a dead end: no route from it ever reaches END, a final state or a "
            "gate; add an exit to its loop."
        )
    return found


def timeout_edges(flow: FlowShape) -> list[tuple[str, str]]:
    """The routes deadlines take: gate -> its ``on_timeout`` (the machine has these edges)."""
    return [
        (name, gate.on_timeout) for name, gate in flow.gates.items() if gate.on_timeout is not None
    ]


def _timer_problems(flow: FlowShape) -> list[str]:
    """Deadlines whose route leads nowhere, and deadlines where no timer can fire."""
    found: list[str] = []
    targets = set(flow.nodes) | set(flow.gates) | set(flow.finals) | {END}
    for name, gate in flow.gates.items():
        if gate.on_timeout is None:
            continue
        if gate.on_timeout == name:
            found.append(
                f"Gate `{name}` has on_timeout=`{name}`, itself: its deadline would only start "
                "it waiting again; route it to the state that handles the silence."
            )
        elif gate.on_timeout not in targets:
            found.append(
                f"Gate `{name}` has on_timeout=`{gate.on_timeout}`, which is not a state of "
                f"this flow{suggest(gate.on_timeout, targets)}; name a node, gate, final "
                "state or END."
            )
    for name, node in flow.nodes.items():
        if node.asks is not None and node.asks.deadline is not None:
            found.append(
                f"Node `{name}` asks with a deadline (asks=Gate(..., deadline=...)); a node's "
                "question has none. Give the deadline to a gate of the flow instead."
            )
        if isinstance(node, Parallel):
            for branch, gate in node.gates.items():
                if gate.deadline is not None:
                    found.append(
                        f"Gate branch `{branch}` of `{name}` has a deadline; a Parallel's "
                        "gate branches have none. Give the deadline to a gate of the flow."
                    )
    return found


def _reach(start: str, edges: Mapping[str, set[str]]) -> set[str]:
    seen = {start}
    todo = [start]
    while todo:
        for nxt in edges.get(todo.pop(), ()):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def _parallel_problems(flow: FlowShape) -> list[str]:
    """Branches of one ``Parallel`` that overwrite the same plain field.

    Their updates merge in declaration order, so the last branch would silently win; a field
    several branches write needs a reducer (``append``, or one of your own) to combine them.
    """
    found: list[str] = []
    for name, node in flow.nodes.items():
        if not isinstance(node, Parallel):
            continue
        writers: dict[str, list[str]] = {}
        declared = {branch: each.writes for branch, each in node.branches.items()}
        for branch, gate in node.gates.items():
            declared[branch] = gate.default_writes if gate.apply is None else gate.writes
        for branch, writes in declared.items():
            for key in sorted(writes or ()):
                writers.setdefault(key, []).append(branch)
        for key, branches in writers.items():
            if len(branches) > 1 and key not in flow.schema.reducer_fields:
                found.append(
                    f"Branches {', '.join(f'`{b}`' for b in branches)} of `{name}` all write "
                    f"`{key}`, which has no reducer, so the last one would silently win; give "
                    f"`{key}` a reducer (e.g. Annotated[list[...], append]) or let one branch "
                    "write it."
                )
    return found
