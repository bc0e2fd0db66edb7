"""``flowkit chat`` and ``flowkit dialogue ...``: talk to a domain, test it, check it.

``chat`` is a REPL on a JSON-file store: it reads lines from the terminal or from piped stdin,
and ``--thread`` continues a conversation in a later process. ``dialogue test`` runs
conversation tests and exits 1 when one fails. Heavy imports happen inside the commands.
"""

from __future__ import annotations

import argparse
import secrets
import sys
import time
from typing import Any, TextIO

__all__ = ["add_commands"]

_DEFAULT_STORE = ".flowkit"
_DOMAIN_HELP = "a domain file (YAML or JSON) or the name of a shipped example (robot_cell)"


def add_commands(commands: Any, common: argparse.ArgumentParser) -> None:
    """Register ``chat`` and ``dialogue`` on the main parser's sub-parsers."""
    chat = commands.add_parser(
        "chat", parents=[common], help="talk to a dialogue domain (REPL; stdin may be piped)"
    )
    chat.add_argument("domain", metavar="DOMAIN", help=_DOMAIN_HELP)
    chat.add_argument(
        "--llm",
        metavar="SPEC",
        help="openai:MODEL, ollama:MODEL, replay:PATH or scripted:PATH (default: offline)",
    )
    chat.add_argument(
        "--store",
        metavar="DIR",
        default=_DEFAULT_STORE,
        help=f"JSON-file store folder (default: {_DEFAULT_STORE})",
    )
    chat.add_argument("--thread", metavar="ID", help="continue (or name) this conversation")
    chat.set_defaults(run=_cmd_chat)

    dialogue = commands.add_parser(
        "dialogue", parents=[common], help="test and check dialogue domains"
    )
    sub = dialogue.add_subparsers(title="dialogue commands", metavar="COMMAND", required=True)
    test = sub.add_parser(
        "test", parents=[common], help="run conversation tests; exit 1 if any fails"
    )
    test.add_argument("domain", metavar="DOMAIN", help=_DOMAIN_HELP)
    test.add_argument(
        "conversations",
        metavar="CONVERSATIONS",
        help="a conversation test file, or a shipped example's name (robot_cell)",
    )
    test.add_argument("--llm", metavar="SPEC", help="understand with this LLM (default: offline)")
    test.set_defaults(run=_cmd_test)
    check = sub.add_parser("check", parents=[common], help="validate a domain; list problems")
    check.add_argument("domain", metavar="DOMAIN", help=_DOMAIN_HELP)
    check.set_defaults(run=_cmd_check)
    schema = sub.add_parser("schema", parents=[common], help="print the domain JSON schema")
    schema.set_defaults(run=_cmd_schema)


def _llm(spec: str | None) -> Any:
    if not spec:
        return None
    from ..llm import from_spec

    return from_spec(spec)


def _cmd_chat(args: argparse.Namespace, out: TextIO) -> int:
    from ..errors import InvalidResumeInputError
    from ..stores.jsonfile import JsonFileStore
    from .app import Dialogue

    bot = Dialogue(args.domain, store=JsonFileStore(args.store), llm=_llm(args.llm))
    thread = args.thread or f"chat-{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(2)}"
    state = bot.open(thread)
    if state.status == "done":
        print(f"flowkit: conversation `{thread}` has ended; start a new one", file=sys.stderr)
        return 1
    resumed = state.state.turn_id > 0
    print(
        f"{'continuing' if resumed else 'new'} conversation {thread} with {bot.domain.name} "
        f"(continue later with --thread {thread}; /quit to leave, /state to inspect)",
        file=sys.stderr,
    )
    if resumed and state.state.last_ai_message:
        out.write(f"bot> {state.state.last_ai_message}\n")
    interactive = sys.stdin.isatty()
    while True:
        if interactive:
            out.write("you> ")
            out.flush()
        line = sys.stdin.readline()
        if not line:
            break
        text = line.strip()
        if not text:
            continue
        if text in ("/quit", "/exit"):
            break
        if text == "/state":
            out.write(_describe(bot, thread))
            continue
        try:
            reply = bot.send(thread, text)
        except InvalidResumeInputError as exc:
            print(f"flowkit: {exc.errors[0]['msg'] if exc.errors else exc}", file=sys.stderr)
            continue
        out.write(f"bot> {reply.text}\n")
        out.flush()
        if reply.done:
            break
    return 0


def _describe(bot: Any, thread: str) -> str:
    state = bot.state(thread)
    from .privacy import mask_slots

    slots = mask_slots(state.slots, bot.domain.pii_slots())
    goal = state.goal_state
    return (
        f"  turn {state.turn_id}, intent {state.intent_type}, mode {state.dialogue_mode}\n"
        f"  goal {goal.goal} ({goal.status}), step {goal.current_step}\n"
        f"  slots {slots}, missing {state.missing_slots}\n"
    )


def _cmd_test(args: argparse.Namespace, out: TextIO) -> int:
    from .conversations import format_results, run_conversations

    results = run_conversations(args.domain, args.conversations, llm=_llm(args.llm))
    out.write(format_results(results))
    return 0 if all(r.passed for r in results) else 1


def _cmd_check(args: argparse.Namespace, out: TextIO) -> int:
    from .domain import load_domain
    from .workflow import build_flow

    domain = load_domain(args.domain)
    build_flow(domain)
    out.write(
        f"OK {domain.name}: {len(domain.languages)} languages, {len(domain.intents)} intents, "
        f"{len(domain.faq)} FAQ entries, {len(domain.slots)} slots, {len(domain.goals)} goals\n"
    )
    return 0


def _cmd_schema(args: argparse.Namespace, out: TextIO) -> int:
    import json

    from .domain import domain_json_schema

    out.write(json.dumps(domain_json_schema(), indent=2, ensure_ascii=False) + "\n")
    return 0
