"""Pages of a thread's history in PostgreSQL (``HistoryPages``): a range of record rows read
by their primary key, and the snapshot to replay the page from: the thread's latest if it is
early enough, else the last one before the page in ``snapshot_trail``.

One statement each. The rows of a page are checked as one unbroken run (each named gap is
``CorruptStoreError``, as for a whole journal); the rows outside it are not read. A snapshot
joins the trail (with the latest, in one transaction) once the journal has grown by
``snapshot_ratio`` times its size since the last one joined (``TrailStatements``); a
compaction drops the rows before its cut, a delete all of them.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

from ...errors import ThreadNotFoundError
from ...records._records import Snapshot
from .._protocol import RecordRange
from ._continuity import check_run
from ._pool import Connect, retried
from ._rows import record_from_row, snapshot_from_row

if TYPE_CHECKING:
    import psycopg

__all__ = ["TrailStatements", "read_range", "snapshot_before", "trail_statements"]


@dataclass(frozen=True, slots=True)
class TrailStatements:
    """Writing the trail: add a snapshot, and drop what a compaction cut off."""

    add: bytes
    compact: bytes


@cache
def trail_statements(s: str) -> TrailStatements:
    """The trail's statements of schema ``s``."""
    return TrailStatements(
        add=f"""
            INSERT INTO {s}.snapshot_trail (thread_id, version, body)
            VALUES (%(thread)s, %(version)s, %(body)b) ON CONFLICT DO NOTHING
        """.encode(),
        compact=f"""
            DELETE FROM {s}.snapshot_trail
            WHERE thread_id = %(thread)s AND version < %(version)s
        """.encode(),
    )


@cache
def _statements(s: str) -> tuple[bytes, bytes]:
    """The range and snapshot statements of schema ``s``."""
    page = f"""
        SELECT 0 AS part, t.version,
            (SELECT min(r.version) FROM {s}.records r WHERE r.thread_id = t.thread_id),
            NULL::bytea
        FROM {s}.threads t WHERE t.thread_id = %(thread)s
        UNION ALL
        SELECT 1, r.version, NULL, r.body FROM {s}.records r
        WHERE r.thread_id = %(thread)s AND r.version >= %(start)s AND r.version < %(stop)s
        ORDER BY 1, 2
    """
    snapshot = f"""
        SELECT 0 AS part, sn.version, sn.body FROM {s}.threads t
        LEFT JOIN {s}.snapshots sn ON sn.thread_id = t.thread_id
        WHERE t.thread_id = %(thread)s
        UNION ALL
        (SELECT 1, tr.version, tr.body FROM {s}.snapshot_trail tr
         WHERE tr.thread_id = %(thread)s AND tr.version <= %(version)s
         ORDER BY tr.version DESC LIMIT 1)
        ORDER BY 1
    """
    return page.encode(), snapshot.encode()


def read_range(schema: str, connect: Connect, thread_id: str, start: int, stop: int) -> RecordRange:
    """The records with ``start <= version < stop``, oldest first, and the thread's first
    and latest versions."""
    statement = _statements(schema)[0]
    params = {"thread": thread_id, "start": start, "stop": stop}

    def read(conn: psycopg.Connection[Any]) -> list[tuple[Any, ...]]:
        return conn.execute(statement, params, binary=True).fetchall()

    rows = retried(connect, thread_id, read)
    if not rows or rows[0][0] != 0 or rows[0][2] is None:
        raise ThreadNotFoundError(thread_id)
    last, first = int(rows[0][1]), int(rows[0][2])
    found = [record_from_row(schema, thread_id, r[1], r[3]) for r in rows[1:]]
    low, high = max(start, first), min(stop, last + 1)
    if low < high:
        after = None if low == first else low - 1
        check_run(schema, thread_id, found, after=after, version=high - 1)
    return RecordRange(found, first, last)


def snapshot_before(schema: str, connect: Connect, thread_id: str, version: int) -> Snapshot | None:
    """The latest snapshot of the thread at ``version`` or earlier: the thread's own if it is
    early enough, else the trail's."""
    statement = _statements(schema)[1]
    params = {"thread": thread_id, "version": version}
    rows = retried(
        connect, thread_id, lambda c: c.execute(statement, params, binary=True).fetchall()
    )
    if not rows or rows[0][0] != 0:
        raise ThreadNotFoundError(thread_id)
    for _, found, body in rows:  # the latest first, then the trail's
        if found is not None and int(found) <= version:
            return snapshot_from_row(schema, thread_id, body)
    return None
