"""The structured module-step model: a ``Step`` is one Blockly block with its parameters and
nested bodies, a ``Program`` is the ordered top-level stacks of one robot program.

The model holds everything an editor-saved program contains, so XML -> steps -> XML loses
nothing; JSON round trips are exact. ``TaskSteps`` and ``build_program`` are the workflow's
view: one list of steps per task, assembled into the main program and its sub-programs.
How the file was written (``Markup``, ``Document``) is modelled in ``_file_layout`` and
re-exported here; the text rules every model checks are in ``_xml_text``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, field_validator, model_validator

from ._file_layout import Document, Markup
from ._xml_text import ATTRIBUTE, NAME, xml_text

__all__ = [
    "EDITOR_ATTRIBUTES",
    "Document",
    "Markup",
    "Program",
    "Step",
    "TaskSteps",
    "build_program",
    "without_editor_attributes",
]

_TYPE = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")
_REASON = re.compile(r"[A-Za-z0-9_]+")
#: ``<block>`` attributes the model holds in dedicated fields (never in ``attributes``).
_MODELLED = frozenset(
    {"type", "id", "x", "y", "data-blockNo", "disabled", "disabled-reasons", "editable"}
)
#: Step fields that only describe the editor's bookkeeping, not the program's behaviour.
EDITOR_ATTRIBUTES = (
    "id",
    "block_no",
    "x",
    "y",
    "editable",
    "attributes",
    "comment",
    "empty_text",
    "absent",
    "markup",
)
_SPACE = re.compile(r"[ \t\r\n]*")


def _names(mapping: dict[str, Any], pattern: re.Pattern[str], what: str) -> None:
    for name in mapping:
        if not pattern.fullmatch(name):
            raise ValueError(f"{what} name {name!r} must match {pattern.pattern}")


class Step(BaseModel):
    """One block: its type, parameters, nested inputs, and editor bookkeeping.

    ``mutation``: None = what the editor writes for a new block (from the catalog, e.g.
    ``timeout="-1"``); ``False`` = no ``<mutation>`` element; a dict = exactly these
    attributes (``{}`` = an empty ``<mutation>``). ``inputs`` maps an input name to one
    reporter ``Step`` (a value input) or a list of ``Step`` (a statement body, possibly
    empty), in document order. ``id``, ``block_no``, ``x``, ``y``, ``editable`` and
    ``attributes`` are the editor's bookkeeping; None lets the compiler choose. ``comment``:
    the attributes of the ``<comment>`` element (``pinned``, ``h``, ``w``) when ``source``
    came from a block comment, which the compiler then always writes back; None = write
    ``source`` as a comment only when asked (``source_comments``). ``empty_text``: formatting
    only, for a block with nothing inside: ``""`` writes ``<block ...></block>``, whitespace
    is written between the tags; None writes ``<block .../>``. ``absent``: bookkeeping the
    block was written without (``id``, ``x``/``y`` of a stack's first block, ``data-blockNo``,
    as generator outputs are; ``fields``: some of the catalog's fields), which the compiler
    then leaves out instead of generating (with ``fields``, the fields are written exactly
    as given, in their order). ``markup``: how the block was written where that differs
    from the compiler's way (see ``Markup``).
    """

    model_config = ConfigDict(extra="forbid", coerce_numbers_to_str=True)

    type: str
    fields: dict[str, str] = {}
    mutation: dict[str, str] | Literal[False] | None = None
    inputs: dict[str, Step | list[Step]] = {}
    disabled: bool = False
    disabled_reasons: list[str] = []
    source: str | None = None
    id: str | None = None
    block_no: int | None = None
    x: int | None = None
    y: int | None = None
    editable: bool | None = None
    attributes: dict[str, str] = {}
    comment: dict[str, str] | None = None
    empty_text: str | None = None
    absent: list[Literal["id", "x", "y", "data-blockNo", "fields"]] = []
    markup: Markup | None = None

    @field_validator("type")
    @classmethod
    def _check_type(cls, value: str) -> str:
        if not _TYPE.fullmatch(value):
            raise ValueError(f"block type {value!r} must match {_TYPE.pattern}")
        return value

    @model_validator(mode="after")
    def _check_names_and_text(self) -> Step:
        _names(self.fields, NAME, "field")
        _names(self.inputs, NAME, "input")
        for name, value in self.fields.items():
            xml_text(value, f"field {name}")
        if isinstance(self.mutation, dict):
            _names(self.mutation, ATTRIBUTE, "mutation attribute")
            for name, value in self.mutation.items():
                xml_text(value, f"mutation attribute {name}")
        _names(self.attributes, ATTRIBUTE, "attribute")
        clash = _MODELLED.intersection(self.attributes)
        if clash:
            raise ValueError(f"attributes must not hold {sorted(clash)}; use the step's fields")
        for name, value in self.attributes.items():
            xml_text(value, f"attribute {name}")
        for reason in self.disabled_reasons:
            if not _REASON.fullmatch(reason):
                raise ValueError(f"disabled reason {reason!r} must match {_REASON.pattern}")
        if self.disabled_reasons and not self.disabled:
            raise ValueError("a step with disabled_reasons must also have disabled=true")
        if self.source is not None:
            xml_text(self.source, "source")
        if self.empty_text is not None and not _SPACE.fullmatch(self.empty_text):
            raise ValueError("empty_text holds spaces and line breaks only")
        if self.comment is not None:
            _names(self.comment, ATTRIBUTE, "comment attribute")
            for name, value in self.comment.items():
                xml_text(value, f"comment attribute {name}")
        if self.id is not None:
            if not self.id:
                raise ValueError("id must not be empty; leave it out to get a generated one")
            xml_text(self.id, "id")
        return self

    def field(self, name: str) -> str | None:
        """The value of field ``name``, or None when the step does not set it."""
        return self.fields.get(name)

    def param(self, name: str) -> str | None:
        """A field or else a mutation attribute (``param("name")`` of a call is its target)."""
        if name in self.fields:
            return self.fields[name]
        return self.mutation.get(name) if isinstance(self.mutation, dict) else None

    def value(self, name: str) -> Step | None:
        """The reporter block plugged into value input ``name``."""
        item = self.inputs.get(name)
        return item if isinstance(item, Step) else None

    def body(self, name: str) -> list[Step]:
        """The steps of statement input ``name`` (empty when absent)."""
        item = self.inputs.get(name)
        return item if isinstance(item, list) else []

    @property
    def values(self) -> dict[str, Step]:
        """The value inputs, in order."""
        return {k: v for k, v in self.inputs.items() if isinstance(v, Step)}

    @property
    def statements(self) -> dict[str, list[Step]]:
        """The statement inputs (bodies), in order."""
        return {k: v for k, v in self.inputs.items() if isinstance(v, list)}

    def walk(self) -> Iterator[Step]:
        """This step and every step nested in it (values and bodies), in document order."""
        pending: list[Step] = [self]
        while pending:
            step = pending.pop()
            yield step
            nested: list[Step] = []
            for item in step.inputs.values():
                nested.extend([item] if isinstance(item, Step) else item)
            pending.extend(reversed(nested))


class Program(BaseModel):
    """A robot program: its top-level stacks in document order, each a chain of steps.

    The first step of a stack carries the workspace position (``x``/``y``); the compiler
    places stacks without one. ``document``: the file's text around the root (None: the
    compiler's own, no declaration and no final newline).
    """

    model_config = ConfigDict(extra="forbid")

    format_version: Literal[1] = 1
    kind: Literal["robot-program"] = "robot-program"
    stacks: list[list[Step]] = []
    document: Document | None = None

    @field_validator("stacks")
    @classmethod
    def _no_empty_stack(cls, stacks: list[list[Step]]) -> list[list[Step]]:
        for index, stack in enumerate(stacks):
            if not stack:
                raise ValueError(f"stack {index + 1} is empty; remove it")
        return stacks

    def walk(self) -> Iterator[Step]:
        """Every step of every stack, nested ones included, in document order."""
        for stack in self.stacks:
            for step in stack:
                yield from step.walk()

    def procedures(self) -> dict[str, list[Step]]:
        """Defined sub-programs: ``NAME`` -> body (the first definition wins on duplicates)."""
        found: dict[str, list[Step]] = {}
        for stack in self.stacks:
            head = stack[0]
            name = head.field("NAME")
            if head.type == "procedures_defnoreturn" and name is not None:
                found.setdefault(name, head.body("STACK"))
        return found

    def main(self) -> list[Step] | None:
        """The main program: the first stack that starts with ``select_robot``."""
        return next((s for s in self.stacks if s[0].type == "select_robot"), None)

    def to_json(self, *, indent: int | None = 2) -> str:
        """Compact JSON (defaults left out); ``Program.from_json`` reads it back exactly."""
        body = self.model_dump(mode="json", exclude_defaults=True)
        data = {"format_version": self.format_version, "kind": self.kind, **body}
        return json.dumps(data, indent=indent, ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str | bytes) -> Program:
        """Read a program written by ``to_json`` (or any JSON of this shape)."""
        return cls.model_validate_json(text)


class TaskSteps(BaseModel):
    """The module steps of one task of the workflow.

    ``kind``: ``main`` = the main program (its steps start with ``select_robot``); ``sub`` =
    a sub-program named after the task (a ``procedures_defnoreturn`` whose body is
    ``steps``); ``setup`` = top-level blocks such as ``start_thread`` and ``create_event``,
    each placed as its own stack.
    """

    model_config = ConfigDict(extra="forbid")

    task: str
    kind: Literal["main", "sub", "setup"]
    steps: list[Step] = []

    @field_validator("task")
    @classmethod
    def _task_name(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("task name must not be empty")
        return xml_text(value, "task name")


def _sub_program(task: TaskSteps) -> Step:
    steps = task.steps
    if len(steps) == 1 and steps[0].type == "procedures_defnoreturn":
        # The step list is already a definition (older prompts ask for "Define sub-program").
        head = steps[0]
        if head.field("NAME") is None:
            head = head.model_copy(update={"fields": {"NAME": task.task, **head.fields}})
        return head
    return Step(
        type="procedures_defnoreturn", fields={"NAME": task.task}, inputs={"STACK": list(steps)}
    )


def build_program(tasks: Iterable[TaskSteps]) -> Program:
    """Assemble tasks into a program: main stacks, then one sub-program per ``sub`` task (in
    task order), then each step of ``setup`` tasks as its own stack. Tasks without steps add
    nothing except sub-programs, which get an empty body. It never raises for content;
    ``validate_steps`` reports what is wrong.
    """
    items = list(tasks)
    mains = [list(t.steps) for t in items if t.kind == "main" and t.steps]
    subs = [[_sub_program(t)] for t in items if t.kind == "sub"]
    setups = [[step] for t in items if t.kind == "setup" for step in t.steps]
    return Program(stacks=[*mains, *subs, *setups])


def _strip(step: Step) -> Step:
    inputs: dict[str, Step | list[Step]] = {
        name: _strip(item) if isinstance(item, Step) else [_strip(s) for s in item]
        for name, item in step.inputs.items()
    }
    return step.model_copy(
        update={
            "inputs": inputs,
            "id": None,
            "block_no": None,
            "x": None,
            "y": None,
            "editable": None,
            "attributes": {},
            "comment": None,
            "empty_text": None,
            "absent": [],
            "markup": None,
        }
    )


def without_editor_attributes(steps: Sequence[Step]) -> list[Step]:
    """Copies of ``steps`` without ids, block numbers, positions and other editor bookkeeping
    (what the text form leaves out)."""
    return [_strip(step) for step in steps]
