"""``flowkit sas ...``: drive the robot-flow workflow from a shell, and its offline tools.

``start`` / ``approve`` / ``feedback`` / ``edit`` / ``status`` work on threads in a JSON-file
store (default ``./.flowkit``); ``compile`` / ``validate`` / ``decompile`` need no LLM and no
store. After each step the command prints what the reviewer must look at next.
"""

from __future__ import annotations

import argparse
import secrets
import time
from pathlib import Path
from typing import Any, TextIO

__all__ = ["add_commands", "print_result"]

_DEFAULT_STORE = ".flowkit"


def add_commands(commands: Any, common: argparse.ArgumentParser) -> None:
    """Register ``sas`` and its sub-commands on the main parser's sub-parsers."""
    sas = commands.add_parser(
        "sas", parents=[common], help="robot task in natural language -> Blockly robot program"
    )
    sub = sas.add_subparsers(title="sas commands", metavar="COMMAND", required=True)

    def thread_command(name: str, help_text: str) -> argparse.ArgumentParser:
        parser: argparse.ArgumentParser = sub.add_parser(name, parents=[common], help=help_text)
        parser.add_argument("thread", metavar="THREAD", help="the thread id `start` printed")
        _store_and_llm(parser)
        return parser

    start = sub.add_parser("start", parents=[common], help="start a thread from a robot task")
    start.add_argument("text", metavar="TEXT", help="the robot task, in any language")
    _store_and_llm(start)
    start.add_argument("--output-dir", metavar="DIR", help="where flow.xml is written")
    start.add_argument("--teaching", metavar="FILE", help="teaching.yaml to map points onto")
    start.add_argument("--catalog", metavar="FILE", help="your own block catalog (JSON)")
    start.add_argument("--thread", metavar="ID", help="thread id (default: generated)")
    start.set_defaults(run=_cmd_start)

    thread_command("approve", "approve what the thread waits on").set_defaults(run=_cmd_approve)
    feedback = thread_command("feedback", "send feedback; the plan is refined with it")
    feedback.add_argument("text", metavar="TEXT", help="what to change")
    feedback.add_argument("--task", metavar="NAME", help="regenerate only this task's steps")
    feedback.set_defaults(run=_cmd_feedback)
    edit = thread_command("edit", "submit an edited task list (JSON) or module steps (text)")
    edit.add_argument("file", metavar="FILE", help="the edited version")
    edit.set_defaults(run=_cmd_edit)
    thread_command("status", "show where a thread stands").set_defaults(run=_cmd_status)
    thread_command("retry", "run a failed step again").set_defaults(run=_cmd_retry)

    compile_ = sub.add_parser(
        "compile", parents=[common], help="module steps -> flow.xml (offline)"
    )
    compile_.add_argument("steps", metavar="STEPS", help="steps as text (.txt/.md) or JSON")
    compile_.add_argument("-o", "--output", metavar="FILE", required=True, help="flow.xml to write")
    compile_.add_argument("--teaching", metavar="FILE", help="teaching.yaml to map names onto")
    compile_.set_defaults(run=_cmd_compile)
    validate = sub.add_parser("validate", parents=[common], help="check a robot program")
    validate.add_argument("xml", metavar="FLOW.xml")
    validate.set_defaults(run=_cmd_validate)
    decompile = sub.add_parser("decompile", parents=[common], help="flow.xml -> module steps")
    decompile.add_argument("xml", metavar="FLOW.xml")
    decompile.add_argument(
        "-o",
        "--output",
        metavar="STEPS",
        required=True,
        help="output file: .json for JSON, anything else for text",
    )
    decompile.set_defaults(run=_cmd_decompile)


def _store_and_llm(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--store",
        metavar="DIR",
        default=_DEFAULT_STORE,
        help=f"JSON-file store folder (default: {_DEFAULT_STORE})",
    )
    parser.add_argument(
        "--llm",
        metavar="SPEC",
        help="openai:MODEL, ollama:MODEL, replay:PATH, scripted:PATH (default: $FLOWKIT_LLM)",
    )


def _runner(args: argparse.Namespace, *, needs_llm: bool = True) -> Any:
    from .._runner import Runner
    from ..llm import from_spec
    from ..stores.jsonfile import JsonFileStore
    from .workflow import flow

    llm = from_spec(args.llm) if (args.llm or needs_llm) else None
    # Steps here are slow (LLM calls), so marking each attempt costs nothing noticeable and
    # lets `flowkit recover` tell a killed step from one still running.
    return Runner(flow, store=JsonFileStore(args.store), llm=llm, track_attempts=True)


def print_result(result: Any, out: TextIO) -> int:
    """Print what the thread needs next; exit code 0 unless it failed."""
    from ..routing import sas as states
    from .steps_text import render_module_steps
    from .tasks import TaskList

    state = result.state
    out.write(f"thread {result.thread_id}: {result.status} at {result.node}\n")
    for warning in state.warnings[-3:]:
        out.write(f"warning: {warning}\n")
    if result.node == states.TASK_LIST_REVIEW:
        out.write("\nTask list to review:\n")
        for number, task in enumerate(state.sas_step1_generated_tasks, 1):
            calls = f" -> calls {', '.join(task.sub_tasks)}" if task.sub_tasks else ""
            out.write(f"  {number}. {task.name} [{task.type}] {task.description}{calls}\n")
        out.write(
            f"\nNext: flowkit sas approve {result.thread_id}  |  "
            f'flowkit sas feedback {result.thread_id} "..."\n'
        )
    elif result.node == states.MODULE_STEPS_REVIEW:
        plan = TaskList(tasks=state.sas_step1_generated_tasks)
        out.write("\nModule steps to review:\n\n")
        out.write(
            render_module_steps(state.sas_step2_module_steps, plan, state.module_step_failures)
        )
        out.write(
            f"\nNext: flowkit sas approve {result.thread_id}  |  flowkit sas feedback "
            f'{result.thread_id} "..." [--task NAME]  |  flowkit sas edit '
            f"{result.thread_id} FILE\n"
        )
    elif result.status == "done":
        out.write(f"\nRobot program: {state.final_flow_xml_path}\n")
    if result.status == "failed":
        message = state.error_message or (result.error.message if result.error else "")
        out.write(f"\nerror: {message}\n")
        if result.node != states.ERROR:
            out.write(f"Fix the cause, then: flowkit sas retry {result.thread_id}\n")
        return 1
    return 0


def _cmd_start(args: argparse.Namespace, out: TextIO) -> int:
    runner = _runner(args)
    thread = args.thread or f"sas-{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(2)}"
    config = {
        "output_dir": args.output_dir,
        "teaching_file": args.teaching,
        "catalog_file": args.catalog,
    }
    result = runner.start(thread, {"user_input": args.text, "config": config})
    return print_result(result, out)


def _resume(args: argparse.Namespace, out: TextIO, value: Any) -> int:
    return print_result(_runner(args).resume(args.thread, value), out)


def _cmd_approve(args: argparse.Namespace, out: TextIO) -> int:
    return _resume(args, out, {"action": "approve"})


def _cmd_feedback(args: argparse.Namespace, out: TextIO) -> int:
    return _resume(args, out, {"action": "feedback", "message": args.text, "task": args.task})


def _cmd_edit(args: argparse.Namespace, out: TextIO) -> int:
    text = Path(args.file).read_text(encoding="utf-8")
    return _resume(args, out, {"action": "edit", "edited": text})


def _cmd_retry(args: argparse.Namespace, out: TextIO) -> int:
    return _resume(args, out, None)


def _cmd_status(args: argparse.Namespace, out: TextIO) -> int:
    result = _runner(args, needs_llm=False).get_state(args.thread)
    code = print_result(result, out)
    return 0 if result.status != "failed" else code


def _cmd_compile(args: argparse.Namespace, out: TextIO) -> int:
    from .offline import compile_file

    return compile_file(args.steps, args.output, args.teaching, out)


def _cmd_validate(args: argparse.Namespace, out: TextIO) -> int:
    from .offline import validate_file

    return validate_file(args.xml, out)


def _cmd_decompile(args: argparse.Namespace, out: TextIO) -> int:
    from .offline import decompile_file

    return decompile_file(args.xml, args.output, out)
