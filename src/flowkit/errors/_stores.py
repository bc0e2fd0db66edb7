"""Errors of persistence and of listings: ids, conflicts, damage, values JSON cannot carry."""

from __future__ import annotations

from typing import Any

from ._base import FlowkitError

__all__ = [
    "ConflictError",
    "CorruptStoreError",
    "InvalidCursorError",
    "InvalidListingError",
    "InvalidThreadIdError",
    "MemoryItemError",
    "StoreError",
    "UnstorableValueError",
]


class InvalidListingError(FlowkitError, ValueError):
    """A thread listing (``list_threads``) was asked for something it cannot give: a limit out
    of range, an unknown order or status, a time that is not a number. A ``ValueError`` too,
    like any bad argument."""


class InvalidCursorError(InvalidListingError):
    """A listing cursor that is not one ``list_threads`` made, or was made for another order;
    start again from the first page (no cursor)."""


class StoreError(FlowkitError):
    """Persistence failed."""

    def __init__(
        self, message: str, *, thread_id: str | None = None, path: str | None = None
    ) -> None:
        self.thread_id = thread_id
        self.path = path
        super().__init__(message)


class InvalidThreadIdError(StoreError):
    """A thread id is empty, too long, or could escape the store (``../../etc``)."""

    def __init__(self, thread_id: str, reason: str) -> None:
        super().__init__(
            f"Thread id {thread_id[:80]!r} is not allowed: {reason}. Use 1-128 characters from "
            "letters, digits, '-', '_', '.', ':' and '@', not starting with '.'.",
            thread_id=thread_id,
        )


class ConflictError(StoreError):
    """Another writer changed the thread first; nothing was written. Reload and try again."""

    retryable = True

    def __init__(
        self,
        message: str,
        *,
        thread_id: str,
        expected: int | None = None,
        actual: int | None = None,
    ) -> None:
        self.expected = expected
        self.actual = actual
        super().__init__(message, thread_id=thread_id)


class CorruptStoreError(StoreError):
    """A stored record cannot be read. Only this thread is affected."""

    def __init__(
        self, message: str, *, thread_id: str | None, path: str, line: int | None = None
    ) -> None:
        self.line = line
        where = f"{path}:{line}" if line is not None else path
        super().__init__(
            f"{message} ({where}). Other threads are unaffected; restore this file from a "
            "backup, or start the work again in a new thread.",
            thread_id=thread_id,
            path=path,
        )


class UnstorableValueError(StoreError):
    """A value that JSON cannot carry faithfully was refused before anything was written.

    NaN or ±inf floats, bytes that are not UTF-8, objects with no JSON form, strings with lone
    surrogates, containers nested past ``flowkit.definition._jsonform.MAX_NESTING``, integers
    of more digits than Python reads back, and, in a field that admits any type (``Any``, a bare
    ``dict``, ...), a value JSON would give back changed (a tuple, a set, an int key, a
    datetime, a model). ``node`` is the
    node, gate, ``update_state`` or ``start`` that produced it; ``field`` the state (or gate
    input) field; ``at`` the place inside it (``scores[3].value``). The thread is unchanged.
    """

    def __init__(
        self, reason: str, *, thread_id: str, node: str, field: str, at: str | None = None
    ) -> None:
        self.node = node
        self.field = field
        self.at = at or field
        super().__init__(
            f"Thread `{thread_id}`: `{node}` produced `{self.at}` = {reason}, which cannot be "
            "saved as JSON. Nothing was written and the thread is unchanged; store a finite "
            "number, None, text or a JSON-ready structure instead, then resume.",
            thread_id=thread_id,
        )


class MemoryItemError(StoreError):
    """Long-term memory (``flowkit.memory``) refused a namespace, key or value: empty, too
    long, control characters, not JSON (NaN, bytes, tuples, objects), nested too deep or too
    big. Nothing was written. ``namespace`` and ``key`` are what the caller passed (possibly
    shortened), for the message; never the value, which may be private."""

    def __init__(self, message: str, *, namespace: Any = None, key: Any = None) -> None:
        self.namespace = namespace
        self.key = key
        super().__init__(message)
