"""``flowkit sas ...``: drive the robot-flow workflow from a shell, and its offline tools.

``start`` / ``approve`` / ``feedback`` / ``edit`` / ``retry`` / ``status`` work on threads in
a JSON-file store (the shared ``--store``: ``$FLOWKIT_STORE``, else ``./.flowkit``);
``compile`` / ``validate`` / ``decompile`` need no LLM and no store. After each step the
command prints what the reviewer must look at next, as commands runnable as printed. Results
go to stdout; errors, warnings and progress to stderr. See docs/sas-cli.md.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shlex
import sys
import time
from pathlib import Path
from typing import Any, TextIO

from ..errors import ConflictError
from ..foundation._plain import shorten
from ..terminal.errors import CommandError
from ..terminal.inputs import DEMO_LLM, read_limited
from ..terminal.store import (
    add_store_option,
    open_for_reading,
    open_for_writing,
    shown,
    store_location,
    store_words,
)
from ._cli_output import print_result, show_progress, status_json

__all__ = ["DEMO_LLM", "add_commands", "print_result"]

#: Largest file ``sas edit`` reads (the review gate accepts up to 1 MB of edited text).
_MAX_EDIT_BYTES = 1_000_000
#: Longest feedback the review gate accepts.
_MAX_FEEDBACK = 20_000
_CATALOG_HELP = "your own block catalog (JSON), merged with the shipped one, as a run's --catalog"


def add_commands(commands: Any, common: argparse.ArgumentParser) -> None:
    """Register ``sas`` and its sub-commands on the main parser's sub-parsers."""
    sas = commands.add_parser(
        "sas", parents=[common], help="robot task in natural language -> Blockly robot program"
    )
    sub = sas.add_subparsers(title="sas commands", metavar="COMMAND", required=True)

    def thread_command(name: str, help_text: str, *, runs: bool = True) -> argparse.ArgumentParser:
        parser: argparse.ArgumentParser = sub.add_parser(name, parents=[common], help=help_text)
        parser.add_argument("thread", metavar="THREAD", help="the thread id `start` printed")
        add_store_option(parser)
        _llm_option(parser)
        if runs:
            _progress_option(parser)
        return parser

    start = sub.add_parser("start", parents=[common], help="start a thread from a robot task")
    start.add_argument("text", metavar="TEXT", help="the robot task, in any language")
    add_store_option(start)
    _llm_option(start)
    _progress_option(start)
    start.add_argument(
        "--output-dir",
        metavar="DIR",
        help="where flow.xml is written (default: a new run_* folder under $FLOWKIT_OUTPUT_DIR, "
        "else ~/.local/share/flowkit/sas-runs)",
    )
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
    status = thread_command("status", "show where a thread stands (read-only)", runs=False)
    status.add_argument("--json", action="store_true", help="print JSON")
    status.set_defaults(run=_cmd_status)
    thread_command("retry", "run the step that failed again").set_defaults(run=_cmd_retry)

    files = sub.add_parser(
        "demo-files",
        parents=[common],
        help="copy the demo's cassette, teaching table, request and feedback into DIR",
    )
    files.add_argument("dir", metavar="DIR", help="folder to write them into (created)")
    files.set_defaults(run=_cmd_demo_files)

    _add_offline_commands(sub, common)


def _add_offline_commands(sub: Any, common: argparse.ArgumentParser) -> None:
    """``compile``, ``validate`` and ``decompile``: the robot-program tools, offline."""
    compile_ = sub.add_parser(
        "compile",
        parents=[common],
        help="module steps -> flow.xml (offline)",
        description="Compile module steps into a Blockly flow.xml, offline. With --teaching, "
        "the updated teaching table and the mapping report (teaching.yaml, "
        "parameter_mapping.md and parameter_mapping.json) are written beside -o, in its "
        "folder; the input teaching file is never modified.",
    )
    compile_.add_argument("steps", metavar="STEPS", help="steps as text (.txt/.md) or JSON")
    compile_.add_argument("-o", "--output", metavar="FILE", required=True, help="flow.xml to write")
    compile_.add_argument(
        "--teaching",
        metavar="FILE",
        help="teaching table to map point names onto; the updated table and the mapping "
        "report are written beside -o",
    )
    compile_.add_argument(
        "--fragment",
        action="store_true",
        help="a part of a program (procedure file, loop fragment, relation file): what it "
        "lacks is a warning, not an error",
    )
    compile_.add_argument("--catalog", metavar="FILE", help=_CATALOG_HELP)
    compile_.set_defaults(run=_cmd_compile)
    validate = sub.add_parser("validate", parents=[common], help="check a robot program")
    validate.add_argument("xml", metavar="FLOW.xml")
    validate.add_argument("--json", action="store_true", help="print JSON")
    validate.add_argument(
        "--fragment",
        action="store_true",
        help="a part of a program (procedure file, loop fragment, relation file): what it "
        "lacks is a warning, not an error",
    )
    validate.add_argument("--catalog", metavar="FILE", help=_CATALOG_HELP)
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


def _llm_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--llm",
        metavar="SPEC",
        help="openai:MODEL, ollama:MODEL, replay:PATH, scripted:PATH, or replay:demo for the "
        "shipped demo cassette (default: the thread's own, else $FLOWKIT_LLM)",
    )


def _progress_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="one line per finished step on stderr (default: only when stderr is a terminal)",
    )


# -- helpers ---------------------------------------------------------------------------------


def _error(message: str, code: int = 1) -> Exception:
    return CommandError(message, code=code)


def resolve_llm_spec(spec: str) -> str:
    """``replay:demo`` -> the shipped cassette; relative cassette/rules paths made absolute.

    The resolved spec is kept with the thread, so later commands (from any folder) find it.
    """
    from ..terminal.demo_llm import resolve_spec

    return resolve_spec(spec, "sas")


def _llm_for(args: argparse.Namespace, recorded: str | None) -> tuple[Any, str | None]:
    """The LLM a command runs with: ``--llm``, else the thread's, else ``$FLOWKIT_LLM``."""
    spec = args.llm or recorded
    if spec is None:
        return llm_for_spec(None), os.environ.get("FLOWKIT_LLM") or None
    return llm_for_spec(resolve_llm_spec(spec)), spec


def llm_for_spec(resolved: str | None) -> Any:
    """The LLM of a resolved spec (``None``: ``$FLOWKIT_LLM``); the shipped cassette gives the
    demo's own advice on a miss."""
    from ..terminal.demo_llm import llm_for

    return llm_for(resolved, ["sas"])


def _again(args: argparse.Namespace, recorded: str | None) -> str:
    """The options a printed hint needs to run as printed (``--store`` / ``--llm``)."""
    words = store_words(args)
    llm = getattr(args, "llm", None)
    if llm and llm != recorded and resolve_llm_spec(llm) != recorded:
        words += ["--llm", llm]
    return (" " + shlex.join(words)) if words else ""


def _existing_thread(args: argparse.Namespace) -> Any:
    """The store holding ``args.thread``, opened without creating anything; else an error."""
    store = open_for_reading(store_location(args))
    if store is None or args.thread not in store.threads():
        location = shown(store_location(args))
        where = f" {shlex.join(store_words(args))}" if store_words(args) else ""
        raise _error(
            f"No thread `{shorten(args.thread)}` in store `{location}`. "
            f"`flowkit threads --store {shlex.quote(location)}` lists the threads there; "
            f'`flowkit sas start "..."{where}` starts one.'
        )
    return store


def _runner(store: Any, llm: Any) -> Any:
    from ..runner._runner import Runner
    from .workflow import flow

    # Steps here are slow (LLM calls), so marking each attempt costs nothing noticeable and
    # lets `flowkit recover` tell a killed step from one still running.
    return Runner(flow, store=store, llm=llm, track_attempts=True)


# -- commands --------------------------------------------------------------------------------


def _cmd_start(args: argparse.Namespace, out: TextIO) -> int:
    from ..nodes.sas.output_dir import holds_teaching_table
    from ..nodes.sas.task_list import MAX_REQUEST

    text = args.text.strip()
    if not text:
        raise _error("The robot task is empty; describe what the robot should do.", code=2)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:  # undecodable bytes of the command line, escaped
        raise _error(
            f"The robot task is not UTF-8 text (character {exc.start + 1}); write it in your "
            "terminal's UTF-8, or pass it from a UTF-8 file.",
            code=2,
        ) from exc
    if len(text) > MAX_REQUEST:
        raise _error(
            f"The robot task is {len(text):,} characters long (limit {MAX_REQUEST:,}); shorten "
            "it to the steps the robot should perform.",
            code=2,
        )
    output_dir = _output_dir(args.output_dir)
    for option, given in (("--teaching", args.teaching), ("--catalog", args.catalog)):
        if given is not None and not Path(given).is_file():
            raise _error(f"{option} {shorten(given)}: no such file.", code=2)
    if output_dir is not None and holds_teaching_table(output_dir, args.teaching):
        raise _error(
            f"--output-dir {shorten(args.output_dir)} holds the --teaching table, which the run "
            "would write its updated table over; input tables are never modified in place, so "
            "name another folder for the program.",
            code=2,
        )
    spec = args.llm or os.environ.get("FLOWKIT_LLM") or None
    resolved = resolve_llm_spec(spec) if spec else None
    llm = llm_for_spec(resolved)
    store = open_for_writing(store_location(args))
    thread = args.thread or f"sas-{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(2)}"
    if thread in store.threads():
        raise _error(
            f"Thread `{shorten(thread)}` already exists; continue it (`flowkit sas status "
            f"{shlex.quote(thread)}{_again(args, None)}`) or choose another --thread."
        )
    config = {
        "output_dir": output_dir,
        "teaching_file": str(Path(args.teaching).absolute()) if args.teaching else None,
        "catalog_file": str(Path(args.catalog).absolute()) if args.catalog else None,
        "llm": spec if spec == DEMO_LLM else resolved,
    }
    runner = _runner(store, llm)
    show_progress(args.progress, runner, None, sys.stderr)
    result = runner.start(thread, {"user_input": text, "config": config})
    return print_result(
        result, out, again=_again(args, config["llm"]), store=shown(store_location(args))
    )


def _output_dir(given: str | None) -> str | None:
    """The ``--output-dir`` as an absolute folder that exists; a bad one is an error now."""
    if given is None:
        return None
    path = Path(given).expanduser()
    named = shorten(given)
    if path.exists() and not path.is_dir():
        raise _error(f"--output-dir {named}: exists and is not a folder; name a folder.", code=2)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise _error(
            f"--output-dir {named}: cannot be created ({exc.strerror or exc}); name a folder "
            "you may write.",
            code=2,
        ) from exc
    if not os.access(path, os.W_OK):
        raise _error(f"--output-dir {named}: you may not write there; name another folder.")
    return str(path.absolute())


def _resume(args: argparse.Namespace, out: TextIO, value: Any, *, retry: bool = False) -> int:
    store = _existing_thread(args)
    current = _runner(store, None).get_state(args.thread)
    recorded = current.state.config.llm
    llm, _ = _llm_for(args, recorded)
    runner = _runner(store, llm)
    again = _again(args, recorded)
    if retry:
        value = _retry_value(current, again)
    elif current.status == "pending":  # a step runs now, or a killed command left it half-way
        thread = shlex.quote(args.thread)
        raise _error(
            f"Thread `{shorten(args.thread)}` is in step {current.node}, not at a review: "
            "another command is running it, or one was stopped half-way; nothing was sent.\n"
            f"Wait for it: flowkit sas status {thread}{again}\n"
            f"If no command runs it any more, finish the step: flowkit sas retry {thread}{again}"
        )
    show_progress(args.progress, runner, current.state, sys.stderr)
    try:
        # Only the review this command looked at: a reviewer racing another one must never
        # approve the next review, which nobody has seen yet.
        result = runner.resume(args.thread, value, expected_version=current.version)
    except ConflictError as exc:
        raise _error(
            f"Thread `{shorten(args.thread)}` was moved by another command while this one ran "
            f"(at {current.node}); nothing was sent.\n"
            f"See where it stands now, then decide again: flowkit sas status "
            f"{shlex.quote(args.thread)}{again}"
        ) from exc
    return print_result(result, out, again=again, store=shown(store_location(args)))


def _retry_value(current: Any, again: str) -> Any:
    if current.status in ("failed", "pending"):
        return None  # the engine runs the step it stopped at again
    if current.status == "waiting" and current.state.is_error:
        return {"action": "retry"}
    thread = shlex.quote(current.thread_id)
    raise _error(
        f"Thread {current.thread_id} is {current.status} at {current.node} and no step failed; "
        f"nothing to retry. See `flowkit sas status {thread}{again}`."
    )


def _cmd_approve(args: argparse.Namespace, out: TextIO) -> int:
    return _resume(args, out, {"action": "approve"})


def _cmd_feedback(args: argparse.Namespace, out: TextIO) -> int:
    text = args.text.strip()
    if not text:
        raise _error("The feedback is empty; say what to change.", code=2)
    if len(text) > _MAX_FEEDBACK:
        raise _error(
            f"The feedback is {len(text):,} characters long (limit {_MAX_FEEDBACK:,}); shorten it.",
            code=2,
        )
    return _resume(args, out, {"action": "feedback", "message": text, "task": args.task})


def _cmd_edit(args: argparse.Namespace, out: TextIO) -> int:
    from ..errors import InputTooLargeError

    name = shorten(args.file)
    try:
        text = read_limited(args.file, what="edit", max_bytes=_MAX_EDIT_BYTES).decode("utf-8")
    except InputTooLargeError as exc:
        raise _error(
            f"{name} is larger than an edit may be (at most {_MAX_EDIT_BYTES:,} bytes); it was "
            "not read to its end.",
            code=2,
        ) from exc
    except UnicodeDecodeError as exc:
        raise _error(f"{name} is not UTF-8 text (byte {exc.start}); save it as UTF-8.", 2) from exc
    except OSError as exc:
        raise _error(f"Cannot read {name}: {exc.strerror or exc}.", code=2) from exc
    if "\x00" in text:
        raise _error(f"{name} holds NUL bytes; it is not a text file.", code=2)
    if not text.strip():
        raise _error(f"{name} is empty; submit the edited task list or module steps.", 2)
    return _resume(args, out, {"action": "edit", "edited": text})


def _cmd_retry(args: argparse.Namespace, out: TextIO) -> int:
    return _resume(args, out, None, retry=True)


def _cmd_status(args: argparse.Namespace, out: TextIO) -> int:
    store = _existing_thread(args)
    result = _runner(store, None).get_state(args.thread)
    if args.json:
        out.write(json.dumps(status_json(result), indent=2, ensure_ascii=False) + "\n")
        return 1 if result.status == "failed" else 0
    print_result(
        result, out, again=_again(args, result.state.config.llm), store=shown(store_location(args))
    )
    return 1 if result.status == "failed" else 0


def _cmd_demo_files(args: argparse.Namespace, out: TextIO) -> int:
    from ..foundation._atomic import write_atomically
    from ..llm import load_cassette, save_cassette
    from .demo_cell import FEEDBACK, REQUEST, demo_file

    folder = Path(args.dir)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        # The copy is the user's: without the shipped one's record command, which would
        # record the package's file, a miss on it says how to record a cassette of one's own.
        save_cassette(folder / "cassette.json", load_cassette(demo_file("cassette.json")))
        write_atomically(folder / "teaching.yaml", demo_file("teaching.yaml").read_bytes())
        written = [folder / "cassette.json", folder / "teaching.yaml"]
        for name, text in (("request.txt", REQUEST), ("feedback.txt", FEEDBACK)):
            write_atomically(folder / name, text + "\n")
            written.append(folder / name)
    except OSError as exc:
        raise _error(f"Cannot write into {shorten(args.dir)}: {exc.strerror or exc}.") from exc
    out.writelines(f"wrote {path}\n" for path in written)
    d = shlex.quote(str(folder))
    out.write(
        f'\nNext: flowkit sas start "$(cat {d}/request.txt)" --llm replay:{d}/cassette.json '
        f"--teaching {d}/teaching.yaml --output-dir {d}/out\n"
    )
    return 0


def _cmd_compile(args: argparse.Namespace, out: TextIO) -> int:
    from .offline import compile_file

    return compile_file(
        args.steps, args.output, args.teaching, out, fragment=args.fragment, catalog=args.catalog
    )


def _cmd_validate(args: argparse.Namespace, out: TextIO) -> int:
    from .offline import validate_file

    return validate_file(
        args.xml, out, as_json=args.json, fragment=args.fragment, catalog=args.catalog
    )


def _cmd_decompile(args: argparse.Namespace, out: TextIO) -> int:
    from .offline import decompile_file

    return decompile_file(args.xml, args.output, out)
