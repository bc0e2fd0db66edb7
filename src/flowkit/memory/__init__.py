"""Long-term memory shared across threads: namespaced keys holding JSON values.

``Runner(flow, memory=JsonFileMemory("memory"))`` hands it to every node as ``ctx.memory``::

    ctx.memory.put(("user", user_id), "prefs", {"tone": "brief"})
    item = ctx.memory.get(("user", user_id), "prefs")
    recent = ctx.memory.search(("user", user_id), limit=5)

``Memory`` is the protocol (``flowkit.testing.MemoryContract`` checks any implementation);
``InProcessMemory`` keeps items in this process, ``JsonFileMemory`` in files.
"""

from __future__ import annotations

from ._checks import MAX_DEPTH, MAX_KEY, MAX_LABEL, MAX_LABELS, MAX_VALUE_BYTES
from ._protocol import JSONValue, Memory, MemoryItem, Namespace
from .inprocess import InProcessMemory
from .jsonfile import JsonFileMemory

__all__ = [
    "MAX_DEPTH",
    "MAX_KEY",
    "MAX_LABEL",
    "MAX_LABELS",
    "MAX_VALUE_BYTES",
    "InProcessMemory",
    "JSONValue",
    "JsonFileMemory",
    "Memory",
    "MemoryItem",
    "Namespace",
]
