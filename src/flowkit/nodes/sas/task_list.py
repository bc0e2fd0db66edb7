"""``user_input_to_task_list`` (step 1): the request becomes a validated task list.

Empty or oversized requests and unusable model answers go back to the task-list review with
``is_error`` and a message that says what to do; ``retry`` there runs this step again. A
plan that exists and is not yet approved goes back to review instead of being regenerated,
unless new feedback arrived (seed 000 §1.2.B).
"""

from __future__ import annotations

from typing import Any

from ...definition._node import Context, node
from ...errors import LLMError
from ...routing.sas import USER_INPUT_TO_TASK_LIST
from ...sas.catalogs import catalog_for
from ...sas.prompts import task_list_prompt
from ...sas.state import SasState
from ...sas.tasks import TaskList

__all__ = ["MAX_REQUEST", "user_input_to_task_list"]

#: Longest request accepted (characters); longer ones are refused with a clear message.
MAX_REQUEST = 20_000


def _error(message: str) -> dict[str, Any]:
    return {
        "is_error": True,
        "error_message": message,
        "failed_step": USER_INPUT_TO_TASK_LIST,
        "messages": [f"assistant: {message}"],
        "completion_status": "error",
    }


@node(
    reads=[
        "current_user_request",
        "sas_step1_generated_tasks",
        "task_list_accepted",
        "feedback",
        "feedback_seen",
        "config",
    ],
    writes=[
        "sas_step1_generated_tasks",
        "task_list_accepted",
        "module_steps_accepted",
        "sas_step2_module_steps",
        "module_step_failures",
        "regenerate_tasks",
        "feedback_seen",
        "is_error",
        "error_message",
        "failed_step",
        "messages",
        "current_step_description",
        "completion_status",
    ],
)
def user_input_to_task_list(state: SasState, ctx: Context) -> dict[str, Any]:
    request = state.current_user_request.strip()
    if not request:
        return _error("The robot task is empty; describe what the robot should do.")
    if len(request) > MAX_REQUEST:
        return _error(
            f"The robot task is {len(request):,} characters long (limit {MAX_REQUEST:,}); "
            "shorten it to the steps the robot should perform."
        )
    fresh_feedback = len(state.feedback) > state.feedback_seen
    if state.sas_step1_generated_tasks and not state.task_list_accepted and not fresh_feedback:
        return {"current_step_description": "task list waiting for review"}
    if ctx.llm is None:
        return _error("No language model is configured; pass --llm (e.g. openai:gpt-4o-mini).")
    messages = task_list_prompt(
        request, state.sas_step1_generated_tasks, state.feedback, catalog_for(state.config)
    )
    try:
        answer = ctx.llm.complete(messages, schema=TaskList)
    except LLMError as exc:
        if exc.retryable:
            raise  # the thread fails at this step; resume retries it
        return _error(f"The language model gave no usable task list: {exc}")
    plan: TaskList = answer.parsed
    names = ", ".join(f"{t.name} ({t.type})" for t in plan.tasks)
    return {
        "sas_step1_generated_tasks": list(plan.tasks),
        "task_list_accepted": False,
        "module_steps_accepted": False,
        "sas_step2_module_steps": {},
        "module_step_failures": {},
        "regenerate_tasks": [],
        "feedback_seen": len(state.feedback),
        "messages": [f"assistant: task list ready for review: {names}"],
        "current_step_description": f"{len(plan.tasks)} tasks generated; waiting for review",
    }
