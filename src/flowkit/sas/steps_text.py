"""The module steps of every task as one readable document, and back.

Each task is a section headed ``## <name> (<type>)`` followed by its steps in the robot text
form (``flowkit.robot.text``). Reviewers read it at the gate, edit it, and submit it back; a
JSON document (``{"<task>": [steps...]}``) is accepted too.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Literal

from pydantic import ValidationError

from ..errors import StepTextError
from ..foundation._plain import describe_validation_error
from ..foundation._untrusted import parse_json
from ..robot.steps import Step, TaskSteps
from .tasks import TaskList, TaskType

__all__ = ["parse_module_steps", "render_module_steps"]

_HEADER = re.compile(r"^##\s+(?P<name>\S+)(?:\s+\((?P<type>[A-Za-z]+)\))?\s*$")


def render_module_steps(
    steps: Mapping[str, TaskSteps], plan: TaskList, failures: Mapping[str, str] | None = None
) -> str:
    """One section per task of the plan, in plan order; failed tasks say why."""
    from ..robot.text import render

    sections = []
    for task in plan.tasks:
        header = f"## {task.name} ({task.type})"
        if task.name in steps:
            sections.append(f"{header}\n{render(steps[task.name].steps).rstrip()}")
        else:
            reason = (failures or {}).get(task.name, "not generated yet")
            sections.append(f"{header}\n# FAILED: {reason}")
    return "\n\n".join(sections) + "\n"


def _kind(plan: TaskList, name: str) -> Literal["main", "sub"]:
    task = plan.get(name)
    if task is None:
        known = ", ".join(t.name for t in plan.tasks)
        raise ValueError(f"section `{name}` is not a task of the plan ({known})")
    return "main" if task.type is TaskType.MAIN else "sub"


def parse_module_steps(text: str, plan: TaskList) -> dict[str, TaskSteps]:
    """Tasks and their steps from a document written by ``render_module_steps`` or by hand."""
    stripped = text.strip()
    if stripped.startswith("{"):
        return _from_json(stripped, plan)
    from ..robot.text import parse

    sections: dict[str, tuple[int, list[str]]] = {}
    current: str | None = None
    for number, line in enumerate(text.splitlines(), 1):
        header = _HEADER.match(line)
        if header:
            current = header.group("name")
            if current in sections:
                raise ValueError(f"line {number}: task `{current}` appears twice")
            _kind(plan, current)
            sections[current] = (number, [])
        elif current is not None:
            sections[current][1].append(line)
        elif line.strip() and not line.lstrip().startswith("#"):
            raise ValueError(f"line {number}: steps must follow a `## <task>` header")
    if not sections:
        raise ValueError("no `## <task>` sections found; start each task with `## <name>`")
    result: dict[str, TaskSteps] = {}
    for name, (start, lines) in sections.items():
        body = "\n".join(lines)
        try:
            parsed = parse(body)
        except StepTextError as exc:
            at = start + (exc.line or 0)
            raise ValueError(f"line {at} (task {name}): {exc}") from exc
        if not parsed and body.lstrip().startswith("# FAILED"):
            continue  # a failed task left as rendered: not edited; steps below the note count
        result[name] = TaskSteps(task=name, kind=_kind(plan, name), steps=parsed)
    return result


def _from_json(text: str, plan: TaskList) -> dict[str, TaskSteps]:
    try:
        data = parse_json(text, what="edited steps", max_bytes=None)
        return {
            name: TaskSteps(
                task=name,
                kind=_kind(plan, name),
                steps=[Step.model_validate(s) for s in raw],
            )
            for name, raw in data.items()
        }
    except ValidationError as exc:
        reason = describe_validation_error(exc)
        raise ValueError(f"the edited steps are not valid JSON steps: {reason}") from exc
    except (ValueError, AttributeError, TypeError) as exc:  # not JSON, limits, not a mapping
        raise ValueError(f"the edited steps are not valid JSON steps: {exc}") from exc
