"""``flowkit chat`` and ``flowkit dialogue ...``: talk to a domain, test it, check it.

``chat`` is a REPL on a JSON-file store (the shared ``--store``): it reads lines from the
terminal or from piped stdin, and ``--thread`` continues a conversation in a later process.
``dialogue test`` runs conversation tests and exits 1 when one fails (``--json``, ``--junit
FILE``); ``dialogue check`` lists every problem of a domain file; ``dialogue eval`` measures the
recogniser on the domain's held-back examples (a report: exit 0 unless nothing can be loaded).
Errors go to stderr; heavy imports happen inside the commands.
"""

from __future__ import annotations

import argparse
import json
import secrets
import shlex
import sys
import time
from pathlib import Path
from typing import Any, TextIO

from ..terminal.errors import CommandError
from ..terminal.progress import progress_for
from ..terminal.store import add_store_option, open_for_writing, store_path, store_words
from ..terminal.typed import typed_lines

__all__ = ["add_commands"]

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
    add_store_option(chat, folder_only=True)  # the booking ledger is a folder beside it
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
    test.add_argument("--json", action="store_true", help="print JSON instead of a report")
    test.add_argument(
        "--junit", metavar="FILE", help="also write a JUnit XML report (for CI) to FILE"
    )
    test.set_defaults(run=_cmd_test)
    evaluate = sub.add_parser(
        "eval",
        parents=[common],
        help="measure intent accuracy and entity F1 on held-back examples (a report: exit 0)",
    )
    evaluate.add_argument("domain", metavar="DOMAIN", help=_DOMAIN_HELP)
    evaluate.add_argument(
        "examples",
        metavar="FILE",
        nargs="?",
        help="held-back examples (default: NAME.eval.yaml beside the domain, or the shipped one)",
    )
    evaluate.add_argument(
        "--llm", metavar="SPEC", help="understand with this LLM (default: offline)"
    )
    evaluate.add_argument("--json", action="store_true", help="print JSON instead of a report")
    evaluate.add_argument("--junit", metavar="FILE", help="also write a JUnit XML report to FILE")
    evaluate.set_defaults(run=_cmd_eval)
    check = sub.add_parser("check", parents=[common], help="validate a domain; list problems")
    check.add_argument("domain", metavar="DOMAIN", help=_DOMAIN_HELP)
    check.add_argument("--json", action="store_true", help="print JSON instead of a list")
    check.set_defaults(run=_cmd_check)
    schema = sub.add_parser("schema", parents=[common], help="print the domain JSON schema")
    schema.set_defaults(run=_cmd_schema)


def _llm(spec: str | None) -> Any:
    if not spec:
        return None
    from ..llm import from_spec

    return from_spec(spec)


def _chat_command(args: argparse.Namespace, thread: str | None) -> str:
    """The command line that opens this chat again, runnable as printed."""
    words = ["flowkit", "chat", args.domain, *store_words(args)]
    if args.llm:
        words += ["--llm", args.llm]
    if thread:
        words += ["--thread", thread]
    return shlex.join(words)


def _domain(source: str) -> Any:
    """The domain a command names; a name that is no file nor example is a usage error."""
    from ..errors import DomainError
    from .domain import load_domain, resolve_path

    try:
        path = resolve_path(source)
    except DomainError as exc:
        raise CommandError("; ".join(exc.problems), code=2) from exc
    try:
        return load_domain(path)
    except DomainError as exc:  # a TARGET that cannot be loaded: 2, not a failed check's 1
        raise CommandError(str(exc), code=2) from exc


def _cmd_chat(args: argparse.Namespace, out: TextIO) -> int:
    from ..errors import DomainError, InvalidResumeInputError
    from .app import Dialogue

    domain = _domain(args.domain)  # before the store: a broken domain creates nothing
    llm = _llm(args.llm)
    bot = Dialogue(domain, store=open_for_writing(store_path(args)), llm=llm)
    thread = args.thread or f"chat-{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(2)}"
    state = bot.open(thread)
    if state.status == "done":
        print(
            f"flowkit: error: conversation `{thread}` has ended; start a new one with: "
            f"{_chat_command(args, None)}",
            file=sys.stderr,
        )
        return 1
    resumed = state.state.turn_id > 0
    print(
        f"{'continuing' if resumed else 'new'} conversation {thread} with {bot.domain.name} "
        f"(/quit to leave, /state to inspect, /event INTENT [name=value ...] for an "
        f"external event; continue later with: "
        f"{_chat_command(args, thread)})",
        file=sys.stderr,
    )
    if resumed and state.state.last_ai_message:
        out.write(f"bot> {state.state.last_ai_message}\n")
    from ..nodes.dialogue.start_gate import MAX_CHARS
    from .delivery import Deliverer, parse_event

    def say(text: str) -> None:
        out.write(f"bot> {text}\n")
        out.flush()

    # Reminders an action scheduled are said when due, between the person's turns.
    with Deliverer(bot, thread, say) as deliverer:
        for text in typed_lines(out, max_chars=MAX_CHARS):
            if text == "/state":
                out.write(_describe(bot, thread))
                continue
            try:
                event = parse_event(text)
                with deliverer.lock:
                    if event is None:
                        reply = bot.send(thread, text)
                    else:  # /event INTENT name=value ...: an external event
                        reply = bot.trigger(thread, event[0], event[1])
                    say(reply.text)
            except (InvalidResumeInputError, DomainError, ValueError) as exc:
                problem: Any = exc
                if isinstance(exc, InvalidResumeInputError) and exc.errors:
                    problem = exc.errors[0]["msg"]
                elif isinstance(exc, DomainError) and exc.problems:
                    problem = exc.problems[0]
                print(f"flowkit: error: {problem}", file=sys.stderr)
                continue
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
    from ..errors import DomainError
    from .conversations import (
        format_results,
        load_conversations,
        resolve_conversations_path,
        run_conversations,
    )

    if args.junit is not None:
        folder = Path(args.junit).parent
        if not folder.is_dir() or Path(args.junit).is_dir():
            raise CommandError(
                f"cannot write the JUnit report to `{args.junit}`: "
                + ("it is a folder" if Path(args.junit).is_dir() else "its folder does not exist")
                + "; pass a file path in an existing folder",
                code=2,
            )
    domain = _domain(args.domain)
    try:
        resolve_conversations_path(args.conversations)
    except DomainError as exc:  # neither a file nor a shipped example: a usage error
        raise CommandError("; ".join(exc.problems), code=2) from exc
    try:
        tests = load_conversations(args.conversations)
    except DomainError as exc:  # a file that cannot be loaded: 2, not a failed test's 1
        raise CommandError(str(exc), code=2) from exc
    with progress_for(args, "dialogue test") as progress:
        results = run_conversations(domain, tests, llm=_llm(args.llm), on_progress=progress)
    if args.junit is not None:
        from .junit import write_junit

        stem = Path(args.conversations).name.removesuffix(".yaml").removesuffix(".yml")
        try:
            write_junit(args.junit, results, suite=domain.name, classname=f"{domain.name}.{stem}")
        except OSError as exc:
            raise CommandError(
                f"cannot write the JUnit report to `{args.junit}`: "
                f"{exc.strerror or type(exc).__name__}",
                code=2,
            ) from exc
    if args.json:
        failed = sum(not r.passed for r in results)
        data = {
            "domain": domain.name,
            "conversations": len(results),
            "passed": len(results) - failed,
            "failed": failed,
            "results": [r.to_data() for r in results],
        }
        out.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    else:
        out.write(format_results(results))
    return 0 if all(r.passed for r in results) else 1


def _check_report_path(path: str | None) -> None:
    if path is None:
        return
    folder = Path(path).parent
    if not folder.is_dir() or Path(path).is_dir():
        raise CommandError(
            f"cannot write the JUnit report to `{path}`: "
            + ("it is a folder" if Path(path).is_dir() else "its folder does not exist")
            + "; pass a file path in an existing folder",
            code=2,
        )


def _cmd_eval(args: argparse.Namespace, out: TextIO) -> int:
    from ..errors import DomainError
    from .eval import evaluate, format_eval, heldout_path, load_eval, write_eval_junit

    _check_report_path(args.junit)
    domain = _domain(args.domain)
    source = args.examples or heldout_path(args.domain)
    if source is None:
        raise CommandError(
            f"`{args.domain}` has no held-back examples (NAME.eval.yaml beside it); write some "
            "and pass the file after the domain",
            code=2,
        )
    try:
        if not Path(source).is_file():
            raise DomainError([f"`{source}` is not a file; pass a held-back example file"])
        report = evaluate(domain, load_eval(source), llm=_llm(args.llm))
    except DomainError as exc:
        raise CommandError("; ".join(exc.problems), code=2) from exc
    if args.junit is not None:
        try:
            write_eval_junit(args.junit, report)
        except OSError as exc:
            raise CommandError(
                f"cannot write the JUnit report to `{args.junit}`: "
                f"{exc.strerror or type(exc).__name__}",
                code=2,
            ) from exc
    if args.json:
        out.write(json.dumps(report.to_data(), indent=2, ensure_ascii=False) + "\n")
    else:
        out.write(format_eval(report))
    return 0


def _cmd_check(args: argparse.Namespace, out: TextIO) -> int:
    from ..errors import DomainError
    from ._report import check_domain

    try:
        report = check_domain(args.domain)
    except DomainError as exc:  # neither a file nor a shipped example
        raise CommandError("; ".join(exc.problems), code=2) from exc
    domain = report.domain
    if args.json:
        data: dict[str, Any] = {
            "domain": report.path,
            "name": domain.name if domain is not None else None,
            "ok": not report.problems,
            "problems": [p.to_data() for p in report.problems],
            "warnings": [w.to_data() for w in report.warnings],
        }
        if domain is not None:
            data["counts"] = _counts(domain)
        out.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
        return 0 if not report.problems else 1
    if report.problems:
        count = len(report.problems)
        out.write(f"FAIL {report.path}: {count} problem{'s' if count != 1 else ''}\n")
        for problem in report.problems:
            out.write(f"- {problem}\n")
        return 1
    counts = _counts(domain)
    out.write(
        f"OK {domain.name}: {counts['languages']} languages, {counts['intents']} intents, "
        f"{counts['faq']} FAQ entries, {counts['slots']} slots, {counts['goals']} goals\n"
    )
    for warning in report.warnings:
        out.write(f"- warning: {warning}\n")
    return 0


def _counts(domain: Any) -> dict[str, int]:
    return {
        "languages": len(domain.languages),
        "intents": len(domain.intents),
        "faq": len(domain.faq),
        "slots": len(domain.slots),
        "goals": len(domain.goals),
    }


def _cmd_schema(args: argparse.Namespace, out: TextIO) -> int:
    from .domain import domain_json_schema

    out.write(json.dumps(domain_json_schema(), indent=2, ensure_ascii=False) + "\n")
    return 0
