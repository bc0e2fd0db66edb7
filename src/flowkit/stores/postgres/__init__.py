"""PostgreSQL: threads shared by many processes, with compare-and-set, leases and events.

Needs the ``flowkit-workflows[postgres]`` extra (psycopg 3 and psycopg-pool); nothing here is
imported by ``import flowkit``. Create the schema once with ``flowkit store init URL`` (or
``migrate(url)``), then ``PostgresStore(url)`` is a ``Store`` like any other. See
docs/scale-out.md.
"""

from __future__ import annotations

from ._copy import CopyReport, copy_threads
from ._driver import INSTALL
from ._feed import EventCursor, EventFeed, FeedEvent
from ._queue import ThreadStatus, WorkItem
from ._schema import SCHEMA_VERSION, migrate
from .store import PostgresStore

__all__ = [
    "INSTALL",
    "SCHEMA_VERSION",
    "CopyReport",
    "EventCursor",
    "EventFeed",
    "FeedEvent",
    "PostgresStore",
    "ThreadStatus",
    "WorkItem",
    "copy_threads",
    "migrate",
]
