"""What ``flowkit sas`` prints about a thread: the next step for the reviewer, ``status --json``
and per-step progress lines. Results go to ``out``; errors, warnings and progress to stderr.
"""

from __future__ import annotations

import shlex
import sys
from typing import Any, TextIO

__all__ = ["print_result", "show_progress", "status_json"]


def show_progress(asked: bool | None, runner: Any, state: Any, err: TextIO) -> None:
    """One stderr line per finished step, on a terminal or with --progress (engine events)."""
    wanted = asked if asked is not None else err.isatty()
    if not wanted:
        return
    from ..nodes.sas.module_steps import tasks_to_generate
    from ..records._events import Event, NodeFinished, NodeStarted
    from ..routing.sas import TASK_LIST_TO_MODULE_STEPS

    def on_event(event: Event) -> None:
        if isinstance(event, NodeStarted) and event.node == TASK_LIST_TO_MODULE_STEPS:
            now = runner.get_state(event.thread_id).state if state is None else state
            count = len(tasks_to_generate(now)) or len(now.sas_step1_generated_tasks)
            err.write(f"  {event.node}: module steps for {count} task(s) ...\n")
        elif isinstance(event, NodeFinished):
            outcome = "failed" if event.error else "done"
            err.write(f"  {event.node}: {outcome} in {event.latency_s:.1f} s\n")
        err.flush()

    runner.subscribe(on_event)


def print_result(
    result: Any,
    out: TextIO,
    *,
    err: TextIO | None = None,
    again: str = "",
    store: str | None = None,
) -> int:
    """Print what the thread needs next; exit code 0 unless it failed or a step failed.

    ``again`` is appended to every printed command (``--store``/``--llm`` when needed);
    ``store`` is the store folder or URL (password hidden), for commands that always need it.
    """
    from ..routing import sas as states
    from .steps_text import render_module_steps
    from .tasks import TaskList

    err = err or sys.stderr
    state = result.state
    thread = shlex.quote(result.thread_id)
    out.write(f"thread {result.thread_id}: {result.status} at {result.node}\n")
    for warning in state.warnings[-3:]:
        err.write(f"warning: {warning}\n")
    failed_here = result.status == "waiting" and state.is_error
    if failed_here:
        step = f" in {state.failed_step}" if state.failed_step else ""
        err.write(f"error{step}: {state.error_message}\n")
    retry = f"flowkit sas retry {thread}{again}"
    if result.node == states.TASK_LIST_REVIEW:
        tasks = state.sas_step1_generated_tasks
        out.write("\nTask list to review:\n" if tasks else "\nNo task list yet.\n")
        for number, task in enumerate(tasks, 1):
            calls = f" -> calls {', '.join(task.sub_tasks)}" if task.sub_tasks else ""
            out.write(f"  {number}. {task.name} [{task.type}] {task.description}{calls}\n")
        first = retry if failed_here else f"flowkit sas approve {thread}{again}"
        out.write(f'\nNext: {first}  |  flowkit sas feedback {thread} "..."{again}\n')
    elif result.node == states.MODULE_STEPS_REVIEW:
        plan = TaskList(tasks=state.sas_step1_generated_tasks)
        out.write("\nModule steps to review:\n\n")
        out.write(
            render_module_steps(state.sas_step2_module_steps, plan, state.module_step_failures)
        )
        first = retry if failed_here else f"flowkit sas approve {thread}{again}"
        out.write(
            f'\nNext: {first}  |  flowkit sas feedback {thread} "..." [--task NAME]{again}'
            f"  |  flowkit sas edit {thread} FILE{again}\n"
        )
    elif result.status == "done":
        out.write(f"\nRobot program: {state.final_flow_xml_path}\n")
        catalog = state.config.catalog_file
        own = f" --catalog {shlex.quote(catalog)}" if catalog else ""  # its own blocks
        out.write(
            f"Check it: flowkit sas validate {shlex.quote(str(state.final_flow_xml_path))}{own}\n"
        )
    if result.status == "failed":
        message = state.error_message or (result.error.message if result.error else "")
        err.write(f"flowkit: error: {message}\n")
        if result.node == states.ERROR:
            folder = shlex.quote(store or ".flowkit")
            err.write(
                "This thread ended in `error` (an older flowkit); "
                f"`flowkit recover {thread} --store {folder}` resets it.\n"
            )
        else:
            err.write(f"Fix the cause, then: {retry}\n")
        return 1
    return 1 if failed_here else 0


def status_json(result: Any) -> dict[str, Any]:
    state = result.state
    return {
        "thread_id": result.thread_id,
        "status": result.status,
        "node": result.node,
        "is_error": state.is_error,
        "error_message": state.error_message,
        "failed_step": state.failed_step,
        "warnings": list(state.warnings),
        "tasks": [t.name for t in state.sas_step1_generated_tasks],
        "task_list_accepted": state.task_list_accepted,
        "module_steps": {k: len(v.steps) for k, v in state.sas_step2_module_steps.items()},
        "module_step_failures": dict(state.module_step_failures),
        "module_steps_accepted": state.module_steps_accepted,
        "revision_iteration": state.revision_iteration,
        "output_dir": state.run_output_directory,
        "final_flow_xml_path": state.final_flow_xml_path,
    }
