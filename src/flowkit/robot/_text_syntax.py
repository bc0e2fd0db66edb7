"""The inline grammar of the text form: parameters, conditions and inline blocks.

A line's content after its number is read here: ``moveP P21 x,y,z=enable [timeout=60000]``,
``if N5 == 2 and robot_io 10:``, ``wait_block until external_io 1 3 == TRUE``. The line
structure (numbering, indentation, bodies) is ``text.py``'s job.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..foundation._plain import shorten
from ._specs import BlockSpec
from ._text_lex import COMPARE_BACK, FLAG, NUMBER, VARIABLE, TextSyntaxError, Token
from .catalog import Catalog

__all__ = ["Parts", "Tokens", "compact_fields", "step_data"]


@dataclass
class Parts:
    """What the inline grammar read for one block."""

    fields: dict[str, str] = field(default_factory=dict)
    named: dict[str, str] = field(default_factory=dict)
    positional_mutation: dict[str, str] = field(default_factory=dict)
    bracket: dict[str, str] | bool | None = None
    inputs: dict[str, object] = field(default_factory=dict)
    disabled: bool = False
    reasons: list[str] = field(default_factory=list)
    source: str | None = None

    def add_field(self, name: str, value: str, *, positional: bool) -> None:
        if name in self.fields or name in self.named:
            raise TextSyntaxError(f"field `{shorten(name)}` is given twice")
        (self.fields if positional else self.named)[name] = value

    def mutation(self) -> dict[str, str] | bool | None:
        if not self.positional_mutation:
            return self.bracket
        if self.bracket is False:
            raise TextSyntaxError("[-] (no mutation) conflicts with the value before it")
        extra = self.bracket if isinstance(self.bracket, dict) else {}
        for name in extra:
            if name in self.positional_mutation:
                raise TextSyntaxError(f"mutation attribute `{shorten(name)}` is given twice")
        return {**self.positional_mutation, **extra}


class Tokens:
    """A cursor over one line's tokens, with the parsers of the inline grammar."""

    def __init__(self, tokens: list[Token], catalog: Catalog) -> None:
        _check_nesting(tokens)
        self.tokens = tokens
        self.index = 0
        self.catalog = catalog

    # -- cursor ---------------------------------------------------------------------------
    def peek(self, offset: int = 0) -> Token | None:
        index = self.index + offset
        return self.tokens[index] if index < len(self.tokens) else None

    def at(self, text: str, kind: str | None = None, offset: int = 0) -> bool:
        token = self.peek(offset)
        return token is not None and token.text == text and (kind is None or token.kind == kind)

    def take(self) -> Token:
        token = self.peek()
        if token is None:
            raise TextSyntaxError("the line ends too early")
        self.index += 1
        return token

    def expect(self, text: str, what: str) -> None:
        token = self.peek()
        if token is None or token.text != text or token.kind == "string":
            found = "the end of the line" if token is None else f"`{shorten(token.text)}`"
            raise TextSyntaxError(f"expected `{text}` {what}, found {found}")
        self.index += 1

    def done(self) -> bool:
        return self.index >= len(self.tokens)

    # -- modifiers ------------------------------------------------------------------------
    def disabled(self, parts: Parts) -> None:
        """``(disabled)`` or ``(disabled: REASON,REASON)`` at the start of a block."""
        if not (self.at("(", "punct") and self.at("disabled", "word", 1)):
            return
        self.index += 2
        parts.disabled = True
        if self.at(":", "punct"):
            self.index += 1
            parts.reasons.append(self.take().value)
            while self.at(",", "punct"):
                self.index += 1
                parts.reasons.append(self.take().value)
        self.expect(")", "to close (disabled")

    def mutation(self, parts: Parts) -> None:
        """``[]`` empty mutation, ``[-]`` none, ``[k=v ...]`` attributes."""
        self.expect("[", "to open the mutation")
        if parts.bracket is not None:
            raise TextSyntaxError("the mutation is given twice; keep one [...]")
        if self.at("-", "word") and self.at("]", "punct", 1):
            self.index += 2
            parts.bracket = False
            return
        attributes: dict[str, str] = {}
        while not self.at("]", "punct"):
            key = self.take()
            if key.kind != "word":
                raise TextSyntaxError(
                    f"expected a mutation attribute name, found `{shorten(key.text)}`"
                )
            self.expect("=", f"after mutation attribute `{shorten(key.text)}`")
            if key.text in attributes:
                raise TextSyntaxError(f"mutation attribute `{shorten(key.text)}` is given twice")
            attributes[key.text] = self.value(f"for mutation attribute `{shorten(key.text)}`")
        self.index += 1
        parts.bracket = attributes

    def value(self, what: str) -> str:
        token = self.peek()
        if token is None:
            raise TextSyntaxError(f"expected a value {what}, found the end of the line")
        self.index += 1
        if token.kind not in ("word", "string"):
            raise TextSyntaxError(f"expected a value {what}, found `{shorten(token.text)}`")
        return token.value

    def source(self, parts: Parts) -> None:
        """``— "sentence"`` (or ``-- "sentence"``): the step's source text."""
        self.take()
        token = self.take()
        if token.kind != "string":
            raise TextSyntaxError('expected a quoted sentence after —, like — "move home"')
        parts.source = token.value

    # -- parameters -----------------------------------------------------------------------
    def params(self, block_type: str, parts: Parts, stop: frozenset[str]) -> None:
        """Positional values, ``key=value`` fields, ``key=(condition)`` inputs,
        ``KEYWORD condition``, ``[mutation]`` and ``— "source"`` until a ``stop`` token."""
        spec = self.catalog.get(block_type)
        positional = list(spec.text.positional) if spec else []
        keyword = spec.text.keyword if spec else None
        while not self.done():
            token = self.peek()
            assert token is not None
            if token.kind == "punct" and token.text in stop:
                return
            if token.kind == "mark":
                self.source(parts)
            elif token.text == "[" and token.kind == "punct":
                self.mutation(parts)
            elif self._is_key():
                self._named(block_type, spec, parts)
            elif keyword is not None and token.text == keyword and token.kind != "string":
                self.index += 1
                assert spec is not None and spec.text.keyword_input is not None
                self._add_input(parts, spec.text.keyword_input, self.expression())
            elif token.kind in ("word", "string"):
                if not positional:
                    raise TextSyntaxError(
                        f"unexpected value `{shorten(token.text)}` for `{block_type}`; name it "
                        "like key=value" + (" or quote it" if token.kind == "word" else "")
                    )
                self.index += 1
                self._positional(positional.pop(0), token.value, parts)
            else:
                raise TextSyntaxError(f"unexpected `{shorten(token.text)}` in the parameters")

    def _is_key(self) -> bool:
        offset = 0
        while True:
            token = self.peek(offset)
            if token is None or token.kind != "word" or (offset and token.spaced):
                return False
            after = self.peek(offset + 1)
            if after is None or after.spaced or after.kind != "punct":
                return False
            if after.text == "=":
                return True
            if after.text != ",":
                return False
            offset += 2

    def _named(self, block_type: str, spec: BlockSpec | None, parts: Parts) -> None:
        keys = [self.take().text]
        while self.at(",", "punct"):
            self.index += 1
            keys.append(self.take().text)
        self.index += 1  # "="
        single = keys[0] if len(keys) == 1 else None
        is_input = single is not None and (
            self.at("(", "punct") or self.at("{", "punct") or _value_input(spec, single)
        )
        if is_input and single is not None:
            if self.at("{", "punct"):
                self._add_input(parts, single, self.inline_chain())
            else:
                self._add_input(parts, single, self.atom())
            return
        value = self.value(f"for `{'`, `'.join(keys)}`")
        for key in keys:
            parts.add_field(_field_name(spec, key), value, positional=False)

    @staticmethod
    def _positional(name: str, value: str, parts: Parts) -> None:
        kind, _, attribute = name.partition(":")
        if kind == "mutation" and attribute:
            parts.positional_mutation[attribute] = value
        else:
            parts.add_field(name, value, positional=True)

    @staticmethod
    def _add_input(parts: Parts, name: str, item: object) -> None:
        if name in parts.inputs:
            raise TextSyntaxError(f"input `{shorten(name)}` is given twice")
        parts.inputs[name] = item

    # -- conditions -----------------------------------------------------------------------
    def expression(self) -> object:
        """``a or b`` > ``a and b`` > ``not a`` > ``a == b`` > atoms (like Python)."""
        left = self._and()
        while self.at("or", "word"):
            self.index += 1
            left = _binary("logic_operation", "OR", left, self._and())
        return left

    def _and(self) -> object:
        left = self._not()
        while self.at("and", "word"):
            self.index += 1
            left = _binary("logic_operation", "AND", left, self._not())
        return left

    def _not(self) -> object:
        if self.at("not", "word") and not self._call_follows():
            self.index += 1
            return {"type": "logic_negate", "inputs": {"BOOL": self._not()}}
        left = self.atom()
        token = self.peek()
        if token is not None and token.kind == "op":
            self.index += 1
            return _binary("logic_compare", COMPARE_BACK[token.text], left, self.atom())
        return left

    def _call_follows(self) -> bool:
        after = self.peek(1)
        return after is not None and after.text == "(" and not after.spaced

    def atom(self) -> object:
        """One reporter: ``(condition)``, TRUE, 2, N5, F481, ``type v ...`` or ``type(...)``."""
        token = self.peek()
        if token is None:
            raise TextSyntaxError(
                "expected a condition or value (TRUE, 2, N5, robot_io 10, ...), found the end "
                "of the line"
            )
        if token.kind == "punct" and token.text == "(":
            self.index += 1
            inner = self.expression()
            self.expect(")", "to close the parenthesis")
            return inner
        if token.kind != "word":
            raise TextSyntaxError(
                f"expected a value block (TRUE, 2, N5, F481, robot_io 10, type(...)), "
                f"found `{shorten(token.text)}`"
            )
        self.index += 1
        if self.at("(", "punct") and not self.tokens[self.index].spaced:
            return self.inline_block(token.text)
        text = token.text
        if text in ("TRUE", "FALSE"):
            return {"type": "logic_boolean", "fields": {"BOOL": text}}
        if NUMBER.fullmatch(text):
            return {"type": "math_number", "fields": {"NUM": text}}
        if VARIABLE.fullmatch(text):
            return {"type": "math_custom_number", "fields": {"name": text}}
        if FLAG.fullmatch(text):
            return {"type": "logic_custom_flag", "fields": {"name": text}}
        fields: dict[str, str] = {}
        for name in compact_fields(self.catalog.get(text)):
            fields[name] = self.value(f"for `{name}` of `{text}`")
        return {"type": text, "fields": fields} if fields else {"type": text}

    def inline_block(self, block_type: str) -> object:
        """``type( params )``: a block written in one piece, used inside conditions."""
        self.expect("(", f"after `{block_type}`")
        parts = Parts()
        self.disabled(parts)
        self.params(block_type, parts, frozenset({")"}))
        self.expect(")", f"to close `{block_type}(`")
        return step_data(block_type, parts)

    def inline_chain(self) -> list[object]:
        """``{type(...); type(...)}``: a body written inside a condition block."""
        self.expect("{", "to open a body")
        chain: list[object] = []
        while not self.at("}", "punct"):
            if chain:
                self.expect(";", "between the blocks of a body")
            token = self.take()
            if token.kind not in ("word", "string"):
                raise TextSyntaxError(
                    f"expected a block like type(...), found `{shorten(token.text)}`"
                )
            chain.append(self.inline_block(token.value))
        self.index += 1
        return chain


#: The deepest a condition may nest in one line (brackets plus `not`s); each level costs the
#: recursive-descent parser a few stack frames, so this keeps it far from Python's limit.
MAX_INLINE_DEPTH = 50


def _check_nesting(tokens: list[Token]) -> None:
    """Refuse a line nested deeper than ``MAX_INLINE_DEPTH`` before the parser recurses.

    Every ``not`` counts as a level for the rest of the line: an over-estimate, and cheap.
    """
    depth = deepest = nots = 0
    for token in tokens:
        if token.kind == "punct" and token.text in "({":
            depth += 1
        elif token.kind == "punct" and token.text in ")}":
            depth = max(0, depth - 1)
        elif token.kind == "word" and token.text == "not":
            nots += 1
        deepest = max(deepest, depth + nots)
        if deepest > MAX_INLINE_DEPTH:
            raise TextSyntaxError(
                f"the condition nests deeper than {MAX_INLINE_DEPTH} levels (brackets and "
                "`not`s); split it, or simplify it"
            )


def step_data(block_type: str, parts: Parts) -> dict[str, object]:
    """The keyword arguments of a ``Step`` for what was read."""
    data: dict[str, object] = {"type": block_type}
    fields = {**parts.fields, **parts.named}
    if fields:
        data["fields"] = fields
    mutation = parts.mutation()
    if mutation is not None:
        data["mutation"] = mutation
    if parts.inputs:
        data["inputs"] = parts.inputs
    if parts.disabled:
        data["disabled"] = True
    if parts.reasons:
        data["disabled_reasons"] = parts.reasons
    if parts.source is not None:
        data["source"] = parts.source
    return data


def compact_fields(spec: BlockSpec | None) -> tuple[str, ...]:
    """The fields a value block writes bare in a condition (``robot_io 10``)."""
    positional = spec.text.positional if spec else ()
    return () if any(":" in name for name in positional) else positional


def _binary(block_type: str, op: str, left: object, right: object) -> dict[str, object]:
    return {"type": block_type, "fields": {"OP": op}, "inputs": {"A": left, "B": right}}


def _value_input(spec: BlockSpec | None, name: str) -> bool:
    if spec is None or spec.field(name) is not None:
        return False
    found = spec.input(name)
    return found is not None and found.kind == "value"


def _field_name(spec: BlockSpec | None, key: str) -> str:
    if key.startswith("@"):
        return key[1:]
    found = spec.field(key) if spec else None
    return found.name if found else key
