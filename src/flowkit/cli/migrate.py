"""``flowkit migrate``: bring every stored thread of a flow up to the flow's version.

Threads are migrated lazily when they are resumed; this does it ahead of a deploy's traffic,
and ``--dry-run`` lists the threads a changed flow affects without writing anything. A thread
that cannot be migrated is reported with the reason and the rest go on; the exit code is 1
when any could not.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any, TextIO

from ..terminal.inputs import TARGET_HELP, load_target
from ..terminal.output import table, write_json
from ..terminal.progress import progress_for
from ..terminal.store import add_store_option, open_for_reading, store_location

if TYPE_CHECKING:
    from ..execution._upgrade import MigrationReport

__all__ = ["register"]


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    migrate = commands.add_parser(
        "migrate",
        parents=[common],
        help="upgrade stored threads to the flow's version",
    )
    migrate.add_argument("target", metavar="TARGET", help=TARGET_HELP)
    add_store_option(migrate)
    migrate.add_argument(
        "--dry-run", action="store_true", help="list what would change; write nothing"
    )
    migrate.add_argument(
        "--all", action="store_true", help="also list threads already at the flow's version"
    )
    migrate.add_argument("--json", action="store_true", help="print JSON")
    migrate.set_defaults(run=_cmd_migrate)


def _cmd_migrate(args: argparse.Namespace, out: TextIO) -> int:
    from ..errors import FlowkitError
    from ..runner._runner import Runner
    from ._resolve import flow_name_of

    flow = load_target(args.target)
    store = open_for_reading(store_location(args))
    reports: list[MigrationReport] = []
    failed: dict[str, str] = {}
    if store is not None:
        runner: Runner[Any] = Runner(flow, store=store)
        ids = store.threads()
        with progress_for(args, "migrate", total=len(ids)) as progress:
            for thread_id in progress.track(ids):
                try:
                    if flow_name_of(store, thread_id) != flow.name:
                        continue  # another flow's thread shares the store
                    reports.append(runner.migrate(thread_id, dry_run=args.dry_run))
                except (FlowkitError, OSError) as exc:  # one bad thread must not stop the rest
                    failed[thread_id] = str(exc)
    shown = [r for r in reports if r.affected or args.all]
    if args.json:
        write_json(
            {
                "flow": flow.name,
                "version": flow.version,
                "dry_run": args.dry_run,
                "threads": [r.to_json() for r in shown],
                "failed": [{"thread_id": t, "error": e} for t, e in sorted(failed.items())],
            },
            out,
        )
    else:
        _print(flow.name, flow.version, shown, args.dry_run, out)
    for thread_id, message in sorted(failed.items()):
        print(f"flowkit: error: thread `{thread_id}`: {message}", file=sys.stderr)
    return 1 if failed else 0


def _print(
    name: str, version: int, reports: list[MigrationReport], dry_run: bool, out: TextIO
) -> None:
    affected = [r for r in reports if r.affected]
    verb = "would migrate" if dry_run else "migrated"
    out.write(f"Flow `{name}` version {version}: {verb} {len(affected)} thread(s).\n")
    if not reports:
        return
    rows = [["THREAD", "FROM", "TO", "POSITION", "STATUS", "CHANGED", "RECORD"]]
    for r in sorted(reports, key=lambda r: r.thread_id):
        moved = (
            r.node_before if r.node_before == r.node_after else f"{r.node_before} -> {r.node_after}"
        )
        changed = ", ".join([*r.changed, *(f"-{d}" for d in r.dropped)]) or "-"
        record = "-" if r.record is None else str(r.record)
        rows.append(
            [r.thread_id, str(r.from_version), str(r.to_version), moved, r.status, changed, record]
        )
    table(rows, out)
