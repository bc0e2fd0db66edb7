"""The Store protocol: the handful of methods a persistence backend implements.

Stores keep JSON-ready records and know nothing about flows. Versions make writes
optimistic (``append`` with a stale ``expected_version`` raises ``ConflictError``); ``lock``
keeps two processes from running the same thread at once. Every method that takes a thread
id checks it first (``InvalidThreadIdError``); methods that read or extend a thread raise
``ThreadNotFoundError`` for an unknown one. ``flowkit.testing.StoreContract`` checks all this.
``AttemptMarks`` is an optional capability: stores that have it let a runner note which node
it started, so a process that died inside a node can be told apart afterwards. ``TimerIndex``
is another: stores that have it keep an index of the threads whose position has a timer (a
gate's deadline, a node's wake-up), so ``Runner.fire_due`` finds the due ones without reading
every journal. ``HistoryPages`` lets a store read a page of a thread's history (a range of
versions, and a snapshot to replay it from) without reading the rest. ``ThreadIndex`` is
another: stores that have it list threads (filtered,
sorted, paged by cursor) from what they keep per thread, without loading any; without it,
``flowkit.stores.list_threads`` loads each thread.

Lifecycle (``Runner.delete``, ``prune`` and ``compact``) needs two methods: ``delete`` and
``compact``. Both refuse a thread that someone is running (its ``lock`` is held) with
``ConflictError``, and both are all or nothing as readers see them. A compacted journal starts
with a start record whose version is not 0: the whole thread as it stood at that version.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, NamedTuple, Protocol, runtime_checkable

from ..errors import ConflictError, StoreError
from ..records._records import AnyRecord, Snapshot, StartRecord
from ._listing import DEFAULT_LIMIT, ThreadPage

if TYPE_CHECKING:
    from ..records._marker import AttemptMarker

__all__ = [
    "AnyRecord",
    "AttemptMarks",
    "DueTimer",
    "HistoryPages",
    "RecordRange",
    "Store",
    "ThreadIndex",
    "ThreadLog",
    "TimerIndex",
    "attempt_marks",
    "check_compaction",
    "check_versions",
    "history_pages",
    "thread_busy",
    "thread_index",
    "timer_index",
]


@dataclass(frozen=True, slots=True)
class ThreadLog:
    """What ``load`` returns: a starting point and the records after it.

    ``base`` is the version the records continue from when the caller's ``after`` was honoured
    (an incremental read); otherwise ``None`` and the records follow ``snapshot``, or start
    with the start record when there is no snapshot. ``warnings`` reports skipped torn records.
    """

    records: Sequence[AnyRecord]
    snapshot: Snapshot | None = None
    base: int | None = None
    warnings: Sequence[str] = field(default_factory=tuple)


@runtime_checkable
class Store(Protocol):
    """Persistence for threads; ``flowkit.testing.StoreContract`` checks any implementation."""

    def create(self, thread_id: str, record: StartRecord) -> None:
        """Create a thread with its start record; ``ThreadExistsError`` if it exists."""

    def append(
        self, thread_id: str, records: Sequence[AnyRecord], *, expected_version: int
    ) -> None:
        """Append durably; ``ConflictError`` unless the thread is at ``expected_version``.

        ``records`` carry the versions ``expected_version + 1``, ``+ 2`` ... (``check_versions``);
        on any error nothing is written.
        """

    def load(self, thread_id: str, *, after: int | None = None) -> ThreadLog:
        """The latest snapshot and the records after it (or only records after ``after``).

        A store may ignore ``after`` (then ``base`` is ``None`` and the log is complete).
        """

    def records(self, thread_id: str) -> list[AnyRecord]:
        """Every record of the thread, oldest first (history, fork, replay)."""

    def snapshot_due(self, thread_id: str) -> bool:
        """Whether the store would like a snapshot now (cheap; asked after every commit)."""

    def write_snapshot(self, thread_id: str, snapshot: Snapshot) -> None:
        """Keep ``snapshot`` as the thread's latest snapshot."""

    def threads(self) -> list[str]:
        """Ids of every thread, sorted."""

    def delete(self, thread_id: str) -> None:
        """Remove the thread and everything stored for it; ``ThreadNotFoundError`` if unknown.

        All or nothing as readers see it: a thread is never left half deleted and readable.
        ``ConflictError`` (nothing deleted) while someone holds the thread's ``lock``.
        """

    def compact(self, thread_id: str, start: StartRecord) -> int:
        """Replace the records up to ``start.version`` with ``start``; how many were dropped.

        ``start`` is the whole thread as it stood after record ``start.version`` (a start
        record at that version); the journal then begins with it, the records after it
        unchanged, and ``records``/``load`` never return what was dropped. The latest snapshot
        may be dropped too. All or nothing as readers see it. ``StoreError`` (nothing changed)
        unless ``start.version`` is a version the journal holds, ``ConflictError`` while someone
        holds the thread's ``lock``, ``ThreadNotFoundError`` for an unknown thread.
        """

    def lock(self, thread_id: str) -> AbstractContextManager[None]:
        """Exclusive right to run the thread; ``ConflictError`` at once if someone holds it."""


@runtime_checkable
class AttemptMarks(Protocol):
    """Optional store capability: the latest ``AttemptMarker`` of each thread.

    ``Runner(..., track_attempts=True)`` calls ``mark_attempt`` before every node attempt. The
    marker only has to survive the death of the process that wrote it (no fsync needed): a
    lost marker costs precision, never data. Both methods check the thread id and raise
    ``ThreadNotFoundError`` for an unknown thread.
    """

    def mark_attempt(self, thread_id: str, marker: AttemptMarker) -> None:
        """Replace the thread's marker with ``marker``."""

    def last_attempt(self, thread_id: str) -> AttemptMarker | None:
        """The thread's latest marker, or ``None`` (never marked, or unreadable)."""


class RecordRange(NamedTuple):
    """What ``HistoryPages.record_range`` returns: records oldest first, and the versions of
    the thread's first record (0 unless compacted) and of its latest one."""

    records: list[AnyRecord]
    first: int
    last: int


@runtime_checkable
class HistoryPages(Protocol):
    """Optional store capability: a page of a thread's history at the cost of the page.

    ``Runner.history(limit=, before=)``, ``flowkit history --limit`` and the server's history
    route read through it; without it they read every record (``records``) and keep a page.
    Both methods check the thread id and raise ``ThreadNotFoundError`` for an unknown thread;
    damage in what they read is ``CorruptStoreError``, as for ``records``.
    """

    def record_range(self, thread_id: str, start: int, stop: int) -> RecordRange:
        """The records with ``start <= version < stop`` that the journal holds, oldest
        first, and the journal's first and latest versions."""

    def snapshot_before(self, thread_id: str, version: int) -> Snapshot | None:
        """The latest snapshot the store keeps of the thread at ``version`` or earlier (a
        page is replayed from it), or ``None``."""


def history_pages(store: object) -> HistoryPages | None:
    """``store`` as ``HistoryPages``, or ``None`` when it cannot read a page alone."""
    return store if isinstance(store, HistoryPages) else None


class DueTimer(NamedTuple):
    """A thread whose timer is due: its id and when the timer was due (epoch seconds)."""

    thread_id: str
    due: float


@runtime_checkable
class TimerIndex(Protocol):
    """Optional store capability: which threads have a timer due by a given time.

    The store keeps the index itself as records come in: ``create`` and ``append`` give the
    thread the ``due`` of the last record written (``None``: no timer), so a thread without a
    timer costs nothing more per step. Crashes may leave an entry whose thread has moved on
    (``fire_due`` re-reads the thread, finds no such timer and calls ``drop_timer``), never a
    timer without its entry, nor an entry later than its timer. ``delete`` removes the
    thread's entries. ``flowkit.testing.StoreContract`` does not require it: without it,
    ``fire_due`` reads every thread.
    """

    def due_timers(
        self,
        until: float,
        *,
        flow: str | None = None,
        limit: int | None = None,
        after: DueTimer | None = None,
    ) -> list[DueTimer]:
        """The threads (of ``flow``; ``None``: of any flow) whose timer is due at or before
        ``until`` (seconds since the epoch), earliest first (ties by thread id), at most
        ``limit`` of them, from just after ``after`` in that order (a page's last timer:
        ``flowkit.stores.list_due_timers`` pages so)."""

    def drop_timer(self, thread_id: str, due: float) -> None:
        """Forget the entry of ``thread_id`` due at ``due`` if it is still there (a stale one:
        the thread has no such timer any more); an entry with another time stays."""


@runtime_checkable
class ThreadIndex(Protocol):
    """Optional store capability: list threads from what the store keeps per thread.

    The store keeps each thread's ``ThreadSummary`` as records come in (``create``,
    ``append``, ``compact``, ``delete``), so a listing reads no journal. Arguments are checked
    with ``flowkit.stores._listing.thread_query`` and cursors made by
    ``ThreadSummary.cursor``, so every store pages alike: a listing paged through while
    threads are created and deleted never gives a thread twice, nor misses one that existed
    all along and was not updated meanwhile (in order ``id``, not even an updated one).
    ``flowkit.testing.StoreContract`` checks listings through ``flowkit.stores.list_threads``,
    which reads every thread of a store without this capability.
    """

    def list_threads(
        self,
        *,
        status: str | Iterable[str] | None = None,
        flow: str | None = None,
        updated_before: float | datetime | None = None,
        updated_after: float | datetime | None = None,
        limit: int = DEFAULT_LIMIT,
        cursor: str | None = None,
        order: str = "updated",
    ) -> ThreadPage:
        """One page of the threads that pass the filters: ``status`` (one or several),
        ``flow``, last updated before ``updated_before`` (exclusive) and at or after
        ``updated_after`` (seconds since the epoch, or datetimes), in ``order`` (``updated``:
        most recent first, ties by thread id; ``id``: by thread id), at most ``limit`` (1 to
        10,000), starting after ``cursor`` (a page's ``next_cursor``)."""

    def count_threads(
        self,
        *,
        status: str | Iterable[str] | None = None,
        flow: str | None = None,
        updated_before: float | datetime | None = None,
        updated_after: float | datetime | None = None,
    ) -> int:
        """How many threads pass the filters (as ``list_threads`` applies them)."""


def thread_index(store: object) -> ThreadIndex | None:
    """``store`` as a ``ThreadIndex``, or ``None`` when it keeps none."""
    return store if isinstance(store, ThreadIndex) else None


def timer_index(store: object) -> TimerIndex | None:
    """``store`` as a ``TimerIndex``, or ``None`` when it keeps none."""
    return store if isinstance(store, TimerIndex) else None


def attempt_marks(store: object) -> AttemptMarks:
    """``store`` as ``AttemptMarks``, or a ``TypeError`` that says what is missing."""
    if not isinstance(store, AttemptMarks):
        raise TypeError(
            f"track_attempts=True needs a store that keeps attempt markers (mark_attempt / "
            f"last_attempt); {store!r} does not. Use JsonFileStore or MemoryStore, or add "
            "the two methods to your store."
        )
    return store


def check_compaction(thread_id: str, start: StartRecord, first: int, last: int) -> None:
    """Raise ``StoreError`` unless ``start`` can replace the journal's records ``first`` ...
    ``start.version`` (it must be a start record at a version the journal holds)."""
    if not isinstance(start, StartRecord) or not first <= start.version <= last:
        got = f"{start.kind} v{start.version}" if hasattr(start, "kind") else repr(start)[:40]
        raise StoreError(
            f"Cannot compact thread `{thread_id}` (versions {first} to {last}) at {got}: give "
            "a start record at a version the journal holds. Nothing was changed.",
            thread_id=thread_id,
        )


def check_versions(thread_id: str, records: Sequence[AnyRecord], expected_version: int) -> None:
    """Raise ``StoreError`` unless ``records`` continue a thread at ``expected_version``.

    A gap or repeat would make the journal unreadable later, so stores refuse it up front.
    """
    for offset, record in enumerate(records, start=1):
        if record.version != expected_version + offset or record.kind == "start":
            got = ", ".join(f"{r.kind} v{r.version}" for r in records[:5])
            got += " ..." if len(records) > 5 else ""
            raise StoreError(
                f"Records appended to thread `{thread_id}` at version {expected_version} must "
                f"be non-start records numbered {expected_version + 1}, {expected_version + 2} "
                f"...; got {got}. Nothing was written.",
                thread_id=thread_id,
            )


def thread_busy(thread_id: str) -> ConflictError:
    """The error for a lock another run holds. A lock guards every write (a step, a resume, a
    patch, a delete, a migration), so the words fit whichever one was refused."""
    return ConflictError(
        f"Thread `{thread_id}` is being run by another process or runner right now, so "
        "nothing was changed; try again once that run has finished.",
        thread_id=thread_id,
    )
