"""Stores keep threads: ``MemoryStore`` for tests, ``JsonFileStore`` (the default durable store)
for local disk, or any object implementing the ``Store`` protocol."""

from __future__ import annotations

from .._records import (
    FORMAT_VERSION,
    InputRecord,
    PatchRecord,
    Snapshot,
    StartRecord,
    StepRecord,
)
from ._ids import check_thread_id
from ._protocol import AnyRecord, Store, ThreadLog
from .jsonfile import JsonFileStore
from .memory import MemoryStore

__all__ = [
    "FORMAT_VERSION",
    "AnyRecord",
    "InputRecord",
    "JsonFileStore",
    "MemoryStore",
    "PatchRecord",
    "Snapshot",
    "StartRecord",
    "StepRecord",
    "Store",
    "ThreadLog",
    "check_thread_id",
]
