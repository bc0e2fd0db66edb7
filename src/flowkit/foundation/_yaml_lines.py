"""Where each key of a YAML file stands: the line numbers behind "every problem, with its line".

Configuration files (dialogue domains, roundtable tables) report each problem with the line it
is on; both walk the same YAML node tree, so the walk lives here.
"""

from __future__ import annotations

from typing import Any

__all__ = ["Lines", "line_of", "lines_of"]

#: Path (keys and item indexes as text) -> 1-based line.
Lines = dict[tuple[str, ...], int]


def lines_of(root: Any) -> Lines:
    """Every path in the YAML node tree ``root`` (from ``yaml.compose``) with its line."""
    import yaml

    lines: Lines = {}
    stack: list[tuple[Any, tuple[str, ...]]] = [(root, ())]
    # An alias is the node it names: each node is walked once, where it is met first, so an
    # alias that refers to itself (``a: &a [*a]``) ends the walk instead of never ending it.
    walked: set[int] = set()
    while stack:
        node, path = stack.pop()
        if id(node) in walked:
            continue
        walked.add(id(node))
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                child = (*path, str(key.value))
                lines.setdefault(child, key.start_mark.line + 1)
                stack.append((value, child))
        elif isinstance(node, yaml.SequenceNode):
            for index, value in enumerate(node.value):
                child = (*path, str(index))
                lines.setdefault(child, value.start_mark.line + 1)
                stack.append((value, child))
    return lines


def line_of(lines: Lines, parts: tuple[str, ...]) -> int | None:
    """The line of ``parts``, or of its nearest enclosing key that is in the file."""
    while parts:
        if parts in lines:
            return lines[parts]
        parts = parts[:-1]
    return None
