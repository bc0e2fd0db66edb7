"""``flowkit threads``: list a store's threads without running anything (``show`` and
``history``: ``thread_view``).

Listing needs no flow, and reads no journal: the store's thread index says where each thread
stands (``flowkit.stores.iter_threads``), page after page, so even ``--json`` streams. Nothing
here creates a thread or a store (a store folder's index may be built on first listing).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any, TextIO

from ..terminal.errors import CommandError
from ..terminal.inputs import positive_int
from ..terminal.output import table, when
from ..terminal.progress import progress_for
from ..terminal.store import add_store_option, open_for_reading, shown, store_location

if TYPE_CHECKING:
    from ..stores import Store, ThreadSummary

__all__ = ["register"]


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    threads = commands.add_parser("threads", parents=[common], help="list the stored threads")
    add_store_option(threads)
    threads.add_argument("--json", action="store_true", help="print JSON instead of a table")
    threads.add_argument(
        "--status", metavar="S", action="append", type=_statuses,
        help="only threads in status S: pending, waiting, done, failed, unreadable (repeatable, "
        "or a comma list)",
    )  # fmt: skip
    threads.add_argument("--flow", metavar="NAME", help="only threads of flow NAME")
    threads.add_argument(
        "--order", choices=("id", "updated"), default="id",
        help="by thread id (default), or most recently updated first",
    )  # fmt: skip
    threads.add_argument(
        "--limit", metavar="N", type=positive_int, help="at most N threads (default: all)"
    )
    threads.add_argument(
        "--cursor", metavar="C", help="continue after where a --limit listing stopped"
    )
    threads.set_defaults(run=_cmd_threads)


# -- threads -------------------------------------------------------------------------------------


def _statuses(text: str) -> list[str]:
    """argparse type: one status or a comma list of them."""
    from ..stores._listing import STATUSES

    found = [part.strip() for part in text.split(",") if part.strip()]
    unknown = [part for part in found if part not in STATUSES]
    if unknown or not found:
        raise argparse.ArgumentTypeError(
            f"{', '.join(unknown)[:60] or repr(text)} is not a status; use "
            f"{', '.join(sorted(STATUSES))}"
        )
    return found


def _listed(args: argparse.Namespace, store: Store) -> Iterator[ThreadSummary]:
    """The threads the options ask for, in order, fetched page by page: at most ``--limit``,
    with a hint on stderr that continues after them when more follow."""
    from ..errors import InvalidListingError
    from ..stores import iter_threads

    statuses = sorted({s for given in args.status or () for s in given}) or None
    found = iter_threads(
        store, status=statuses, flow=args.flow, cursor=args.cursor, order=args.order
    )
    try:
        for count, summary in enumerate(found, start=1):
            yield summary
            if args.limit is not None and count >= args.limit:
                if next(found, None) is not None:
                    print(
                        f"flowkit: more threads follow; continue with --cursor "
                        f"{summary.cursor(args.order)}",
                        file=sys.stderr,
                    )
                return
    except InvalidListingError as exc:  # a cursor that is not one (or of the other order)
        raise CommandError(str(exc), code=2) from exc


def _json_items(found: Iterable[ThreadSummary]) -> Iterator[str]:
    """Each thread as ``write_json`` prints it inside the list, written by hand around the C
    encoder (``indent=2`` takes json's Python encoder: most of what 20,000 threads cost)."""
    import json
    from datetime import UTC, datetime

    encode = json.JSONEncoder(ensure_ascii=False, default=str).encode
    for s in found:
        fields: dict[str, Any]
        if s.error is not None:
            fields = {"thread_id": s.thread_id, "status": "unreadable", "error": s.error}
        else:
            fields = {
                "thread_id": s.thread_id,
                "flow": s.flow,
                "status": s.status,
                "next": s.node,
                "version": s.version,
                "updated": datetime.fromtimestamp(s.updated, UTC).isoformat(),
                "warnings": list(s.warnings),
            }
        members = ",\n".join(
            f"    {encode(key)}: "
            + (
                json.dumps(value, indent=2, ensure_ascii=False).replace("\n", "\n    ")
                if isinstance(value, list) and value
                else encode(value)
            )
            for key, value in fields.items()
        )
        yield f"  {{\n{members}\n  }}"


def _write_json_array(items: Iterable[str], out: TextIO) -> None:
    """``write_json`` of a list whose items come already written, each as it comes."""
    first = True
    for item in items:
        out.write("[\n" if first else ",\n")
        out.write(item)
        first = False
    out.write("[]\n" if first else "\n]\n")


def _cmd_threads(args: argparse.Namespace, out: TextIO) -> int:
    """One line per thread; a thread that cannot be read is reported, the rest listed."""
    store = open_for_reading(store_location(args))
    warned: list[ThreadSummary] = []
    broken: list[ThreadSummary] = []

    def noted(found: Iterable[ThreadSummary]) -> Iterator[ThreadSummary]:
        for summary in found:
            if summary.error is not None:
                broken.append(summary)
            elif summary.warnings:
                warned.append(summary)
            yield summary

    listed = noted(_listed(args, store)) if store is not None else iter(())
    if args.json:
        _write_json_array(_json_items(listed), out)
    else:
        with progress_for(args, "threads") as progress:  # the table waits for every row
            rows = [
                [s.thread_id, "?", "unreadable", "", "", ""]
                if s.error is not None
                else [s.thread_id, s.flow, s.status, s.node, str(s.version), when(s.updated)]
                for s in progress.track(listed)
            ]
        if not rows:
            filtered = args.status or args.flow is not None or args.cursor
            which = "No matching threads" if filtered else "No threads"
            out.write(f"{which} in {shown(store_location(args))}\n")
        else:
            table([["THREAD", "FLOW", "STATUS", "NEXT", "VERSION", "UPDATED"], *rows], out)
    for summary in warned:
        for warning in summary.warnings:
            print(f"flowkit: warning: thread `{summary.thread_id}`: {warning}", file=sys.stderr)
    for summary in broken:
        print(f"flowkit: error: thread `{summary.thread_id}`: {summary.error}", file=sys.stderr)
    return 1 if broken else 0
