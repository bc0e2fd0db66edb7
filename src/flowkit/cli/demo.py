"""``flowkit demo``: run an example workflow end to end on a JSON-file store, narrating it.

The review demo drafts a document, pauses at the review gate, gets feedback, redrafts,
gets approval and publishes; then a fresh runner reloads the thread from disk to show
that the store, not the process, holds the run. The sas demo lives in ``flowkit.sas.demo``,
the roundtable demo in ``flowkit.roundtable.demo``,
the quality demo in ``flowkit.quality.demo``, the dialogue demo in ``flowkit.dialogue.demo``.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any, TextIO

from ..terminal.errors import CommandError
from ..terminal.output import command_hint
from ..terminal.store import folder_argument

if TYPE_CHECKING:
    from ..records._events import Event
    from ..stores.jsonfile import JsonFileStore

__all__ = ["register", "run_demo"]

_DEMOS = {
    "sas": "robot task -> reviewed plan -> Blockly robot program, offline (recorded LLM answers)",
    "review": "draft -> review gate -> feedback -> redraft -> approve -> publish",
    "roundtable": "three LLM characters talk with you, each on its own (scripted) model",
    "quality": "manuscript check -> fix -> re-check with issue lifecycle, offline (recorded LLM)",
    "dialogue": "the robot_cell assistant: slot filling, a confirmation, a step-by-step "
    "procedure, offline",
}


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    choices = "; ".join(f"{name}: {what}" for name, what in _DEMOS.items())
    demo = commands.add_parser(
        "demo", parents=[common], help="run an example workflow end to end on a JSON-file store"
    )
    demo.add_argument(
        "name", nargs="?", default="sas", choices=list(_DEMOS), metavar="NAME",
        help=f"which demo (default: sas). {choices}",
    )  # fmt: skip
    demo.add_argument(
        "--store", metavar="DIR", type=folder_argument,
        help="the store folder the demo's thread is kept in (default: a new temporary folder)",
    )  # fmt: skip
    demo.add_argument(
        "--output-dir", metavar="DIR",
        help="sas: where flow.xml is written (default: a new temporary folder)",
    )  # fmt: skip
    demo.add_argument(
        "--lang", choices=["en", "ja"],
        help="roundtable, dialogue: the language (default: en)",
    )  # fmt: skip
    demo.set_defaults(run=_cmd_demo)


#: Options only some demos use: option -> (its dest, the demos that use it).
_ONLY_FOR = {
    "--output-dir": ("output_dir", ("sas",)),
    "--lang": ("lang", ("roundtable", "dialogue")),
}


def _cmd_demo(args: argparse.Namespace, out: TextIO) -> int:
    for option, (dest, demos) in _ONLY_FOR.items():
        if getattr(args, dest) is not None and args.name not in demos:
            names = " and ".join(f"`flowkit demo {demo}`" for demo in demos)
            raise CommandError(
                f"{option} is for {names} only; the {args.name} demo has no such choice, so "
                "leave it out.",
                code=2,
            )
    if args.name == "sas":
        from ..sas.demo import run_sas_demo

        return run_sas_demo(args.store, args.output_dir, out)
    if args.name == "roundtable":
        from ..roundtable.demo import run_roundtable_demo

        return run_roundtable_demo(args.store, out, language=args.lang or "en")
    if args.name == "quality":
        from ..quality.demo import run_quality_demo

        return run_quality_demo(args.store, out)
    if args.name == "dialogue":
        from ..dialogue.demo import run_dialogue_demo

        return run_dialogue_demo(args.store, out, language=args.lang or "en")
    return run_demo(args.name, args.store, out)


def _narrate(out: TextIO) -> Any:
    from ..records._events import Completed, Failed, NodeFinished, Waiting

    def on_event(event: Event) -> None:
        if isinstance(event, NodeFinished):
            out.write(f"  ran node `{event.node}` ({event.latency_s * 1000:.2f} ms)\n")
        elif isinstance(event, Waiting):
            out.write(f"  waiting at gate `{event.gate}` (checkpoint {event.version})\n")
        elif isinstance(event, Completed):
            out.write(f"  completed (checkpoint {event.version})\n")
        elif isinstance(event, Failed):
            out.write(f"  failed at `{event.node}`: {event.error.message}\n")

    return on_event


def _free_thread_id(store: JsonFileStore, prefix: str) -> str:
    taken = set(store.threads())
    number = 1
    while f"{prefix}-{number}" in taken:
        number += 1
    return f"{prefix}-{number}"


def run_demo(name: str, store_dir: str | None, out: TextIO) -> int:
    """Run demo ``name``; the thread stays in the store so ``flowkit show`` can inspect it."""
    import json
    import tempfile
    from pathlib import Path

    from ..examples.review import Doc, ReviewInput, flow
    from ..runner._result import RunResult
    from ..runner._runner import Runner
    from ..stores.jsonfile import JsonFileStore

    root = Path(store_dir) if store_dir else Path(tempfile.mkdtemp(prefix="flowkit-demo-"))
    store = JsonFileStore(root)
    runner: Runner[Doc] = Runner(flow, store=store)
    runner.subscribe(_narrate(out))
    thread_id = _free_thread_id(store, name)
    out.write(f"flowkit demo `{name}`: {flow.description}\n")
    out.write(f"store: {root} (JsonFileStore), thread: {thread_id}\n\n")

    out.write("start: topic 'Release notes'\n")
    result = runner.start(thread_id, Doc(topic="Release notes"))
    out.write(f"  draft: {result.state.text!r}\n")

    feedback = ReviewInput(approved=False, feedback="mention the JSON-file store")
    out.write(f"\nreviewer: not yet, {feedback.feedback!r}\n")
    result = runner.resume(thread_id, feedback, gate="review")
    out.write(f"  draft: {result.state.text!r}\n")

    out.write("\nreviewer: approved\n")
    result = runner.resume(thread_id, ReviewInput(approved=True), gate="review")

    # A new runner on a new store object: everything it knows comes from the files.
    reloaded: RunResult[Doc] = Runner(flow, store=JsonFileStore(root)).get_state(thread_id)
    same = reloaded.state == result.state and reloaded.version == result.version
    out.write(f"\nstatus: {result.status}, checkpoints: {result.version + 1}\n")
    out.write(f"reloaded from disk by a new runner: {'same state' if same else 'DIFFERENT'}\n")
    out.write("final state:\n")
    out.write(json.dumps(result.state.model_dump(mode="json"), indent=2) + "\n")
    where = str(root)
    out.write(
        f"\nlook around:\n  {command_hint('threads', store=where)}\n"
        f"  {command_hint('history', thread_id, store=where)}\n"
        f"  {command_hint('show', thread_id, store=where)}\n"
    )
    return 0 if result.status == "done" and same else 1
