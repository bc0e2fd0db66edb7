"""Stores keep threads: ``MemoryStore`` for tests, ``JsonFileStore`` (the default durable store)
for local disk, ``PostgresStore`` (the ``flowkit-workflows[postgres]`` extra) for many
processes, or any object implementing the ``Store`` protocol. ``list_threads`` (paged by
cursor), ``iter_threads`` and ``count_threads`` list any store's threads: from its index
(``ThreadIndex``: all three shipped stores have one), else by loading each thread;
``list_due_timers`` pages through the threads whose timer is due, from the store's
``TimerIndex`` likewise."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..records._records import (
    FORMAT_VERSION,
    InputRecord,
    ItemRecord,
    JoinRecord,
    PatchRecord,
    PauseRecord,
    Snapshot,
    StartRecord,
    StepRecord,
    SubRecord,
    TimerRecord,
)
from ._ids import check_thread_id
from ._list_threads import count_threads, iter_threads, list_threads
from ._listing import ThreadPage, ThreadSummary
from ._protocol import (
    AnyRecord,
    AttemptMarks,
    DueTimer,
    HistoryPages,
    RecordRange,
    Store,
    ThreadIndex,
    ThreadLog,
    TimerIndex,
)
from ._timer_listing import TimerPage, list_due_timers
from .memory import MemoryStore

if TYPE_CHECKING:
    from ..records._marker import AttemptMarker
    from .jsonfile import JsonFileStore
    from .postgres import PostgresStore

__all__ = [
    "FORMAT_VERSION",
    "AnyRecord",
    "AttemptMarker",
    "AttemptMarks",
    "DueTimer",
    "HistoryPages",
    "InputRecord",
    "ItemRecord",
    "JoinRecord",
    "JsonFileStore",
    "MemoryStore",
    "PatchRecord",
    "PauseRecord",
    "PostgresStore",
    "RecordRange",
    "Snapshot",
    "StartRecord",
    "StepRecord",
    "Store",
    "SubRecord",
    "ThreadIndex",
    "ThreadLog",
    "ThreadPage",
    "ThreadSummary",
    "TimerIndex",
    "TimerPage",
    "TimerRecord",
    "check_thread_id",
    "count_threads",
    "iter_threads",
    "list_due_timers",
    "list_threads",
]


def __getattr__(name: str) -> Any:
    # The file store loads on first use: `import flowkit` should not pay for it.
    if name == "JsonFileStore":
        from .jsonfile import JsonFileStore

        return JsonFileStore
    if name == "PostgresStore":  # the driver is an extra: loaded only by those who use it
        from .postgres import PostgresStore

        return PostgresStore
    if name == "AttemptMarker":  # only runners that track attempts need it
        from ..records._marker import AttemptMarker

        return AttemptMarker
    raise AttributeError(f"module 'flowkit.stores' has no attribute {name!r}")
