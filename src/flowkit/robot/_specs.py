"""The parts of a block catalog entry: value rules for fields and mutation attributes, inputs,
text-form hints and the block spec itself (role, connections, defaults)."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Literal

from pydantic import BaseModel, ConfigDict

from flowkit.foundation._safe_regex import compile_pattern

__all__ = [
    "AttributeSpec",
    "BlockSpec",
    "FieldSpec",
    "InputSpec",
    "Role",
    "TextSpec",
    "ValueRule",
    "slot_number",
]

Role = Literal["hat", "chain-head", "process", "call", "terminal", "event", "value"]
Connection = Literal["process", "event", "any"]

#: What a block of each role connects to: (previous, next); None = no such connection.
ROLE_CONNECTIONS: Mapping[str, tuple[Connection | None, Connection | None]] = {
    "hat": (None, None),
    "chain-head": (None, "process"),
    "process": ("process", "process"),
    "call": ("any", "any"),
    "terminal": ("process", None),
    "event": ("event", "event"),
    "value": (None, None),
}

# ASCII digits only: "５０" or "٥" is no value the editor writes (``\d`` takes any script's).
_INTEGER = re.compile(r"-?[0-9]+")
_NUMBER = re.compile(r"-?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?")
_KEY_NUMBER = re.compile(r"0|[1-9][0-9]*")


def slot_number(value: str, prefix: str) -> int | None:
    """The number of a slot key as the editor writes it, ``<prefix><n>`` (``P21``: ASCII
    digits, no leading zero), else ``None``: a name (``P²``, ``P007``, ``above the part``)."""
    if not value.startswith(prefix):
        return None
    rest = value[len(prefix) :]
    return int(rest) if _KEY_NUMBER.fullmatch(rest) else None


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ValueRule(_Frozen):
    """Which string values a field or mutation attribute accepts.

    ``enum``: one of ``values``; ``integer``: a whole number within ``min``..``max``;
    ``number``: any finite decimal number; ``ref``: ``prefix`` + a number within
    ``min``..``max`` (``P21``, ``N5``, ``F481``); ``text``: any string, fully matching
    ``pattern`` when one is given.
    """

    kind: Literal["enum", "integer", "number", "ref", "text"]
    values: tuple[str, ...] = ()
    min: int | None = None
    max: int | None = None
    prefix: str | None = None
    pattern: str | None = None
    default: str | None = None
    required: bool = False
    description: str = ""
    examples: tuple[str, ...] = ()

    def expected(self) -> str:
        """A short description of the accepted values, for messages and prompts."""
        if self.kind == "enum":
            return "one of " + ", ".join(f"`{v}`" for v in self.values)
        if self.kind == "number":
            return "a number"
        lo = "" if self.min is None else str(self.min)
        hi = "" if self.max is None else str(self.max)
        span = f" from {lo} to {hi}" if lo and hi else f" >= {lo}" if lo else ""
        span = f" <= {hi}" if hi and not lo else span
        if self.kind == "integer":
            return "a whole number" + span
        if self.kind == "ref":
            first = f"{self.prefix}{self.min if self.min is not None else 0}"
            last = f"{self.prefix}{self.max}" if self.max is not None else f"{self.prefix}<n>"
            return f"`{first}`..`{last}`"
        if self.pattern:
            return f"text matching `{self.pattern}`"
        return "text"

    def accepts(self, value: str) -> bool:
        """Whether ``value`` is allowed."""
        if self.kind == "enum":
            return value in self.values
        if self.kind == "number":
            return bool(_NUMBER.fullmatch(value)) and math.isfinite(float(value))
        if self.kind == "integer":
            return bool(_INTEGER.fullmatch(value)) and self._in_range(int(value))
        if self.kind == "ref":
            number = slot_number(value, self.prefix or "")
            return number is not None and self._in_range(number)
        if self.pattern is None:
            return True
        return compile_pattern(self.pattern, what="pattern").fullmatch(value) is not None

    def _in_range(self, number: int) -> bool:
        return (self.min is None or number >= self.min) and (self.max is None or number <= self.max)


class FieldSpec(ValueRule):
    """A ``<field name=...>`` of a block. ``short`` and ``group`` shape the text form."""

    name: str
    short: str | None = None
    group: str | None = None


class AttributeSpec(ValueRule):
    """An attribute of the block's ``<mutation>`` (``timeout``, ``elseif``, ``name`` ...)."""

    name: str


class InputSpec(_Frozen):
    """A value input (one reporter block) or a statement input (a chain of blocks).

    ``name`` may hold ``{n}`` for numbered inputs (``IF{n}``): ``n`` runs from 0 to the value
    of the mutation attribute named by ``repeat``. An input with ``when`` exists only while
    that mutation attribute is ``1`` (``ELSE``).
    """

    name: str
    kind: Literal["value", "statement"]
    check: Literal["Boolean", "Number"] | None = None
    accepts: Connection = "any"
    required: bool = False
    repeat: str | None = None
    when: str | None = None
    description: str = ""

    def matches(self, name: str) -> int | None:
        """The number ``n`` if ``name`` is this input (0 for unnumbered ones), else None."""
        if "{n}" not in self.name:
            return 0 if name == self.name else None
        head, _, tail = self.name.partition("{n}")
        middle = name[len(head) : len(name) - len(tail)] if len(name) > len(head + tail) else ""
        number = slot_number(middle, "")
        if name.startswith(head) and name.endswith(tail) and number is not None:
            return number
        return None


class TextSpec(_Frozen):
    """How the readable text form writes the block.

    ``positional`` fields (or ``mutation:NAME`` attributes) are written bare after the type,
    in this order; ``keyword_input`` is written last as ``<keyword> <expression>``.
    """

    positional: tuple[str, ...] = ()
    keyword_input: str | None = None
    keyword: str | None = None


class BlockSpec(_Frozen):
    """One block type: its role and connections, fields, mutation, inputs and text hints."""

    origin: Literal["template", "editor", "user"] = "user"
    role: Role
    output: Literal["Boolean", "Number"] | None = None
    next: bool = True
    top_level: Literal["always", "allowed", "never"] = "allowed"
    label: str = ""
    label_ja: str = ""
    description: str = ""
    fields: tuple[FieldSpec, ...] = ()
    mutation: tuple[AttributeSpec, ...] = ()
    inputs: tuple[InputSpec, ...] = ()
    text: TextSpec = TextSpec()

    @property
    def previous(self) -> Connection | None:
        """The kind of block this one may follow, or None (hat, chain head, value)."""
        return ROLE_CONNECTIONS[self.role][0]

    def field(self, name: str) -> FieldSpec | None:
        """The field spec named ``name`` (its full name or its text-form ``short`` name)."""
        for spec in self.fields:
            if name in (spec.name, spec.short):
                return spec
        return None

    def attribute(self, name: str) -> AttributeSpec | None:
        """The mutation attribute spec named ``name``."""
        return next((a for a in self.mutation if a.name == name), None)

    def input(self, name: str) -> InputSpec | None:
        """The input spec that ``name`` (``IF2``, ``DO``, ``condition``) belongs to."""
        return next((i for i in self.inputs if i.matches(name) is not None), None)

    def sole_statement(self) -> str | None:
        """The name of the block's only statement input, if it has exactly one fixed one."""
        statements = [i for i in self.inputs if i.kind == "statement"]
        if len(statements) == 1 and "{n}" not in statements[0].name and not statements[0].when:
            return statements[0].name
        return None

    def expected_inputs(self, mutation: Mapping[str, str]) -> list[tuple[str, InputSpec]]:
        """The concrete input names the given mutation implies, with their specs."""
        names: list[tuple[str, InputSpec]] = []
        for spec in self.inputs:
            if spec.repeat:
                count = _int(mutation.get(spec.repeat, "0"))
                names.extend((spec.name.replace("{n}", str(n)), spec) for n in range(count + 1))
            elif spec.when:
                if mutation.get(spec.when) == "1":
                    names.append((spec.name, spec))
            else:
                names.append((spec.name, spec))
        return names

    def default_mutation(self, input_names: list[str]) -> dict[str, str] | None:
        """The ``<mutation>`` attributes the editor writes for a block with these inputs.

        Attributes that count inputs (``elseif``/``else``) are derived from the inputs and
        written only when not zero, as Blockly's ``controls_if`` does; others take their
        default. None means "no ``<mutation>`` element".
        """
        attributes: dict[str, str] = {}
        for attribute in self.mutation:
            derived = self._derived(attribute.name, input_names)
            if derived is not None:
                if derived != "0":
                    attributes[attribute.name] = derived
            elif attribute.default is not None:
                attributes[attribute.name] = attribute.default
        return attributes or None

    def _derived(self, attribute: str, input_names: list[str]) -> str | None:
        for spec in self.inputs:
            if spec.repeat == attribute:
                numbers = [n for n in map(spec.matches, input_names) if n is not None]
                return str(max(numbers, default=0))
            if spec.when == attribute:
                return "1" if spec.name in input_names else "0"
        return None


def _int(text: str) -> int:
    return int(text) if _INTEGER.fullmatch(text) else 0
