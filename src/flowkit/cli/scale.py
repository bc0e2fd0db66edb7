"""``flowkit store init|copy`` and ``flowkit worker``: running flows on PostgreSQL.

- ``store init URL``: create or upgrade the flowkit schema (the only thing that does).
- ``store copy SRC DST``: copy threads between a JSON-file store folder and a Postgres URL.
- ``store reindex [--store DIR]``: rebuild a JSON-file store's thread index from its journals.
- ``worker TARGET --store URL [--llm SPEC]``: claim and run queued threads of a flow, and
  fire its due timers (every ``--timer-poll`` seconds), until SIGTERM.

These need the ``flowkit-workflows[postgres]`` extra; a missing driver, a server that cannot
be reached or a database without the schema is an error (exit 2) that says what to do.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any, TextIO

from ..terminal.errors import CommandError
from ..terminal.inputs import TARGET_HELP, add_llm_option, load_target, positive_int
from ..terminal.progress import progress_for
from ..terminal.store import (
    add_store_option,
    is_database_url,
    open_database,
    open_for_reading,
    open_for_writing,
    shown,
    store_location,
)

if TYPE_CHECKING:
    from ..stores import Store

__all__ = ["register"]

_URL = "postgresql://USER@HOST:PORT/DATABASE"


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    store = commands.add_parser(
        "store", parents=[common], help="create a database's schema, copy threads, reindex"
    )
    actions = store.add_subparsers(title="actions", metavar="ACTION", required=True)
    init = actions.add_parser(
        "init", parents=[common], help="create or upgrade the flowkit schema in a database"
    )
    init.add_argument("url", metavar="URL", help=f"the database ({_URL})")
    _schema_option(init)
    init.set_defaults(run=_cmd_init)

    copy = actions.add_parser(
        "copy", parents=[common], help="copy threads between a store folder and PostgreSQL"
    )
    copy.add_argument("source", metavar="SRC", help=f"a JSON-file store folder or {_URL}")
    copy.add_argument("target", metavar="DST", help="the same, the other kind or another one")
    copy.add_argument(
        "--thread", metavar="THREAD", action="append", help="only this thread (repeatable)"
    )
    _schema_option(copy)
    copy.set_defaults(run=_cmd_copy)

    reindex = actions.add_parser(
        "reindex", parents=[common], help="rebuild a store folder's thread index from its journals"
    )
    add_store_option(reindex)
    reindex.set_defaults(run=_cmd_reindex)

    worker = commands.add_parser(
        "worker", parents=[common], help="run queued threads of a flow from PostgreSQL"
    )
    worker.add_argument("target", metavar="TARGET", help=TARGET_HELP)
    worker.add_argument(
        "--store", metavar="URL", help=f"the database ({_URL}; default: $FLOWKIT_STORE)"
    )
    add_llm_option(worker, used_by="the flow's nodes call")
    worker.add_argument(
        "--concurrency", metavar="N", type=positive_int, default=1,
        help="threads run at once by this process (default: 1)",
    )  # fmt: skip
    worker.add_argument(
        "--lease", metavar="S", type=float, default=30.0,
        help="seconds a dead worker's threads stay locked (default: 30)",
    )  # fmt: skip
    worker.add_argument(
        "--grace", metavar="S", type=float, default=30.0,
        help="on SIGTERM, seconds to finish the runs in hand (default: 30)",
    )  # fmt: skip
    worker.add_argument(
        "--timer-poll", metavar="S", type=_poll_seconds, default=2.0,
        help="seconds between looks for due timers (deadlines, wake-ups; default: 2; "
        "0: fire none here)",
    )  # fmt: skip
    _schema_option(worker)
    worker.set_defaults(run=_cmd_worker)


def _poll_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text[:20]!r} is not a number of seconds") from None
    if not 0 <= value < 86400:  # also refuses nan and inf
        raise argparse.ArgumentTypeError(f"{text[:20]} is not between 0 and 86400 seconds")
    return value


def _schema_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--schema", metavar="NAME", default="flowkit",
        help="the PostgreSQL schema holding flowkit's tables (default: flowkit)",
    )  # fmt: skip


def _cmd_init(args: argparse.Namespace, out: TextIO) -> int:
    from ..errors import StoreError
    from ..stores.postgres import migrate

    try:
        before, after = migrate(args.url, schema=args.schema)
    except StoreError as exc:  # a database it cannot use: exit 2, as every other command's
        raise CommandError(str(exc), code=2) from exc
    where = f"schema `{args.schema}` at {shown(args.url)}"
    if before == after:
        print(f"{where} is at version {after} already; nothing to do.", file=out)
    else:
        print(f"{where}: migrated from version {before} to {after}.", file=out)
    return 0


def _open(text: str, schema: str, *, create: bool) -> Store:
    if create:
        return open_for_writing(text, schema=schema)
    found = open_for_reading(text, schema=schema)
    if found is None:
        raise CommandError(f"No store at `{shown(text)}`: it has no threads folder.", code=2)
    return found


def _cmd_copy(args: argparse.Namespace, out: TextIO) -> int:
    import sys

    from ..stores._ids import check_thread_id
    from ..stores.postgres import copy_threads

    threads = [check_thread_id(t) for t in args.thread] if args.thread else None
    # Both stores are closed when the command ends (``closing_stores``).
    source = _open(args.source, args.schema, create=False)
    target = _open(args.target, args.schema, create=True)
    with progress_for(args, "copy") as progress:
        report = copy_threads(source, target, threads, on_progress=progress)
    for thread_id, count in report.copied.items():
        print(f"copied {thread_id} ({count} records)", file=out)
    for thread_id, reason in report.failed.items():
        print(f"flowkit: error: thread `{thread_id}` not copied: {reason}", file=sys.stderr)
    print(f"{len(report.copied)} copied, {len(report.failed)} failed", file=out)
    return 1 if report.failed else 0


def _cmd_reindex(args: argparse.Namespace, out: TextIO) -> int:
    """Rebuild the thread index of a store folder (after its files were changed by hand)."""
    import sys

    from ..stores import JsonFileStore, iter_threads

    location = store_location(args)
    store = open_for_reading(location)
    if not isinstance(store, JsonFileStore):
        what = "keeps its thread index in its tables" if store is not None else "has no threads"
        print(f"{shown(location)} {what}; nothing to rebuild.", file=out)
        return 0
    with progress_for(args, "reindex") as progress:
        count = store.reindex(on_progress=progress)
    unreadable = list(iter_threads(store, status="unreadable", order="id"))
    for summary in unreadable:
        print(f"flowkit: error: thread `{summary.thread_id}`: {summary.error}", file=sys.stderr)
    print(f"{count} threads indexed in {shown(location)}, {len(unreadable)} unreadable", file=out)
    return 1 if unreadable else 0


def _cmd_worker(args: argparse.Namespace, out: TextIO) -> int:
    from ..terminal.demo_llm import chosen_llm
    from ..workers import Worker, serve_forever

    if not 0 < args.lease <= 86400 or not args.grace >= 0:
        raise CommandError(
            "--lease must be above 0 and at most 86400 seconds (a day), and --grace at least "
            "0 seconds.",
            code=2,
        )
    location = store_location(args)
    if not is_database_url(location):
        raise CommandError(
            f"`flowkit worker` runs threads from PostgreSQL; --store `{location}` is not a "
            f"database URL ({_URL}).",
            code=2,
        )
    flow = load_target(args.target)
    llm = chosen_llm(args, [flow])
    # A connection per run in hand, one for the heartbeat, one to claim with, one for timers.
    store = open_database(
        location, schema=args.schema, connections=args.concurrency + 3, lease_s=args.lease
    )
    worker = Worker(
        flow,
        store=store,
        concurrency=args.concurrency,
        llm=llm,
        timer_poll_s=args.timer_poll or None,
    )
    with progress_for(args, "worker") as progress:
        # The counts are the line's text: the worker's total is never known.
        stats = serve_forever(
            worker, grace_s=args.grace, on_progress=lambda _done, _total, what: progress.note(what)
        )
    print(
        f"worker stopped: {stats.claims} claims, {stats.runs} runs, {stats.rejected} inputs "
        f"rejected, {stats.errors} failed runs, {stats.timers} timers fired",
        file=out,
    )
    return 0
