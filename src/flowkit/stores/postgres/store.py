"""PostgresStore: threads in PostgreSQL, shared by many processes and machines.

Each step is one statement: compare-and-set of the thread's version, the journal record (the
same O(Δ) JSON as a journal line) and its event row, committed together or not at all. A
writer that read an old version gets ``ConflictError``; two writers can never fork a thread.
Locks are leases with a heartbeat (``_leases``); workers claim runnable threads from the same
tables (``flowkit.workers``). The timer index (``TimerIndex``) is the threads' ``due_at``
column, set by the same statement as the record; so is the thread index (``ThreadIndex``:
``_listing``), the row's status, next node and times. The schema comes only from ``flowkit
store init URL``.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING, Any, Literal

from ...errors import ConflictError, CorruptStoreError, StoreError, ThreadExistsError
from ...errors import ThreadNotFoundError as NotFound
from ...foundation._logging import get_logger
from ...records._marker import AttemptMarker
from ...records._records import Snapshot, StartRecord
from .._ids import check_thread_id
from .._jsonl import encode
from .._protocol import (
    AnyRecord,
    DueTimer,
    RecordRange,
    check_compaction,
    check_versions,
)
from .._snapshot_policy import SnapshotPolicy
from ._continuity import Extent, breakage, broken_journal, check_run, describe
from ._driver import check_url, connect, load_driver, pg_error, redact, valid_schema
from ._eventrows import event_body
from ._leases import Leases
from ._listing import PostgresListing
from ._loading import Known, PostgresLoading
from ._pages import read_range, snapshot_before, trail_statements
from ._pool import open_pool, retried
from ._queue import WorkQueue
from ._rows import record_from_row
from ._schema import schema_version
from ._sql import Statements

if TYPE_CHECKING:
    import psycopg
    import psycopg_pool

__all__ = ["PostgresStore"]


#: The longest lease a store takes: a crashed worker's threads stay locked that long.
MAX_LEASE_S = 24 * 3600.0


class PostgresStore(PostgresLoading, WorkQueue, PostgresListing):
    """Threads in the PostgreSQL database at ``url`` (``postgresql://USER@HOST:PORT/DB``).

    The schema (``schema``, default ``flowkit``) must exist: ``flowkit store init URL``.
    ``pool_size``: most connections this object opens (one per concurrent call).
    ``lease_s``: how long a lock outlives a process that stopped renewing it (a crash).
    ``notify``: when to wake event readers with NOTIFY: ``status`` (default) at commits that
    change where a thread stands (waits, finishes, failures; readers poll for the rest),
    ``all`` at every commit, ``none`` never. NOTIFY serialises the commits that use it
    server-wide, so ``all`` costs throughput with many workers.
    ``snapshot_every``, ``snapshot_ratio`` and ``min_snapshot_bytes`` as for ``JsonFileStore``
    (``_snapshot_policy``). Opening a thread reads its snapshot and the rows after it, and
    checks those rows as one unbroken run up to the version row; the rows before the snapshot
    are checked when the history is read, or, with ``verify_on_open=True``, by every full load
    too (an aggregate over all the thread's rows: ~1 ms per 1,000 records). Close it (or use
    ``with``) to give back leases and connections.
    """

    def __init__(
        self,
        url: str,
        *,
        schema: str = "flowkit",
        pool_size: int = 10,
        lease_s: float = 30.0,
        notify: Literal["status", "all", "none"] = "status",
        connect_timeout: float = 10.0,
        snapshot_every: int = 64,
        snapshot_ratio: float = 8.0,
        min_snapshot_bytes: int = 64 * 1024,
        verify_on_open: bool = False,
    ) -> None:
        self.url = check_url(url)
        self.schema = valid_schema(schema)
        if isinstance(lease_s, bool) or not 0 < lease_s <= MAX_LEASE_S:
            # Past a day (or infinite) a crashed worker's threads would stay locked as long,
            # and PostgreSQL refuses intervals that large: every claim failed.
            raise StoreError(
                f"lease_s must be a number of seconds above 0 and at most {MAX_LEASE_S:.0f} "
                f"(a day), got {lease_s!r:.40}"
            )
        self.snapshot_ratio = snapshot_ratio
        self.min_snapshot_bytes = min_snapshot_bytes
        self._snapshots = SnapshotPolicy.checked(snapshot_every, snapshot_ratio, min_snapshot_bytes)
        self.verify_on_open = verify_on_open
        self._psycopg, _ = load_driver()
        with connect(url, timeout=connect_timeout) as conn:
            schema_version(conn, url, schema)
        self._pool: psycopg_pool.ConnectionPool = open_pool(
            url, min_size=1, max_size=max(2, pool_size), timeout=connect_timeout
        )
        if notify not in ("status", "all", "none"):
            raise StoreError(f"notify must be 'status', 'all' or 'none', got {notify!r:.40}")
        self.notify = notify
        self._sql = Statements.build(schema)
        self._known: dict[str, Known] = {}
        self._guard = threading.Lock()
        self._leases = Leases(schema, self._conn, lease_s)
        self._claims = 0  # ``WorkQueue.claim_next``'s turns
        self._consume: dict[str, int] = {}  # thread -> work item its next write consumes
        self._closed = False

    def __repr__(self) -> str:
        return f"PostgresStore({redact(self.url)!r}, schema={self.schema!r})"

    def close(self) -> None:
        """Give back every lease, then close the connections (idempotent)."""
        if self._closed:
            return
        # The leases first: each is given back over a connection of the pool, which a store
        # marked closed refuses (they were kept until they expired, the thread locked).
        self._leases.close()
        self._closed = True
        self._pool.close()

    def __enter__(self) -> PostgresStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _conn(self, thread_id: str | None = None) -> Iterator[psycopg.Connection[Any]]:
        """A pooled connection; driver errors leave as ``StoreError`` naming the server."""
        if self._closed:
            raise StoreError(f"{self!r} is closed; open a new PostgresStore.", thread_id=thread_id)
        try:
            with self._pool.connection() as conn:
                yield conn
        except self._psycopg.Error as exc:
            raise pg_error(exc, self.url, "run the query", thread_id=thread_id or None) from exc

    # -- writing -------------------------------------------------------------------------------

    def create(self, thread_id: str, record: StartRecord) -> None:
        body = encode(check_thread_id(thread_id), record)
        params = {
            "thread": thread_id,
            "version": record.version,
            "flow": record.flow,
            "status": record.status,
            "next": record.next,
            "due": record.due,
            "ts": record.ts,
            "created": record.ts if record.version == 0 else None,
            "body": body,
            "event": event_body(record),
        }
        with self._conn(thread_id) as conn, self._consuming(conn, thread_id):
            wake = self.notify == "all" or (self.notify == "status" and record.status != "pending")
            statement = self._sql.create_notify if wake else self._sql.create
            row = conn.execute(statement, params).fetchone()
            if row is None:
                raise ThreadExistsError(thread_id)
        with self._guard:
            known = Known(int(row[0]), record.version, len(body), 0, 0, record.status)
            self._known[thread_id] = known

    def append(
        self, thread_id: str, records: Sequence[AnyRecord], *, expected_version: int
    ) -> None:
        check_versions(check_thread_id(thread_id), records, expected_version)
        if not records:
            self._check_version(thread_id, expected_version)
            return
        bodies = [encode(thread_id, r) for r in records]
        last = records[-1]
        params: dict[str, Any] = {
            "thread": thread_id,
            "expected": expected_version,
            "version": last.version,
            "status": last.status,
            "next": last.next,
            "due": last.due,
            "ts": last.ts,
        }
        single = len(records) == 1
        if single:
            params.update(kind=last.kind, body=bodies[0], event=event_body(last))
        else:
            params.update(
                versions=[r.version for r in records],
                kinds=[r.kind for r in records],
                bodies=bodies,
                events=[event_body(r) for r in records],
            )
        wake = self.notify == "all" or (self.notify == "status" and last.status != "pending")
        sql = self._sql
        statement = (
            (sql.append_one_notify if wake else sql.append_one)
            if single
            else (sql.append_notify if wake else sql.append)
        )
        with self._conn(thread_id) as conn, self._consuming(conn, thread_id):
            if thread_id not in self._known:  # never read here: check the whole run first
                broken = breakage(conn, self._sql, self.schema, thread_id)
                if broken is not None:
                    raise broken
            row = conn.execute(statement, params).fetchone()
            if row is None:
                raise self._refusal(conn, thread_id, expected_version)
        written = sum(map(len, bodies))
        with self._guard:
            known = self._known.get(thread_id)
            if known is not None and known.incarnation == row[0]:
                known.version = last.version
                known.since_snapshot += written
                known.since_records += len(records)
                known.status = last.status
            else:
                self._known[thread_id] = Known(
                    int(row[0]), last.version, written, written, len(records),
                    last.status,
                )  # fmt: skip

    @contextmanager
    def _consuming(self, conn: psycopg.Connection[Any], thread_id: str) -> Iterator[None]:
        """Run the write alone, or, when a worker handed this thread a work item, in one
        transaction with marking that item done: the input is used exactly once."""
        with self._guard:
            item = self._consume.pop(thread_id, None)
        if item is None:
            yield
            return
        with conn.transaction():
            self.mark_done(conn, thread_id, item)
            yield

    def _refusal(
        self, conn: psycopg.Connection[Any], thread_id: str, expected: int
    ) -> ConflictError | NotFound | CorruptStoreError:
        """Why a write was refused: an unknown thread, a broken one, or another writer."""
        row = conn.execute(self._sql.extent, {"thread": thread_id}).fetchone()
        if row is None:
            return NotFound(thread_id)
        extent = Extent.from_row(row)
        broken = breakage(conn, self._sql, self.schema, thread_id, extent)
        return broken or _conflict(thread_id, expected, extent.version)

    def _check_version(self, thread_id: str, expected: int) -> None:
        with self._conn(thread_id) as conn:
            refusal = self._refusal(conn, thread_id, expected)
        if not isinstance(refusal, ConflictError) or refusal.actual != expected:
            raise refusal

    # -- reading -------------------------------------------------------------------------------

    def record_range(self, thread_id: str, start: int, stop: int) -> RecordRange:
        return read_range(self.schema, self._conn, check_thread_id(thread_id), start, stop)

    def snapshot_before(self, thread_id: str, version: int) -> Snapshot | None:
        return snapshot_before(self.schema, self._conn, check_thread_id(thread_id), version)

    def records(self, thread_id: str) -> list[AnyRecord]:
        params = {"thread": check_thread_id(thread_id)}
        rows = retried(
            self._conn, thread_id, lambda c: c.execute(self._sql.records, params).fetchall()
        )
        if not rows or rows[0][0] != 0:
            raise NotFound(thread_id)
        version = int(rows[0][1])
        problems = describe(version, None, [(int(r[1]), str(r[3])) for r in rows[1:]])
        if problems:
            raise broken_journal(self.schema, thread_id, problems)
        found = [record_from_row(self.schema, thread_id, r[1], r[2]) for r in rows[1:]]
        check_run(self.schema, thread_id, found, after=None, version=version)
        return found

    def threads(self) -> list[str]:
        rows = retried(self._conn, None, lambda c: c.execute(self._sql.threads).fetchall())
        return sorted(str(row[0]) for row in rows)

    # -- snapshots -----------------------------------------------------------------------------

    def snapshot_due(self, thread_id: str) -> bool:
        known = self._known.get(check_thread_id(thread_id))
        if known is None:
            return False
        return self._snapshots.due(
            records=known.since_records,
            since=known.since_snapshot,
            snapshot=known.snapshot_bytes,
            status=known.status,
        )

    def write_snapshot(self, thread_id: str, snapshot: Snapshot) -> None:
        """Keep ``snapshot``, committed without waiting for the disk: a snapshot is a cache,
        and one lost in a server crash only means the records after the previous one are
        replayed."""
        body = encode(check_thread_id(thread_id), snapshot)
        if snapshot.version < 0:
            raise _conflict(thread_id, snapshot.version, None, snapshot=True)
        with self._guard:
            known = self._known.get(thread_id)
            at_tail = known is not None and known.version == snapshot.version
            grown = known.since_trail + known.since_snapshot if known and at_tail else -1
        params = {"thread": thread_id, "version": snapshot.version, "body": body}
        with self._conn(thread_id) as conn, conn.transaction():
            conn.execute(b"SET LOCAL synchronous_commit = off")
            row = conn.execute(self._sql.snapshot, params).fetchone()
            if row is None:
                found = conn.execute(self._sql.version, (thread_id,)).fetchone()
                if found is None:
                    raise NotFound(thread_id)
                raise _conflict(thread_id, snapshot.version, int(found[0]), snapshot=True)
            # Pages of history replay from the trail (``_pages``): it keeps a snapshot once
            # the journal has grown by `snapshot_ratio` times its size.
            trail = grown < 0 or grown >= self.snapshot_ratio * len(body)
            if trail:
                conn.execute(trail_statements(self.schema).add, params)
        with self._guard:
            if at_tail and known is not None and known.version == snapshot.version:
                known.snapshot_bytes, known.since_snapshot, known.since_records = len(body), 0, 0
                known.since_trail = 0 if trail else grown

    # -- delete, attempt marks, locks -----------------------------------------------------------

    def delete(self, thread_id: str) -> None:
        """Remove the thread, its journal, snapshot, marker, events and queued or used inputs, in
        one transaction."""
        with self.lock(thread_id), self._conn(thread_id) as conn, conn.transaction():
            for statement in self._sql.delete:
                gone = conn.execute(statement, (thread_id,)).rowcount
            if not gone:  # the last statement deletes the thread's own row
                raise NotFound(thread_id)
        with self._guard:
            self._known.pop(thread_id, None)

    def compact(self, thread_id: str, start: StartRecord) -> int:
        """Replace the records up to ``start.version`` with ``start`` in one transaction (the
        events stay: they are the record of what happened); how many records were dropped."""
        body = encode(check_thread_id(thread_id), start) if isinstance(start, StartRecord) else b""
        params = {"thread": thread_id, "version": getattr(start, "version", -1), "body": body}
        select, drop, insert, old_snapshots = self._sql.compact
        with self.lock(thread_id), self._conn(thread_id) as conn, conn.transaction():
            row = conn.execute(select, params).fetchone()
            if row is None:
                raise NotFound(thread_id)
            broken = breakage(conn, self._sql, self.schema, thread_id)
            if broken is not None:
                raise broken
            check_compaction(thread_id, start, int(row[1]), int(row[0]))
            dropped = conn.execute(drop, params).rowcount
            conn.execute(insert, params)
            conn.execute(old_snapshots, params)
            conn.execute(trail_statements(self.schema).compact, params)
        with self._guard:
            self._known.pop(thread_id, None)  # the next load reads the thread afresh
        return int(dropped)

    # -- timers ----------------------------------------------------------------------------------

    def due_timers(
        self,
        until: float,
        *,
        flow: str | None = None,
        limit: int | None = None,
        after: DueTimer | None = None,
    ) -> list[DueTimer]:
        query = self._sql.due_timers if flow is not None else self._sql.due_timers_any
        params = {
            "until": until,
            "flow": flow,
            "limit": limit,
            "after_due": None if after is None else after.due,
            "after_id": None if after is None else after.thread_id,
        }
        rows = retried(self._conn, None, lambda c: c.execute(query, params).fetchall())
        # Record times are whole milliseconds; the column keeps them exactly, read back so.
        return [DueTimer(str(row[0]), round(float(row[1]) * 1000) / 1000) for row in rows]

    def drop_timer(self, thread_id: str, due: float) -> None:
        params = {"thread": check_thread_id(thread_id), "due": due}
        with self._conn(thread_id) as conn:
            conn.execute(self._sql.drop_timer, params)

    def mark_attempt(self, thread_id: str, marker: AttemptMarker) -> None:
        """Note that a node starts; committed without waiting for the disk (a marker may be
        lost in a server crash, which only costs recovery precision)."""
        body = marker.model_dump_json().encode()
        with self._conn(check_thread_id(thread_id)) as conn, conn.transaction():
            conn.execute(b"SET LOCAL synchronous_commit = off")
            if conn.execute(self._sql.mark, {"thread": thread_id, "body": body}).fetchone() is None:
                raise NotFound(thread_id)

    def last_attempt(self, thread_id: str) -> AttemptMarker | None:
        query = self._sql.last_attempt
        row = retried(
            self._conn,
            check_thread_id(thread_id),
            lambda c: c.execute(query, (thread_id,)).fetchone(),
        )
        if row is None:
            raise NotFound(thread_id)
        if row[0] is None:
            return None
        try:
            return AttemptMarker.model_validate_json(bytes(row[0]))
        except ValueError as exc:
            get_logger().warning(
                "attempt_marker_ignored", thread_id=thread_id, reason=str(exc).splitlines()[0]
            )
            return None

    def lock(self, thread_id: str) -> AbstractContextManager[None]:
        """The thread's lease for the block (``ConflictError`` at once if someone holds it)."""
        return self._leases.lock(check_thread_id(thread_id))


def _conflict(
    thread_id: str, expected: int, actual: int | None, *, snapshot: bool = False
) -> ConflictError:
    if snapshot:
        message = (
            f"Snapshot of version {expected} does not match thread `{thread_id}` (at {actual}); "
            "take it again after reloading."
        )
    else:
        message = (
            f"Thread `{thread_id}` is at version {actual}, not {expected}; another writer got "
            "there first. Reload the thread and try again."
        )
    return ConflictError(message, thread_id=thread_id, expected=expected, actual=actual)
