"""``flowkit store init|copy`` and ``flowkit worker``: running flows on PostgreSQL.

- ``store init URL``: create or upgrade the flowkit schema (the only thing that does).
- ``store copy SRC DST``: copy threads between a JSON-file store folder and a Postgres URL.
- ``worker TARGET --store URL``: claim and run queued threads of a flow until SIGTERM.

These need the ``flowkit[postgres]`` extra; a missing driver is an error that says so.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any, TextIO

from ._inputs import TARGET_HELP, load_target, positive_int

if TYPE_CHECKING:
    from ..stores import Store

__all__ = ["register"]

_URL = "postgresql://USER@HOST:PORT/DATABASE"


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    store = commands.add_parser(
        "store", parents=[common], help="PostgreSQL: create the schema, copy threads"
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

    worker = commands.add_parser(
        "worker", parents=[common], help="run queued threads of a flow from PostgreSQL"
    )
    worker.add_argument("target", metavar="TARGET", help=TARGET_HELP)
    worker.add_argument("--store", metavar="URL", required=True, help=f"the database ({_URL})")
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
    _schema_option(worker)
    worker.set_defaults(run=_cmd_worker)


def _schema_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--schema", metavar="NAME", default="flowkit",
        help="the PostgreSQL schema holding flowkit's tables (default: flowkit)",
    )  # fmt: skip


def _is_url(text: str) -> bool:
    return text.startswith(("postgresql://", "postgres://"))


def _cmd_init(args: argparse.Namespace, out: TextIO) -> int:
    from ..stores.postgres import migrate
    from ..stores.postgres._driver import redact

    before, after = migrate(args.url, schema=args.schema)
    where = f"schema `{args.schema}` at {redact(args.url)}"
    if before == after:
        print(f"{where} is at version {after} already; nothing to do.", file=out)
    else:
        print(f"{where}: migrated from version {before} to {after}.", file=out)
    return 0


def _open(text: str, schema: str, *, create: bool) -> Store:
    from ._errors import CommandError

    if _is_url(text):
        from ..stores.postgres import PostgresStore

        return PostgresStore(text, schema=schema, pool_size=2)
    from pathlib import Path

    from ..stores.jsonfile import JsonFileStore

    root = Path(text)
    if not create and not (root / "threads").is_dir():
        raise CommandError(f"No store at `{text}`: it has no threads folder.", code=2)
    return JsonFileStore(root)


def _cmd_copy(args: argparse.Namespace, out: TextIO) -> int:
    import sys

    from ..stores._ids import check_thread_id
    from ..stores.postgres import copy_threads

    threads = [check_thread_id(t) for t in args.thread] if args.thread else None
    source = _open(args.source, args.schema, create=False)
    try:
        target = _open(args.target, args.schema, create=True)
        try:
            report = copy_threads(source, target, threads)
        finally:
            _close(target)
    finally:
        _close(source)
    for thread_id, count in report.copied.items():
        print(f"copied {thread_id} ({count} records)", file=out)
    for thread_id, reason in report.failed.items():
        print(f"flowkit: error: thread `{thread_id}` not copied: {reason}", file=sys.stderr)
    print(f"{len(report.copied)} copied, {len(report.failed)} failed", file=out)
    return 1 if report.failed else 0


def _close(store: object) -> None:
    close = getattr(store, "close", None)
    if close is not None:
        close()


def _cmd_worker(args: argparse.Namespace, out: TextIO) -> int:
    from ..stores.postgres import PostgresStore
    from ..workers import Worker, serve_forever
    from ._errors import CommandError

    if not args.lease > 0 or not args.grace >= 0:
        raise CommandError("--lease must be above 0 and --grace at least 0 seconds.", code=2)
    flow = load_target(args.target)
    with PostgresStore(
        args.store, schema=args.schema, pool_size=args.concurrency + 2, lease_s=args.lease
    ) as store:
        worker = Worker(flow, store=store, concurrency=args.concurrency)
        stats = serve_forever(worker, grace_s=args.grace)
    print(
        f"worker stopped: {stats.claims} claims, {stats.runs} runs, {stats.rejected} inputs "
        f"rejected, {stats.errors} failed runs",
        file=out,
    )
    return 0
