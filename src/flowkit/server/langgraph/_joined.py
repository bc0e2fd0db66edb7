"""A background run's events, kept while it runs so that ``runs.join_stream`` can follow it.

A run started with ``runs.create`` runs through the same stream as ``runs.stream`` and keeps
its server-sent events here, each with an id (its index): a client that joins gets them from
the start (or after its ``Last-Event-ID``), then each as it comes, until the run ends. Once it
has ended and no client follows it, only its first and last events are kept (``metadata``;
``error``, ``end``): a client that joins an ended run learns that it ended, and reads the
thread's state for the rest.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

__all__ = ["RunFrames"]

#: How many events of one run are kept at most while it runs; later ones (bar the last) are
#: dropped, so a run that streams without end cannot fill the server's memory.
_KEEP = 10_000
#: How often a waiting reader looks up (so a client that left is let go within this).
_TICK_S = 1.0
_HEARTBEAT = b": still running\n\n"


class RunFrames:
    """The events of one run (thread-safe): the run adds them, any number of readers follow."""

    def __init__(self, modes: list[str]) -> None:
        self.modes = modes
        self._frames: list[tuple[int, bytes]] = []
        self._next = 0
        self._ended = False
        self._readers = 0
        self._changed = threading.Condition()

    def add(self, frame: bytes) -> None:
        with self._changed:
            if len(self._frames) < _KEEP or frame.startswith((b"event: end\n", b"event: error\n")):
                self._frames.append((self._next, frame))
            self._next += 1
            self._changed.notify_all()

    def end(self) -> None:
        with self._changed:
            self._ended = True
            self._compact()
            self._changed.notify_all()

    def _compact(self) -> None:
        """Once ended and followed by none: keep the first and last events only."""
        if self._ended and not self._readers:
            self._frames = [
                (index, frame)
                for index, frame in self._frames
                if frame.startswith((b"event: metadata\n", b"event: error\n", b"event: end\n"))
            ]

    def follow(self, after: int = -1) -> Iterator[bytes]:
        """The events after id ``after``, each with its ``id:``, until the run's last; a
        comment now and then while none comes (the reader's chance to notice a client left)."""
        with self._changed:
            self._readers += 1
        try:
            yield from self._follow(after)
        finally:
            with self._changed:
                self._readers -= 1
                self._compact()

    def _follow(self, after: int) -> Iterator[bytes]:
        while True:
            with self._changed:
                found = [(i, frame) for i, frame in self._frames if i > after]
                ended = self._ended
                if not found and not ended:
                    self._changed.wait(_TICK_S)
                    found = [(i, frame) for i, frame in self._frames if i > after]
                    ended = self._ended
            for index, frame in found:
                after = index
                yield b"id: " + str(index).encode() + b"\n" + frame
            if ended and not found:
                return
            if not found:
                yield _HEARTBEAT
