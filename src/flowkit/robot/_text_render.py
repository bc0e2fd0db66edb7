"""Write module steps in the readable text form (see ``text.py`` for the syntax).

Each step picks the most readable form that parses back to exactly the same step: ``if``
lines for ``controls_if``, one line plus an indented body for single-body blocks, bare
conditions like ``N5 == 2`` for plain reporter blocks, and a fully explicit form otherwise.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ._specs import BlockSpec
from ._text_annotate import render_annotation
from ._text_lex import COMPARE, FLAG, NUMBER, RESERVED, VARIABLE, json_string, quote
from ._text_syntax import compact_fields
from .catalog import Catalog
from .steps import Step

__all__ = ["render_chain"]

_SPECIAL_TYPES = frozenset({"TRUE", "FALSE", "or", "and", "not"})
_OR, _AND, _NOT, _COMPARE, _ATOM = 1, 2, 3, 4, 5


def render_chain(
    steps: Sequence[Step],
    catalog: Catalog,
    *,
    indent: int = 0,
    prefix: str = "",
    start: int = 1,
    annotate: bool = False,
    head_position: bool = True,
) -> list[str]:
    """The lines of a chain: ``1.``, ``2.`` at the top level, ``4.1``, ``4.2`` inside step 4.

    ``annotate`` ends each line in its layout annotation (``_text_annotate``);
    ``head_position`` False leaves the first step's x/y to the ``## stack`` line.
    """
    lines: list[str] = []
    renderer = _Renderer(catalog, annotate)
    for number, step in enumerate(steps, start=start):
        marker = f"{prefix}{number}" + ("" if prefix else ".")
        position = head_position or number != start or bool(prefix)
        lines.extend(renderer.step(step, marker, indent, position=position))
    return lines


class _Renderer:
    def __init__(self, catalog: Catalog, annotate: bool = False) -> None:
        self.catalog = catalog
        self.annotate = annotate

    def _chain(
        self, steps: Sequence[Step], *, indent: int, prefix: str, start: int = 1
    ) -> list[str]:
        return render_chain(
            steps, self.catalog, indent=indent, prefix=prefix, start=start, annotate=self.annotate
        )

    # -- statement lines ------------------------------------------------------------------
    def step(self, step: Step, marker: str, indent: int, *, position: bool = True) -> list[str]:
        spec = self.catalog.get(step.type)
        column = indent + len(marker) + 1
        pad = " " * indent
        lead = f"{pad}{marker} {_disabled(step)}"
        tail = self._source(step)
        if self.annotate:
            tail += render_annotation(step, position=position)
        statements = [n for n, v in step.inputs.items() if isinstance(v, list)]
        child = marker.rstrip(".") + "."
        if _if_form(step):
            return self._if(step, lead, tail, child, column)
        if not statements:
            return [lead + self._head(step, spec, list(step.values)) + tail]
        body_name = spec.sole_statement() if spec else None
        names = list(step.inputs)
        if body_name is not None and statements == [body_name] and names[-1] == body_name:
            line = lead + self._head(step, spec, names[:-1]) + ":" + tail
            return [
                line,
                *self._chain(step.body(body_name), indent=column, prefix=child),
            ]
        lines = [lead + self._head(step, spec, []) + ":" + tail]
        seen = 0
        for name, item in step.inputs.items():
            if isinstance(item, Step):
                lines.append(" " * column + f"{name} = {self.expression(item)}")
            else:
                lines.append(" " * column + f"{name}:")
                lines.extend(self._chain(item, indent=column + 2, prefix=child, start=seen + 1))
                seen += len(item)
        return lines

    def _if(self, step: Step, lead: str, tail: str, child: str, column: int) -> list[str]:
        bracket = _bracket(step.mutation)
        condition = self.expression(step.inputs["IF0"])  # type: ignore[arg-type]
        lines = [f"{lead}if {condition}{' ' + bracket if bracket else ''}:{tail}"]
        seen = 0
        for name, item in step.inputs.items():
            if isinstance(item, Step):
                if name != "IF0":
                    lines.append(" " * column + f"elif {self.expression(item)}:")
                continue
            if name == "ELSE":
                lines.append(" " * column + "else:")
            lines.extend(self._chain(item, indent=column + 2, prefix=child, start=seen + 1))
            seen += len(item)
        return lines

    def _head(self, step: Step, spec: BlockSpec | None, values: list[str]) -> str:
        head = json_string(step.type) if step.type == "if" else step.type
        words = [head, *self._params(step, spec, values, keyword=True)]
        bracket = _bracket(_unconsumed_mutation(step, spec))
        if bracket:
            words.append(bracket)
        return " ".join(words)

    def _source(self, step: Step) -> str:
        return "" if step.source is None else f" — {json_string(step.source)}"

    # -- parameters -----------------------------------------------------------------------
    def _params(
        self, step: Step, spec: BlockSpec | None, values: list[str], *, keyword: bool
    ) -> list[str]:
        reserved = RESERVED | ({spec.text.keyword} if spec and spec.text.keyword else set())
        bare, used, _attributes = _positional(step, spec)
        words = [quote(v, reserved) for v in bare]
        named = list(step.fields.items())[used:]
        index = 0
        while index < len(named):
            name, value = named[index]
            group = _group(spec, name)
            keys = [_key(spec, name)]
            while (
                group
                and index + 1 < len(named)
                and named[index + 1][1] == value
                and _group(spec, named[index + 1][0]) == group
            ):
                index += 1
                keys.append(_key(spec, named[index][0]))
            words.append(",".join(keys) + "=" + quote(value, reserved))
            index += 1
        keyword_input = spec.text.keyword_input if spec and keyword else None
        for name in values:
            item = step.inputs[name]
            if isinstance(item, Step) and name == keyword_input and name == values[-1]:
                assert spec is not None and spec.text.keyword is not None
                words.append(f"{spec.text.keyword} {self.expression(item)}")
            elif isinstance(item, Step):
                words.append(f"{name}=({self.expression(item)})")
            else:
                words.append(f"{name}={{{'; '.join(self.inline(s) for s in item)}}}")
        return words

    # -- conditions -----------------------------------------------------------------------
    def expression(self, step: Step, minimum: int = _OR) -> str:
        text, precedence = self._expression(step)
        return f"({text})" if precedence < minimum else text

    def _expression(self, step: Step) -> tuple[str, int]:
        plain = step.mutation is None and not step.disabled and step.source is None
        fields, inputs = step.fields, step.inputs
        pair = list(inputs) == ["A", "B"] and all(isinstance(v, Step) for v in inputs.values())
        op = fields.get("OP") if list(fields) == ["OP"] else None
        if plain and step.type == "logic_compare" and pair and op in COMPARE:
            a = self.expression(inputs["A"], _ATOM)  # type: ignore[arg-type]
            b = self.expression(inputs["B"], _ATOM)  # type: ignore[arg-type]
            return f"{a} {COMPARE[op]} {b}", _COMPARE
        if plain and step.type == "logic_operation" and pair and op in ("AND", "OR"):
            level = _OR if op == "OR" else _AND
            a = self.expression(inputs["A"], level)  # type: ignore[arg-type]
            b = self.expression(inputs["B"], level + 1)  # type: ignore[arg-type]
            return f"{a} {op.lower()} {b}", level
        negated = inputs.get("BOOL")
        sole = list(inputs) == ["BOOL"] and not fields
        if plain and step.type == "logic_negate" and sole and isinstance(negated, Step):
            return f"not {self.expression(negated, _NOT)}", _NOT
        if plain and not inputs:
            literal = _literal(step)
            if literal is not None:
                return literal, _ATOM
            compact = list(compact_fields(self.catalog.get(step.type)))
            named_plainly = step.type not in _SPECIAL_TYPES and _is_plain_name(step.type)
            if named_plainly and list(fields) == compact:
                return " ".join([step.type, *(quote(v) for v in fields.values())]), _ATOM
        return self.inline(step), _ATOM

    def inline(self, step: Step) -> str:
        """``type((disabled) params [mutation] — "source")``: any block in one piece."""
        spec = self.catalog.get(step.type)
        words = self._params(step, spec, list(step.inputs), keyword=False)
        bracket = _bracket(_unconsumed_mutation(step, spec))
        if bracket:
            words.append(bracket)
        inner = _disabled(step) + " ".join(words) + self._source(step)
        return f"{step.type}({inner.strip()})"


def _if_form(step: Step) -> bool:
    if step.type != "controls_if" or step.fields:
        return False
    names = list(step.inputs)
    if names and names[-1] == "ELSE":
        if not isinstance(step.inputs["ELSE"], list):
            return False
        names = names[:-1]
    if not names or len(names) % 2:
        return False
    for n in range(len(names) // 2):
        condition, body = names[2 * n], names[2 * n + 1]
        if (condition, body) != (f"IF{n}", f"DO{n}"):
            return False
        if not isinstance(step.inputs[condition], Step) or not isinstance(step.inputs[body], list):
            return False
    return True


_LITERALS: dict[str, tuple[str, re.Pattern[str]]] = {
    "logic_boolean": ("BOOL", re.compile("TRUE|FALSE")),
    "math_number": ("NUM", NUMBER),
    "math_custom_number": ("name", VARIABLE),
    "logic_custom_flag": ("name", FLAG),
}


def _literal(step: Step) -> str | None:
    """``TRUE``, ``2``, ``N5`` or ``F481`` when the step is exactly that literal block."""
    rule = _LITERALS.get(step.type)
    if rule is None or list(step.fields) != [rule[0]]:
        return None
    value = step.fields[rule[0]]
    return value if rule[1].fullmatch(value) else None


def _is_plain_name(block_type: str) -> bool:
    return not (
        NUMBER.fullmatch(block_type) or VARIABLE.fullmatch(block_type) or FLAG.fullmatch(block_type)
    )


def _positional(step: Step, spec: BlockSpec | None) -> tuple[list[str], int, int]:
    """The values written bare, and how many fields and mutation attributes they use.

    Mirrors the parser: bare values fill the catalog's positional names in order, so only a
    prefix of the step's fields (and of its mutation attributes) can be written bare.
    """
    values: list[str] = []
    fields = list(step.fields.items())
    attributes = list(step.mutation.items()) if isinstance(step.mutation, dict) else []
    f = m = 0
    for name in spec.text.positional if spec else ():
        kind, _, attribute = name.partition(":")
        if kind == "mutation" and attribute:
            if m < len(attributes) and attributes[m][0] == attribute:
                values.append(attributes[m][1])
                m += 1
                continue
        elif f < len(fields) and fields[f][0] == name:
            values.append(fields[f][1])
            f += 1
            continue
        break
    return values, f, m


def _unconsumed_mutation(step: Step, spec: BlockSpec | None) -> dict[str, str] | bool | None:
    mutation = step.mutation
    if not isinstance(mutation, dict):
        return mutation
    consumed = _positional(step, spec)[2]
    if consumed == 0:
        return mutation
    return dict(list(mutation.items())[consumed:]) or None


def _bracket(mutation: dict[str, str] | bool | None) -> str:
    if mutation is None:
        return ""
    if mutation is False:
        return "[-]"
    if not isinstance(mutation, dict):
        return ""
    return "[" + " ".join(f"{k}={quote(v)}" for k, v in mutation.items()) + "]"


def _disabled(step: Step) -> str:
    if step.disabled_reasons:
        return f"(disabled: {','.join(step.disabled_reasons)}) "
    return "(disabled) " if step.disabled else ""


def _group(spec: BlockSpec | None, name: str) -> str | None:
    found = spec.field(name) if spec else None
    return found.group if found is not None and found.name == name else None


def _key(spec: BlockSpec | None, name: str) -> str:
    found = spec.field(name) if spec else None
    if found is None:
        named_input = spec.input(name) if spec else None
        # A field named like a value input would be read back as that input.
        return "@" + name if named_input and named_input.kind == "value" else name
    if found.name != name:
        return "@" + name  # a field named like another field's short name
    return found.short or name
