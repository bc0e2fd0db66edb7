"""``task_list_to_module_steps`` (step 2): a ``Map`` with one LLM call per task, bounded.

Each answer is structured steps, validated against the block catalog; a task whose answer is
invalid is asked again with the problems, then reported on its own at the review. One task
failing never discards the others (SAS_FACTS §11.14). Feedback on one task regenerates only
that task. Every finished task is checkpointed on its own, so a process killed half-way
through resumes by asking the model only for the tasks that had not finished.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from ...definition._node import Context
from ...definition._parallel import Map
from ...errors import LLMError
from ...robot.catalog import Catalog
from ...robot.steps import Step, TaskSteps
from ...routing.sas import TASK_LIST_TO_MODULE_STEPS
from ...sas.catalogs import catalog_for
from ...sas.checks import step_problems
from ...sas.prompts import ModuleStepsAnswer, module_steps_prompt
from ...sas.state import SasState
from ...sas.tasks import TaskDefinition, TaskList, TaskType

__all__ = ["task_list_to_module_steps", "tasks_to_generate"]


def tasks_to_generate(state: SasState) -> list[TaskDefinition]:
    """Tasks named for regeneration, else those without steps or with a failure."""
    tasks = state.sas_step1_generated_tasks
    if state.regenerate_tasks:
        wanted = set(state.regenerate_tasks)
        return [t for t in tasks if t.name in wanted]
    return [
        t
        for t in tasks
        if t.name not in state.sas_step2_module_steps or t.name in state.module_step_failures
    ]


def kind_of(task: TaskDefinition) -> Literal["main", "sub"]:
    return "main" if task.type is TaskType.MAIN else "sub"


async def _one_task(
    ctx: Context,
    state: SasState,
    task: TaskDefinition,
    plan: TaskList,
    catalog: Catalog,
) -> TaskSteps | str:
    """The task's validated steps, or a message saying why it could not be generated."""
    current: Sequence[Step] = ()
    existing = state.sas_step2_module_steps.get(task.name)
    if existing is not None:
        current = existing.steps
    problems: list[str] = []
    for attempt in range(1, state.config.task_attempts + 1):
        messages = module_steps_prompt(
            state.current_user_request, task, plan, current, state.feedback, catalog, problems
        )
        try:
            answer = await ctx.llm.acomplete(messages, schema=ModuleStepsAnswer)
        except LLMError as exc:
            problems = [f"the model call failed: {type(exc).__name__}: {exc}"]
            ctx.log.warning(
                "task_steps_failed", task=task.name, attempt=attempt, error_type=type(exc).__name__
            )
            continue
        steps = TaskSteps(task=task.name, kind=kind_of(task), steps=answer.parsed.steps)
        problems = step_problems(steps, plan, catalog)
        if not problems:
            return steps
        current = steps.steps
        ctx.log.warning(
            "task_steps_invalid", task=task.name, attempt=attempt, problems=len(problems)
        )
    return "; ".join(problems[:5]) + (
        f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
    )


async def _one_task_update(state: SasState, task: TaskDefinition, ctx: Context) -> dict[str, Any]:
    """One call of the map: the task's steps, or why they could not be generated."""
    if ctx.llm is None:
        return {
            "is_error": True,
            "error_message": "No language model is configured; pass --llm (e.g. "
            "openai:gpt-4o-mini), then retry.",
            "failed_step": TASK_LIST_TO_MODULE_STEPS,
        }
    plan = TaskList(tasks=state.sas_step1_generated_tasks)
    result = await _one_task(ctx, state, task, plan, catalog_for(state.config))
    if isinstance(result, TaskSteps):
        return {"sas_step2_module_steps": {task.name: result}}
    return {"module_step_failures": {task.name: result}}


def merge_module_steps(state: SasState, updates: list[dict[str, Any]]) -> dict[str, Any]:
    """The join: every task's steps or failure into the state, in the plan's order."""
    for update in updates:
        if update.get("is_error"):
            return update
    todo = tasks_to_generate(state)
    steps = dict(state.sas_step2_module_steps)
    failures = {
        k: v for k, v in state.module_step_failures.items() if k not in {t.name for t in todo}
    }
    for update in updates:
        steps.update(update.get("sas_step2_module_steps", {}))
        failures.update(update.get("module_step_failures", {}))
    plan = TaskList(tasks=state.sas_step1_generated_tasks)
    # Keep the plan's order, so reviewers and the compiler see tasks as planned.
    ordered = {t.name: steps[t.name] for t in plan.tasks if t.name in steps}
    failed_now = sum(1 for t in todo if t.name in failures)
    if todo and not ordered:
        # Not one task has steps: nothing to review, so the step failed (exit 1, `retry`,
        # `recover` says so), as it would had the model been missing; the reasons are kept.
        first = next(t.name for t in todo if t.name in failures)
        return {
            "module_step_failures": failures,
            "is_error": True,
            "error_message": (
                f"Module steps could not be generated for any of the {len(todo)} task(s); "
                f"`{first}`: {failures[first][:300]}. Retry once the model answers."
            ),
            "failed_step": TASK_LIST_TO_MODULE_STEPS,
        }
    note = f"module steps for {len(todo) - failed_now} of {len(todo)} task(s) generated"
    if failures:
        note += f"; failed: {', '.join(sorted(failures))} (approve to retry them)"
    return {
        "sas_step2_module_steps": ordered,
        "module_step_failures": failures,
        "regenerate_tasks": [],
        "task_list_accepted": True,
        "module_steps_accepted": False,
        "dialog_state": "sas_step2_module_steps_generated_for_review",
        "messages": [f"assistant: {note}"],
        "current_step_description": note,
    }


#: Step 2 as a map over the tasks to generate: one checkpointed LLM call per task (named by
#: the task in events and logs), at most ``config.max_parallel`` at once, joined by
#: ``merge_module_steps``.
task_list_to_module_steps = Map(
    _one_task_update,
    over=tasks_to_generate,
    key=lambda task: task.name,
    concurrency=lambda state: state.config.max_parallel,
    merge=merge_module_steps,
    reads=frozenset(
        {
            "sas_step1_generated_tasks",
            "sas_step2_module_steps",
            "module_step_failures",
            "regenerate_tasks",
            "current_user_request",
            "feedback",
            "config",
        }
    ),
    writes=frozenset(
        {
            "sas_step2_module_steps",
            "module_step_failures",
            "regenerate_tasks",
            "module_steps_accepted",
            "task_list_accepted",
            "dialog_state",
            "is_error",
            "error_message",
            "failed_step",
            "messages",
            "current_step_description",
        }
    ),
)
