"""Checks of single blocks and chains against the catalog: type, fields, mutation, inputs
and connection rules. ``_checks.py`` runs them over whole programs."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from ..foundation._plain import shorten
from ._specs import BlockSpec, Connection, InputSpec
from .catalog import Catalog
from .problems import Problem
from .steps import Step

__all__ = ["Context", "Finding", "Unit", "top_chain"]

Finding = tuple[Problem, Step | None]
# Problems inside a disabled block do not stop the program from running; they are warnings.
_ALWAYS_ERRORS = frozenset({"duplicate_id", "duplicate_procedure"})
_HEADS = "select_robot, procedures_defnoreturn, start_thread or create_event"


@dataclass(frozen=True)
class Unit:
    """A top-level chain to check, and how to name its steps in problems."""

    chain: Sequence[Step]
    stack: int | None = None
    task: str | None = None
    # A synthesized sub-program wrapper: its body is numbered 1, 2 ... like the task's steps.
    wrapper: bool = False


@dataclass
class Context:
    catalog: Catalog
    unit: Unit
    findings: list[Finding] = field(default_factory=list)
    calls: list[tuple[str, Step, str, Unit, bool]] = field(default_factory=list)

    def add(
        self,
        code: str,
        message: str,
        step: Step | None,
        path: str,
        *,
        disabled: bool = False,
        severity: Literal["error", "warning"] = "error",
    ) -> None:
        if disabled and code not in _ALWAYS_ERRORS:
            severity = "warning"
            message = f"(inside a disabled block) {message}"
        problem = Problem(
            severity=severity,
            code=code,
            message=message,
            block_id=step.id if step else None,
            block_type=step.type if step else None,
            task=self.unit.task,
            stack=self.unit.stack,
            step=path or None,
        )
        self.findings.append((problem, step))


def top_chain(ctx: Context, unit: Unit) -> None:
    chain = unit.chain
    if not chain:
        return
    if unit.wrapper:
        head = chain[0]
        _step(ctx, head, "", where="top", accepts=None, disabled=False)
        return
    head = chain[0]
    spec = ctx.catalog.get(head.type)
    if spec is not None and spec.role not in ("hat", "chain-head") and not head.disabled:
        ctx.add(
            "stray_stack",
            f"this stack starts with `{head.type}`, which is not a program start ({_HEADS}); "
            "it will not run. Attach it to a program or disable it",
            head,
            "1",
            severity="warning",
        )
    _chain(ctx, chain, "", accepts=None, disabled=False, top=True)


def _chain(
    ctx: Context,
    chain: Sequence[Step],
    prefix: str,
    *,
    accepts: Connection | None,
    disabled: bool,
    top: bool = False,
    start: int = 1,
) -> None:
    previous: Step | None = None
    for index, step in enumerate(chain, start=start):
        path = f"{prefix}{index}"
        where: Literal["top", "chain"] = "top" if top and previous is None else "chain"
        _connection(ctx, step, previous, path, where, accepts, disabled or step.disabled)
        _step(ctx, step, path, where=where, accepts=accepts, disabled=disabled)
        previous = step


def _connection(
    ctx: Context,
    step: Step,
    previous: Step | None,
    path: str,
    where: Literal["top", "chain"],
    accepts: Connection | None,
    disabled: bool,
) -> None:
    spec = ctx.catalog.get(step.type)
    before = ctx.catalog.get(previous.type) if previous else None
    name = f"`{step.type}`"
    found: list[tuple[str, str]] = []
    if previous is not None and before is not None and not before.next:
        found.append(
            (
                "loop_with_next" if previous.type == "loop" else "block_after_terminal",
                f"`{previous.type}` cannot have a block after it, but {name} follows; move "
                f"{name} into its body or before it",
            )
        )
    role = spec.role if spec else None
    if role == "value":
        found.append(
            (
                "value_block_as_statement",
                f"{name} is a value (reporter) block; it only fits into a value input such as "
                "a condition, not into a chain of steps",
            )
        )
    elif role == "hat" and where != "top":
        found.append(
            ("hat_not_top_level", f"{name} must start a top-level stack of its own; move it")
        )
    elif role == "chain-head" and where != "top":
        found.append(
            ("select_robot_not_head", f"{name} must be the first block of the main program")
        )
    elif role == "event" and accepts != "event":
        found.append(
            ("event_outside_create_event", f"{name} is an event rule; put it in create_event")
        )
    elif role is not None and accepts == "event" and role != "event":
        found.append(
            ("not_an_event", f"only event rules (..._upon blocks) go in create_event, not {name}")
        )
    for code, message in found:
        ctx.add(code, message, step, path, disabled=disabled)


def _step(
    ctx: Context,
    step: Step,
    path: str,
    *,
    where: Literal["top", "chain", "value"],
    accepts: Connection | None,
    disabled: bool,
    check: str | None = None,
    input_name: str | None = None,
) -> None:
    disabled = disabled or step.disabled
    spec = ctx.catalog.get(step.type)
    if spec is None:
        ctx.add(
            "unknown_block_type",
            f"unknown block type `{shorten(step.type)}`; use a type of the block catalog or "
            "add this one to your own catalog",
            step,
            path,
            disabled=disabled,
        )
    else:
        if spec.origin == "editor":
            ctx.add(
                "editor_only_block",
                f"`{step.type}` is known to the editor, not in the template set; it is kept "
                "as written, check it in the editor",
                step,
                path,
                severity="warning",
            )
        if where == "value":
            _value_slot(ctx, step, spec, path, check, input_name, disabled)
        _fields(ctx, step, spec, path, disabled)
    mutation = _mutation(ctx, step, spec, path, disabled)
    expected = dict(spec.expected_inputs(mutation)) if spec else {}
    seen = 0
    for name, item in step.inputs.items():
        input_spec = spec.input(name) if spec else None
        if spec is not None and input_spec is None:
            ctx.add(
                "unknown_input",
                f"`{step.type}` has no input `{shorten(name)}`; its inputs are "
                f"{_names(i.name for i in spec.inputs)}",
                step,
                path,
                disabled=disabled,
            )
        elif input_spec is not None and name not in expected:
            ctx.add(
                "input_mutation_mismatch",
                f"input `{name}` does not match the mutation {mutation}; remove the mutation "
                "to have it derived from the inputs, or fix it",
                step,
                path,
                disabled=disabled,
            )
        _nested(ctx, step, name, item, input_spec, path, disabled, seen + 1)
        if isinstance(item, list):
            seen += len(item)  # numbering runs on across the bodies of one block
    for name, input_spec in expected.items():
        _required_input(ctx, step, name, input_spec, path, disabled)


def _nested(
    ctx: Context,
    step: Step,
    name: str,
    item: Step | list[Step],
    spec: InputSpec | None,
    path: str,
    disabled: bool,
    start: int,
) -> None:
    if spec is not None and (spec.kind == "value") != isinstance(item, Step):
        wanted = "one reporter block" if spec.kind == "value" else "a list of steps (a body)"
        ctx.add(
            "input_kind",
            f"input `{name}` of `{step.type}` takes {wanted}",
            step,
            path,
            disabled=disabled,
        )
        return
    if isinstance(item, Step):
        check = spec.check if spec else None
        _step(
            ctx,
            item,
            path,
            where="value",
            accepts=None,
            disabled=disabled,
            check=check,
            input_name=name,
        )
    else:
        accepts = spec.accepts if spec else "any"
        prefix = f"{path}." if path else ""
        _chain(ctx, item, prefix, accepts=accepts, disabled=disabled, start=start)


def _required_input(
    ctx: Context, step: Step, name: str, spec: InputSpec, path: str, disabled: bool
) -> None:
    item = step.inputs.get(name)
    if not spec.required or (item is not None and item != []):
        return
    if spec.kind == "value":
        ctx.add(
            "missing_input",
            f"`{step.type}` needs its {name} input: plug in a reporter block (flowkit never "
            "fills in a placeholder such as TRUE)",
            step,
            path,
            disabled=disabled,
        )
    else:
        ctx.add(
            "missing_body",
            f"the {name} body of `{step.type}` is empty; add the steps it should run",
            step,
            path,
            disabled=disabled,
        )


def _value_slot(
    ctx: Context,
    step: Step,
    spec: BlockSpec,
    path: str,
    check: str | None,
    input_name: str | None,
    disabled: bool,
) -> None:
    if spec.role != "value":
        ctx.add(
            "statement_in_value",
            f"`{step.type}` is a statement block; input `{input_name}` needs a reporter block",
            step,
            path,
            disabled=disabled,
        )
    elif check and spec.output and spec.output != check:
        ctx.add(
            "value_type",
            f"input `{input_name}` takes a {check}, but `{step.type}` gives a {spec.output}",
            step,
            path,
            disabled=disabled,
        )


def _fields(ctx: Context, step: Step, spec: BlockSpec, path: str, disabled: bool) -> None:
    known = {f.name: f for f in spec.fields}
    for name, value in step.fields.items():
        rule = known.get(name)
        if rule is None:
            ctx.add(
                "unknown_field",
                f"`{step.type}` has no field `{shorten(name)}`; its fields are {_names(known)}",
                step,
                path,
                disabled=disabled,
            )
        elif not rule.accepts(value):
            ctx.add(
                "bad_field_value",
                f"field `{name}` of `{step.type}` is `{shorten(str(value))}`; it must be "
                f"{rule.expected()}",
                step,
                path,
                disabled=disabled,
            )
    for rule in spec.fields:
        if rule.required and rule.name not in step.fields:
            ctx.add(
                "missing_field",
                f"`{step.type}` needs field `{rule.name}` ({rule.expected()})",
                step,
                path,
                disabled=disabled,
            )


def _mutation(
    ctx: Context, step: Step, spec: BlockSpec | None, path: str, disabled: bool
) -> dict[str, str]:
    mutation = step.mutation
    if mutation is None:
        mutation = spec.default_mutation(list(step.inputs)) if spec else None
    attributes = mutation if isinstance(mutation, dict) else {}
    if spec is None:
        return attributes
    for name, value in attributes.items():
        rule = spec.attribute(name)
        if rule is None:
            ctx.add(
                "unknown_mutation",
                f"`{step.type}` has no mutation attribute `{shorten(name)}`; allowed: "
                f"{_names(a.name for a in spec.mutation)}",
                step,
                path,
                disabled=disabled,
            )
        elif not rule.accepts(value):
            ctx.add(
                "bad_mutation_value",
                f"mutation `{name}` of `{step.type}` is `{shorten(str(value))}`; it must be "
                f"{rule.expected()}",
                step,
                path,
                disabled=disabled,
            )
    for rule in spec.mutation:
        if rule.required and rule.name not in attributes:
            ctx.add(
                "missing_mutation",
                f"`{step.type}` needs mutation attribute `{rule.name}` ({rule.description})",
                step,
                path,
                disabled=disabled,
            )
    if step.type == "procedures_callnoreturn" and "name" in attributes:
        ctx.calls.append((attributes["name"], step, path, ctx.unit, disabled))
    return attributes


def _names(names: Iterable[str]) -> str:
    items = list(names)
    return ", ".join(f"`{n}`" for n in items) if items else "none"
