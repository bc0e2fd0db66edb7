"""``main``: build the command tree, run one command, and turn every failure into a message.

Each command group lives in its own module and registers its sub-commands on the tree;
their bodies import what they need when they run, so ``flowkit --help`` stays fast.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import NoReturn

from ..foundation._plain import shorten

__all__ = ["build_parser", "main"]


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error never repeats a huge argument back whole."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(2, f"{self.prog}: error: {shorten(message, 300)}\n")


def build_parser() -> argparse.ArgumentParser:
    """The whole ``flowkit`` command tree (cheap: no command's module is imported)."""
    from .. import __version__
    from . import (
        auth,
        demo,
        flows,
        lifecycle,
        migrate,
        runs,
        runtime,
        scale,
        serve,
        thread_view,
        threads,
    )

    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "-v",
        "--verbose",
        action="count",
        default=argparse.SUPPRESS,
        help="log more to stderr: -v info, -vv debug and tracebacks (default: warnings only)",
    )
    common.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        default=argparse.SUPPRESS,
        help="no progress line on stderr (long commands draw one only on a terminal)",
    )
    parser = _Parser(
        prog="flowkit",
        description="Durable, human-in-the-loop workflows as explicit state machines.",
        epilog="Exit codes: 0 success, 1 the command failed (reason on stderr), 2 bad usage. "
        "Every command that reads or writes threads takes --store DIR|URL, a folder or a "
        "PostgreSQL URL (default: $FLOWKIT_STORE, else ./.flowkit).",
        parents=[common],
    )
    parser.add_argument("--version", action="version", version=f"flowkit {__version__}")
    commands = parser.add_subparsers(title="commands", metavar="COMMAND", required=True)
    for group in (
        flows,
        threads,
        thread_view,
        lifecycle,
        runs,
        migrate,
        runtime,
        scale,
        demo,
        serve,
        auth,
    ):
        group.register(commands, common)

    from ..dialogue.cli import add_commands as add_dialogue_commands
    from ..quality.cli import add_commands as add_quality_commands
    from ..roundtable.cli import add_commands as add_roundtable_commands
    from ..sas.cli import add_commands as add_sas_commands

    add_sas_commands(commands, common)
    add_dialogue_commands(commands, common)
    add_roundtable_commands(commands, common)
    add_quality_commands(commands, common)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line ``argv`` (default: ``sys.argv[1:]``); return the exit code."""
    words = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(words)
    # `-v` may come before or after the command; each parser only sets it when given.
    verbosity: int = getattr(args, "verbose", 0)
    _configure_logging(verbosity)
    try:
        from ..foundation._logging import get_logger

        # Only the command's words: its arguments may hold a robot task or a person's name.
        named = [w for w in words if w.isidentifier()][:2]
        get_logger().debug("cli_command", command=" ".join(named))
        import contextlib

        from ..terminal.output import terminal_safe
        from ..terminal.store import closing_stores

        # The one place command output, and what commands print on stderr, is made safe
        # for a terminal (see terminal.output); the stores a command opened are closed when it ends.
        with contextlib.redirect_stderr(terminal_safe(sys.stderr)), closing_stores():
            code: int = args.run(args, terminal_safe(sys.stdout))
        sys.stdout.flush()
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return _stdout_closed()
    except Exception as exc:  # the boundary: nothing below may end in a traceback
        from ..terminal.errors import tidy
        from ._errors import explain

        message, code, unexpected = explain(exc, args)
        from ..terminal.output import printable

        print(f"flowkit: error: {printable(tidy(message))}", file=sys.stderr)
        if unexpected and verbosity >= 2:
            import traceback

            traceback.print_exception(exc, file=sys.stderr)
    return code


def _stdout_closed() -> int:
    # `flowkit graph x | head` closed our stdout. Point stdout at devnull so the
    # interpreter's final flush does not print a second BrokenPipeError at exit.
    import contextlib
    import os

    with contextlib.suppress(OSError, ValueError):  # stdout is not a real file (tests)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 1


def _configure_logging(verbosity: int) -> None:
    # The command is an application, so it may set up logging: flowkit's lines on stderr
    # (stdout carries the command's output), PII masked, more with each -v.
    from ..foundation._logging import configure_cli_logging

    configure_cli_logging(verbosity)
