"""EventFeed: the events every process commits, delivered to subscribers in any process.

Each journal record has an ``events`` row written in the same statement, so an event exists
exactly when its step does. Rows are read in cursor order ``(xid, seq)``, and only once every
transaction that could still commit a smaller cursor has ended (``xid`` below the oldest
running transaction), so a reader never skips a row that commits late. NOTIFY wakes readers
at once when a thread waits, finishes or fails (``PostgresStore(notify=)``); other events are
read at the next poll (``poll_s``). Every delivered event has an ``EventCursor``; a subscriber
that keeps the last one and reconnects with ``after=`` gets every later event exactly once, in
order.

``feed.subscribe(callback)`` takes the same subscribers as ``Runner.subscribe``, so
``Broadcaster().attach(feed)`` serves user interfaces from events of every worker.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

from ...errors import StoreError
from ...foundation._logging import get_logger
from ...records._events import Event, Subscriber
from ._driver import check_url, connect, load_driver, pg_error, valid_schema
from ._eventrows import to_events
from ._schema import schema_version

if TYPE_CHECKING:
    import psycopg

    from ...definition._flow import Flow

__all__ = ["EventCursor", "EventFeed", "FeedEvent"]

_T = TypeVar("_T")

#: The offset of a cursor past a row that announced no events.
_WHOLE_ROW = 1 << 30


class EventCursor(NamedTuple):
    """Where a reader stands: the row ``(xid, seq)`` and the offset of the event in it.

    Increases with every event; ``str()`` gives ``"xid:seq:offset"`` and ``parse`` reads it.
    """

    xid: int = 0
    seq: int = 0
    offset: int = -1

    def __str__(self) -> str:
        return f"{self.xid}:{self.seq}:{self.offset}"

    @classmethod
    def parse(cls, text: str | EventCursor | None) -> EventCursor:
        if text is None:
            return cls()
        if isinstance(text, EventCursor):
            return text
        try:
            xid, seq, offset = (int(part) for part in str(text).split(":"))
        except ValueError:
            raise StoreError(
                f"Event cursor {str(text)[:60]!r} is not one a feed gave out (`xid:seq:offset`, "
                "e.g. `7521:3:1`); pass what `FeedEvent.cursor` held, or None for the start."
            ) from None
        return cls(xid, seq, offset)


class FeedEvent(NamedTuple):
    """One delivered event and the cursor to reconnect after it."""

    cursor: EventCursor
    event: Event


class EventFeed:
    """Events committed in the store at ``url`` after ``after`` (default: from the start).

    ``flows``: flows whose ``change_classes`` fill ``StateChanged.classes``. ``threads``:
    only these threads. ``poll_s``: longest wait between reads when no NOTIFY comes.
    """

    def __init__(
        self,
        url: str,
        *,
        schema: str = "flowkit",
        after: EventCursor | str | None = None,
        flows: Iterable[Flow] = (),
        threads: Iterable[str] | None = None,
        batch: int = 500,
        poll_s: float = 0.25,
        connect_timeout: float = 10.0,
    ) -> None:
        self.url = check_url(url)
        self.schema = valid_schema(schema)
        self.cursor = EventCursor.parse(after)
        self.batch = batch
        self.poll_s = poll_s
        self._classes: dict[str, Mapping[str, frozenset[str]]] = {
            flow.name: flow.change_classes for flow in flows
        }
        self._threads = sorted(threads) if threads is not None else None
        self._driver, _ = load_driver()
        self._connect_timeout = connect_timeout
        self._conn: psycopg.Connection[Any] = connect(url, timeout=connect_timeout)
        schema_version(self._conn, url, schema)
        self._listening = False
        self._subscribers: list[Subscriber] = []
        self._log = get_logger()
        s = schema
        where = "" if self._threads is None else "AND e.thread_id = ANY(%(threads)s)"
        self._read = f"""
            SELECT e.xid::text::bigint, e.seq, e.thread_id, e.version, e.body, t.flow,
                   e.xid < pg_snapshot_xmin(pg_current_snapshot())
            FROM {s}.events e LEFT JOIN {s}.threads t ON t.thread_id = e.thread_id
            WHERE (e.xid, e.seq) >= (%(xid)s::text::xid8, %(seq)s) {where}
            ORDER BY e.xid, e.seq LIMIT %(limit)s
        """.encode()
        # Rows below the oldest running transaction are final, so none can come before them.
        self._last = f"""
            SELECT xid::text::bigint, seq FROM {s}.events
            WHERE xid < pg_snapshot_xmin(pg_current_snapshot())
            ORDER BY xid DESC, seq DESC LIMIT 1
        """.encode()
        self._channel = f"flowkit_events_{s}"

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> EventFeed:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- reading ------------------------------------------------------------------------------

    def skip_ahead(self) -> EventCursor:
        """Move the cursor past every event ready now, so the feed delivers only what comes
        next (a reader that shows what happens from now on); returns the new cursor."""
        row = self._fetch(lambda conn: conn.execute(self._last).fetchone(), "read events")
        if row is not None and (int(row[0]), int(row[1])) > self.cursor[:2]:
            self.cursor = EventCursor(int(row[0]), int(row[1]), _WHOLE_ROW)
        return self.cursor

    def read(self) -> tuple[list[FeedEvent], bool]:
        """The events ready now (at most about ``batch`` rows' worth), oldest first, moving the
        cursor past them; and whether more rows exist that are not ready or not read yet."""
        params = {
            "xid": self.cursor.xid,
            "seq": self.cursor.seq,
            "limit": self.batch + 1,
            "threads": self._threads,
        }
        rows = self._fetch(lambda conn: conn.execute(self._read, params).fetchall(), "read events")
        found: list[FeedEvent] = []
        more = False
        for count, (xid, seq, thread_id, version, body, flow, ready) in enumerate(rows):
            if not ready or count == self.batch:
                more = True
                break
            classes = self._classes.get(flow) if flow is not None else None
            events = to_events(thread_id, version, bytes(body), classes)
            for index, event in enumerate(events):
                at = EventCursor(int(xid), int(seq), index)
                if at > self.cursor:
                    found.append(FeedEvent(at, event))
                    self.cursor = at
            if not events and (int(xid), int(seq)) > self.cursor[:2]:
                self.cursor = EventCursor(int(xid), int(seq), _WHOLE_ROW)
        return found, more

    def _fetch(self, query: Callable[[psycopg.Connection[Any]], _T], action: str) -> _T:
        """``query`` on the feed's connection; a connection the server dropped (a failover,
        a restart, ``pg_terminate_backend``) is made again once and the query retried. The
        cursor is the feed's own, so nothing is lost or read twice across it."""
        try:
            return query(self._conn)
        except self._driver.Error as exc:
            if not self._conn.closed and not self._conn.broken:
                raise pg_error(exc, self.url, action) from exc
        self._reconnect()
        try:
            return query(self._conn)
        except self._driver.Error as exc:
            raise pg_error(exc, self.url, action) from exc

    def _reconnect(self) -> None:
        with contextlib.suppress(Exception):
            self._conn.close()
        self._conn = connect(self.url, timeout=self._connect_timeout)
        self._listening = False

    def wait(self, timeout: float) -> None:
        """Sleep until a commit with events is notified, or ``timeout`` seconds pass."""
        if not self._listening:
            self._fetch(lambda conn: conn.execute(f"LISTEN {self._channel}".encode()), "listen")
            self._listening = True
        try:
            for _ in self._conn.notifies(timeout=timeout, stop_after=1):
                pass
        except self._driver.Error as exc:
            raise pg_error(exc, self.url, "wait for events") from exc

    def follow(self, stop: threading.Event | None = None) -> Iterator[FeedEvent]:
        """Every event from the cursor on, waiting for new ones until ``stop`` is set."""
        while stop is None or not stop.is_set():
            found, more = self.read()
            yield from found
            if not found:
                self.wait(0.02 if more else self.poll_s)

    # -- subscribers -------------------------------------------------------------------------

    def subscribe(self, subscriber: Subscriber) -> Callable[[], None]:
        """Call ``subscriber(event)`` for every event ``run`` delivers; returns unsubscribe."""
        self._subscribers.append(subscriber)

        def unsubscribe() -> None:
            if subscriber in self._subscribers:
                self._subscribers.remove(subscriber)

        return unsubscribe

    def run(self, stop: threading.Event) -> None:
        """Deliver events to the subscribers until ``stop`` is set (a failing subscriber is
        logged and never stops the feed; nor does a server that cannot be reached for a
        while: logged once, then tried again, from the same cursor, until it can)."""
        pause = self.poll_s
        while not stop.is_set():
            try:
                self._deliver(stop)
                return
            except StoreError as exc:
                self._log.warning("event_feed_unreachable", reason=str(exc)[:300])
                stop.wait(pause)
                pause = min(pause * 2, 5.0)
                with contextlib.suppress(StoreError):
                    self._reconnect()

    def _deliver(self, stop: threading.Event) -> None:
        for item in self.follow(stop):
            for subscriber in list(self._subscribers):
                try:
                    subscriber(item.event)
                except Exception as exc:
                    self._log.warning(
                        "subscriber_failed",
                        thread_id=item.event.thread_id,
                        event_kind=item.event.kind,
                        error_type=type(exc).__name__,
                    )
