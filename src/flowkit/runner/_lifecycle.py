"""Thread lifecycle over a store: summaries, pruning and the compaction point.

Pruning needs no flow (every record names its status, next state and time), so the same code
serves ``Runner.prune`` (the threads of its flow) and ``flowkit prune`` (any flow's).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING, Any, get_args

from ..errors import ConflictError, FlowkitError, RunError, ThreadNotFoundError
from ..foundation._progress import OnProgress
from ..records._records import StartRecord, Status

if TYPE_CHECKING:
    from ..execution._cursor import Cursor
    from ..execution._threads import Threads
    from ..stores import Store

__all__ = [
    "PruneResult",
    "ThreadSummary",
    "check_statuses",
    "compact_thread",
    "compaction_point",
    "delete_thread",
    "older_than_seconds",
    "prune_threads",
    "summarise",
]

STATUSES: tuple[str, ...] = get_args(Status)


@dataclass(frozen=True, slots=True)
class ThreadSummary:
    """Where a stored thread stands, read without its flow."""

    thread_id: str
    flow: str
    status: Status
    next: str
    version: int
    updated: float  # seconds since the epoch, of its latest record (or snapshot)


@dataclass(frozen=True, slots=True)
class PruneResult:
    """What a prune did (or, with ``dry_run``, would do), thread ids sorted.

    ``deleted``: the threads that matched and are gone (would go). ``busy``: matched, but
    someone was running them, so they were kept. ``unreadable``: threads that could not be
    read to decide (damaged), kept, by id with the reason. ``summaries``: where each deleted
    thread stood when it was chosen.
    """

    deleted: tuple[str, ...] = ()
    busy: tuple[str, ...] = ()
    unreadable: dict[str, str] = field(default_factory=dict)
    dry_run: bool = False
    summaries: dict[str, ThreadSummary] = field(default_factory=dict, repr=False)


def summarise(store: Store, thread_id: str) -> ThreadSummary:
    log = store.load(thread_id)
    last = log.records[-1] if log.records else log.snapshot
    if last is None:
        raise ThreadNotFoundError(thread_id)
    if log.snapshot is not None:
        flow = log.snapshot.flow
    else:
        first = log.records[0]
        flow = first.flow if isinstance(first, StartRecord) else "?"
    return ThreadSummary(thread_id, flow, last.status, last.next, last.version, last.ts)


def older_than_seconds(older_than: timedelta | float | None) -> float | None:
    if older_than is None:
        return None
    if isinstance(older_than, timedelta):
        seconds = older_than.total_seconds()
    elif isinstance(older_than, int | float) and not isinstance(older_than, bool):
        try:
            seconds = float(older_than)
        except OverflowError:  # an int past any float: older than any thread can be
            seconds = math.inf if older_than > 0 else -1.0
    else:
        seconds = -1.0
    if not seconds >= 0:  # also NaN
        raise RunError(
            f"older_than={older_than!r:.40} is not an age: give a timedelta or seconds >= 0 "
            "(e.g. timedelta(days=30)).",
            thread_id="",
        )
    return seconds


def check_statuses(status: str | Iterable[str] | None) -> frozenset[str] | None:
    if status is None:
        return None
    given: Iterable[Any] = [status] if isinstance(status, str) else status
    if not isinstance(given, Iterable):
        given = [given]  # e.g. a number: reported as the unknown status it is
    wanted = [s for s in given]
    unknown = sorted({str(s)[:40] for s in wanted if not (isinstance(s, str) and s in STATUSES)})
    if unknown or not wanted:
        raise RunError(
            f"status={sorted({str(s)[:40] for s in wanted})} names no thread status it should: "
            f"{', '.join(unknown) or 'nothing given'}; use {', '.join(STATUSES)}.",
            thread_id="",
        )
    return frozenset(wanted)


def _matching(
    store: Store,
    *,
    cutoff: float | None,
    statuses: frozenset[str] | None,
    flow: str | None,
    unreadable: dict[str, str],
    on_progress: OnProgress | None = None,
) -> Iterator[ThreadSummary]:
    ids = store.threads()
    for read, thread_id in enumerate(ids):
        if on_progress is not None:
            on_progress(read, len(ids), "read")
        try:
            summary = summarise(store, thread_id)
        except ThreadNotFoundError:
            continue  # deleted meanwhile
        except (FlowkitError, OSError) as exc:  # one damaged thread must not stop the rest
            unreadable[thread_id] = str(exc).splitlines()[0]
            continue
        if flow is not None and summary.flow != flow:
            continue
        if statuses is not None and summary.status not in statuses:
            continue
        if cutoff is not None and summary.updated > cutoff:
            continue
        yield summary
    if on_progress is not None:
        on_progress(len(ids), len(ids), "read")


def prune_threads(
    store: Store,
    *,
    now: float,
    older_than: timedelta | float | None,
    status: str | Iterable[str] | None,
    flow: str | None = None,
    dry_run: bool = False,
    forget: Callable[[str], Any] | None = None,
    on_progress: OnProgress | None = None,
) -> PruneResult:
    """Delete the threads of ``flow`` (any, if ``None``) in ``status`` whose latest record is
    older than ``older_than``; ``forget(thread_id)`` after each delete (a runner's cache).
    ``on_progress(done, total, what)``: threads read so far, then threads deleted so far."""
    age = older_than_seconds(older_than)
    statuses = check_statuses(status)
    cutoff = None if age is None else now - age
    unreadable: dict[str, str] = {}
    deleted: list[str] = []
    busy: list[str] = []
    found = _matching(
        store,
        cutoff=cutoff,
        statuses=statuses,
        flow=flow,
        unreadable=unreadable,
        on_progress=on_progress,
    )
    summaries = {summary.thread_id: summary for summary in found}
    for done, thread_id in enumerate(summaries):
        if on_progress is not None and not dry_run:
            on_progress(done, len(summaries), "deleted")
        if dry_run:
            deleted.append(thread_id)
            continue
        try:
            store.delete(thread_id)
        except ConflictError:
            busy.append(thread_id)
            continue
        except ThreadNotFoundError:
            continue
        deleted.append(thread_id)
        if forget is not None:
            forget(thread_id)
    if on_progress is not None and summaries and not dry_run:
        on_progress(len(summaries), len(summaries), "deleted")
    kept = {t: summaries[t] for t in sorted(deleted)}
    return PruneResult(tuple(sorted(deleted)), tuple(sorted(busy)), unreadable, dry_run, kept)


def compaction_point(steps: list[tuple[Any, Cursor]], keep: int) -> int | None:
    """Index in ``steps`` (records with the cursor after each) of the record a compaction
    keeping ``keep`` checkpoints turns into the new start, or ``None`` for nothing to drop.

    The cut goes at or before the oldest checkpoint to keep, where the thread stands cleanly
    at a node: not between the calls of a ``Map``, inside a ``Subflow``'s child or after a
    failed attempt (a start record cannot hold those, and the step key must not change).
    """
    for index in range(len(steps) - keep, 0, -1):
        cursor = steps[index][1]
        if cursor.items is None and cursor.entered is None and cursor.sub is None:
            return index
    return None


def delete_thread(threads: Threads, thread_id: str) -> None:
    """``Runner.delete``: the thread and its history go; ``ConflictError`` while it runs."""
    try:
        if threads.store is None:
            with threads.lock(thread_id):
                threads.load(thread_id)  # ThreadNotFoundError if unknown
                threads.forget(thread_id)
            return
        threads.store.delete(thread_id)
    except ConflictError as exc:
        raise ConflictError(
            f"Thread `{thread_id}` is being run right now (by this or another process), so "
            "it was not deleted; delete it once that run has returned.",
            thread_id=thread_id,
        ) from exc
    threads.forget(thread_id)


def compact_thread(threads: Threads, thread_id: str, keep: int) -> int:
    """``Runner.compact``: the oldest checkpoint of the last ``keep`` becomes the start;
    how many records went."""
    if isinstance(keep, bool) or not isinstance(keep, int) or keep < 1:
        raise RunError(
            f"Cannot compact thread `{thread_id}` keeping {keep!r:.40} checkpoints: keep "
            "is a whole number >= 1.",
            thread_id=thread_id,
        )
    store = threads.require_store("compact")
    steps = list(threads.replay(thread_id))
    index = compaction_point(steps, keep)
    if index is None:
        return 0
    record, cursor = steps[index]
    first = steps[0][0]
    start = threads.start_record(
        thread_id, cursor, ts=record.ts, forked_from=getattr(first, "forked_from", None)
    )
    try:
        dropped = store.compact(thread_id, start)
    except ConflictError as exc:
        raise ConflictError(
            f"Thread `{thread_id}` is being run right now, so it was not compacted; "
            "compact it once that run has returned.",
            thread_id=thread_id,
        ) from exc
    threads.forget(thread_id)
    return dropped
