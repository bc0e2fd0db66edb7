"""Connections that outlive the server dropping them: the pool, its check, and calls tried twice.

A server restart or ``pg_terminate_backend`` kills every pooled connection while it sits idle.
The pool checks each connection before handing it out (``_usable``): free for a healthy one,
since an idle connection is sent nothing until the server drops it; and the first dead one
found has the whole pool checked, so a lost server costs one round trip per connection, not a
failed call each. A connection can still die between that check and its query: ``retried``
runs a call that may safely run twice once more on a fresh connection.
"""

from __future__ import annotations

import select
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, TypeVar

from ...errors import StoreError
from ._driver import load_driver, pg_error

if TYPE_CHECKING:
    import psycopg
    import psycopg_pool

__all__ = ["Connect", "open_pool", "retried"]

_T = TypeVar("_T")

#: ``PostgresStore._conn``: a pooled connection for a thread (``None``: no thread).
Connect = Callable[[str | None], AbstractContextManager["psycopg.Connection[Any]"]]


def open_pool(
    url: str, *, min_size: int, max_size: int, timeout: float
) -> psycopg_pool.ConnectionPool:
    """A pool of autocommit connections to ``url``; a server that cannot be reached fails now."""
    driver, pool_module = load_driver()
    pools: list[psycopg_pool.ConnectionPool] = []

    def usable(conn: psycopg.Connection[Any]) -> None:
        if not _has_input(conn):
            return
        try:
            pool_module.ConnectionPool.check_connection(conn)
        except driver.Error:
            for found in pools:  # the server dropped one: it has likely dropped them all
                found.check()
            raise

    pool: psycopg_pool.ConnectionPool = pool_module.ConnectionPool(
        url,
        min_size=min_size,
        max_size=max_size,
        timeout=timeout,
        kwargs={"autocommit": True},
        open=False,
        name="flowkit",
        check=usable,
    )
    pools.append(pool)
    try:
        pool.open(wait=True, timeout=timeout)
    except (driver.Error, pool_module.PoolTimeout) as exc:
        pool.close()
        raise pg_error(exc, url, "open its connection pool") from exc
    return pool


def _has_input(conn: psycopg.Connection[Any]) -> bool:
    """Whether the server sent an idle ``conn`` anything (or closed it): it does so only to
    end the session (or for a notice), so only then is a round trip needed to tell."""
    if conn.closed:
        return True
    fd = conn.fileno()
    if hasattr(select, "poll"):
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        return bool(poller.poll(0))
    return bool(select.select([fd], [], [], 0)[0])  # Windows: sockets only, as here


def retried(connect: Connect, thread_id: str | None, run: Callable[[Any], _T]) -> _T:
    """``run(conn)`` on a connection from ``connect``, once more on a fresh one if the server
    dropped the first during the call. Only for calls that may run twice: reads, and writes
    that do the same the second time (giving back a lease)."""
    used: list[psycopg.Connection[Any]] = []
    try:
        with connect(thread_id) as conn:
            used.append(conn)
            return run(conn)
    except StoreError:
        if not used or not used[0].closed:
            raise
    with connect(thread_id) as conn:
        return run(conn)
