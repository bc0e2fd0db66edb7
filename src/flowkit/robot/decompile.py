"""Read a Blockly robot program (XML) into the structured steps, losing nothing.

Everything the editor wrote is kept; where a value is exactly what the compiler would write
by convention (the catalog's default ``timeout``, ``editable="false"`` on ``select_robot``)
the step says None, so compiling the steps gives the same document back.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Literal

from pydantic import ValidationError

from flowkit.errors import InvalidProgramError

from ._document import document_markup, outside_root
from ._markup import gaps, indent, read_markup, self_closing_elements
from ._specs import FieldSpec
from ._xml import Element, local_name, parse_document, parse_xml
from .catalog import Catalog, default_catalog
from .problems import Problem
from .steps import Markup, Program, Step

__all__ = ["decompile", "decompile_with_lines"]

# Bookkeeping a block may lack (as generator outputs do); x/y are noted for stack heads only.
_ABSENT: tuple[Literal["id", "data-blockNo"], ...] = ("id", "data-blockNo")
_BLOCK_ATTRIBUTES = {"type", "id", "x", "y", "data-blockNo", "disabled", "disabled-reasons"}
# Attributes the model keeps per child element (a comment's go to ``Step.comment``).
_CHILD_ATTRIBUTES = {
    "field": {"name"},
    "value": {"name"},
    "statement": {"name"},
    "comment": {"pinned", "h", "w"},
}


class _ReadError(Exception):
    def __init__(self, element: Element, message: str, code: str = "unsupported_xml") -> None:
        super().__init__(message)
        self.element = element
        self.code = code


def decompile(
    source: str | bytes | os.PathLike[str] | None = None,
    *,
    path: str | os.PathLike[str] | None = None,
    catalog: Catalog | None = None,
) -> Program:
    """Read a program from XML text or bytes, a ``Path``, or ``path=`` a file name (a ``str``
    source is always XML text, never a file name).

    Raises:
        UnsafeXMLError: DOCTYPE or entities in the document.
        InvalidProgramError: not well-formed, or something the step model cannot hold (the
            problem names the line).
        RobotProgramError: the file cannot be read (see ``read_source``).
    """
    if path is not None:
        root, where, text = parse_document(source, path=path)
        return _decompile_root(root, where, catalog, text)[0]
    if source is None:
        parse_xml()  # raises: neither given
    assert source is not None
    program, _lines = decompile_with_lines(source, catalog=catalog)
    return program


def decompile_with_lines(
    source: str | bytes | os.PathLike[str] | Element, *, catalog: Catalog | None = None
) -> tuple[Program, dict[int, int]]:
    """Like ``decompile``; also maps ``id(step)`` of every step to its line in the XML."""
    if isinstance(source, str | bytes | os.PathLike):
        root, path, text = parse_document(source)
        return _decompile_root(root, path, catalog, text)
    return _decompile_root(source, None, catalog, None)


def _decompile_root(
    root: Element, path: str | None, catalog: Catalog | None, text: str | None
) -> tuple[Program, dict[int, int]]:
    reader = _Reader(catalog or default_catalog())
    if text is not None:
        closed = self_closing_elements(root, text)
        if closed is None:  # the compiler's way: self-closing where there is nothing inside
            closed = {e for e in root.iter() if len(e) == 0 and not e.text}
        reader.closed = closed
    try:
        stacks = [_unplaced(reader.chain(child, 1)) for child in reader.children(root)]
        document = None
        if text is not None:
            document = document_markup(outside_root(text), root, text)
        return Program(stacks=stacks, document=document), reader.lines
    except _ReadError as exc:
        problem = Problem(
            severity="error",
            code=exc.code,
            message=str(exc),
            line=exc.element.sourceline,
            block_type=exc.element.get("type"),
            block_id=exc.element.get("id"),
        )
        raise InvalidProgramError([problem], path=path) from None


class _Reader:
    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self.lines: dict[int, int] = {}
        #: Elements written ``<a/>`` (None: the text was not given, so no markup is read).
        self.closed: set[Element] | None = None
        #: Each parent's children, the text around them and each child's place, read once
        #: (per block, a document of many stacks read all its root's children again).
        self._gaps: dict[Element, tuple[list[str], dict[Element, int], int]] = {}

    @staticmethod
    def children(element: Element) -> list[Element]:
        """The child elements; XML comments are skipped (``Markup`` keeps them)."""
        if (element.text or "").strip():
            raise _ReadError(element, f"unexpected text {element.text.strip()[:40]!r}; remove it")
        found = []
        for child in element:
            if (child.tail or "").strip():
                raise _ReadError(child, f"unexpected text {child.tail.strip()[:40]!r}; remove it")
            if isinstance(child.tag, str):
                found.append(child)
        return found

    def chain(self, first: Element, depth: int) -> list[Step]:
        # Iterative along <next>: real chains nest one level per block.
        steps: list[Step] = []
        element: Element | None = first
        while element is not None:
            if local_name(element) != "block":
                raise _ReadError(element, f"<{local_name(element)}> found where a <block> belongs")
            step, element = self.block(element, depth)
            steps.append(step)
            depth += 2  # <next> and its <block>
        return steps

    def _markup(self, element: Element, depth: int) -> tuple[Markup | None, str | None]:
        if self.closed is None:
            return None, None
        parent = element.getparent()
        known = self._gaps.get(parent)
        if known is None:
            siblings, texts = gaps(parent)
            known = texts, {child: i for i, child in enumerate(siblings)}, len(siblings)
            self._gaps[parent] = known  # keeps the proxies alive, so lxml hands the same back
        texts, places, count = known
        index = places[element]
        last = index == count - 1
        expected = indent(depth - 1 if last else depth)
        return read_markup(element, depth, self.closed, (texts[index + 1], expected))

    def block(self, element: Element, depth: int) -> tuple[Step, Element | None]:
        block_type = element.get("type")
        if not block_type:
            raise _ReadError(element, "<block> without a type attribute", code="missing_type")
        fields: dict[str, str] = {}
        inputs: dict[str, Step | list[Step]] = {}
        mutation: dict[str, str] | None = None
        comment: Element | None = None
        following: Element | None = None
        for child in self.children(element):
            kind = local_name(child)
            name = child.get("name")
            taken = fields if kind == "field" else inputs
            if kind in ("field", "value", "statement") and (name is None or name in taken):
                raise _ReadError(child, f"<{kind}> needs a unique name attribute")
            extra = set(child.attrib) - _CHILD_ATTRIBUTES.get(kind, set())
            if extra and kind != "mutation":
                raise _ReadError(child, f"<{kind}> attribute {sorted(extra)[0]} is not supported")
            if kind == "mutation":
                if mutation is not None or len(child):
                    raise _ReadError(
                        child, "only one <mutation> without child elements is supported"
                    )
                mutation = dict(child.attrib)
            elif kind == "field":
                if len(child):
                    raise _ReadError(child, "a <field> holds text only")
                fields[name] = child.text or ""
            elif kind == "comment":
                comment = child
            elif kind == "value":
                blocks = self.children(child)
                if len(blocks) != 1 or local_name(blocks[0]) != "block":
                    raise _ReadError(child, f"<value name={name!r}> must hold exactly one <block>")
                value, rest = self.block(blocks[0], depth + 2)
                if rest is not None:
                    raise _ReadError(rest, "a block inside <value> cannot have a <next>")
                inputs[name] = value
            elif kind == "statement":
                blocks = self.children(child)
                if len(blocks) > 1:
                    raise _ReadError(child, "a <statement> holds one chain (one first <block>)")
                inputs[name] = self.chain(blocks[0], depth + 2) if blocks else []
            elif kind == "next":
                blocks = self.children(child)
                if following is not None or len(blocks) != 1:
                    raise _ReadError(child, "a block has at most one <next> with one <block>")
                following = blocks[0]
            else:
                raise _ReadError(child, f"<{kind}> inside <block> is not supported")
        step = self._step(element, depth, block_type, fields, mutation, inputs, comment)
        self.lines[id(step)] = element.sourceline
        return step, following

    def _step(
        self,
        element: Element,
        depth: int,
        block_type: str,
        fields: dict[str, str],
        mutation: dict[str, str] | None,
        inputs: dict[str, Step | list[Step]],
        comment: Element | None,
    ) -> Step:
        spec = self.catalog.get(block_type)
        default = spec.default_mutation(list(inputs)) if spec else None
        stored: dict[str, str] | bool | None
        if mutation == default:
            stored = None
        elif mutation is None:
            stored = False
        else:
            stored = mutation
        editable_attr = element.get("editable")
        by_convention = "false" if block_type == "select_robot" else None
        editable = None if editable_attr == by_convention else editable_attr != "false"
        reasons = element.get("disabled-reasons")
        extra = {k: v for k, v in element.attrib.items() if k not in _BLOCK_ATTRIBUTES}
        extra.pop("editable", None)
        absent: list[Literal["id", "x", "y", "data-blockNo", "fields"]] = [
            a for a in _ABSENT if element.get(a) is None
        ]
        if spec is not None and _completed(spec.fields, fields) != list(fields.items()):
            absent.append("fields")  # written as found, not completed from the catalog
        markup, empty_text = self._markup(element, depth)
        try:
            return Step(
                type=block_type,
                fields=fields,
                mutation=stored,
                inputs=inputs,
                disabled=element.get("disabled") == "true" or reasons is not None,
                disabled_reasons=reasons.split(",") if reasons else [],
                source=None if comment is None else comment.text or "",
                comment=None if comment is None else dict(comment.attrib),
                empty_text=empty_text,
                absent=absent,
                markup=markup,
                id=element.get("id"),
                block_no=_integer(element, "data-blockNo"),
                x=_integer(element, "x"),
                y=_integer(element, "y"),
                editable=editable,
                attributes=extra,
            )
        except ValidationError as exc:
            detail = "; ".join(e["msg"] for e in exc.errors())
            raise _ReadError(element, f"block cannot be read: {detail}") from None


def _completed(specs: Sequence[FieldSpec], fields: dict[str, str]) -> list[tuple[str, str]]:
    """The fields as the compiler writes a partial list: catalog order, defaults added."""
    known = [f.name for f in specs]
    if all(name in fields for name in known):
        return list(fields.items())
    found = [(f.name, fields.get(f.name, f.default)) for f in specs]
    written = [(name, value) for name, value in found if value is not None]
    return written + [(k, v) for k, v in fields.items() if k not in known]


def _unplaced(stack: list[Step]) -> list[Step]:
    head = stack[0]
    if head.x is None and head.y is None:
        stack[0] = head.model_copy(update={"absent": [*head.absent, "x", "y"]})
    return stack


def _integer(element: Element, name: str) -> int | None:
    text = element.get(name)
    if text is None:
        return None
    try:
        return int(text)
    except ValueError:
        raise _ReadError(element, f"attribute {name}={text!r} must be a whole number") from None
