"""The Memory protocol: long-term memory shared across threads, as namespaced JSON values.

A thread's state lives and dies with the thread; memory is what outlives it (a user's
preferences, a summary of each past session). Items live under a *namespace*, a tuple of
labels such as ``("user", "42")``, and a *key*; values are JSON (checked on ``put``, so
nothing stored is unreadable later). ``flowkit.testing.MemoryContract`` checks any
implementation.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

__all__ = ["JSONValue", "Memory", "MemoryItem", "Namespace"]

#: A namespace: one or more labels, outermost first, e.g. ``("user", "42", "sessions")``.
Namespace = tuple[str, ...]

#: What a value may be: ``dict`` (string keys), ``list``, ``str``, ``int``, finite ``float``,
#: ``bool`` or ``None``, nested. Tuples, sets, bytes and objects are refused.
JSONValue = Any


@dataclass(frozen=True, slots=True)
class MemoryItem:
    """One stored item: where it lives, its value, and when it was first and last put
    (seconds since the epoch). ``value`` is a fresh copy: changing it changes nothing stored.
    """

    namespace: Namespace
    key: str
    value: JSONValue
    created_at: float
    updated_at: float


@runtime_checkable
class Memory(Protocol):
    """Namespaced key-value memory. Every method checks its namespace and key first
    (``MemoryItemError``); ``put`` checks the value too, before anything is written.
    """

    def put(self, namespace: Sequence[str], key: str, value: JSONValue) -> None:
        """Store ``value`` under ``namespace``/``key``, replacing what was there."""

    def get(self, namespace: Sequence[str], key: str) -> MemoryItem | None:
        """The item under ``namespace``/``key``, or ``None``."""

    def delete(self, namespace: Sequence[str], key: str) -> bool:
        """Remove the item; whether there was one."""

    def search(
        self,
        namespace_prefix: Sequence[str] = (),
        *,
        filter: Mapping[str, JSONValue] | None = None,
        limit: int = 10,
        offset: int = 0,
    ) -> list[MemoryItem]:
        """Items whose namespace starts with ``namespace_prefix`` (``()``: every item),
        ordered by namespace then key, skipping ``offset`` and at most ``limit`` of them.

        ``filter`` keeps items whose value is a dict holding each of its keys with an equal
        value (``{"kind": "summary"}``).
        """
