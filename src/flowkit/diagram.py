"""Diagrams of a Flow: Mermaid (``to_mermaid``) and Graphviz DOT (``to_dot``) text.

Nodes are rounded boxes, gates hexagons, final states stadiums; a ``Map`` node is a double
box labelled ``map``; a ``Parallel`` node is a fan-out to its branches, which meet at a join
from which its routes leave; a ``Subflow`` node is a double box labelled ``subflow`` and the
child flow's name. A route table draws one edge per rule, labelled with its
condition (``default`` for the default); a gate's deadline draws an edge to its
``on_timeout`` labelled ``timeout 2d``. Every label is
escaped, so condition values like ``"a|b"`` or ``"</script>"`` cannot break the output.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta

from .definition._flow import Flow
from .definition._parallel import Map, Parallel
from .definition._route_table import END, RouteTable
from .definition._sleep import duration_text
from .definition._subflow import Subflow

__all__ = ["Edge", "edges", "to_dot", "to_mermaid"]

_START_ID = "__start__"
_END_ID = "__end__"
# A name is used as its own Mermaid id only when it is a plain identifier starting with a
# letter; everything else gets `_s<n>`, which no plain name can collide with.
_PLAIN_ID = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
# Words Mermaid's flowchart grammar reads as keywords even when used as node ids.
_MERMAID_KEYWORDS = frozenset(
    {"end", "graph", "flowchart", "subgraph", "style", "class", "classdef", "click",
     "linkstyle", "direction", "call", "href", "default", "interpolate"}
)  # fmt: skip
# Mermaid's own escape: `#<entity>;` (its docs' "entity codes"), decoded when rendering.
_MERMAID_ENTITIES = {
    "#": "#35;",
    '"': "#quot;",
    "&": "#amp;",
    "<": "#lt;",
    ">": "#gt;",
    "|": "#124;",
    "`": "#96;",
    "\\": "#92;",
    "\n": "#92;n",
    "\r": "#92;r",
    "\t": " ",
}
_DOT_ESCAPES = {
    "\\": "\\\\",
    '"': '\\"',
    "\n": "\\n",
    "\r": "\\r",
    # Entities keep the text safe to embed in HTML/SVG; Graphviz renders them as the character.
    "&": "&amp;",
    "<": "&lt;",
    ">": "&gt;",
}


@dataclass(frozen=True, slots=True)
class Edge:
    """One drawn route: ``label`` is a rule's condition, ``"default"``, or ``""`` (plain)."""

    source: str
    target: str
    label: str


def edges(flow: Flow) -> Iterator[Edge]:
    """Every route of ``flow`` as edges, in definition order (one per table rule)."""
    for source, route in flow.routes.items():
        if isinstance(route, RouteTable):
            for rule in route.rules:
                yield Edge(source, rule.target, rule.condition.describe())
            if route.default is not None:
                yield Edge(source, route.default, "default")
        else:
            yield Edge(source, route, "")
    for name, gate in flow.gates.items():  # where a deadline that passes sends the thread
        if gate.deadline is not None and gate.on_timeout is not None:
            when = gate.deadline
            label = f"timeout {duration_text(when)}" if isinstance(when, timedelta) else "wake-up"
            yield Edge(name, gate.on_timeout, label)


def _mermaid_text(text: str) -> str:
    return "".join(_MERMAID_ENTITIES.get(ch, ch) for ch in text)


def _dot_text(text: str) -> str:
    return '"' + "".join(_DOT_ESCAPES.get(ch, ch) for ch in text) + '"'


def _mermaid_ids(flow: Flow) -> dict[str, str]:
    ids: dict[str, str] = {END: _END_ID}
    for index, name in enumerate([*flow.nodes, *flow.gates, *flow.finals]):
        plain = _PLAIN_ID.fullmatch(name) and name.lower() not in _MERMAID_KEYWORDS
        ids[name] = name if plain else f"_s{index}"
    return ids


def to_mermaid(flow: Flow) -> str:
    """The flow as a Mermaid ``flowchart TD``; paste it into Markdown or mermaid.live."""
    ids = _mermaid_ids(flow)
    lines = [f"%% flow {_mermaid_text(flow.name)}", "flowchart TD"]
    lines.append(f'    {_START_ID}(("start"))')
    joins: dict[str, str] = {}
    for index, (name, node) in enumerate(flow.nodes.items()):
        text = _mermaid_text(name)
        if isinstance(node, Map):
            lines.append(f'    {ids[name]}[["{text} (map)"]]')
        elif isinstance(node, Subflow):  # a subroutine box naming the child flow
            child = _mermaid_text(node.flow.name)
            lines.append(f'    {ids[name]}[["{text} (subflow {child})"]]')
        elif isinstance(node, Parallel):
            joins[name] = f"_j{index}"
            lines.append(f'    {ids[name]}[/"{text} (fan-out)"\\]')
            lines.append(f'    {joins[name]}[\\"{text} (join)"/]')
            for number, branch in enumerate([*node.branches, *node.gates]):
                branch_id = f"_b{index}_{number}"
                label = _mermaid_text(branch)
                shape = f'{{{{"{label}"}}}}' if branch in node.gates else f'("{label}")'
                lines.append(f"    {branch_id}{shape}")
                lines.append(f"    {ids[name]} -.-> {branch_id} -.-> {joins[name]}")
        else:
            lines.append(f'    {ids[name]}("{text}")')
    for name in flow.gates:
        lines.append(f'    {ids[name]}{{{{"{_mermaid_text(name)}"}}}}')
    for name in flow.finals:
        lines.append(f'    {ids[name]}(["{_mermaid_text(name)}"])')
    lines.append(f'    {_END_ID}(["END"])')
    lines.append(f"    {_START_ID} --> {ids[flow.start]}")
    for edge in edges(flow):
        arrow = f' -->|"{_mermaid_text(edge.label)}"| ' if edge.label else " --> "
        source = joins.get(edge.source, ids[edge.source])  # a Parallel's routes leave its join
        lines.append(f"    {source}{arrow}{ids[edge.target]}")
    lines += [
        "    classDef gate fill:#fff4d6,stroke:#c98a00,stroke-width:2px",
        "    classDef done fill:#e3f4e1,stroke:#3a7d34",
        "    classDef failed fill:#fbe3e3,stroke:#b23b3b",
        "    classDef terminal fill:#333,stroke:#333,color:#fff",
    ]
    if flow.gates:
        lines.append(f"    class {','.join(ids[g] for g in flow.gates)} gate")
    for status in ("done", "failed"):
        finals = [ids[f] for f, s in flow.finals.items() if s == status]
        if finals:
            lines.append(f"    class {','.join(finals)} {status}")
    lines.append(f"    class {_START_ID},{_END_ID} terminal")
    return "\n".join(lines) + "\n"


def to_dot(flow: Flow) -> str:
    """The flow as a Graphviz digraph; render with ``dot -Tsvg``."""
    q = _dot_text
    start = _START_ID
    while start in flow.states:  # a user state may be called `__start__`; never merge with it
        start += "_"
    lines = [
        f"digraph {q(flow.name)} {{",
        "    rankdir=TB;",
        '    node [shape=box, style="rounded", fontname="Helvetica"];',
        '    edge [fontname="Helvetica", fontsize=10];',
        f'    {q(start)} [shape=circle, style=filled, fillcolor=black, label="", width=0.2];',
    ]
    joins: dict[str, str] = {}
    for name, node in flow.nodes.items():
        if isinstance(node, Map):
            lines.append(f"    {q(name)} [shape=box3d, label={q(name + ' (map)')}];")
        elif isinstance(node, Subflow):
            label = q(f"{name} (subflow {node.flow.name})")
            lines.append(f"    {q(name)} [shape=component, label={label}];")
        elif isinstance(node, Parallel):
            joins[name] = f"{name} (join)"
            lines.append(f"    {q(name)} [shape=invtrapezium, label={q(name + ' (fan-out)')}];")
            lines.append(f"    {q(joins[name])} [shape=trapezium, label={q(joins[name])}];")
            for branch in [*node.branches, *node.gates]:
                branch_id = q(f"{name}/{branch}")
                shape = ', shape=hexagon, style=filled, fillcolor="#fff4d6"'
                lines.append(
                    f"    {branch_id} [label={q(branch)}{shape if branch in node.gates else ''}];"
                )
                lines.append(f"    {q(name)} -> {branch_id} [style=dashed];")
                lines.append(f"    {branch_id} -> {q(joins[name])} [style=dashed];")
        else:
            lines.append(f"    {q(name)} [label={q(name)}];")
    for name in flow.gates:
        lines.append(
            f'    {q(name)} [shape=hexagon, style=filled, fillcolor="#fff4d6", label={q(name)}];'
        )
    for name, status in flow.finals.items():
        color = "#e3f4e1" if status == "done" else "#fbe3e3"
        lines.append(
            f'    {q(name)} [shape=box, style="rounded,filled,bold", fillcolor="{color}", '
            f"label={q(name)}];"
        )
    lines.append(f'    {q(END)} [shape=doublecircle, label="END", width=0.3];')
    lines.append(f"    {q(start)} -> {q(flow.start)};")
    for edge in edges(flow):
        label = f" [label={q(edge.label)}]" if edge.label else ""
        source = joins.get(edge.source, edge.source)
        lines.append(f"    {q(source)} -> {q(edge.target)}{label};")
    lines.append("}")
    return "\n".join(lines) + "\n"
