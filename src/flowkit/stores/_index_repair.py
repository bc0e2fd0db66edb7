"""Putting the JSON-file store's thread index right from the journals: a whole rebuild, or the
rows a dead writer may have left stale.

Rows are written in SQLite write transactions that also read the journals they describe, a
batch of threads at a time. A live writer updates a row only after writing its journal, and
its update waits while such a transaction runs; so whichever lands last holds the journal's
latest state, and a rebuild never needs the writers to stop. A thread whose journal cannot be
read is indexed as ``unreadable``, with why, as ``flowkit threads`` lists it.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Collection, Iterator
from pathlib import Path

from ..errors import FlowkitError, ThreadNotFoundError
from ..foundation._progress import OnProgress
from ..records._records import RecordAdapter
from ._ids import is_thread_id
from ._index_db import IndexDB
from ._jsonfile_reader import JOURNAL, JsonFileReader
from ._jsonl import record_body, unseal
from ._list_threads import summary_of, unreadable
from ._listing import ThreadSummary

__all__ = ["has_threads", "journal_summaries", "rebuild", "verify"]

#: Threads read and written per transaction: a live writer's row update waits at most this
#: many journal reads.
BATCH = 100


def rebuild(db: IndexDB, root: Path, on_progress: OnProgress | None = None) -> int:
    """Every thread's row from its journal, and no row for a thread that is gone; how many
    threads were indexed (unreadable ones included)."""
    threads_dir = root / "threads"
    ids = JsonFileReader(root, max_open_files=8).threads()
    seen: set[str] = set()
    for start in range(0, len(ids), BATCH):
        journals = JsonFileReader(root, max_open_files=8)  # per batch: its caches stay small
        with db.transaction():
            rows = [_read(journals, threads_dir, t) for t in ids[start : start + BATCH]]
            found = [row for row in rows if row is not None]
            db.replace(found)
        seen.update(row.thread_id for row in found)
        if on_progress is not None:
            on_progress(min(start + BATCH, len(ids)), len(ids), "indexed")
    with db.transaction():
        for thread_id in db.ids():
            if thread_id not in seen and not _has_journal(threads_dir, thread_id):
                db.drop(thread_id)
    return len(seen)


def verify(db: IndexDB, root: Path, threads: Collection[str]) -> None:
    """The rows of ``threads`` read again from their journals (dropped if they are gone)."""
    if not threads:
        return
    journals = JsonFileReader(root, max_open_files=8)
    with db.transaction():
        for thread_id in sorted(set(threads)):
            row = _read(journals, root / "threads", thread_id)
            if row is None:
                db.drop(thread_id)
            else:
                db.replace([row])


def summaries(root: Path, threads: Collection[str]) -> list[ThreadSummary]:
    """The summaries of ``threads`` read from their journals (those gone left out)."""
    journals = JsonFileReader(root, max_open_files=8)
    found = (_read(journals, root / "threads", thread_id) for thread_id in sorted(threads))
    return [summary for summary in found if summary is not None]


def journal_summaries(root: Path) -> Iterator[ThreadSummary]:
    """Every thread's summary read from its journal (listing without an index)."""
    journals = JsonFileReader(root, max_open_files=8)
    for thread_id in journals.threads():
        row = _read(journals, root / "threads", thread_id)
        if row is not None:
            yield row


def has_threads(root: Path) -> bool:
    """Whether the store holds any thread folder (a new index must then be filled)."""
    try:
        with os.scandir(root / "threads") as entries:
            return any(is_thread_id(entry.name) for entry in entries)
    except FileNotFoundError:
        return False


def _has_journal(threads_dir: Path, thread_id: str) -> bool:
    try:
        return os.stat(threads_dir / thread_id / JOURNAL).st_size > 0
    except OSError:
        return False


def _read(journals: JsonFileReader, threads_dir: Path, thread_id: str) -> ThreadSummary | None:
    """A thread's row from its journal; ``None`` if it has none (deleted, or a create that
    never wrote a byte), ``unreadable`` if it cannot be read."""
    path = threads_dir / thread_id / JOURNAL
    try:
        found = os.stat(path)
    except OSError:
        return None
    if not found.st_size:
        return None
    try:
        log = journals.load(thread_id)
    except (FlowkitError, OSError) as exc:
        if isinstance(exc, ThreadNotFoundError) and not _has_journal(threads_dir, thread_id):
            return None  # deleted while we looked
        return unreadable(thread_id, str(exc), updated=found.st_mtime)
    summary = summary_of(thread_id, log)
    if summary.created is None and log.snapshot is not None:
        summary = dataclasses.replace(summary, created=_created(path))
    return summary


def _created(journal: Path) -> float | None:
    """When the thread began: its journal's first record, if that is its version-0 start."""
    try:
        with open(journal, "rb") as handle:
            line = handle.readline()
        body, intact = unseal(line.rstrip(b"\n"))
        record = RecordAdapter.validate_json(record_body(body)) if intact is not False else None
    except (OSError, ValueError):
        return None
    if record is None or record.kind != "start" or record.version != 0:
        return None
    return record.ts
