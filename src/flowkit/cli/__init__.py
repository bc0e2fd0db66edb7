"""The ``flowkit`` command: draw and check flows, list and inspect stored threads, run a demo.

Exit codes: 0 success, 1 a check or command failed (the reason is printed), 2 bad usage or
a TARGET that cannot be loaded. Heavy modules are imported inside the commands that need them.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TextIO

from .. import __version__
from ..errors import FlowDefinitionError, FlowkitError

if TYPE_CHECKING:
    from .._flow import Flow

__all__ = ["main"]

_TARGET_HELP = (
    "a registered workflow name (see `flowkit workflows`), `module:attribute` or "
    "`path/to/file.py:attribute` naming a Flow or a zero-argument function returning one"
)


class CommandError(Exception):
    """Ends a command with a message on stderr and an exit code (no traceback)."""

    def __init__(self, message: str, code: int = 1) -> None:
        self.code = code
        super().__init__(message)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line ``argv`` (default: ``sys.argv[1:]``); return the exit code."""
    parser = _parser()
    args = parser.parse_args(argv)
    # `-v` may come before or after the command; each parser only sets it when given.
    _configure_logging(getattr(args, "verbose", 0))
    from .._logging import get_logger

    # Only the command's words: its arguments may hold a robot task or a person's name.
    words = [a for a in (argv if argv is not None else sys.argv[1:]) if a.isidentifier()][:2]
    get_logger().debug("cli_command", command=" ".join(words))
    try:
        code: int = args.run(args, sys.stdout)
        sys.stdout.flush()
    except CommandError as exc:
        print(f"flowkit: error: {exc}", file=sys.stderr)
        return exc.code
    except FlowkitError as exc:
        print(f"flowkit: error: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:  # e.g. a store folder we may not read
        if isinstance(exc, BrokenPipeError):
            return _stdout_closed()
        print(f"flowkit: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return code


def _stdout_closed() -> int:
    # `flowkit graph x | head` closed our stdout. Point stdout at devnull so the
    # interpreter's final flush does not print a second BrokenPipeError at exit.
    import os

    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 1


def _parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "-v",
        "--verbose",
        action="count",
        default=argparse.SUPPRESS,
        help="log more to stderr: -v info, -vv debug (default: warnings only)",
    )
    parser = argparse.ArgumentParser(
        prog="flowkit",
        description="Durable, human-in-the-loop workflows as explicit state machines.",
        parents=[common],
    )
    parser.add_argument("--version", action="version", version=f"flowkit {__version__}")
    commands = parser.add_subparsers(title="commands", metavar="COMMAND", required=True)

    graph = commands.add_parser(
        "graph", parents=[common], help="print a flow as a Mermaid or DOT diagram, or JSON"
    )
    graph.add_argument("target", metavar="TARGET", help=_TARGET_HELP)
    graph.add_argument(
        "-f", "--format", choices=["mermaid", "dot", "json"], default="mermaid",
        help="output format (default: mermaid)",
    )  # fmt: skip
    graph.set_defaults(run=_cmd_graph)

    check = commands.add_parser(
        "check", parents=[common], help="validate flows; list every problem (exit 1 if any)"
    )
    check.add_argument("targets", metavar="TARGET", nargs="+", help=_TARGET_HELP)
    check.set_defaults(run=_cmd_check)

    threads = commands.add_parser(
        "threads", parents=[common], help="list the threads in a JSON-file store"
    )
    threads.add_argument("--store", metavar="DIR", required=True, help="the store folder")
    threads.add_argument("--json", action="store_true", help="print JSON instead of a table")
    threads.set_defaults(run=_cmd_threads)

    show = commands.add_parser(
        "show", parents=[common], help="show a stored thread's state or history"
    )
    show.add_argument("thread", metavar="THREAD", help="the thread id")
    show.add_argument("--store", metavar="DIR", required=True, help="the store folder")
    show.add_argument("--history", action="store_true", help="list every checkpoint")
    show.add_argument("--json", action="store_true", help="print JSON")
    show.add_argument(
        "--flow", metavar="TARGET",
        help="replay with this flow (default: the registered workflow the thread names)",
    )  # fmt: skip
    show.set_defaults(run=_cmd_show)

    _add_runtime_commands(commands, common)

    workflows = commands.add_parser(
        "workflows", parents=[common], help="list the registered workflow names"
    )
    workflows.set_defaults(run=_cmd_workflows)

    demo = commands.add_parser(
        "demo", parents=[common], help="run an example workflow end to end on a JSON-file store"
    )
    demo.add_argument("name", nargs="?", default="sas", choices=["sas", "review"])
    demo.add_argument("--store", metavar="DIR", help="store folder (default: a new temp folder)")
    demo.add_argument("--output-dir", metavar="DIR", help="sas: where flow.xml is written")
    demo.set_defaults(run=_cmd_demo)

    from ..sas.cli import add_commands as add_sas_commands

    add_sas_commands(commands, common)
    from ..dialogue.cli import add_commands as add_dialogue_commands

    add_dialogue_commands(commands, common)
    return parser


def _add_runtime_commands(commands: Any, common: argparse.ArgumentParser) -> None:
    """``stats`` and ``recover``: the runtime services over a store (docs/operations.md)."""
    stats = commands.add_parser(
        "stats", parents=[common], help="health of stored threads: sizes, node times, errors"
    )
    stats.add_argument("thread", metavar="THREAD", nargs="?", help="one thread (default: all)")
    stats.add_argument("--store", metavar="DIR", required=True, help="the store folder")
    stats.add_argument("--json", action="store_true", help="print JSON instead of a table")
    stats.add_argument(
        "--flow", metavar="TARGET", help="for exact sizes of threads of an unregistered flow"
    )
    limits = stats.add_argument_group("thresholds (defaults: seed 000 §5.1)")
    limits.add_argument("--max-checkpoint-mb", type=float, metavar="MB", default=10.0)
    limits.add_argument("--max-avg-seconds", type=float, metavar="S", default=300.0)
    limits.add_argument("--max-error-rate", type=float, metavar="RATE", default=0.1)
    limits.add_argument("--max-recoveries-per-hour", type=int, metavar="N", default=3)
    stats.set_defaults(run=_cmd_stats)

    recover = commands.add_parser(
        "recover", parents=[common], help="find stuck threads and patch them back (audited)"
    )
    recover.add_argument("thread", metavar="THREAD", nargs="?", help="one thread (default: all)")
    recover.add_argument("--store", metavar="DIR", required=True, help="the store folder")
    recover.add_argument("--dry-run", action="store_true", help="show the plan; write nothing")
    recover.add_argument(
        "--flow", metavar="TARGET",
        help="the threads' flow (default: the registered workflow each thread names)",
    )  # fmt: skip
    recover.add_argument(
        "--strategy", choices=["resume", "back_to_stable", "reset"],
        help="override the policy's strategy for every stuck thread",
    )  # fmt: skip
    recover.add_argument("--json", action="store_true", help="print JSON")
    recover.set_defaults(run=_cmd_recover)


def _configure_logging(verbosity: int) -> None:
    # The library never configures structlog; the command is an application, so it does,
    # sending log lines to stderr (stdout carries the command's output) with PII masked.
    import logging

    import structlog

    from .._logging import mask_pii

    level = logging.WARNING if verbosity <= 0 else logging.INFO if verbosity == 1 else logging.DEBUG
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="%H:%M:%S"),
            mask_pii(),
            structlog.dev.ConsoleRenderer(colors=False),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(level),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=False,
    )


def load_target(target: str) -> Flow:
    """The Flow for a TARGET; a target that cannot be loaded ends the command with exit 2."""
    from ..workflows import WorkflowLoadError, load_flow

    try:
        return load_flow(target)
    except WorkflowLoadError as exc:
        raise CommandError(str(exc), code=2) from exc


def _print_problems(error: FlowDefinitionError, out: TextIO) -> None:
    count = len(error.problems)
    out.write(f"FAIL {error.flow}: {count} problem{'s' if count != 1 else ''}\n")
    for problem in error.problems:
        out.write(f"- {problem}\n")


def _cmd_graph(args: argparse.Namespace, out: TextIO) -> int:
    try:
        flow = load_target(args.target)
    except FlowDefinitionError as exc:
        _print_problems(exc, sys.stderr)
        return 1
    if args.format == "json":
        import json

        out.write(json.dumps(flow.to_data(), indent=2, ensure_ascii=False, default=str) + "\n")
    else:
        from ..diagram import to_dot, to_mermaid

        out.write(to_mermaid(flow) if args.format == "mermaid" else to_dot(flow))
    return 0


def _cmd_check(args: argparse.Namespace, out: TextIO) -> int:
    from .._route_table import RouteTable

    code = 0
    for target in args.targets:
        try:
            flow = load_target(target)
        except FlowDefinitionError as exc:
            _print_problems(exc, out)
            code = max(code, 1)
            continue
        except CommandError as exc:  # one unloadable target must not hide the others' results
            print(f"flowkit: error: {exc}", file=sys.stderr)
            code = max(code, exc.code)
            continue
        tables = [r for r in flow.routes.values() if isinstance(r, RouteTable)]
        rules = sum(len(t.rules) for t in tables)
        out.write(
            f"OK {flow.name}: {_count(len(flow.nodes), 'node')}, "
            f"{_count(len(flow.gates), 'gate')}, {_count(len(flow.finals), 'final state')}, "
            f"{_count(len(tables), 'route table')} ({_count(rules, 'rule')})\n"
        )
    return code


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _cmd_workflows(args: argparse.Namespace, out: TextIO) -> int:
    from ..workflows import registered

    names = registered()
    width = max(map(len, names), default=0)
    for name, spec in sorted(names.items()):
        out.write(f"{name:<{width}}  {spec}\n")
    return 0


def _cmd_threads(args: argparse.Namespace, out: TextIO) -> int:
    from .._cli_store import list_threads

    return list_threads(args.store, out, as_json=args.json)


def _cmd_show(args: argparse.Namespace, out: TextIO) -> int:
    from .._cli_store import show_thread

    return show_thread(
        args.store, args.thread, out, history=args.history, as_json=args.json, flow=args.flow
    )


def _cmd_stats(args: argparse.Namespace, out: TextIO) -> int:
    from .._cli_runtime import print_stats
    from ..runtime.monitor import Thresholds

    limits = Thresholds(
        max_checkpoint_bytes=int(args.max_checkpoint_mb * 1024 * 1024),
        max_avg_processing_s=args.max_avg_seconds,
        max_error_rate=args.max_error_rate,
        max_recoveries_per_hour=args.max_recoveries_per_hour,
    )
    return print_stats(
        args.store, args.thread, out, thresholds=limits, flow=args.flow, as_json=args.json
    )


def _cmd_recover(args: argparse.Namespace, out: TextIO) -> int:
    from .._cli_runtime import recover_threads

    return recover_threads(
        args.store,
        args.thread,
        out,
        dry_run=args.dry_run,
        flow=args.flow,
        strategy=args.strategy,
        as_json=args.json,
    )


def _cmd_demo(args: argparse.Namespace, out: TextIO) -> int:
    if args.name == "sas":
        from ..sas.demo import run_sas_demo

        return run_sas_demo(args.store, args.output_dir, out)
    from .._cli_demo import run_demo

    return run_demo(args.name, args.store, out)


if __name__ == "__main__":  # pragma: no cover - `python -m flowkit.cli`
    sys.exit(main())
