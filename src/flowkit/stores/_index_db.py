"""The JSON-file store's thread index as a SQLite table: one row per thread, where it stands.

``index/threads.sqlite3`` (private, like the journals) in WAL mode with ``synchronous=OFF``: a
commit's row update is a write to the WAL, never an fsync, and readers never wait for
writers. What survives a power loss is ``_thread_index``'s care: every process that writes
rows is registered, a registration from before a reboot has the file made anew and rebuilt,
and a writer syncs the file (``sync``) before it unregisters. Indexes serve both listing
orders: ``(updated DESC, thread_id)`` and, for threads that are not pending, ``(status,
updated DESC, thread_id)``; ``id`` order walks the primary key. The table is a cache of the
journals (``_thread_index`` keeps it right); ``user_version`` is its format, and a file of
another format, or one SQLite calls damaged, is ``DamagedIndexError``: rebuilt, never
trusted.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Callable, Collection, Iterable
from pathlib import Path
from typing import Any

from ._listing import ThreadQuery, ThreadSummary

__all__ = ["FORMAT", "DamagedIndexError", "IndexDB", "Row", "is_damage"]

#: Where a thread stands after a commit: flow, status, node, version, updated.
Row = tuple[str, str, str, int, float]

#: The table's format (``PRAGMA user_version``); another one is rebuilt.
FORMAT = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS threads (
    thread_id TEXT PRIMARY KEY,
    flow TEXT NOT NULL,
    status TEXT NOT NULL,
    node TEXT NOT NULL,
    version INTEGER NOT NULL,
    updated REAL NOT NULL,
    created REAL,
    error TEXT,
    warnings TEXT
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS threads_updated ON threads (updated DESC, thread_id);
CREATE INDEX IF NOT EXISTS threads_status ON threads (status, updated DESC, thread_id)
    WHERE status != 'pending';
"""
#: The status index leaves out pending threads: the steps of a running thread (pending after
#: pending) then never touch it, a fifth of a row update's cost. A listing of pending threads
#: walks ``threads_updated``, where running threads come first anyway. Queries for other
#: statuses repeat the index's condition, which is how SQLite knows it may use it.
_NOT_PENDING = "status != 'pending'"
_COLUMNS = "thread_id, flow, status, node, version, updated, created, error, warnings"
#: A step: where the thread stands now; ``created`` stays. An ``UPDATE`` costs a fifth less
#: than an upsert; a row that is not there (a thread indexed before it came) is inserted.
_STEP = """
UPDATE threads SET flow = ?, status = ?, node = ?, version = ?, updated = ?, error = NULL,
    warnings = NULL
WHERE thread_id = ?
"""
#: A running thread's step written late (``JsonThreadIndex`` defers them): only over an older
#: row of the same thread's life, never a row written since by a later commit (a higher
#: version) or by a thread made anew under that id (written later); never a row that is gone.
_LATE_STEP = """
UPDATE threads SET flow = ?, status = ?, node = ?, version = ?, updated = ?, error = NULL,
    warnings = NULL
WHERE thread_id = ? AND version < ? AND updated <= ?
"""
_INSERT = """
INSERT INTO threads (thread_id, flow, status, node, version, updated) VALUES (?, ?, ?, ?, ?, ?)
"""
_REPLACE = f"INSERT OR REPLACE INTO threads ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"


class DamagedIndexError(sqlite3.DatabaseError):
    """The index file is not one this flowkit can trust (another format); never leaves the
    index, which rebuilds such a file."""


def is_damage(exc: BaseException) -> bool:
    """Whether a SQLite error says the file is damaged (not busy, read-only or full)."""
    return isinstance(exc, DamagedIndexError) or getattr(exc, "sqlite_errorname", "") in (
        "SQLITE_CORRUPT",
        "SQLITE_NOTADB",
    )


class IndexDB:
    """A connection to the index at ``path`` (created empty, private, if missing).

    ``timeout``: seconds a write waits for another process's (a rebuild's batch, a step).
    Not thread-safe: its owner serialises calls.
    """

    def __init__(self, path: Path, *, timeout: float) -> None:
        os.close(os.open(path, os.O_RDWR | os.O_CREAT, 0o600))  # WAL files take its mode
        self.path = path
        self.ino = os.stat(path).st_ino
        self._conn = sqlite3.connect(
            path, timeout=timeout, isolation_level=None, check_same_thread=False
        )
        try:
            found = self._conn.execute("PRAGMA user_version").fetchone()[0]
            if found not in (0, FORMAT):
                raise DamagedIndexError(f"index format {found}, not {FORMAT}")
            self._conn.execute("PRAGMA journal_mode = WAL")
            self._conn.execute("PRAGMA synchronous = OFF")
        except BaseException:
            self._conn.close()
            raise

    def create_if_new(self, on_create: Callable[[], None]) -> bool:
        """Make the table in a new (empty) file; whether this call made it. ``on_create()`` is
        called inside the transaction that makes it (before anyone can see the table): a
        store that already has threads marks the new table as one to fill from its journals
        before it is trusted."""
        if self._conn.execute("PRAGMA user_version").fetchone()[0] == FORMAT:
            return False
        with self.transaction():
            if self._conn.execute("PRAGMA user_version").fetchone()[0] == FORMAT:
                return False
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    self._conn.execute(statement)
            on_create()
            self._conn.execute(f"PRAGMA user_version = {FORMAT}")
        return True

    def transaction(self) -> _Transaction:
        """A write transaction (``BEGIN IMMEDIATE``): other writers wait until it ends."""
        return _Transaction(self._conn)

    def put(
        self, thread_id: str, flow: str, status: str, node: str, version: int, updated: float
    ) -> None:
        """Where ``thread_id`` stands after a commit (its own transaction)."""
        changed = self._conn.execute(_STEP, (flow, status, node, version, updated, thread_id))
        if not changed.rowcount:
            self._conn.execute(_INSERT, (thread_id, flow, status, node, version, updated))

    def late_steps(self, rows: Iterable[tuple[str, Row]], now: tuple[str, Row] | None) -> None:
        """Deferred running steps ``(thread_id, row)`` (see ``_LATE_STEP``), then the commit
        ``now`` (as ``put``), in one transaction."""
        params = [(*row, thread_id, row[3], row[4]) for thread_id, row in rows]
        if not params:
            if now is not None:
                self.put(now[0], *now[1])
            return
        with self.transaction():
            self._conn.executemany(_LATE_STEP, params)
            if now is not None:
                self.put(now[0], *now[1])

    def replace(self, rows: Iterable[ThreadSummary]) -> None:
        """Write whole rows (inside the caller's transaction, or each its own)."""
        self._conn.executemany(
            _REPLACE,
            (
                (
                    s.thread_id,
                    s.flow,
                    s.status,
                    s.node,
                    s.version,
                    s.updated,
                    s.created,
                    s.error,
                    json.dumps(list(s.warnings)) if s.warnings else None,
                )
                for s in rows
            ),
        )

    def drop(self, thread_id: str) -> None:
        self._conn.execute("DELETE FROM threads WHERE thread_id = ?", (thread_id,))

    def ids(self) -> list[str]:
        return [row[0] for row in self._conn.execute("SELECT thread_id FROM threads")]

    def page(self, query: ThreadQuery, exclude: Collection[str] = ()) -> list[ThreadSummary]:
        """Up to ``query.limit + 1`` rows in order (one more tells whether a page follows),
        but those of the threads in ``exclude``."""
        where, params = _where(query, keyset=True, exclude=exclude)
        sort = "thread_id" if query.order == "id" else "updated DESC, thread_id"
        sql = f"SELECT {_COLUMNS} FROM threads{where} ORDER BY {sort} LIMIT {query.limit + 1}"
        return [_summary(row) for row in self._conn.execute(sql, params)]

    def count(self, query: ThreadQuery, exclude: Collection[str] = ()) -> int:
        where, params = _where(query, keyset=False, exclude=exclude)
        return int(self._conn.execute(f"SELECT count(*) FROM threads{where}", params).fetchone()[0])

    def sync(self) -> None:
        """Make every committed row durable (the WAL is not synced per commit)."""
        for name in (f"{self.path}-wal", str(self.path)):
            try:
                fd = os.open(name, os.O_RDONLY)
            except FileNotFoundError:
                continue
            try:
                os.fsync(fd)
            finally:
                os.close(fd)

    def close(self) -> None:
        self._conn.close()


class _Transaction:
    """``BEGIN IMMEDIATE`` ... ``COMMIT`` (``ROLLBACK`` on an error) for a ``with`` block."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def __enter__(self) -> None:
        self._conn.execute("BEGIN IMMEDIATE")

    def __exit__(self, kind: object, *exc: object) -> None:
        if kind is None:
            self._conn.execute("COMMIT")
        elif self._conn.in_transaction:
            self._conn.execute("ROLLBACK")


def _where(
    query: ThreadQuery, *, keyset: bool, exclude: Collection[str] = ()
) -> tuple[str, list[Any]]:
    """The ``WHERE`` clause of ``query``'s filters (and, with ``keyset``, its cursor), leaving
    out the threads in ``exclude``."""
    terms: list[str] = []
    params: list[Any] = []
    if exclude:
        terms.append(f"thread_id NOT IN ({', '.join('?' * len(exclude))})")
        params += sorted(exclude)
    if query.statuses is not None:
        terms.append(f"status IN ({', '.join('?' * len(query.statuses))})")
        params += sorted(query.statuses)
        if "pending" not in query.statuses:
            terms.append(_NOT_PENDING)
    if query.flow is not None:
        terms.append("flow = ?")
        params.append(query.flow)
    if query.updated_before is not None:
        terms.append("updated < ?")
        params.append(query.updated_before)
    if query.updated_after is not None:
        terms.append("updated >= ?")
        params.append(query.updated_after)
    if keyset and query.after_id is not None:
        if query.order == "id":
            terms.append("thread_id > ?")
            params.append(query.after_id)
        else:
            # The index's own order; `updated <= ?` lets SQLite start the walk at the cursor.
            terms.append("updated <= ? AND (updated < ? OR thread_id > ?)")
            params += [query.after_updated, query.after_updated, query.after_id]
    return (" WHERE " + " AND ".join(terms) if terms else ""), params


def _summary(row: tuple[Any, ...]) -> ThreadSummary:
    thread_id, flow, status, node, version, updated, created, error, warnings = row
    return ThreadSummary(
        thread_id=thread_id,
        flow=flow,
        status=status,
        node=node,
        version=version,
        updated=updated,
        created=created,
        error=error,
        warnings=tuple(json.loads(warnings)) if warnings else (),
    )
