"""Stores keep threads: ``MemoryStore`` for tests, ``JsonFileStore`` (the default durable store)
for local disk, or any object implementing the ``Store`` protocol."""

from __future__ import annotations

from ._ids import check_thread_id
from ._protocol import Store, ThreadLog
from .jsonfile import JsonFileStore
from .memory import MemoryStore

__all__ = ["JsonFileStore", "MemoryStore", "Store", "ThreadLog", "check_thread_id"]
