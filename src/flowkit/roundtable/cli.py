"""``flowkit roundtable CONFIG``: talk with a table of LLM characters in the terminal.

Each line you type is one message to the table; the characters' replies print as each one
speaks (streamed round by round). Lines may be piped in (``echo hi | flowkit roundtable
trio-en --llm scripted:replies.json``); ``--thread`` continues a session in a later process
(sessions live in the shared ``--store``, round summaries in ``<store>/roundtable/memory``).
``--check`` lists every problem of a configuration, ``--schema`` prints its JSON schema.
"""

from __future__ import annotations

import argparse
import json
import secrets
import shlex
import sys
import time
from typing import Any, TextIO

from ..terminal.errors import CommandError
from ..terminal.store import add_store_option, open_for_writing, store_path, store_words
from ..terminal.typed import typed_lines

__all__ = ["add_commands"]

_CONFIG_HELP = "a configuration file (YAML or JSON) or a shipped example (trio-ja, trio-en)"


def add_commands(commands: Any, common: argparse.ArgumentParser) -> None:
    """Register ``roundtable`` on the main parser's sub-parsers."""
    table = commands.add_parser(
        "roundtable",
        parents=[common],
        help="talk with a table of LLM characters (REPL; stdin may be piped)",
    )
    table.add_argument("config", nargs="?", metavar="CONFIG", help=_CONFIG_HELP)
    add_store_option(table, folder_only=True)  # its long-term memory is a folder beside it
    table.add_argument("--thread", metavar="ID", help="continue (or name) this session")
    table.add_argument(
        "--llm",
        metavar="SPEC",
        help="one LLM for every character instead of their own: openai:MODEL, ollama:MODEL, "
        "replay:PATH or scripted:PATH",
    )
    table.add_argument(
        "--check", action="store_true", help="only validate CONFIG and list its problems"
    )
    table.add_argument(
        "--schema", action="store_true", help="print the configuration's JSON schema"
    )
    table.set_defaults(run=_cmd_roundtable)


def _cmd_roundtable(args: argparse.Namespace, out: TextIO) -> int:
    if args.schema:
        from .config import config_json_schema

        out.write(json.dumps(config_json_schema(), indent=2, ensure_ascii=False) + "\n")
        return 0
    if not args.config:
        raise CommandError("name a configuration: flowkit roundtable CONFIG (e.g. trio-en)", 2)
    config = _config(args.config)
    if args.check:
        names = ", ".join(f"{c.display_name} ({c.id})" for c in config.characters)
        out.write(f"OK {config.name}: {len(config.characters)} characters: {names}\n")
        return 0
    return _talk(args, config, out)


def _config(source: str) -> Any:
    """The configuration ``source`` names; a name that is no file nor example is a usage
    error (exit 2), a configuration with problems fails the command (exit 1)."""
    from .config import load_config, resolve_config_path
    from .errors import RoundtableConfigError

    try:
        resolve_config_path(source)
    except RoundtableConfigError as exc:
        raise CommandError("; ".join(exc.problems), code=2) from exc
    return load_config(source)


def _command(args: argparse.Namespace, thread: str | None) -> str:
    """The command line that opens this session again, runnable as printed."""
    words = ["flowkit", "roundtable", args.config, *store_words(args)]
    if args.llm:
        words += ["--llm", args.llm]
    if thread:
        words += ["--thread", thread]
    return shlex.join(words)


def _talk(args: argparse.Namespace, config: Any, out: TextIO) -> int:
    from ..errors import InvalidResumeInputError
    from ..foundation._plain import shorten
    from .app import Roundtable
    from .errors import RoundtableConfigError

    shared = None
    if args.llm:
        from ..llm import from_spec

        shared = from_spec(args.llm)
    llms = {c.id: shared for c in config.characters} if shared is not None else None
    store = open_for_writing(store_path(args))
    thread = args.thread or f"table-{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(2)}"
    with Roundtable(config, store=store, llms=llms) as bot:
        try:
            state = bot.open(thread).state
        except RoundtableConfigError:  # a session of another table: said just below
            state = bot.state(thread)
        if state.config_name and state.config_name != config.name:
            raise CommandError(
                f"session `{thread}` is at table `{state.config_name}`, not `{config.name}`; "
                "open it with that configuration or use another --thread",
                code=1,
            )
        print(
            f"{'continuing' if state.round_index else 'new'} session {thread} at {config.name} "
            f"({', '.join(c.display_name for c in config.characters)}; /quit to leave, /log "
            f"for the transcript; continue later with: {_command(args, thread)})",
            file=sys.stderr,
        )
        interactive = sys.stdin.isatty()
        if interactive and state.round_index:
            for entry in state.round_log():
                out.write(f"{entry.speaker}> {entry.text}\n")
        from .state import MAX_INPUT_CHARS

        unanswered = 0
        for text in typed_lines(out, max_chars=MAX_INPUT_CHARS):
            if text == "/log":
                for entry in bot.transcript(thread):
                    out.write(entry.line() + "\n")
                continue
            try:
                stream = bot.stream(thread, text)
                answered = 0
                for item in stream:
                    if isinstance(item, dict) and item.get("type") == "message":
                        out.write(f"{item['speaker']}> {item['text']}\n")
                        out.flush()
                        answered += 1
            except InvalidResumeInputError as exc:
                reason = exc.errors[0]["msg"] if exc.errors else str(exc)
                print(f"flowkit: error: {reason}", file=sys.stderr)
                continue
            assert stream.result is not None  # set once the stream is exhausted
            for failure in stream.result.state.round_failures:
                print(f"flowkit: error: {shorten(failure.line(), 300)}", file=sys.stderr)
            unanswered += answered == 0
    # A message nobody could answer (no model reachable, say) fails the command.
    return 1 if unanswered else 0
