"""The two review gates: approve, give feedback (optionally on one task), submit an edit, or
retry the step that failed.

Approval is an explicit ``action="approve"`` or a whole message that is an approval word
(``flowkit.sas.approval``). Anything else is feedback, appended to the history the LLM sees
next. An edit replaces the plan with the reviewer's version and approves it. A step that
failed came back here with ``is_error``; ``retry`` runs it again, and any other input clears
the error and goes on from the reviewer's choice. Input the gate cannot use raises
``ValueError``, which the engine reports as an invalid resume input while the thread keeps
waiting.
"""

from __future__ import annotations

from typing import Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ...foundation._plain import describe_validation_error
from ...foundation._untrusted import parse_json
from ...routing.sas import INITIAL, TASK_LIST_TO_MODULE_STEPS, USER_INPUT_TO_TASK_LIST
from ...sas.approval import is_approval
from ...sas.catalogs import catalog_for
from ...sas.checks import step_problems
from ...sas.state import Feedback, SasState
from ...sas.steps_text import parse_module_steps
from ...sas.tasks import TaskList

__all__ = ["ReviewInput", "review_module_steps", "review_task_list"]

Decision = Literal["approve", "feedback", "edit", "retry"]

#: Every decision clears an error the thread came back with.
_CLEARED: dict[str, Any] = {"is_error": False, "error_message": None, "failed_step": None}


class ReviewInput(BaseModel):
    """What a reviewer sends: a command, free text, a target task, or an edited version."""

    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        # The first is what `flowkit start/resume` print as the next command's input.
        json_schema_extra={
            "examples": [{"action": "approve"}, {"message": "split the second task in two"}]
        },
    )

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


def _retry(state: SasState) -> dict[str, Any]:
    """Run the failed step again: the route tables read the markers set here."""
    if not state.is_error:
        raise ValueError("no step failed here; approve, send feedback or an edit instead")
    step = state.failed_step
    update: dict[str, Any] = {**_CLEARED, "messages": ["user: retry"]}
    if step in (INITIAL, USER_INPUT_TO_TASK_LIST):
        update |= {
            "dialog_state": step,
            "task_list_accepted": False,
            "module_steps_accepted": False,
        }
    elif step == TASK_LIST_TO_MODULE_STEPS:
        update |= {"dialog_state": step, "module_steps_accepted": False}
    else:  # steps 3-5: approving the reviewed steps again runs them
        update["module_steps_accepted"] = True
    return update


def review_task_list(state: SasState, value: ReviewInput) -> dict[str, Any]:
    if value.task is not None:  # never widened to the whole plan behind the reviewer's back
        raise ValueError(
            f"task {value.task!r}: feedback for one task is for its module steps, which the "
            "task-list review has none of yet; send the feedback without a task"
        )
    decision = value.decision()
    if decision == "retry":
        return _retry(state)
    if decision == "approve":
        if not state.sas_step1_generated_tasks:
            raise ValueError(
                "there is no task list to approve yet; retry the failed step or send feedback"
            )
        return {**_CLEARED, "task_list_accepted": True, "messages": _said(value)}
    if decision == "feedback":
        text = (value.message or "").strip()
        # With no request yet (it was empty), the first feedback is the request.
        request = {} if state.current_user_request.strip() else {"current_user_request": text}
        return {
            **_CLEARED,
            **request,
            "feedback": [Feedback(stage="tasks", text=text)],
            "task_list_accepted": False,
            "module_steps_accepted": False,
            "dialog_state": "user_input_to_task_list",
            "revision_iteration": state.revision_iteration + 1,
            "messages": _said(value),
        }
    try:
        data = parse_json(value.edited or "", what="edited task list", max_bytes=None)
        plan = TaskList.model_validate({"tasks": data} if isinstance(data, list) else data)
    except ValidationError as exc:
        raise ValueError(
            f"the edited task list is not a valid plan: {describe_validation_error(exc)}"
        ) from exc
    except ValueError as exc:  # not JSON, or past a limit
        raise ValueError(f"the edited task list is not a valid plan: {exc}") from exc
    return {
        **_CLEARED,
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
    if decision == "retry":
        return _retry(state)
    if decision == "approve":
        if state.module_step_failures:
            # Nothing is compiled with a task missing: approving retries the failed ones.
            return {
                **_CLEARED,
                "regenerate_tasks": sorted(state.module_step_failures),
                "dialog_state": "task_list_to_module_steps",
                "messages": [*_said(value), "assistant: retrying the failed tasks first"],
            }
        return {**_CLEARED, "module_steps_accepted": True, "messages": _said(value)}
    if decision == "feedback":
        return {
            **_CLEARED,
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
        **_CLEARED,
        "sas_step2_module_steps": {t: merged[t] for t in names if t in merged},
        "module_step_failures": {
            k: v for k, v in state.module_step_failures.items() if k not in edited
        },
        "module_steps_accepted": not (set(state.module_step_failures) - set(edited)),
        "messages": [f"user: submitted edited module steps for {', '.join(edited)}"],
    }
