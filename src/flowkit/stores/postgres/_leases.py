"""Leases: the right to run a thread, held in the database for a while and renewed.

``lock(thread_id)`` takes the thread's lease (a row in ``leases`` valid for ``lease_s``
seconds) or raises ``ConflictError`` at once if a live lease exists; a background heartbeat
renews every lease this store object holds. A process that dies stops renewing, so its
leases expire and another process may take the thread over. A lease only keeps two runners
from doing the same work at once: the journal's compare-and-set alone keeps history linear,
so a holder that lost its lease (a stalled process) gets ``ConflictError`` on its next step.

A worker claims a thread and its lease in one statement, then *adopts* it: the runner's
next ``lock`` of that thread uses the claimed lease instead of taking another.

A lease this object could not give back (the server dropped the connection, or was away) is
*left behind*: it still keeps other processes off the thread until it expires, but the
heartbeat no longer renews it, and this object may take it again at once (its own ``lock`` or
``claim``), since nothing here uses it. The same holds for a take whose answer was lost.
"""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager

from ...errors import StoreError
from ...foundation._logging import get_logger
from .._protocol import thread_busy
from ._pool import Connect, retried

__all__ = ["Leases"]


class Leases:
    """The leases of one store object (one owner token, one heartbeat thread)."""

    def __init__(self, schema: str, connect: Connect, lease_s: float) -> None:
        self.lease_s = lease_s
        self.owner = f"{socket.gethostname()[:40]}:{os.getpid()}:{os.urandom(4).hex()}"
        self._connect = connect
        s = schema
        self._take = f"""
            INSERT INTO {s}.leases AS l (thread_id, owner, until)
            VALUES (%(thread)s, %(owner)s, now() + %(ttl)s * interval '1 second')
            ON CONFLICT (thread_id) DO UPDATE SET owner = excluded.owner, until = excluded.until
            WHERE l.until < now() OR (l.owner = excluded.owner AND %(reclaim)s)
            RETURNING 1
        """.encode()
        self._drop = f"DELETE FROM {s}.leases WHERE thread_id = %s AND owner = %s".encode()
        self._renew = f"""
            UPDATE {s}.leases SET until = now() + %(ttl)s * interval '1 second'
            WHERE owner = %(owner)s AND thread_id = ANY(%(mine)s) RETURNING thread_id
        """.encode()
        self._guard = threading.Lock()
        self._held: set[str] = set()  # leases in use by a lock() block
        self._adopted: set[str] = set()  # claimed by a worker, kept between lock() blocks
        self._behind: set[str] = set()  # left behind: not given back, may be taken again
        self._stop = threading.Event()
        self._beat: threading.Thread | None = None
        self.lost: set[str] = set()

    def lock(self, thread_id: str) -> AbstractContextManager[None]:
        return self._lock(thread_id)

    @contextmanager
    def _lock(self, thread_id: str) -> Iterator[None]:
        with self._guard:
            if thread_id in self._held:
                raise thread_busy(thread_id)
            self._held.add(thread_id)
            adopted = thread_id in self._adopted
            reclaim = thread_id in self._behind
        try:
            if not adopted and not self._acquire(thread_id, reclaim=reclaim):
                raise thread_busy(thread_id)
        except BaseException:
            with self._guard:
                self._held.discard(thread_id)
            raise
        with self._guard:
            self._behind.discard(thread_id)
        try:
            yield
        finally:
            with self._guard:
                self._held.discard(thread_id)
                keep = thread_id in self._adopted
            if not keep:
                self.release(thread_id)

    def _acquire(self, thread_id: str, *, reclaim: bool) -> bool:
        """Take the thread's lease if nobody holds a live one (``reclaim``: or this object
        left it behind); the caller keeps the local bookkeeping."""
        params = {"thread": thread_id, "owner": self.owner, "ttl": self.lease_s}
        try:
            with self._connect(thread_id) as conn:
                taken = conn.execute(self._take, {**params, "reclaim": reclaim}).fetchone()
        except BaseException:
            with self._guard:  # it may have been taken before the answer was lost
                self._behind.add(thread_id)
            raise
        if taken is not None:
            self._start_heartbeat()
        return taken is not None

    def adopt(self, thread_id: str) -> None:
        """Keep a lease taken by ``claim`` for this object's ``lock`` blocks until ``release``."""
        with self._guard:
            self._adopted.add(thread_id)
            self.lost.discard(thread_id)
        self._start_heartbeat()

    @contextmanager
    def reclaiming(self) -> Iterator[list[str]]:
        """For a claim: the leases left behind that it may take again (none in use here);
        those it does not take stay left behind."""
        with self._guard:
            ids = sorted(self._behind - self._held - self._adopted)
            self._behind.difference_update(ids)
        try:
            yield ids
        finally:
            with self._guard:
                self._behind.update(t for t in ids if t not in self._adopted | self._held)

    def release(self, thread_id: str) -> None:
        """Give the lease back (a no-op if it expired and someone else holds it now). If the
        server cannot be told, the lease is left behind (a warning), never an error: the
        work done under it stands."""
        with self._guard:
            self._adopted.discard(thread_id)
            self.lost.discard(thread_id)
        try:
            retried(
                self._connect, thread_id, lambda c: c.execute(self._drop, (thread_id, self.owner))
            )
        except StoreError as exc:
            with self._guard:
                if thread_id not in self._held:
                    self._behind.add(thread_id)
            get_logger().warning(
                "lease_release_failed", thread_id=thread_id, error_type=type(exc).__name__
            )
            return
        with self._guard:
            self._behind.discard(thread_id)

    # -- heartbeat -----------------------------------------------------------------------------

    def _start_heartbeat(self) -> None:
        with self._guard:
            if self._beat is not None or self._stop.is_set():
                return
            self._beat = threading.Thread(
                target=self._heartbeat, name="flowkit-lease-heartbeat", daemon=True
            )
            self._beat.start()

    def _heartbeat(self) -> None:
        log = get_logger()
        while not self._stop.wait(self.lease_s / 3):
            with self._guard:
                mine = self._held | self._adopted
            if not mine:
                continue
            try:
                with self._connect(None) as conn:
                    params = {"ttl": self.lease_s, "owner": self.owner, "mine": sorted(mine)}
                    rows = conn.execute(self._renew, params).fetchall()
            except Exception as exc:  # the next beat tries again; CAS keeps history safe
                log.warning("lease_renew_failed", error_type=type(exc).__name__)
                continue
            renewed = {str(row[0]) for row in rows}
            for thread_id in mine - renewed:
                with self._guard:
                    still = thread_id in self._held or thread_id in self._adopted
                    if still and thread_id not in self.lost:
                        self.lost.add(thread_id)
                        log.warning("lease_lost", thread_id=thread_id)

    def close(self) -> None:
        """Stop the heartbeat and give back every lease still held."""
        self._stop.set()
        beat = self._beat
        if beat is not None:
            beat.join(timeout=5)
        with self._guard:
            mine = self._held | self._adopted | self._behind
            self._held.clear()
            self._adopted.clear()
            self._behind.clear()
        for thread_id in mine:
            try:
                with self._connect(thread_id) as conn:
                    conn.execute(self._drop, (thread_id, self.owner))
            except Exception as exc:  # closing must not fail; the lease expires anyway
                get_logger().warning(
                    "lease_release_failed", thread_id=thread_id, error_type=type(exc).__name__
                )
