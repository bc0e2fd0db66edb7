"""Compile module steps into deterministic Blockly XML, following the editor's conventions.

Every parameter of every step is written (nothing falls back to a template placeholder);
blocks get per-type ``data-blockNo`` and editor-style ids unless the steps carry them;
``timeout`` mutations, ``editable="false"`` and stack positions are added as the editor does.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field

from flowkit.errors import InvalidProgramError

from ._checks import as_fragment, check_program
from ._document import written_as
from ._markup import MarkupWriter
from ._xml import Element, new_element, serialize
from .catalog import Catalog, default_catalog
from .problems import errors_only
from .steps import Program, Step, TaskSteps, build_program

__all__ = ["ID_ALPHABET", "compile_program", "to_program"]

#: The characters of Blockly's generated ids (no XML or JSON specials).
ID_ALPHABET = (
    "!#$%()*+,-./:;=?@[]^_`{|}~ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
)
_ID_LENGTH = 20
_DEFAULT_SEED = "flowkit"
# Room a statement block takes in the editor, generously: a new stack placed below the others
# by this estimate does not overlap them.
_BLOCK_HEIGHT = 48
_STACK_GAP = 40


def _places(program: Program) -> list[tuple[int, int]]:
    """Where each stack goes when its first step has no position.

    With no positioned stack, the editor's row for generated programs: ``x = 10 + 200·k``,
    ``y = 10``. Otherwise a new stack goes under everything already placed, at the leftmost
    column, so that blocks a person adds in the text form do not cover the existing layout.
    """
    heads = [stack[0] for stack in program.stacks]
    placed = [(h.x, h.y, stack) for h, stack in zip(heads, program.stacks, strict=True)]
    known = [(x, y, stack) for x, y, stack in placed if x is not None and y is not None]
    if not known:
        return [(10 + 200 * k, 10) for k in range(len(heads))]
    left = min(x for x, _y, _s in known)
    bottom = max(y + _height(stack) for _x, y, stack in known) + _STACK_GAP
    places: list[tuple[int, int]] = []
    for head, stack in zip(heads, program.stacks, strict=True):
        if head.x is not None and head.y is not None:
            places.append((head.x, head.y))
            continue
        places.append((left, bottom))
        bottom += _height(stack) + _STACK_GAP
    return places


def _height(stack: Sequence[Step]) -> int:
    return sum(len(list(step.walk())) for step in stack) * _BLOCK_HEIGHT


def to_program(steps: Program | Sequence[TaskSteps] | Sequence[Step]) -> Program:
    """A ``Program`` from a program, a task list (via ``build_program``) or one chain."""
    if isinstance(steps, Program):
        return steps
    items = list(steps)
    if items and all(isinstance(i, TaskSteps) for i in items):
        return build_program(i for i in items if isinstance(i, TaskSteps))
    chain = [i for i in items if isinstance(i, Step)]
    if len(chain) != len(items):
        raise TypeError("pass a Program, a list of TaskSteps, or a list of Step")
    return Program(stacks=[chain] if chain else [])


def compile_program(
    steps: Program | Sequence[TaskSteps] | Sequence[Step],
    *,
    catalog: Catalog | None = None,
    deterministic: bool = False,
    id_seed: int | str | None = None,
    xml_declaration: bool = False,
    source_comments: bool = False,
    validate: bool = True,
    fragment: bool = False,
) -> str:
    """Write the program as Blockly XML text (default namespace, indented, no declaration).

    Ids and ``data-blockNo`` already on steps are kept; missing ids are 20-character
    editor-style ids, reproducible when ``deterministic`` is true or ``id_seed`` is given
    (same input and seed -> identical bytes). ``source_comments`` writes each step's
    ``source`` sentence as a Blockly block comment. With ``validate`` (the default) the
    program is checked first; with ``fragment`` it is checked as a part of a program (see
    ``validate_xml``), so a loop with an empty body or a call to a sub-program defined in
    another file compiles.

    Raises:
        InvalidProgramError: validation found errors (``.problems`` lists all of them).
    """
    program = to_program(steps)
    catalog = catalog or default_catalog()
    if validate:
        found = [p for p, _ in check_program(program, catalog)]
        errors = errors_only(as_fragment(found) if fragment else found)
        if errors:
            raise InvalidProgramError(errors)
    seed = id_seed if id_seed is not None else (_DEFAULT_SEED if deterministic else None)
    writer = _Writer(catalog, program, seed, source_comments)
    document = program.document
    root = new_element("xml", prefix=document.prefix if document else "")
    for index, stack in enumerate(program.stacks):
        writer.chain(root, stack, top_level=index)
    writer.markup.finish()
    if document is None:
        return serialize(root, xml_declaration=xml_declaration, after_indent=writer.markup.apply)
    if document.text is not None:
        writer.markup.root_text(root, document.text)
    # The file's own text around the root: its declaration (or none), comments, final newline.
    declared = xml_declaration and not document.prolog.lstrip().startswith("<?xml")
    text = serialize(root, xml_declaration=declared, after_indent=writer.markup.apply)
    return document.prolog + written_as(text, document) + document.epilogue


@dataclass
class _Writer:
    catalog: Catalog
    program: Program
    seed: int | str | None
    comments: bool
    ids: set[str] = field(default_factory=set)
    numbers: dict[str, set[int]] = field(default_factory=dict)
    markup: MarkupWriter = field(default_factory=MarkupWriter)

    def __post_init__(self) -> None:
        self.random = random.Random(self.seed) if self.seed is not None else random.SystemRandom()
        # Numbers and ids already in the program are taken before any new one is chosen.
        for stack in self.program.stacks:
            for step in stack:
                self._reserve(step, in_value=False)
        self.places = _places(self.program)

    def _reserve(self, step: Step, *, in_value: bool) -> None:
        if step.id is not None:
            self.ids.add(step.id)
        if step.block_no is not None and not in_value:
            self.numbers.setdefault(step.type, set()).add(step.block_no)
        for item in step.inputs.values():
            if isinstance(item, Step):
                self._reserve(item, in_value=True)
            else:
                for nested in item:
                    self._reserve(nested, in_value=False)

    def new_id(self) -> str:
        while True:
            candidate = "".join(self.random.choice(ID_ALPHABET) for _ in range(_ID_LENGTH))
            if candidate not in self.ids:
                self.ids.add(candidate)
                return candidate

    def block_no(self, step: Step, in_value: bool) -> int:
        # Editor convention: reporters show no number (always 1); statement blocks take the
        # smallest positive number not used by another block of the same type.
        if step.block_no is not None:
            return step.block_no
        if in_value:
            return 1
        used = self.numbers.setdefault(step.type, set())
        number = 1
        while number in used:
            number += 1
        used.add(number)
        return number

    def chain(self, parent: Element, steps: Sequence[Step], top_level: int | None = None) -> None:
        previous: Element | None = None
        for position, step in enumerate(steps):
            holder = parent if previous is None else new_element("next", previous)
            layout = top_level if position == 0 else None
            previous = self.block(holder, step, in_value=False, layout=layout)

    def block(self, parent: Element, step: Step, *, in_value: bool, layout: int | None) -> Element:
        spec = self.catalog.get(step.type)
        element = new_element("block", parent, {"type": step.type})
        if step.id is not None or "id" not in step.absent:
            element.set("id", step.id or self.new_id())
        if step.disabled_reasons:
            element.set("disabled-reasons", ",".join(step.disabled_reasons))
        elif step.disabled:
            element.set("disabled", "true")
        editable = step.editable
        if editable is False or (editable is None and step.type == "select_robot"):
            element.set("editable", "false")
        elif editable is True and step.type != "select_robot":
            # Only an explicit editable="true" reads back as True on other blocks.
            element.set("editable", "true")
        x, y = step.x, step.y
        if layout is not None and not {"x", "y"}.intersection(step.absent):
            default_x, default_y = self.places[layout]
            x = default_x if x is None else x
            y = default_y if y is None else y
        if x is not None:
            element.set("x", str(x))
        if y is not None:
            element.set("y", str(y))
        if step.block_no is not None or "data-blockNo" not in step.absent:
            element.set("data-blockNo", str(self.block_no(step, in_value)))
        for name, value in step.attributes.items():
            element.set(name, value)
        self.markup.note(element, step.markup)
        mutation = step.mutation
        if mutation is None and spec is not None:
            mutation = spec.default_mutation(list(step.inputs))
        if isinstance(mutation, dict):
            # Text "" makes lxml write <mutation ...></mutation> as the editor does.
            new_element("mutation", element, mutation).text = ""
        for name, value in self._fields(step):
            new_element("field", element, {"name": name}).text = value
        if step.source is not None and step.comment is not None:
            new_element("comment", element, step.comment).text = step.source
        elif self.comments and step.source:
            new_element("comment", element, {"pinned": "false"}).text = step.source
        if step.empty_text is not None and len(element) == 0:
            element.text = step.empty_text
        for name, item in step.inputs.items():
            if isinstance(item, Step):
                holder = new_element("value", element, {"name": name})
                self.block(holder, item, in_value=True, layout=None)
            else:
                holder = new_element("statement", element, {"name": name})
                holder.text = ""
                self.chain(holder, item)
        return element

    def _fields(self, step: Step) -> list[tuple[str, str]]:
        spec = self.catalog.get(step.type)
        if spec is None:
            return list(step.fields.items())
        known = [f.name for f in spec.fields]
        if "fields" in step.absent or all(name in step.fields for name in known):
            # Every field given, as in a document the editor or a generator wrote, or the
            # fields as a file had them: keep their order (``rx, ry, rz`` stays so), so
            # decompile -> compile changes nothing.
            return list(step.fields.items())
        # A partial parameter list (an LLM's): catalog order, defaults for the rest.
        ordered: list[tuple[str, str]] = []
        for field_spec in spec.fields:
            value = step.fields.get(field_spec.name, field_spec.default)
            if value is not None:
                ordered.append((field_spec.name, value))
        ordered.extend((k, v) for k, v in step.fields.items() if k not in known)
        return ordered
