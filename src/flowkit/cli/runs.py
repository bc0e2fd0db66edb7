"""``flowkit start``, ``resume``, ``fork``, ``update-state`` and ``delete``: run your own flows.

The shell equivalents of ``Runner.start`` / ``resume`` / ``fork`` / ``update_state`` and
``Store.delete``. A stored thread names its flow; a registered workflow resolves by that name,
any other flow needs ``--flow TARGET``. ``--input`` / ``--patch`` take JSON text or ``@file``.
After each command the next one is printed as it can be pasted.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any, TextIO

from ..terminal.errors import CommandError
from ..terminal.inputs import TARGET_HELP, add_llm_option, load_target, read_json
from ..terminal.output import command_hint, write_json
from ..terminal.store import add_store_option, open_for_reading, open_for_writing, store_location
from ._pauses import answer_model, pauses_json, write_pauses

if TYPE_CHECKING:
    from pydantic import BaseModel

    from ..definition._flow import Flow
    from ..runner._result import RunResult
    from ..runner._runner import Runner
    from ..stores import Store

__all__ = ["register"]

_JSON_HELP = "JSON text, or @FILE to read it from a file"
_FLOW_HELP = "the thread's flow TARGET (needed when it is not a registered workflow)"


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    start = commands.add_parser("start", parents=[common], help="start a thread of a flow")
    start.add_argument("target", metavar="TARGET", help=TARGET_HELP)
    start.add_argument("thread", metavar="THREAD", help="the new thread's id")
    start.add_argument("--input", metavar="JSON", help=f"the initial state; {_JSON_HELP}")
    _common_options(start, flow=False)
    add_llm_option(start, used_by="the flow's nodes call")
    start.set_defaults(run=_cmd_start)

    resume = commands.add_parser(
        "resume", parents=[common], help="continue a thread: answer its gate, or retry"
    )
    resume.add_argument("thread", metavar="THREAD", help="the thread id")
    resume.add_argument(
        "--input", metavar="JSON",
        help=f"the answer to the pause it waits at, or {{ID: answer, ...}} to answer several "
        f"open pauses at once; {_JSON_HELP} (omit to retry a failed step)",
    )  # fmt: skip
    resume.add_argument(
        "--gate", metavar="ID",
        help="the open pause to answer: a gate, a node that asked, a Map call such as "
        "check[3], review/approve inside a subflow (`flowkit show` lists them)",
    )  # fmt: skip
    resume.add_argument(
        "--actor", metavar="NAME",
        help="who answers: kept with the answer in the thread's history (default: not said)",
    )  # fmt: skip
    _common_options(resume)
    add_llm_option(resume, used_by="the flow's nodes call")
    resume.set_defaults(run=_cmd_resume)

    fork = commands.add_parser(
        "fork", parents=[common], help="start a new thread from a checkpoint of another"
    )
    fork.add_argument("thread", metavar="THREAD", help="the thread to fork")
    fork.add_argument(
        "--at", metavar="VERSION", type=int, help="checkpoint version (default: latest)"
    )
    fork.add_argument(
        "--as", dest="new", metavar="NEW", help="the new thread id (default: THREAD-fork-N)"
    )
    _common_options(fork)
    fork.set_defaults(run=_cmd_fork)

    update = commands.add_parser(
        "update-state", parents=[common], help="patch a thread's state (an audited checkpoint)"
    )
    update.add_argument("thread", metavar="THREAD", help="the thread id")
    update.add_argument(
        "--patch", metavar="JSON", required=True, help=f"fields to change; {_JSON_HELP}"
    )
    update.add_argument("--goto", metavar="STATE", help="also move the thread to this state")
    update.add_argument(
        "--as-node",
        metavar="NODE",
        help="apply the patch as NODE's update and move where NODE's route sends the new state",
    )
    update.add_argument(
        "--child",
        metavar="PATH",
        help="patch the state of the subflow running at PATH (e.g. review) instead",
    )
    update.add_argument("--reason", metavar="TEXT", default="", help="why (kept in history)")
    _common_options(update)
    update.set_defaults(run=_cmd_update_state)
    # `delete` (and `prune`) live in `lifecycle`.


def _common_options(parser: argparse.ArgumentParser, *, flow: bool = True) -> None:
    add_store_option(parser)
    if flow:
        parser.add_argument("--flow", metavar="TARGET", help=_FLOW_HELP)
    parser.add_argument("--json", action="store_true", help="print the result as JSON")


# -- commands ------------------------------------------------------------------------------------


def _existing(args: argparse.Namespace) -> Store:
    """The store holding ``args.thread``; never creates one for a mistyped path."""
    from ..errors import ThreadNotFoundError
    from ..stores._ids import check_thread_id

    store = open_for_reading(store_location(args))
    if store is None:
        raise ThreadNotFoundError(check_thread_id(args.thread))
    return store


def _runner(args: argparse.Namespace, store: Store, thread: str) -> Runner[Any]:
    from ..runner._runner import Runner
    from ..terminal.demo_llm import chosen_llm
    from ._resolve import flow_of_thread

    flow = flow_of_thread(store, thread, args.flow)
    llm = chosen_llm(args, [flow]) if hasattr(args, "llm") else None  # fork, update-state: no node
    return Runner(flow, store=store, llm=llm)


def _cmd_start(args: argparse.Namespace, out: TextIO) -> int:
    from ..runner._runner import Runner
    from ..stores._ids import check_thread_id
    from ..terminal.demo_llm import chosen_llm

    flow = load_target(args.target)
    value = read_json(args.input, "--input") if args.input is not None else None
    check_thread_id(args.thread)  # before the store folder is created
    store = open_for_writing(store_location(args))
    runner: Runner[Any] = Runner(flow, store=store, llm=chosen_llm(args, [flow]))
    return _report(runner.start(args.thread, value), flow, args, out)


def _cmd_resume(args: argparse.Namespace, out: TextIO) -> int:
    value = read_json(args.input, "--input") if args.input is not None else None
    runner = _runner(args, _existing(args), args.thread)
    result = runner.resume(args.thread, value, gate=args.gate, actor=args.actor)
    return _report(result, runner.flow, args, out)


def _cmd_fork(args: argparse.Namespace, out: TextIO) -> int:
    from ..stores._ids import check_thread_id

    store = _existing(args)
    runner = _runner(args, store, args.thread)
    new = check_thread_id(args.new) if args.new else _free_id(store, f"{args.thread}-fork")
    result = runner.fork(args.thread, new, at=args.at)
    return _report(result, runner.flow, args, out, note=f"forked from {args.thread}")


def _cmd_update_state(args: argparse.Namespace, out: TextIO) -> int:
    patch = read_json(args.patch, "--patch")
    if not isinstance(patch, dict):
        raise CommandError("--patch must be a JSON object of fields to change.", code=2)
    runner = _runner(args, _existing(args), args.thread)
    result = runner.update_state(
        args.thread,
        patch,
        goto=args.goto,
        reason=args.reason,
        actor="cli",
        child=args.child,
        as_node=args.as_node,
    )
    # The command did what it was asked: a thread that stays failed is no failure of it.
    return _report(result, runner.flow, args, out, patched=True)


def _free_id(store: Store, prefix: str) -> str:
    from ..stores._ids import MAX_THREAD_ID

    taken = set(store.threads())
    number = 1
    while f"{prefix[: MAX_THREAD_ID - 8]}-{number}" in taken:
        number += 1
    return f"{prefix[: MAX_THREAD_ID - 8]}-{number}"


# -- what happened, and what to run next ---------------------------------------------------------


def _report(
    result: RunResult[Any],
    flow: Flow,
    args: argparse.Namespace,
    out: TextIO,
    note: str = "",
    *,
    patched: bool = False,
) -> int:
    """Print where the thread stands, its state and the next command; the exit code: 1 when
    the run failed (``patched``: the patch is written, so 0 whatever the thread's status)."""
    code = 1 if result.status == "failed" and not patched else 0
    state = state_raw = flow.schema.dump_state(result.state)
    if flow.name == "dialogue":
        from ..dialogue.privacy import mask_dialogue_state

        state, _ = mask_dialogue_state(state)
    hint = _next_command(result, flow, args)
    pauses = [(pause.id, pause.payload) for pause in result.pauses]
    if flow.name == "dialogue":
        from ..dialogue.privacy import mask_like

        pauses = [(pause, mask_like(payload, state_raw)) for pause, payload in pauses]
    if args.json:
        write_json(
            {
                "thread_id": result.thread_id,
                "flow": flow.name,
                "status": result.status,
                "node": result.node,
                "version": result.version,
                "gates": list(result.gates),
                "pauses": pauses_json(pauses),
                "due": None if result.due is None else result.due.isoformat(),
                "state": state,
                "error": result.error.model_dump(mode="json") if result.error else None,
                "next": hint,
            },
            out,
        )
        return code
    import json

    where = {"waiting": "waiting at gate", "done": "done at", "failed": "failed at"}
    stands = f"{where.get(result.status, 'next:')} `{result.node}`"
    if result.waiting and not result.gates:  # a node asleep (ctx.sleep_until)
        wakes = "" if result.due is None else f" until {result.due.isoformat()}"
        stands = f"asleep at `{result.node}`{wakes}"
    elif result.waiting and list(result.gates) != [result.node]:
        # A Map's calls, a Parallel's gate branches, a gate inside a subflow: by pause id.
        stands = "waiting at " + ", ".join(f"`{pause}`" for pause in result.gates)
    if patched:
        still = "still " if result.status == "failed" else ""
        out.write(
            f"thread {result.thread_id}: patch written (version {result.version}); "
            f"{still}{stands}\n"
        )
    else:
        out.write(
            f"thread {result.thread_id}: {stands} (version {result.version})"
            f"{f'; {note}' if note else ''}\n"
        )
    if result.error is not None and not patched:
        from ..foundation._plain import shorten

        # Errors go to stderr on every command; stdout keeps the state and the next command.
        print(
            f"flowkit: error: {result.error.type}: {shorten(result.error.message, 300)}",
            file=sys.stderr,
        )
    write_pauses(pauses, out)
    out.write(json.dumps(state, indent=2, ensure_ascii=False, default=str) + "\n")
    out.write(f"\nNext: {hint}\n")
    return code


def _next_command(result: RunResult[Any], flow: Flow, args: argparse.Namespace) -> str:
    from ..workflows import registered

    store = store_location(args)
    target: str | None = None
    if flow.name not in registered():
        target = getattr(args, "flow", None) or getattr(args, "target", None)
    thread = result.thread_id
    llm: str | None = getattr(args, "llm", None)
    if result.status == "waiting" and result.gates:
        # The first open pause; with several open, named (a bare answer would be refused).
        pause = result.gates[0]
        model = answer_model(flow, pause)
        example = _example_input(model) if model is not None else "{}"
        gate = pause if len(result.gates) > 1 else None
        return command_hint(
            "resume", thread, gate=gate, input=example, flow=target, llm=llm, store=store
        )
    if result.status in ("failed", "pending"):
        return command_hint("resume", thread, flow=target, llm=llm, store=store)
    return command_hint("history", thread, store=store)


def _example_input(model: type[BaseModel]) -> str:
    """JSON the gate accepts: the first of the model's own ``examples`` that validates (a
    model whose validators need more than its required fields says what it takes there),
    else its required fields with placeholder values."""
    import json

    from pydantic import ValidationError

    extra = model.model_config.get("json_schema_extra")
    examples = extra.get("examples") if isinstance(extra, dict) else None
    for given in examples if isinstance(examples, list) else []:
        try:
            model.model_validate(given)
        except ValidationError:
            continue
        return json.dumps(given, ensure_ascii=False)
    placeholders: dict[Any, Any] = {bool: False, int: 0, float: 0.0, str: "", list: [], dict: {}}
    example = {
        name: placeholders.get(info.annotation, placeholders.get(_origin(info.annotation)))
        for name, info in model.model_fields.items()
        if info.is_required()
    }
    try:
        model.model_validate(example)
    except ValidationError:
        return json.dumps({name: "..." for name in example})
    return json.dumps(example)


def _origin(annotation: Any) -> Any:
    from typing import get_origin

    return get_origin(annotation)
