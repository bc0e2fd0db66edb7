"""The two review gates: approve, give feedback (optionally on one task), or submit an edit.

Approval is an explicit ``action="approve"`` or a whole message that is an approval word
(``flowkit.sas.approval``). Anything else is feedback, appended to the history the LLM sees
next. An edit replaces the plan with the reviewer's version and approves it. Input the gate
cannot use raises ``ValueError``, which the engine reports as an invalid resume input while
the thread keeps waiting.
"""

from __future__ import annotations

import json
from typing import Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ...sas.approval import is_approval
from ...sas.catalogs import catalog_for
from ...sas.checks import step_problems
from ...sas.state import Feedback, SasState
from ...sas.steps_text import parse_module_steps
from ...sas.tasks import TaskList

__all__ = ["ReviewInput", "review_module_steps", "review_task_list"]

Decision = Literal["approve", "feedback", "edit"]


class ReviewInput(BaseModel):
    """What a reviewer sends: a command, free text, a target task, or an edited version."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    action: Decision | None = None
    message: str | None = Field(default=None, max_length=20_000)
    task: str | None = Field(default=None, max_length=128)
    edited: str | None = Field(default=None, max_length=1_000_000)

    @model_validator(mode="after")
    def _usable(self) -> Self:
        text = (self.message or "").strip()
        if self.action is None and not text:
            raise ValueError("send action='approve', feedback text, or an edited version")
        if self.action == "feedback" and not text:
            raise ValueError("feedback needs a message saying what to change")
        if self.action == "edit" and not (self.edited or "").strip():
            raise ValueError("an edit needs the edited version in 'edited'")
        return self

    def decision(self) -> Decision:
        if self.action is not None:
            return self.action
        return "approve" if is_approval(self.message or "") else "feedback"


def _said(value: ReviewInput) -> list[str]:
    text = value.message or value.action or "edit"
    return [f"user: {text}"]


def review_task_list(state: SasState, value: ReviewInput) -> dict[str, Any]:
    decision = value.decision()
    if decision == "approve":
        if not state.sas_step1_generated_tasks:
            raise ValueError("there is no task list to approve yet; send feedback instead")
        return {"task_list_accepted": True, "messages": _said(value)}
    if decision == "feedback":
        return {
            "feedback": [Feedback(stage="tasks", text=(value.message or "").strip())],
            "task_list_accepted": False,
            "module_steps_accepted": False,
            "dialog_state": "user_input_to_task_list",
            "revision_iteration": state.revision_iteration + 1,
            "messages": _said(value),
        }
    try:
        data = json.loads(value.edited or "")
        plan = TaskList.model_validate({"tasks": data} if isinstance(data, list) else data)
    except (json.JSONDecodeError, ValidationError) as exc:
        raise ValueError(f"the edited task list is not a valid plan: {exc}") from exc
    return {
        "sas_step1_generated_tasks": list(plan.tasks),
        "sas_step2_module_steps": {},
        "module_step_failures": {},
        "task_list_accepted": True,
        "messages": ["user: submitted an edited task list"],
    }


def review_module_steps(state: SasState, value: ReviewInput) -> dict[str, Any]:
    decision = value.decision()
    names = [t.name for t in state.sas_step1_generated_tasks]
    if value.task is not None and value.task not in names:
        raise ValueError(f"task {value.task!r} is not in the plan ({', '.join(names)})")
    if decision == "approve":
        if state.module_step_failures:
            # Nothing is compiled with a task missing: approving retries the failed ones.
            return {
                "regenerate_tasks": sorted(state.module_step_failures),
                "dialog_state": "task_list_to_module_steps",
                "messages": [*_said(value), "assistant: retrying the failed tasks first"],
            }
        return {"module_steps_accepted": True, "messages": _said(value)}
    if decision == "feedback":
        return {
            "feedback": [
                Feedback(stage="steps", text=(value.message or "").strip(), task=value.task)
            ],
            "regenerate_tasks": [value.task] if value.task else names,
            "module_steps_accepted": False,
            "dialog_state": "task_list_to_module_steps",
            "revision_iteration": state.revision_iteration + 1,
            "messages": _said(value),
        }
    plan = TaskList(tasks=state.sas_step1_generated_tasks)
    edited = parse_module_steps(value.edited or "", plan)
    catalog = catalog_for(state.config)
    problems = [p for steps in edited.values() for p in step_problems(steps, plan, catalog)]
    if problems:
        raise ValueError("the edited module steps have problems:\n" + "\n".join(problems))
    merged = {**state.sas_step2_module_steps, **edited}
    return {
        "sas_step2_module_steps": {t: merged[t] for t in names if t in merged},
        "module_step_failures": {
            k: v for k, v in state.module_step_failures.items() if k not in edited
        },
        "module_steps_accepted": not (set(state.module_step_failures) - set(edited)),
        "messages": [f"user: submitted edited module steps for {', '.join(edited)}"],
    }
