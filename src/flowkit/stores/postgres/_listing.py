"""Thread listings of the Postgres store: its ``threads`` table, one row per thread, is the
index (``ThreadIndex``). Schema version 3 adds the two indexes a keyset page walks:
``(updated_at DESC, thread_id)`` and ``(status, updated_at DESC, thread_id)``; ``id`` order
walks the primary key.

``updated_at`` is the last record's ``ts`` and ``created_at`` the start record's, both set by
the statements that write the records (rows written before schema 3 hold the commit's time,
which is within milliseconds of it). Times go in and out as whole microseconds since the
epoch, so a cursor's key compares exactly with the column it came from.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from .._listing import QueriedListing, ThreadPage, ThreadQuery, ThreadSummary, page_from
from ._pool import retried

__all__ = ["PostgresListing"]

_COLUMNS = (
    "thread_id, flow, status, next, version, "
    "(extract(epoch FROM updated_at) * 1000000)::bigint, "
    "(extract(epoch FROM created_at) * 1000000)::bigint"
)
_AT = "'epoch'::timestamptz + %s * interval '1 microsecond'"


class PostgresListing(QueriedListing):
    """Mixed into ``PostgresStore``: ``list_threads`` and ``count_threads`` as queries."""

    schema: str
    #: The host store's connection for ``thread_id``, as ``PostgresStore._conn``.
    _conn: Callable[..., AbstractContextManager[Any]]

    def _page(self, query: ThreadQuery) -> ThreadPage:
        where, params = _where(query, keyset=True)
        sort = "thread_id" if query.order == "id" else "updated_at DESC, thread_id"
        sql = (
            f"SELECT {_COLUMNS} FROM {self.schema}.threads{where} "
            f"ORDER BY {sort} LIMIT {query.limit + 1}"
        )
        rows = retried(self._conn, None, lambda c: c.execute(sql.encode(), params).fetchall())
        return page_from([_summary(row) for row in rows], query)

    def _count(self, query: ThreadQuery) -> int:
        where, params = _where(query, keyset=False)
        sql = f"SELECT count(*) FROM {self.schema}.threads{where}".encode()
        row = retried(self._conn, None, lambda c: c.execute(sql, params).fetchone())
        return int(row[0]) if row else 0


#: Bounds past every stored time (about 4370 BC and 8300 AD) that PostgreSQL can still
#: represent: a listing bound beyond them means the same and stays in range.
_FARTHEST_MICROS = 200_000_000_000 * 1_000_000


def _micros(seconds: float) -> int:
    return max(-_FARTHEST_MICROS, min(_FARTHEST_MICROS, round(seconds * 1_000_000)))


def _where(query: ThreadQuery, *, keyset: bool) -> tuple[str, list[Any]]:
    """The ``WHERE`` clause of ``query``'s filters (and, with ``keyset``, its cursor)."""
    terms: list[str] = []
    params: list[Any] = []
    if query.statuses is not None:
        terms.append("status = ANY(%s)")
        params.append(sorted(query.statuses))
    if query.flow is not None:
        terms.append("flow = %s")
        params.append(query.flow)
    if query.updated_before is not None:
        terms.append(f"updated_at < {_AT}")
        params.append(_micros(query.updated_before))
    if query.updated_after is not None:
        terms.append(f"updated_at >= {_AT}")
        params.append(_micros(query.updated_after))
    if keyset and query.after_id is not None:
        if query.order == "id":
            terms.append("thread_id > %s")
            params.append(query.after_id)
        else:
            assert query.after_updated is not None
            # The index's own order: earlier updates, then, at the same time, later ids
            # (`updated_at <=` lets the index scan start at the cursor).
            after = _micros(query.after_updated)
            terms.append(f"updated_at <= {_AT} AND (updated_at < {_AT} OR thread_id > %s)")
            params += [after, after, query.after_id]
    return (" WHERE " + " AND ".join(terms) if terms else ""), params


def _summary(row: tuple[Any, ...]) -> ThreadSummary:
    thread_id, flow, status, node, version, updated, created = row
    return ThreadSummary(
        thread_id=str(thread_id),
        flow=str(flow),
        status=str(status),
        node=str(node),
        version=int(version),
        updated=int(updated) / 1_000_000,
        created=None if created is None else int(created) / 1_000_000,
    )
