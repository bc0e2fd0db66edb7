"""The prompts of the sas workflow's two LLM steps.

Both prompts carry the original request, the current plan and every piece of feedback so far,
so feedback refines the plan instead of replacing the request (SAS_FACTS §11.10). Answers are
JSON validated against pydantic schemas; the block catalog is described from the catalog data,
so a user's own catalog changes what the model may use.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field

from ..llm import Message
from ..robot.catalog import BlockSpec, Catalog
from ..robot.steps import Step
from .state import Feedback
from .tasks import TaskDefinition, TaskList

__all__ = ["ModuleStepsAnswer", "catalog_summary", "module_steps_prompt", "task_list_prompt"]


class ModuleStepsAnswer(BaseModel):
    """What step 2 asks the model for: the task's steps as structured blocks."""

    model_config = ConfigDict(title="ModuleSteps")

    steps: list[Step] = Field(min_length=1)


TASK_TYPES = """\
- MainTask: the main program. Starts with select_robot and set_motor, usually loops forever,
  calls the sub-programs with procedures_callnoreturn, and returns to a safe point between
  phases. Exactly one per plan; its sub_tasks are every sub-program it calls.
- GraspTask: a sub-program that picks a part: approach point, slow precise move, close the
  clamp (by calling a CloseClampTask), retreat. sub_tasks: the clamp tasks it calls.
- PlaceTask: a sub-program that puts a part down: approach, precise move, open the clamp
  (an OpenClampTask), retreat.
- OpenClampTask / CloseClampTask: a sub-program that drives a gripper: wait a short delay,
  set an output, wait for the confirming input. No sub_tasks."""

STEP_SHAPE = """\
Each step is one block:
  {"type": "<block type>", "fields": {"<field>": "<value>", ...},
   "inputs": {"<value input>": {<one reporter step>}, "<statement input>": [<steps>]},
   "disabled": false, "source": "<the sentence of the request this step implements>"}
Values are strings. Bodies of loop (DO), controls_if (DO0, ELSE), procedures (STACK) are
explicit lists: a step after an if-block is written after it, not inside it. Conditions are
reporter blocks in value inputs, e.g. {"type": "logic_compare", "fields": {"OP": "EQ"},
"inputs": {"A": {"type": "math_custom_number", "fields": {"name": "N5"}},
"B": {"type": "math_number", "fields": {"NUM": "2"}}}}. A call is
{"type": "procedures_callnoreturn", "mutation": {"name": "<sub-program name>"}}.
Points, number variables and flags may be slot keys (P21, N482, F3) or, when the request names
a place instead of a key, that name (e.g. "safe point"); names are mapped onto the robot's
teaching table later."""


def _field_text(spec: BlockSpec) -> str:
    parts = []
    for field in spec.fields:
        default = f", default {field.default}" if field.default is not None else ""
        parts.append(f"{field.name} ({field.expected()}{default})")
    for attribute in spec.mutation:
        if attribute.name != "timeout":
            parts.append(f"mutation {attribute.name} ({attribute.expected()})")
    for item in spec.inputs:
        check = f" {item.check}" if item.check else ""
        parts.append(f"{item.kind} input {item.name}{check}")
    return "; ".join(parts) or "no parameters"


def catalog_summary(catalog: Catalog) -> str:
    """One line per block type the model may use: role, purpose, parameters."""
    lines = []
    for name, spec in sorted(catalog.blocks.items()):
        if spec.origin == "editor":
            continue  # known to the editor but not generated: keep the model on the template set
        lines.append(f"- {name} [{spec.role}]: {spec.description} Parameters: {_field_text(spec)}")
    return "\n".join(lines)


def _feedback_text(feedback: Sequence[Feedback], *, task: str | None = None) -> str:
    relevant = [f for f in feedback if task is None or f.task in (None, task)]
    if not relevant:
        return "(none yet)"
    return "\n".join(
        f"{i}. [{f.stage}{f' / {f.task}' if f.task else ''}] {f.text}"
        for i, f in enumerate(relevant, 1)
    )


def task_list_prompt(
    request: str, tasks: Sequence[TaskDefinition], feedback: Sequence[Feedback], catalog: Catalog
) -> list[Message]:
    current = (
        json.dumps({"tasks": [t.model_dump(mode="json") for t in tasks]}, ensure_ascii=False)
        if tasks
        else "(no plan yet)"
    )
    system = (
        "You plan robot programs for a Blockly-based robot cell editor. Split the request "
        "into tasks: exactly one MainTask and the sub-programs it calls.\n"
        f"Task types:\n{TASK_TYPES}\n"
        f"Blocks the programs can use later:\n{catalog_summary(catalog)}\n"
        'Answer with JSON only: {"tasks": [{"name": ..., "type": ..., "description": ..., '
        '"sub_tasks": [...]}]}. Names are letters, digits, "_", "&", "." or "-".'
    )
    user = (
        f"Request:\n{request}\n\nCurrent plan:\n{current}\n\n"
        f"Reviewer feedback so far (apply all of it to the current plan):\n"
        f"{_feedback_text(feedback)}"
    )
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def module_steps_prompt(
    request: str,
    task: TaskDefinition,
    plan: TaskList,
    current: Sequence[Step],
    feedback: Sequence[Feedback],
    catalog: Catalog,
    problems: Sequence[str] = (),
) -> list[Message]:
    kind = "the main program" if task.type == "MainTask" else f"sub-program {task.name}"
    system = (
        f"You write the module steps of {kind} for a Blockly robot cell editor as "
        f"structured blocks.\n{STEP_SHAPE}\nBlock types:\n{catalog_summary(catalog)}\n"
        'Answer with JSON only: {"steps": [...]}.'
        + (
            " The main program's first steps are select_robot and set_motor."
            if task.type == "MainTask"
            else " Write only the body of the sub-program (no procedures_defnoreturn)."
        )
    )
    plan_json = json.dumps([t.model_dump(mode="json") for t in plan.tasks], ensure_ascii=False)
    parts = [
        f"Request:\n{request}",
        f"Plan:\n{plan_json}",
        f"Task to write:\n{json.dumps(task.model_dump(mode='json'), ensure_ascii=False)}",
    ]
    if current:
        steps_json = json.dumps([s.model_dump(mode="json", exclude_defaults=True) for s in current])
        parts.append(f"Current steps of this task:\n{steps_json}")
    parts.append(f"Reviewer feedback so far:\n{_feedback_text(feedback, task=task.name)}")
    if problems:
        parts.append("Your previous answer had these problems; fix them:\n" + "\n".join(problems))
    return [{"role": "system", "content": system}, {"role": "user", "content": "\n\n".join(parts)}]
