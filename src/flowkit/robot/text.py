"""The readable text form of module steps, for reviewers and for people who write robot
programs by hand; ``parse(render(steps))`` gives the steps back.

One step per line, numbered (``1.``, ``2.``; ``4.1`` inside step 4); a block with a body
ends in ``:`` and its body is indented below it. The syntax is described in
``docs/robot-steps.md``. Editor bookkeeping (ids, block numbers, positions, ``editable``,
other ``<block>`` attributes, comment pin and size) is written by ``render_program`` as a
layout annotation at the end of a line (``@ id=... no=3``; a stack's position on its
``## stack`` line); every reader takes annotations, and a missing one lets the compiler choose.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from pydantic import ValidationError

from flowkit.errors import StepTextError

from ..foundation._plain import describe_validation_error, shorten
from ._text_annotate import Annotation, annotate, parse_annotation, split_annotation
from ._text_document import parse_document_line, render_document, text_document
from ._text_lex import TextSyntaxError, lex, quote
from ._text_render import render_chain
from ._text_syntax import Parts, Tokens, step_data
from .catalog import Catalog, default_catalog
from .steps import Document, Program, Step, TaskSteps

__all__ = ["parse", "parse_program", "parse_tasks", "render", "render_program", "render_tasks"]

_MARKER = re.compile(r"(\d+(?:\.\d+)*\.?|-)\s+(\S.*)")
_HEADER = re.compile(r"##\s+(main|sub|setup|stack|document)\b\s*(.*)")


def render(
    steps: Sequence[Step], catalog: Catalog | None = None, *, annotations: bool = False
) -> str:
    """One chain of steps as text (the steps of one task); ``annotations`` adds the layout."""
    lines = render_chain(steps, catalog or default_catalog(), annotate=annotations)
    return "\n".join(lines) + "\n"


def render_tasks(tasks: Sequence[TaskSteps], catalog: Catalog | None = None) -> str:
    """A task list: ``## main NAME`` / ``## sub NAME`` / ``## setup NAME``, then its steps."""
    catalog = catalog or default_catalog()
    blocks = [
        "\n".join([f"## {t.kind} {quote(t.task)}", *render_chain(t.steps, catalog)]) for t in tasks
    ]
    return "\n\n".join(blocks) + "\n"


def render_program(
    program: Program, catalog: Catalog | None = None, *, annotations: bool = True
) -> str:
    """A whole program: each top-level stack under a ``## stack`` line.

    With ``annotations`` (the default) the editor layout comes along: ``## stack @ x=-170
    y=40`` and ``@ id=... no=3`` at the end of each step line, so that ``parse_program``
    gives back the very program; without, only what the program does.
    """
    catalog = catalog or default_catalog()
    blocks = []
    document = text_document(program.document) if annotations else None
    if document is not None:
        blocks.append("## document @ " + render_document(document))
    for stack in program.stacks:
        head = stack[0]
        header = "## stack"
        if annotations and (head.x is not None or head.y is not None):
            at = [f"{k}={v}" for k, v in (("x", head.x), ("y", head.y)) if v is not None]
            header += " @ " + " ".join(at)
        lines = render_chain(stack, catalog, annotate=annotations, head_position=False)
        blocks.append("\n".join([header, *lines]))
    return "\n\n".join(blocks) + "\n"


def parse(text: str, catalog: Catalog | None = None) -> list[Step]:
    """Read one chain of steps.

    Raises:
        StepTextError: the text does not parse; ``.line`` is where, the message says what
            is expected there.
    """
    sections = _Parser(text, catalog or default_catalog()).sections()
    if len(sections) > 1 or sections[0][0] is not None:
        raise StepTextError(
            "this text has ## sections; read it with parse_tasks or parse_program",
            line=sections[0][2],
        )
    return sections[0][3]


def parse_tasks(text: str, catalog: Catalog | None = None) -> list[TaskSteps]:
    """Read a task list written by ``render_tasks``."""
    tasks: list[TaskSteps] = []
    for kind, name, line, steps in _Parser(text, catalog or default_catalog()).sections():
        if kind not in ("main", "sub", "setup"):
            raise StepTextError(
                "expected a task header like `## main NAME` or `## sub NAME` before the steps",
                line=line,
            )
        try:
            tasks.append(TaskSteps(task=name, kind=kind, steps=steps))
        except ValidationError as exc:
            raise StepTextError(_message(exc), line=line) from None
    return tasks


def parse_program(text: str, catalog: Catalog | None = None) -> Program:
    """Read a program written by ``render_program``."""
    stacks: list[list[Step]] = []
    parser = _Parser(text, catalog or default_catalog())
    document: Document | None = None
    for index, (kind, _name, line, steps) in enumerate(parser.sections()):
        if kind == "document" and index == 0:
            document = parser.document
            continue
        if kind != "stack":
            raise StepTextError("expected `## stack` before each top-level stack", line=line)
        if not steps:
            raise StepTextError("this stack has no steps; add some or remove `## stack`", line=line)
        position = parser.positions.get(line)
        if position:
            steps[0] = steps[0].model_copy(update=position)
        stacks.append(steps)
    return Program(stacks=stacks, document=document)


@dataclass(frozen=True)
class _Line:
    number: int
    indent: int
    kind: Literal["step", "entry", "header"]
    text: str


Section = tuple[str | None, str, int, list[Step]]


class _Parser:
    def __init__(self, text: str, catalog: Catalog) -> None:
        self.catalog = catalog
        # Only \n ends a line: str.splitlines would also split at U+2028 inside quoted text.
        raw_lines = text.replace("\r\n", "\n").split("\n")
        self.lines = [line for n, raw in enumerate(raw_lines, 1) if (line := _read(n, raw))]
        self.pos = 0
        #: ``## stack @ x=.. y=..``: header line number -> the position it gives.
        self.positions: dict[int, dict[str, object]] = {}
        #: ``## document @ ...``: how the file looked around and inside its root.
        self.document: Document | None = None
        _check_depth(self.lines)

    def fail(self, message: str, line: _Line | None = None) -> StepTextError:
        where = line or (self.lines[self.pos] if self.pos < len(self.lines) else None)
        return StepTextError(message, line=where.number if where else 1)

    def sections(self) -> list[Section]:
        found: list[Section] = []
        while self.pos < len(self.lines) or not found:
            line = self.lines[self.pos] if self.pos < len(self.lines) else None
            kind: str | None = None
            name = ""
            start = line.number if line else 1
            if line is not None and line.kind == "header":
                match = _HEADER.fullmatch(line.text)
                if match is not None and match.group(1) == "document":
                    try:
                        self.document = parse_document_line(match.group(2))
                    except TextSyntaxError as exc:
                        raise self.fail(str(exc), line) from None
                    self.pos += 1
                    found.append(("document", "", start, []))
                    continue
                if match is not None and match.group(1) == "stack" and match.group(2).strip():
                    self._stack_position(match.group(2), line)
                    match = _HEADER.fullmatch("## stack")
                if match is None:
                    raise self.fail(
                        "expected `## main NAME`, `## sub NAME`, `## setup NAME` or `## stack`",
                        line,
                    )
                kind, name = match.group(1), self._name(match.group(2), line)
                self.pos += 1
            steps = self.chain(0)
            if self.pos < len(self.lines) and self.lines[self.pos].kind != "header":
                raise self.fail(self._stray(self.lines[self.pos]))
            found.append((kind, name, start, steps))
        return found

    def _stack_position(self, text: str, line: _Line) -> None:
        try:
            head, rest = split_annotation(lex(" " + text))
            if head or rest is None:
                raise TextSyntaxError(
                    "after `## stack` only a position like `@ x=10 y=40` may follow"
                )
            groups = parse_annotation(rest)
        except TextSyntaxError as exc:
            raise self.fail(str(exc), line) from None
        data = groups[0].data
        if len(groups) > 1 or set(data) - {"x", "y"}:
            raise self.fail("a `## stack` line holds only the position: `@ x=10 y=40`", line)
        self.positions[line.number] = data

    def _name(self, text: str, line: _Line) -> str:
        text = text.strip()
        if not text:
            return ""
        try:
            tokens = lex(text)
        except TextSyntaxError as exc:
            raise self.fail(str(exc), line) from None
        if len(tokens) != 1 or tokens[0].kind not in ("word", "string"):
            raise self.fail("a task name with spaces or symbols must be quoted", line)
        return tokens[0].value

    def _stray(self, line: _Line) -> str:
        if line.kind == "entry":
            return (
                f"`{shorten(line.text)}` is not a step (steps start with a number like `3.`) and "
                "no block above it takes it; check the indentation"
            )
        return "this step is indented differently from the steps above it; align it with them"

    def chain(self, indent: int) -> list[Step]:
        steps: list[Step] = []
        while self.pos < len(self.lines):
            line = self.lines[self.pos]
            if line.kind != "step" or line.indent != indent:
                break
            steps.append(self.step())
        return steps

    def step(self) -> Step:
        line = self.lines[self.pos]
        self.pos += 1
        try:
            items, annotation = split_annotation(lex(line.text))
            groups = parse_annotation(annotation) if annotation is not None else None
            tokens = Tokens(items, self.catalog)
            block_type, parts, has_body, is_if = self._header(tokens)
        except TextSyntaxError as exc:
            raise self.fail(str(exc), line) from None
        if not has_body:
            if self.pos < len(self.lines) and self.lines[self.pos].indent > line.indent:
                raise self.fail(
                    f"this line is indented under line {line.number}, which has "
                    "no body; end that line with `:` or unindent this one"
                )
            return self._build(block_type, parts, line, groups)
        first = self._body(line.indent)
        entries = self._entries(line, is_if)
        if is_if:
            parts.inputs["DO0"] = first
        elif first or not entries:
            spec = self.catalog.get(block_type)
            name = spec.sole_statement() if spec else None
            if name is None:
                raise self.fail(
                    f"`{block_type}` has no single body; put its steps under a "
                    "`NAME:` line naming the input",
                    line,
                )
            self._add(parts, name, first, line)
        for name, item, where in entries:
            self._add(parts, name, item, where)
        return self._build(block_type, parts, line, groups)

    def _header(self, tokens: Tokens) -> tuple[str, Parts, bool, bool]:
        parts = Parts()
        items = tokens.tokens
        if len(items) >= 2 and items[-2].kind == "mark" and items[-1].kind == "string":
            parts.source = items[-1].value
            del items[-2:]
        has_body = bool(items) and items[-1].kind == "punct" and items[-1].text == ":"
        if has_body:
            del items[-1]
        tokens.disabled(parts)
        head = tokens.take() if not tokens.done() else None
        if head is None or head.kind not in ("word", "string"):
            raise TextSyntaxError("expected a block type after the step number")
        if head.kind == "word" and head.text == "if":
            parts.inputs["IF0"] = tokens.expression()
            if tokens.at("[", "punct"):
                tokens.mutation(parts)
            if not tokens.done():
                raise TextSyntaxError(
                    f"unexpected `{shorten(tokens.take().text)}` after the condition"
                )
            if not has_body:
                raise TextSyntaxError("an `if` line ends with `:`, followed by its steps")
            return "controls_if", parts, True, True
        tokens.params(head.value, parts, frozenset())
        return head.value, parts, has_body, False

    def _body(self, indent: int) -> list[Step]:
        if self.pos < len(self.lines):
            line = self.lines[self.pos]
            if line.kind == "step" and line.indent > indent:
                return self.chain(line.indent)
        return []

    def _entries(self, owner: _Line, is_if: bool) -> list[tuple[str, object, _Line]]:
        entries: list[tuple[str, object, _Line]] = []
        branch = 0
        while self.pos < len(self.lines) and self.lines[self.pos].indent > owner.indent:
            line = self.lines[self.pos]
            if line.kind != "entry":
                raise self.fail(self._stray(line))
            self.pos += 1
            try:
                tokens = Tokens(lex(line.text), self.catalog)
                head = tokens.take()
                if is_if and head.text in ("elif", "else") and head.kind == "word":
                    branch += 1
                    if head.text == "elif":
                        entries.append((f"IF{branch}", tokens.expression(), line))
                        name = f"DO{branch}"
                    else:
                        name = "ELSE"
                    tokens.expect(":", f"at the end of the `{shorten(head.text)}` line")
                elif head.kind == "word" and tokens.at("=", "punct"):
                    tokens.take()
                    entries.append((head.text, tokens.expression(), line))
                    name = ""
                elif head.kind == "word" and tokens.at(":", "punct"):
                    tokens.take()
                    name = head.text
                else:
                    raise TextSyntaxError(
                        "expected a step (`3. moveP P1`), `NAME:` (a body), `NAME = condition`"
                        + (", `elif condition:` or `else:`" if is_if else "")
                    )
                if not tokens.done():
                    raise TextSyntaxError(f"unexpected `{shorten(tokens.take().text)}` at the end")
            except TextSyntaxError as exc:
                raise self.fail(str(exc), line) from None
            if name:
                entries.append((name, self._body(line.indent), line))
        return entries

    def _add(self, parts: Parts, name: str, item: object, line: _Line) -> None:
        if name in parts.inputs:
            raise self.fail(f"input `{name}` is given twice", line)
        parts.inputs[name] = item

    def _build(
        self, block_type: str, parts: Parts, line: _Line, groups: list[Annotation] | None
    ) -> Step:
        try:
            step = Step.model_validate(step_data(block_type, parts))
            return annotate(step, groups) if groups else step
        except TextSyntaxError as exc:
            raise self.fail(str(exc), line) from None
        except ValidationError as exc:
            raise self.fail(_message(exc), line) from None


#: The deepest the text form may nest bodies; the parser recurses once per level, and no
#: program nests more than a dozen (the XML itself stops near 120 chained blocks).
MAX_TEXT_DEPTH = 100


def _check_depth(lines: list[_Line]) -> None:
    """Refuse text whose bodies nest deeper than ``MAX_TEXT_DEPTH`` before parsing it:
    one pass over the indentation with a stack of the open levels."""
    open_levels: list[int] = []
    for line in lines:
        while open_levels and open_levels[-1] >= line.indent:
            open_levels.pop()
        open_levels.append(line.indent)
        if len(open_levels) > MAX_TEXT_DEPTH:
            raise StepTextError(
                f"the steps nest deeper than {MAX_TEXT_DEPTH} levels of indentation; no "
                "program does, so the text was not parsed. Check what produced it",
                line=line.number,
            )


def _read(number: int, raw: str) -> _Line | None:
    stripped = raw.rstrip()
    content = stripped.lstrip(" ")
    if not content or (content.startswith("#") and not content.startswith("##")):
        return None
    indent = len(stripped) - len(content)
    if content.startswith("\t") or "\t" in stripped[:indent]:
        raise StepTextError("indent with spaces, not tabs", line=number)
    if content.startswith("##"):
        return _Line(number, indent, "header", content)
    match = _MARKER.fullmatch(content)
    if match:
        return _Line(number, indent, "step", match.group(2))
    return _Line(number, indent, "entry", content)


def _message(exc: ValidationError) -> str:
    """The first few problems, by field path (a long condition nests deep: every problem
    with its whole path made a message of megabytes)."""
    return describe_validation_error(exc, most=3)
