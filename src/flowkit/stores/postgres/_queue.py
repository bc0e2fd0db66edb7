"""The work queue of the Postgres store: submitted inputs and the claims workers make.

``submit`` queues an input for a thread (its start state if the thread does not exist yet,
else a gate answer). A worker ``claim``s one runnable thread, taking its lease in the same
statement with ``FOR UPDATE SKIP LOCKED`` so concurrent workers never wait for each other:
a thread with a queued item, or an orphan (status ``pending`` with no live lease, e.g. its
worker was killed mid-node). An item is marked done in the same transaction as the write
that uses it (``consume_on_write``), so an input is used exactly once or stays queued.

Each of a worker's questions is one statement (one round trip, one commit): ``claim_next``
finds a thread, takes its lease and reads where the thread stands and its next input;
``next_work`` reads those two again between runs.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from ...errors import ConflictError, StoreError
from .._ids import check_thread_id
from ._pool import retried

if TYPE_CHECKING:
    import psycopg

    from ._leases import Leases

__all__ = ["Claim", "ThreadStatus", "WorkItem", "WorkQueue"]


@dataclass(frozen=True, slots=True)
class WorkItem:
    """A submitted input: ``state`` is ``queued``, ``done`` (used) or ``rejected`` (``error``
    says why: the thread had finished, the input did not fit the gate ...)."""

    id: int
    thread_id: str
    flow: str
    input: Any
    gate: str | None
    expected_version: int | None
    state: Literal["queued", "done", "rejected"]
    error: str | None = None


@dataclass(frozen=True, slots=True)
class ThreadStatus:
    """Where a stored thread stands (one row read, no replay)."""

    thread_id: str
    flow: str
    status: str
    next: str
    version: int


@dataclass(frozen=True, slots=True)
class Claim:
    """A thread a worker claimed (its lease taken), where it stood then (``None``: it does
    not exist yet) and its oldest queued input, if any."""

    thread_id: str
    status: ThreadStatus | None
    item: WorkItem | None


#: One claim in this many looks for an orphan (a dead worker's thread) before queued work.
ORPHANS_EVERY = 4


class WorkQueue:
    """Mixed into ``PostgresStore``: the methods ``flowkit.workers`` uses."""

    schema: str
    _leases: Leases
    _guard: threading.Lock
    _consume: dict[str, int]
    #: Claims this store made, so that every ``ORPHANS_EVERY``-th looks for orphans first.
    _claims: int
    #: The host store's connection for ``thread_id`` (a transaction), as ``PostgresStore._conn``.
    _conn: Callable[..., AbstractContextManager[Any]]

    def _q(self, name: str) -> bytes:
        return _statements(self.schema)[name]

    def submit(
        self,
        thread_id: str,
        *,
        flow: str,
        input: Any = None,
        gate: str | None = None,
        expected_version: int | None = None,
    ) -> int:
        """Queue ``input`` for ``thread_id`` of flow ``flow``; returns the item's id."""
        check_thread_id(thread_id)
        try:
            payload = json.dumps(input, separators=(",", ":"), allow_nan=False).encode()
        except (TypeError, ValueError) as exc:
            raise StoreError(
                f"Input for thread `{thread_id}` cannot be queued: it is not JSON ({exc}). "
                "Submit a mapping of JSON values or a pydantic model.",
                thread_id=thread_id,
            ) from exc
        params = (thread_id, flow, payload, gate, expected_version)
        with self._conn(thread_id) as conn:
            return int(conn.execute(self._q("submit"), params).fetchone()[0])

    def claim(self, flows: Sequence[str]) -> str | None:
        """Take the lease of one runnable thread of ``flows`` and adopt it; its id, or None.

        Threads with queued items come first (oldest item first), then orphans.
        """
        claimed = self.claim_next(flows)
        return None if claimed is None else claimed.thread_id

    def claim_next(self, flows: Sequence[str]) -> Claim | None:
        """``claim``, and where the thread stands and its next input (what ``next_work``
        says), all in one statement; None if nothing is runnable."""
        leases = self._leases
        with leases.reclaiming() as behind, self._conn() as conn:
            params = {
                "flows": list(flows),
                "owner": leases.owner,
                "ttl": leases.lease_s,
                "behind": behind,
            }
            self._claims += 1  # racing claims may skip a turn: harmless
            turn = "claim_orphan" if self._claims % ORPHANS_EVERY == 0 else "claim"
            row = conn.execute(self._q(turn), params).fetchone()
            if row is None:
                return None
            thread_id = str(row[0])
            leases.adopt(thread_id)
        status, item = _look(row)
        return Claim(thread_id, status, item)

    def next_work(self, thread_id: str) -> tuple[ThreadStatus | None, WorkItem | None]:
        """Where the thread stands (``status``; None if it does not exist) and its oldest
        queued item (``next_item``), read together in one statement."""
        query = self._q("next_work")
        row = retried(
            self._conn,
            check_thread_id(thread_id),
            lambda c: c.execute(query, (thread_id,)).fetchone(),
        )
        return _look(row)

    def release(self, thread_id: str) -> None:
        """Give back a claimed thread's lease (and forget an unused consume)."""
        with self._guard:
            self._consume.pop(thread_id, None)
        self._leases.release(thread_id)

    def lease_lost(self, thread_id: str) -> bool:
        """Whether the heartbeat found this object's lease on the thread taken over."""
        return thread_id in self._leases.lost

    def next_item(self, thread_id: str) -> WorkItem | None:
        """The thread's oldest queued item, if any."""
        query = self._q("next_item")
        row = retried(self._conn, thread_id, lambda c: c.execute(query, (thread_id,)).fetchone())
        return _item(row) if row is not None else None

    def work_item(self, item_id: int) -> WorkItem | None:
        """The item ``submit`` returned ``item_id`` for (None if it was deleted)."""
        query = self._q("item")
        row = retried(self._conn, None, lambda c: c.execute(query, (item_id,)).fetchone())
        return _item(row) if row is not None else None

    def consume_on_write(self, thread_id: str, item_id: int | None) -> None:
        """Mark item ``item_id`` done in the same transaction as the thread's next write
        (``None``: forget an item no write used)."""
        with self._guard:
            if item_id is None:
                self._consume.pop(thread_id, None)
            else:
                self._consume[thread_id] = item_id

    def mark_done(self, conn: psycopg.Connection[Any], thread_id: str, item_id: int) -> None:
        if conn.execute(self._q("done"), (item_id, thread_id)).fetchone() is None:
            raise ConflictError(
                f"Work item {item_id} of thread `{thread_id}` was used or rejected already; "
                "nothing was written.",
                thread_id=thread_id,
            )

    def reject(self, item_id: int, reason: str) -> None:
        """Mark a queued item rejected, keeping ``reason`` (never silently dropped)."""
        with self._conn() as conn:
            conn.execute(self._q("reject"), (reason[:2000], item_id))

    def park(self, thread_id: str, seconds: float) -> None:
        """Keep workers off an orphan for ``seconds`` (a run that keeps failing)."""
        with self._conn(thread_id) as conn:
            conn.execute(self._q("park"), (seconds, thread_id))

    def status(self, thread_id: str) -> ThreadStatus | None:
        """Where ``thread_id`` stands, or None if there is no such thread."""
        query = self._q("status")
        row = retried(
            self._conn,
            check_thread_id(thread_id),
            lambda c: c.execute(query, (thread_id,)).fetchone(),
        )
        return _status(row) if row is not None else None

    def statuses(self, *, flow: str | None = None, status: str | None = None) -> list[ThreadStatus]:
        """Every thread (of ``flow``, with ``status``), sorted by id."""
        query, params = self._q("statuses"), (flow, flow, status, status)
        rows = retried(self._conn, None, lambda c: c.execute(query, params).fetchall())
        return sorted((_status(row) for row in rows), key=lambda s: s.thread_id)

    def queued(self) -> Iterator[WorkItem]:
        """Items not yet used or rejected, oldest first."""
        query = self._q("queued")
        rows = retried(self._conn, None, lambda c: c.execute(query).fetchall())
        return (_item(row) for row in rows)


def _item(row: Sequence[Any]) -> WorkItem:
    return WorkItem(
        int(row[0]),
        str(row[1]),
        str(row[2]),
        json.loads(bytes(row[3])),
        row[4],
        None if row[5] is None else int(row[5]),
        row[6],
        row[7],
    )


def _status(row: Sequence[Any]) -> ThreadStatus:
    return ThreadStatus(str(row[0]), str(row[1]), str(row[2]), str(row[3]), int(row[4]))


def _look(row: Sequence[Any]) -> tuple[ThreadStatus | None, WorkItem | None]:
    """A ``look`` row: the thread's status columns (null flow: no such thread yet), then the
    columns of its next queued item (null id: none)."""
    status = _status(row[:5]) if row[1] is not None else None
    item = _item(row[5:]) if row[5] is not None else None
    return status, item


_CACHE: dict[str, dict[str, bytes]] = {}


def _statements(s: str) -> dict[str, bytes]:
    found = _CACHE.get(s)
    if found is not None:
        return found
    # A lease this store object left behind (``Leases.reclaiming``) does not keep it off.
    live = f"""
        SELECT 1 FROM {s}.leases l WHERE l.thread_id = c.thread_id AND l.until >= now()
          AND NOT (l.owner = %(owner)s AND l.thread_id = ANY(%(behind)s))
    """
    take = f"""
        INSERT INTO {s}.leases AS l (thread_id, owner, until)
        SELECT thread_id, %(owner)s, now() + %(ttl)s * interval '1 second' FROM cand
        ON CONFLICT (thread_id) DO UPDATE SET owner = excluded.owner, until = excluded.until
        WHERE l.until < now() OR (l.owner = excluded.owner AND l.thread_id = ANY(%(behind)s))
        RETURNING thread_id
    """
    columns = "id, thread_id, flow, input, gate, expected_version, state, error"
    # Where a thread (``k.thread_id``) stands and its oldest queued item: ``_look``'s row.
    look = f"""
        SELECT k.thread_id, t.flow, t.status, t.next, t.version,
            w.id, w.thread_id, w.flow, w.input, w.gate, w.expected_version, w.state, w.error
        FROM {{keys}} LEFT JOIN {s}.threads t ON t.thread_id = k.thread_id
        LEFT JOIN LATERAL (
            SELECT {columns} FROM {s}.work q WHERE q.thread_id = k.thread_id AND q.state = 'queued'
            ORDER BY q.id LIMIT 1
        ) w ON true
    """
    work = f"""
        SELECT c.thread_id FROM {s}.work c
        WHERE c.state = 'queued' AND c.flow = ANY(%(flows)s) AND c.available_at <= now()
          AND NOT EXISTS ({live})
        ORDER BY c.id LIMIT 1 FOR UPDATE OF c SKIP LOCKED
    """
    orphan = f"""
        SELECT c.thread_id FROM {s}.threads c
        WHERE c.status = 'pending' AND c.flow = ANY(%(flows)s)
          AND (c.retry_at IS NULL OR c.retry_at <= now())
          AND NOT EXISTS ({live})
        ORDER BY c.updated_at LIMIT 1 FOR UPDATE OF c SKIP LOCKED
    """
    sql: dict[str, str] = {
        "submit": f"""
            INSERT INTO {s}.work (thread_id, flow, input, gate, expected_version)
            VALUES (%s, %s, %b, %s, %s) RETURNING id
        """,
        # A thread with queued work first; an orphan only when there is none (the limit stops
        # the scan at the first row, so the second query then never runs) ...
        "claim": f"""
            WITH by_work AS ({work}), by_orphan AS ({orphan}), cand AS (
                (SELECT thread_id FROM by_work) UNION ALL (SELECT thread_id FROM by_orphan) LIMIT 1
            ), took AS ({take})
            {look.format(keys="took k")}
        """,
        # ... but every ``ORPHANS_EVERY``-th claim an orphan first: under a backlog that never
        # empties, a dead worker's threads were never resumed.
        "claim_orphan": f"""
            WITH by_work AS ({work}), by_orphan AS ({orphan}), cand AS (
                (SELECT thread_id FROM by_orphan) UNION ALL (SELECT thread_id FROM by_work) LIMIT 1
            ), took AS ({take})
            {look.format(keys="took k")}
        """,
        "next_work": look.format(keys="(SELECT %s::text AS thread_id) k"),
        "next_item": f"""
            SELECT {columns} FROM {s}.work WHERE thread_id = %s AND state = 'queued'
            ORDER BY id LIMIT 1
        """,
        "item": f"SELECT {columns} FROM {s}.work WHERE id = %s",
        "queued": f"SELECT {columns} FROM {s}.work WHERE state = 'queued' ORDER BY id",
        "done": f"""
            UPDATE {s}.work SET state = 'done', done_at = now()
            WHERE id = %s AND thread_id = %s AND state = 'queued' RETURNING 1
        """,
        "reject": f"""
            UPDATE {s}.work SET state = 'rejected', error = %s, done_at = now()
            WHERE id = %s AND state = 'queued'
        """,
        "park": f"""
            UPDATE {s}.threads SET retry_at = now() + %s * interval '1 second'
            WHERE thread_id = %s
        """,
        "status": f"SELECT thread_id, flow, status, next, version FROM {s}.threads "
        "WHERE thread_id = %s",
        "statuses": f"""
            SELECT thread_id, flow, status, next, version FROM {s}.threads
            WHERE (%s::text IS NULL OR flow = %s) AND (%s::text IS NULL OR status = %s)
        """,
    }
    encoded = {name: " ".join(text.split()).encode() for name, text in sql.items()}
    _CACHE[s] = encoded
    return encoded
