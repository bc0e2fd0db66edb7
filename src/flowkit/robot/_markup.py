"""How a file was written where the compiler writes it otherwise (``Markup``): the order of a
block's attributes and children, self-closing children, and the text between elements (odd
indentation, XML comments inside the root). Read from the element tree when decompiling,
put back into the tree when compiling, so a file another tool wrote comes back byte for byte.

The compiler's own way is two-space indentation (``etree.indent``), attributes and children
in its order, an end tag on ``<mutation>`` and on an empty ``<statement>``; only what differs
from it is recorded.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ._xml import Element, local_name, new_comment
from .steps import Markup, Step

__all__ = [
    "MarkupWriter",
    "child_key",
    "gaps",
    "indent",
    "read_markup",
    "self_closing_elements",
    "with_markup",
]

_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_ATTRIBUTES = r"(?:\s+[^\s=/>]+\s*=\s*(?:\"[^\"]*\"|'[^']*'))*\s*"
_START_TAG = re.compile(r"<[A-Za-z_][\w.:-]*" + _ATTRIBUTES + r"(/?)>")
_SPLIT = re.compile(r"(<!--.*?-->)", re.DOTALL)
#: The compiler's order of ``<block>`` attributes (others follow in the order found).
_ATTRIBUTE_RANK = {
    name: rank
    for rank, name in enumerate(
        ("type", "id", "disabled-reasons", "disabled", "editable", "x", "y", "data-blockNo")
    )
}


def _is_element(node: Element) -> bool:
    return isinstance(node.tag, str)


def self_closing_elements(root: Element, text: str) -> set[Element] | None:
    """The elements written ``<a/>``, matched to the tree's elements in document order; None
    where the count differs (markup this scan does not understand, such as CDATA)."""
    closes = [m.group(1) == "/" for m in _START_TAG.finditer(_COMMENT.sub("", text))]
    elements = [e for e in root.iter() if _is_element(e)]
    if len(closes) != len(elements):
        return None
    return {e for e, closed in zip(elements, closes, strict=True) if closed}


def gaps(element: Element) -> tuple[list[Element], list[str]]:
    """The child elements and the text around them (one more than elements): before the
    first, between each two, after the last; comments are part of that text."""
    children: list[Element] = []
    texts = [element.text or ""]
    for node in element:
        if _is_element(node):
            children.append(node)
            texts.append(node.tail or "")
        else:
            texts[-1] += f"<!--{node.text or ''}-->{node.tail or ''}"
    return children, texts


def child_key(element: Element) -> str:
    """``mutation``, ``comment``, ``next``, or ``field:NAME`` / ``value:NAME`` / ... ."""
    kind = local_name(element)
    name = element.get("name")
    return f"{kind}:{name}" if kind in ("field", "value", "statement") else kind


def _indent(depth: int) -> str:
    return "\n" + "  " * depth


@dataclass
class _Found:
    attributes: list[str] = field(default_factory=list)
    children: list[str] = field(default_factory=list)
    closed: list[str] = field(default_factory=list)
    space: dict[str, str] = field(default_factory=dict)


def read_markup(
    element: Element, depth: int, closed: set[Element], tail: tuple[str, str]
) -> tuple[Markup | None, str | None]:
    """The markup of block ``element`` at ``depth`` (the root's children are at 1) and its
    ``empty_text``; ``tail`` is the text after it in its parent and the compiler's text
    there."""
    found = _Found()
    names = list(element.attrib)
    expected = sorted(names, key=lambda n: (_ATTRIBUTE_RANK.get(n, 99), names.index(n)))
    if names != expected:
        found.attributes = names
    children, texts = gaps(element)
    empty_text: str | None = None
    if not children:
        if element not in closed:
            empty_text = texts[0] if not texts[0].strip() else ""
            if texts[0].strip():
                found.space["text"] = texts[0]
    else:
        _space(found, "text", texts[0], _indent(depth + 1))
    keys = [child_key(c) for c in children]
    for index, (child, key) in enumerate(zip(children, keys, strict=True)):
        last = index == len(children) - 1
        _space(found, f"{key}.tail", texts[index + 1], _indent(depth if last else depth + 1))
        kind = local_name(child)
        inner, inner_texts = gaps(child)
        if kind in ("mutation", "statement", "value", "next"):
            if inner:
                _space(found, f"{key}.text", inner_texts[0], _indent(depth + 2))
            elif child in closed:
                found.closed.append(key)
            else:
                _space(found, f"{key}.text", inner_texts[0], "")
        elif child in closed and kind in ("field", "comment"):
            found.closed.append(key)
    if keys != _compiler_order(keys):
        found.children = keys
    _space(found, "tail", *tail)
    markup = Markup(**found.__dict__) if found != _Found() else None
    return markup, empty_text


def _space(found: _Found, key: str, text: str, expected: str) -> None:
    if text != expected:
        found.space[key] = text


def _compiler_order(keys: list[str]) -> list[str]:
    def rank(key: str) -> int:
        if key == "mutation":
            return 0
        if key.startswith("field:"):
            return 1
        if key == "comment":
            return 2
        return 4 if key == "next" else 3

    return sorted(keys, key=rank)


def indent(depth: int) -> str:
    """The compiler's text before an element at ``depth`` (or an end tag at ``depth``)."""
    return _indent(depth)


class MarkupWriter:
    """Puts a step's markup into the tree: orders while building, text after indenting."""

    def __init__(self) -> None:
        self._noted: list[tuple[Element, Markup]] = []
        self._texts: list[tuple[Element, str, str]] = []

    def note(self, element: Element, markup: Markup | None) -> None:
        """Remember a block with markup; ``finish`` applies it once the tree is built."""
        if markup is not None:
            self.attributes(element, markup)
            self._noted.append((element, markup))

    def finish(self) -> None:
        """Before indenting: children order, self-closing children, text to put back."""
        for element, markup in self._noted:
            self.children(element, markup)
            self.space(element, markup)

    def attributes(self, element: Element, markup: Markup) -> None:
        if not markup.attributes:
            return
        present = dict(element.attrib)
        first = [n for n in markup.attributes if n in present]
        order = first + [n for n in present if n not in first]
        element.attrib.clear()
        for name in order:
            element.set(name, present[name])

    def children(self, element: Element, markup: Markup) -> None:
        if markup.children:
            rank = {key: index for index, key in enumerate(markup.children)}
            ordered = sorted(element, key=lambda c: rank.get(child_key(c), len(rank)))
            for child in ordered:
                element.append(child)
        for child in element:
            if child_key(child) in markup.closed and len(child) == 0:
                child.text = None

    def space(self, element: Element, markup: Markup) -> None:
        for key, text in markup.space.items():
            name, _, where = key.rpartition(".")
            if not name:
                self._texts.append((element, key, text))
                continue
            child = next((c for c in element if child_key(c) == name), None)
            if child is not None:
                self._texts.append((child, where, text))

    def root_text(self, root: Element, text: str) -> None:
        self._texts.append((root, "text", text))

    def apply(self) -> None:
        """After indenting: the recorded text between elements, comments made nodes."""
        for element, where, text in self._texts:
            parts = _SPLIT.split(text)
            if where == "text":
                element.text = parts[0]
                parent, index = element, 0
            else:
                element.tail = parts[0]
                parent = element.getparent()
                if parent is None:
                    continue
                index = parent.index(element) + 1
            for position in range(1, len(parts), 2):
                comment = new_comment(parts[position][4:-3])
                comment.tail = parts[position + 1]
                parent.insert(index, comment)
                index += 1


def with_markup(step: Step, markup: Markup | None) -> Step:
    """``step`` with ``markup`` (kept None when there is none)."""
    return step if markup is None else step.model_copy(update={"markup": markup})
