"""A flow as an SVG picture with the thread's current state marked, drawn here in Python: no
JavaScript, no Graphviz, nothing fetched, so the page works offline.

States are laid out in layers by their distance from the start (breadth first); a route to a
later layer is a straight arrow, a route back (a loop) curves round the right-hand side.
Nodes are rounded boxes, gates hexagons, final states pills. Every name is escaped, and the
picture is shown through ``<img>``, where an SVG can run nothing.
"""

from __future__ import annotations

from collections import deque
from xml.sax.saxutils import escape, quoteattr

from ..definition._flow import Flow
from ..definition._route_table import END
from ..diagram import edges

__all__ = ["flow_svg"]

_ROW = 84  # vertical distance between layers
_GAP = 28  # horizontal gap between boxes
_HEIGHT = 36
_CHAR = 7.4  # px per character at the font size used
_MARGIN = 24


def _label(name: str) -> str:
    return "END" if name == END else name


def _width(name: str) -> float:
    return max(72.0, len(_label(name)) * _CHAR + 28)


def _layers(flow: Flow) -> list[list[str]]:
    following: dict[str, list[str]] = {}
    for edge in edges(flow):
        following.setdefault(edge.source, []).append(edge.target)
    depth = {flow.start: 0}
    queue = deque([flow.start])
    while queue:
        name = queue.popleft()
        for target in following.get(name, ()):
            if target not in depth:
                depth[target] = depth[name] + 1
                queue.append(target)
    bottom = max(depth.values(), default=0) + 1
    for name in flow.states:  # states no route reaches still appear, at the bottom
        depth.setdefault(name, bottom)
    layers: list[list[str]] = [[] for _ in range(max(depth.values()) + 1)]
    for name in [*depth]:
        layers[depth[name]].append(name)
    return [layer for layer in layers if layer]


def flow_svg(flow: Flow, current: str | None = None, status: str | None = None) -> str:
    """The flow as an SVG document; ``current`` (a state name) is drawn highlighted."""
    layers = _layers(flow)
    rows = [sum(_width(n) for n in layer) + _GAP * (len(layer) - 1) for layer in layers]
    width = max(rows, default=200.0) + 2 * _MARGIN + 80  # room for loops on the right
    height = len(layers) * _ROW + 2 * _MARGIN
    centre: dict[str, tuple[float, float]] = {}
    for row, layer in enumerate(layers):
        x = _MARGIN + (width - 80 - 2 * _MARGIN - rows[row]) / 2
        y = _MARGIN + row * _ROW + _HEIGHT / 2
        for name in layer:
            w = _width(name)
            centre[name] = (x + w / 2, y)
            x += w + _GAP
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
        f'viewBox="0 0 {width:.0f} {height:.0f}" role="img" '
        f'aria-label={quoteattr(f"flow {flow.name}")} font-family="sans-serif" font-size="13">',
        f"<title>{escape(flow.name)}</title>",
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" '
        'markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" '
        'fill="#666"/></marker></defs>',
    ]
    depth = {name: row for row, layer in enumerate(layers) for name in layer}
    loops = 0
    for edge in edges(flow):
        (x1, y1), (x2, y2) = centre[edge.source], centre[edge.target]
        title = f"<title>{escape(f'{edge.source} → {_label(edge.target)}')}"
        title += f"{escape(': ' + edge.label) if edge.label else ''}</title>"
        if depth[edge.target] > depth[edge.source]:
            parts.append(
                f'<path d="M{x1:.1f},{y1 + _HEIGHT / 2:.1f} L{x2:.1f},{y2 - _HEIGHT / 2:.1f}" '
                f'stroke="#666" fill="none" marker-end="url(#arrow)">{title}</path>'
            )
        elif depth[edge.target] == depth[edge.source] and edge.target != edge.source:
            side = 1 if x2 > x1 else -1  # a neighbour in the same layer: side to side
            sx = x1 + side * _width(edge.source) / 2
            tx = x2 - side * _width(edge.target) / 2
            parts.append(
                f'<path d="M{sx:.1f},{y1:.1f} L{tx:.1f},{y2:.1f}" stroke="#666" fill="none" '
                f'marker-end="url(#arrow)">{title}</path>'
            )
        else:  # back to an earlier layer (or itself): curve round the right
            loops += 1
            reach = width - _MARGIN / 2 - (loops % 4) * 10
            sx, tx = x1 + _width(edge.source) / 2, x2 + _width(edge.target) / 2
            parts.append(
                f'<path d="M{sx:.1f},{y1:.1f} C{reach:.1f},{y1:.1f} {reach:.1f},{y2:.1f} '
                f'{tx:.1f},{y2:.1f}" stroke="#999" stroke-dasharray="4 3" fill="none" '
                f'marker-end="url(#arrow)">{title}</path>'
            )
    parts.append(
        f'<text x="{centre[flow.start][0]:.1f}" y="{_MARGIN - 8:.1f}" text-anchor="middle" '
        'fill="#666" font-size="11">start</text>'
    )
    for name, (x, y) in centre.items():
        parts.append(_shape(flow, name, x, y, name == current, status))
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def _shape(flow: Flow, name: str, x: float, y: float, here: bool, status: str | None) -> str:
    w, h = _width(name), _HEIGHT
    if name in flow.gates:
        fill, stroke = "#fff4d6", "#c98a00"
    elif name == END or name in flow.finals:
        failed = flow.finals.get(name) == "failed"
        fill, stroke = ("#fbe3e3", "#b23b3b") if failed else ("#e3f4e1", "#3a7d34")
    else:
        fill, stroke = "#eef2f8", "#49658c"
    width = "1.5"
    if here:
        fill = {"failed": "#f3b8b8", "done": "#bfe6b9"}.get(status or "", "#ffd54a")
        stroke, width = "#000", "4"
    left, top = x - w / 2, y - h / 2
    if name in flow.gates:
        cut, right, bottom = 12, left + w, top + h
        corners = [(left, y), (left + cut, top), (right - cut, top), (right, y),
                   (right - cut, bottom), (left + cut, bottom)]  # fmt: skip
        points = " ".join(f"{px:.1f},{py:.1f}" for px, py in corners)
        box = f'<polygon points="{points}"'
    else:
        radius = h / 2 if (name == END or name in flow.finals) else 8
        box = (
            f'<rect x="{left:.1f}" y="{top:.1f}" width="{w:.1f}" height="{h:.1f}" rx="{radius:.1f}"'
        )
    marker = ' data-current="true"' if here else ""
    return (
        f"<g data-state={quoteattr(name)}{marker}><title>{escape(_label(name))}</title>"
        f'{box} fill="{fill}" stroke="{stroke}" stroke-width="{width}"/>'
        f'<text x="{x:.1f}" y="{y + 4.5:.1f}" text-anchor="middle">{escape(_label(name))}</text>'
        "</g>"
    )
