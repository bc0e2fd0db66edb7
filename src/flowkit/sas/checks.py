"""Checks of one task's module steps before a reviewer sees them.

Catalog validation runs on a copy in which logical parameter names ("safe point") stand in as
valid slot keys, because parameter mapping assigns the real slots later; everything else —
unknown types, fields, values, missing bodies, calls to tasks that do not exist — is reported
as a message naming the task and the step.
"""

from __future__ import annotations

from ..robot._specs import slot_number
from ..robot.catalog import Catalog
from ..robot.steps import Step, TaskSteps
from .tasks import TaskList, TaskType

__all__ = ["is_logical_name", "step_problems"]


def is_logical_name(value: str, prefix: str) -> bool:
    """A value meant for a slot field that is not a slot key (``P21``) but a name."""
    return slot_number(value, prefix) is None and bool(value.strip())


def _with_placeholders(step: Step, catalog: Catalog) -> Step:
    spec = catalog.get(step.type)
    fields = dict(step.fields)
    if spec is not None:
        for field in spec.fields:
            value = fields.get(field.name)
            prefix = field.prefix or ""
            if field.kind == "ref" and value is not None and is_logical_name(value, prefix):
                fields[field.name] = f"{prefix}{field.min if field.min is not None else 1}"
    inputs: dict[str, Step | list[Step]] = {
        name: _with_placeholders(item, catalog)
        if isinstance(item, Step)
        else [_with_placeholders(s, catalog) for s in item]
        for name, item in step.inputs.items()
    }
    return step.model_copy(update={"fields": fields, "inputs": inputs})


def step_problems(steps: TaskSteps, plan: TaskList, catalog: Catalog) -> list[str]:
    """Every problem of one task's steps, as messages naming the task and step."""
    from ..robot.validate import validate_task

    if not steps.steps:
        return [f"task {steps.task}: no steps"]
    checked = TaskSteps(
        task=steps.task,
        kind=steps.kind,
        steps=[_with_placeholders(s, catalog) for s in steps.steps],
    )
    # The sub-programs it may call: never the main program (never compiled as one).
    others = [t.name for t in plan.tasks if t.name != steps.task and t.type is not TaskType.MAIN]
    problems = validate_task(checked, procedures=others, catalog=catalog)
    return [str(p) for p in problems if p.severity == "error"]
