"""How ``PostgresStore`` opens a thread: its snapshot row and the record rows after it, read
in one statement and checked as one unbroken run up to the version row; a damaged snapshot
row is a cache lost, rebuilt from the records."""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...errors import CorruptStoreError
from ...errors import ThreadNotFoundError as NotFound
from ...foundation._logging import get_logger
from .._ids import check_thread_id
from .._protocol import ThreadLog
from ._continuity import Extent, breakage, check_run, run_problems
from ._pool import retried
from ._rows import record_from_row, snapshot_from_row
from ._sql import Statements

if TYPE_CHECKING:
    import psycopg

__all__ = ["Known", "PostgresLoading"]


@dataclass(slots=True)
class Known:
    """What this object last saw of a thread: which incarnation (a deleted and recreated id
    is a new one), its version, bytes and records since its snapshot, and its status (for
    ``snapshot_due``)."""

    incarnation: int
    version: int
    snapshot_bytes: int
    since_snapshot: int
    since_records: int = 0
    status: str = "pending"
    #: Journal bytes since the last snapshot this object added to the trail (-1: none yet).
    since_trail: int = -1


class PostgresLoading:
    """Mixed into ``PostgresStore``: ``load``."""

    schema: str
    verify_on_open: bool
    _sql: Statements
    _guard: threading.Lock
    _known: dict[str, Known]
    #: The host store's connection for ``thread_id``, as ``PostgresStore._conn``.
    _conn: Callable[..., AbstractContextManager[Any]]

    def load(self, thread_id: str, *, after: int | None = None) -> ThreadLog:
        check_thread_id(thread_id)
        known = self._known.get(thread_id)
        if after is not None and known is not None:
            params = {"thread": thread_id, "after": after}
            statement = self._sql.load_after
            rows = retried(
                self._conn,
                thread_id,
                lambda c: c.execute(statement, params, binary=True).fetchall(),
            )
            if not rows:
                raise NotFound(thread_id)
            version, incarnation = int(rows[0][0]), int(rows[0][1])
            # Honoured only where the record at `after` is still there and the rows after it
            # run without a gap up to the version row; a compaction past `after` leaves a
            # start record first. Else the whole log is read (and checked).
            if incarnation == known.incarnation and rows[0][2] == after:
                found = [record_from_row(self.schema, thread_id, r[2], r[3]) for r in rows[1:]]
                if not run_problems(found, after=after, version=version):
                    with self._guard:
                        known.version = version
                        known.since_snapshot += sum(len(r[3]) for r in rows[1:])
                        known.since_records += len(found)
                        if found:
                            known.status = found[-1].status
                    return ThreadLog(records=found, base=after)
        return self._load_full(thread_id)

    def _load_full(self, thread_id: str) -> ThreadLog:
        statement = self._sql.load_full_verified if self.verify_on_open else self._sql.load_full

        def read(conn: psycopg.Connection[Any]) -> list[tuple[Any, ...]]:
            # Binary results: a bytea in text form comes as hex, twice its size to send and decode
            # (a 200 KB snapshot: ~1.1 ms against ~0.2 ms).
            rows = conn.execute(statement, {"thread": thread_id}, binary=True).fetchall()
            if not rows or rows[0][0] != 0:
                raise NotFound(thread_id)
            extent = Extent.from_row((rows[0][1], *rows[0][4:]))
            intact = extent.intact if self.verify_on_open else extent.intact_from_snapshot
            if not intact:  # read and name every gap (the whole run)
                broken = breakage(conn, self._sql, self.schema, thread_id)
                if broken is not None:
                    raise broken
            return rows

        rows = retried(self._conn, thread_id, read)
        version, incarnation, raw_snapshot = rows[0][1:4]
        try:
            snapshot = (
                snapshot_from_row(self.schema, thread_id, raw_snapshot)
                if raw_snapshot is not None
                else None
            )
        except CorruptStoreError as exc:  # a snapshot is a cache: the records rebuild it
            get_logger().warning(
                "snapshot_ignored", thread_id=thread_id, reason=str(exc).splitlines()[0]
            )
            rows, raw_snapshot, snapshot = self._journal_alone(thread_id), None, None
        found = [record_from_row(self.schema, thread_id, r[1], r[3]) for r in rows[1:]]
        after = snapshot.version if snapshot is not None else None
        check_run(self.schema, thread_id, found, after=after, version=int(version))
        base_bytes = len(raw_snapshot) if raw_snapshot is not None else len(rows[1][3])
        since = sum(len(r[3]) for r in rows[1:]) - (0 if raw_snapshot is not None else base_bytes)
        replayed = len(found) - (0 if snapshot is not None else 1)
        last = found[-1] if found else snapshot
        status = last.status if last is not None else "pending"
        with self._guard:
            self._known[thread_id] = Known(
                int(incarnation), int(version), base_bytes, since, replayed, status
            )
        return ThreadLog(records=found, snapshot=snapshot)

    def _journal_alone(self, thread_id: str) -> list[tuple[Any, ...]]:
        """Every record row of ``thread_id`` after its version row (as ``load_full`` gives
        them, without a snapshot): where its snapshot row is damaged."""
        statement, params = self._sql.records, {"thread": thread_id}
        rows = retried(
            self._conn, thread_id, lambda c: c.execute(statement, params, binary=True).fetchall()
        )
        if not rows or rows[0][0] != 0 or len(rows) < 2:
            raise NotFound(thread_id)
        return [(0, rows[0][1], None, None), *((1, r[1], None, r[2]) for r in rows[1:])]
