"""The Store protocol: the handful of methods a persistence backend implements.

Stores keep JSON-ready records and know nothing about flows. Versions make writes
optimistic (``append`` with a stale ``expected_version`` raises ``ConflictError``); ``lock``
keeps two processes from running the same thread at once. Every method that takes a thread
id checks it first (``InvalidThreadIdError``); methods that read or extend a thread raise
``ThreadNotFoundError`` for an unknown one. ``flowkit.testing.StoreContract`` checks all this.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from .._records import InputRecord, PatchRecord, Snapshot, StartRecord, StepRecord
from ..errors import StoreError

__all__ = ["AnyRecord", "Store", "ThreadLog", "check_versions"]

AnyRecord = StartRecord | StepRecord | InputRecord | PatchRecord


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

    def lock(self, thread_id: str) -> AbstractContextManager[None]:
        """Exclusive right to run the thread; ``ConflictError`` at once if someone holds it."""


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
