"""``flowkit delete`` and ``flowkit prune``: remove threads from a store.

Neither needs the thread's flow: every record names its status and time. A thread someone is
running is never removed (``delete`` fails, ``prune`` keeps it and says so). ``--dry-run``
lists what would go and changes nothing.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from typing import Any, TextIO

from ..foundation._plain import shorten
from ..terminal.errors import CommandError
from ..terminal.output import table, when, write_json
from ..terminal.progress import progress_for
from ..terminal.store import add_store_option, open_for_reading, store_location

__all__ = ["parse_age", "register"]

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86_400, "w": 604_800}
_AGE = re.compile(r"(\d+(?:\.\d+)?)([smhdw])")
#: The whole argument, checked before it is split into parts: anchored at both ends, a run of
#: digits without a unit fails once, in one pass (``findall`` alone retried from every digit,
#: quadratic: 12,000 digits took 0.8 s).
_AGES = re.compile(r"(?:\d+(?:\.\d+)?[smhdw])+")


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    delete = commands.add_parser(
        "delete", parents=[common], help="delete threads and their history from a store"
    )
    delete.add_argument("threads", nargs="+", metavar="THREAD", help="the thread ids")
    add_store_option(delete)
    delete.add_argument("--json", action="store_true", help="print JSON")
    delete.add_argument("--dry-run", action="store_true", help="only say what would go")
    delete.set_defaults(run=_cmd_delete)

    prune = commands.add_parser(
        "prune",
        parents=[common],
        help="delete old threads in some statuses (default: done ones of any age)",
    )
    add_store_option(prune)
    prune.add_argument(
        "--older-than",
        metavar="AGE",
        help="only threads whose last step is older than AGE: 45s, 90m, 12h, 30d, 2w",
    )
    prune.add_argument(
        "--status",
        default="done",
        help="comma-separated statuses to prune (pending, waiting, done, failed) or `any` "
        "(default: done)",
    )
    prune.add_argument("--flow", metavar="NAME", help="only threads of this flow")
    prune.add_argument("--json", action="store_true", help="print JSON")
    prune.add_argument("--dry-run", action="store_true", help="only say what would go")
    prune.set_defaults(run=_cmd_prune)


def parse_age(text: str) -> float:
    """Seconds in an age like ``30d`` or ``1h30m``; ``CommandError`` (exit 2) otherwise."""
    age = text.strip()
    if _AGES.fullmatch(age) is None:
        raise CommandError(
            f"--older-than {shorten(text, 40)!r}: give an age like 45s, 90m, 12h, 30d or 2w.",
            code=2,
        )
    return sum(float(number) * _UNITS[unit] for number, unit in _AGE.findall(age))


def _cmd_delete(args: argparse.Namespace, out: TextIO) -> int:
    from ..errors import CorruptStoreError, FlowkitError, ThreadNotFoundError
    from ..runner._lifecycle import ThreadSummary, summarise
    from ..stores._ids import check_thread_id

    store = open_for_reading(store_location(args))
    done: list[dict[str, Any]] = []
    failed = 0
    for thread_id in dict.fromkeys(args.threads):  # an id named twice is deleted once
        try:
            check_thread_id(thread_id)
            if store is None:
                raise ThreadNotFoundError(thread_id)
            try:
                summary = summarise(store, thread_id)
            except (CorruptStoreError, ThreadNotFoundError) as exc:
                # Deleting a damaged thread is how one gets rid of it; so is deleting what a
                # create that crashed before its first record left (listed, but no thread).
                if isinstance(exc, ThreadNotFoundError) and thread_id not in store.threads():
                    raise
                summary = ThreadSummary(thread_id, "?", "unreadable", "?", -1, 0.0)  # type: ignore[arg-type]
            if not args.dry_run:
                store.delete(thread_id)
        except FlowkitError as exc:
            print(f"flowkit: error: {exc}", file=sys.stderr)
            failed += 1
            continue
        done.append(
            {
                "thread_id": thread_id,
                "flow": summary.flow,
                "status": summary.status,
                "version": summary.version,
            }
        )
    verb = "Would delete" if args.dry_run else "Deleted"
    if args.json:
        write_json({"deleted": done, "dry_run": args.dry_run}, out)
    else:
        for each in done:
            out.write(
                f"{verb} thread `{each['thread_id']}` ({each['flow']}, {each['status']}, "
                f"version {each['version']}).\n"
            )
    return 1 if failed else 0


def _cmd_prune(args: argparse.Namespace, out: TextIO) -> int:
    from ..runner._lifecycle import STATUSES, PruneResult, prune_threads

    age = parse_age(args.older_than) if args.older_than else None
    wanted = [s.strip() for s in args.status.split(",") if s.strip()]
    statuses: list[str] | None = None if wanted == ["any"] else wanted
    unknown = [s for s in statuses or [] if s not in STATUSES]
    if unknown or statuses == []:
        raise CommandError(
            f"--status {args.status!r}: use any, or some of {', '.join(STATUSES)} "
            "separated by commas.",
            code=2,
        )
    store = open_for_reading(store_location(args))
    result = PruneResult(dry_run=args.dry_run)
    if store is not None:
        with progress_for(args, "prune") as progress:
            result = prune_threads(
                store,
                now=time.time(),
                older_than=age,
                status=statuses,
                flow=args.flow,
                dry_run=args.dry_run,
                on_progress=progress,
            )
    shown = [[s.thread_id, s.flow, s.status, when(s.updated)] for s in result.summaries.values()]
    if args.json:
        write_json(
            {
                "deleted": list(result.deleted),
                "busy": list(result.busy),
                "unreadable": result.unreadable,
                "dry_run": args.dry_run,
            },
            out,
        )
    elif not shown:
        out.write("No threads to prune.\n" if not args.dry_run else "No threads would go.\n")
    else:
        verb = "Would delete" if args.dry_run else "Deleted"
        out.write(f"{verb} {len(shown)} thread{'s' if len(shown) != 1 else ''}:\n")
        table([["THREAD", "FLOW", "STATUS", "UPDATED"], *shown], out)
    for thread_id in result.busy:
        print(f"flowkit: warning: thread `{thread_id}` is being run; kept it.", file=sys.stderr)
    for thread_id, reason in result.unreadable.items():
        print(f"flowkit: error: thread `{thread_id}`: {reason}", file=sys.stderr)
    return 1 if result.unreadable else 0
