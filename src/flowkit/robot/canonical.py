"""Compare robot programs by content: a canonical text form of the XML, equality and a diff.

The canonical form keeps every element, attribute and text that Blockly reads, in document
order, and drops what carries no meaning: the XML declaration, comments, processing
instructions, indentation whitespace between elements, attribute order and namespace prefixes.
Field text is kept exactly (``" P1"`` differs from ``"P1"``).
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable
from pathlib import Path

from ._xml import BLOCKLY_NS, Element, local_name, parse_xml

__all__ = ["canonical_diff", "canonical_equal", "canonical_form"]

Source = str | bytes | Path
# Elements whose text is data, kept exactly; elsewhere whitespace-only text is indentation.
_TEXT_ELEMENTS = frozenset({"field", "comment"})


def canonical_form(
    source: Source,
    *,
    ignore_attributes: Iterable[str] = (),
    ignore_field_order: bool = False,
) -> str:
    """One line per element, indented by depth: ``<tag a="1" b="2">`` plus its text.

    ``ignore_attributes`` drops attributes by name everywhere (e.g. ``("id", "data-blockNo")``
    to compare structure only). ``ignore_field_order`` sorts the ``<field>`` elements of a
    block by name; Blockly reads fields by name, so their order carries no meaning.
    """
    root, _path = parse_xml(source)
    ignored = frozenset(ignore_attributes)
    lines: list[str] = []
    # Iterative: chains nest one level per block, deeper than Python's recursion allows.
    pending: list[tuple[Element, int]] = [(root, 0)]
    while pending:
        element, depth = pending.pop()
        children = [c for c in element if isinstance(c.tag, str)]
        if ignore_field_order:
            children = _sorted_fields(children)
        lines.append("  " * depth + _open_tag(element, ignored))
        if children:
            texts = [element.text, *(c.tail for c in children)]
            loose = [t.strip() for t in texts if t and t.strip()]
            if loose:
                lines.append("  " * (depth + 1) + "#text " + json.dumps(loose, ensure_ascii=False))
        elif element.text and (element.text.strip() or local_name(element) in _TEXT_ELEMENTS):
            lines[-1] += " " + json.dumps(element.text, ensure_ascii=False)
        pending.extend((child, depth + 1) for child in reversed(children))
    return "\n".join(lines) + "\n"


def canonical_equal(
    a: Source, b: Source, *, ignore_attributes: Iterable[str] = (), ignore_field_order: bool = False
) -> bool:
    """Whether two programs have the same canonical form."""
    ignored = tuple(ignore_attributes)
    left = canonical_form(a, ignore_attributes=ignored, ignore_field_order=ignore_field_order)
    right = canonical_form(b, ignore_attributes=ignored, ignore_field_order=ignore_field_order)
    return left == right


def canonical_diff(
    a: Source,
    b: Source,
    *,
    ignore_attributes: Iterable[str] = (),
    ignore_field_order: bool = False,
    names: tuple[str, str] = ("a", "b"),
) -> str:
    """A unified diff of the canonical forms; empty when the programs are equal."""
    ignored = tuple(ignore_attributes)
    left = canonical_form(a, ignore_attributes=ignored, ignore_field_order=ignore_field_order)
    right = canonical_form(b, ignore_attributes=ignored, ignore_field_order=ignore_field_order)
    diff = difflib.unified_diff(
        left.splitlines(keepends=True),
        right.splitlines(keepends=True),
        fromfile=names[0],
        tofile=names[1],
    )
    return "".join(diff)


def _open_tag(element: Element, ignored: frozenset[str]) -> str:
    name = local_name(element)
    attributes = sorted((key, value) for key, value in element.attrib.items() if key not in ignored)
    parts = [name] + [
        f"{_attribute_name(k)}={json.dumps(v, ensure_ascii=False)}" for k, v in attributes
    ]
    return "<" + " ".join(parts) + ">"


def _attribute_name(key: str) -> str:
    prefix = f"{{{BLOCKLY_NS}}}"
    return key[len(prefix) :] if key.startswith(prefix) else key


def _sorted_fields(children: list[Element]) -> list[Element]:
    slots = [i for i, c in enumerate(children) if local_name(c) == "field"]
    ordered = sorted((children[i] for i in slots), key=lambda c: c.get("name") or "")
    result = list(children)
    for slot, child in zip(slots, ordered, strict=True):
        result[slot] = child
    return result
