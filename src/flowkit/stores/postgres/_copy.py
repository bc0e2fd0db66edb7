"""Moving threads between stores (a JSON-file folder and PostgreSQL, either way), exactly.

Each thread is copied under both stores' locks: its records in order (the start record, then
the rest in one append), its latest snapshot and attempt marker, then read back and compared
record by record. A thread that exists in the destination is left alone and reported.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from ...errors import FlowkitError, StoreError
from ...foundation._progress import OnProgress
from ...records._records import StartRecord
from .._protocol import AttemptMarks, Store

__all__ = ["CopyReport", "copy_threads"]


@dataclass(slots=True)
class CopyReport:
    """Threads copied (with how many records each) and threads that failed, with why."""

    copied: dict[str, int] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)


def copy_threads(
    source: Store,
    target: Store,
    threads: Iterable[str] | None = None,
    *,
    on_progress: OnProgress | None = None,
) -> CopyReport:
    """Copy ``threads`` (default: all) from ``source`` to ``target``; see the module doc.
    ``on_progress(done, total, "copied")`` is called after each thread (copied or failed)."""
    report = CopyReport()
    chosen = source.threads() if threads is None else list(threads)
    for done, thread_id in enumerate(chosen, 1):
        try:
            report.copied[thread_id] = _copy_one(source, target, thread_id)
        except FlowkitError as exc:
            report.failed[thread_id] = str(exc).splitlines()[0]
        if on_progress is not None:
            on_progress(done, len(chosen), "copied")
    return report


def _copy_one(source: Store, target: Store, thread_id: str) -> int:
    with source.lock(thread_id), target.lock(thread_id):
        records = source.records(thread_id)
        snapshot = source.load(thread_id).snapshot
        first, rest = records[0], records[1:]
        if not isinstance(first, StartRecord):
            raise StoreError(
                f"Thread `{thread_id}` does not begin with a start record; not copied.",
                thread_id=thread_id,
            )
        target.create(thread_id, first)
        if rest:
            target.append(thread_id, rest, expected_version=first.version)
        if snapshot is not None:
            target.write_snapshot(thread_id, snapshot)
        if isinstance(source, AttemptMarks) and isinstance(target, AttemptMarks):
            marker = source.last_attempt(thread_id)
            if marker is not None:
                target.mark_attempt(thread_id, marker)
        if target.records(thread_id) != records:
            raise StoreError(
                f"Thread `{thread_id}` reads back differently from the destination; delete it "
                "there and copy again.",
                thread_id=thread_id,
            )
    return len(records)
