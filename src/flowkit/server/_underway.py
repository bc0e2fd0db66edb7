"""The threads a request of this server is running now, so that two requests sent at once
never both hear yes.

A ``wait: false`` answer (what the review page sends) is checked, answered 202 and run in the
background; two sent at once passed the same check, both heard 202, and the later one then
failed quietly on the thread's lock, or answered the pause the earlier one's run had moved
the thread to, which its sender never saw. A request now claims its thread before it answers:
the one that finds it claimed is refused at once (409), whatever it waits for. Across
processes the store's lock and the version the answer was checked at do the same (a background
run expects that version, so it never answers a later pause).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from ..errors import ConflictError

__all__ = ["Underway"]


class Underway:
    """Thread ids claimed by a request of this server until its run ends."""

    def __init__(self) -> None:
        self._claimed: set[str] = set()
        self._guard = threading.Lock()

    def claim(self, thread_id: str) -> None:
        """Claim ``thread_id``; ``ConflictError`` if a request has it (its run goes on)."""
        with self._guard:
            if thread_id in self._claimed:
                raise ConflictError(
                    f"Thread `{thread_id}` is being run for another request right now (an "
                    "answer or a start sent at the same time), so this one changed nothing; "
                    "reload the thread and decide again once that run has ended.",
                    thread_id=thread_id,
                )
            self._claimed.add(thread_id)

    def release(self, thread_id: str) -> None:
        with self._guard:
            self._claimed.discard(thread_id)

    @contextmanager
    def held(self, thread_id: str) -> Iterator[None]:
        """``thread_id`` claimed for a ``with`` block (a request that runs while it waits)."""
        self.claim(thread_id)
        try:
            yield
        finally:
            self.release(thread_id)
