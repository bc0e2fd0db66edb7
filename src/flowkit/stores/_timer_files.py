"""The JSON-file store's timer index: one small file per timer under ``timers/``.

A thread whose position has a timer (a gate's deadline, a node's wake-up) has a file named
``<due in milliseconds>~<thread id>`` (``~`` is never part of a thread id) holding its flow's
name, so the threads due by a time are found by listing one folder, whatever the number of
threads, and only the due ones are opened (for their flow).

Crash safety comes from the order of the writes (``JsonFileStore.append``): a new timer's file
is written (atomically, synced) before the record that sets it, and an old one removed only
after the record that ends it. So a crash may leave a file whose thread has moved on, which
``fire_due`` finds stale and drops, but never a timer without its file.
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

from ..errors import StoreError
from ._files import STALE_TEMP_SECONDS, os_error, write_file_atomically
from ._ids import is_thread_id
from ._protocol import DueTimer

__all__ = ["TIMERS", "TimerFiles"]

TIMERS = "timers"
_SEP = "~"


def _name(thread_id: str, due: float) -> str:
    # Record times are whole milliseconds, so this is exact.
    return f"{round(due * 1000)}{_SEP}{thread_id}"


class TimerFiles:
    """The files of ``folder`` (created on first use), synced when ``fsync``."""

    def __init__(self, folder: Path, *, fsync: bool) -> None:
        self.folder = folder
        self.fsync = fsync

    def add(self, thread_id: str, due: float, flow: str) -> None:
        """The file of a timer; ``StoreError`` (and no file) if it cannot be written."""
        path = self.folder / _name(thread_id, due)
        try:
            self.folder.mkdir(mode=0o700, exist_ok=True)
        except OSError as exc:
            raise os_error("create", self.folder, exc, thread_id=thread_id) from exc
        write_file_atomically(
            path, flow.encode(), fsync=self.fsync, thread_id=thread_id, what="write the timer"
        )

    def remove(self, thread_id: str, due: float) -> None:
        """Remove the file of a timer, if there; one left behind is only stale, so a failure
        to remove it is ignored (``fire_due`` drops it later)."""
        self._unlink(_name(thread_id, due))

    def remove_all(self, thread_id: str) -> None:
        """Remove every timer file of a thread (deleted)."""
        suffix = f"{_SEP}{thread_id}"
        for name in self._names():
            if name.endswith(suffix):
                self._unlink(name)

    def due(
        self, until: float, *, flow: str | None, limit: int | None, after: DueTimer | None = None
    ) -> list[DueTimer]:
        """The timers due by ``until``, earliest first (of ``flow``), at most ``limit``, after
        ``after`` in the order (due, thread id). Only the due ones' files are opened."""
        found: list[tuple[float, str, str]] = []
        for name in self._names():
            if name.startswith("."):  # a write's temporary file
                self._sweep(name)
                continue
            millis, sep, thread_id = name.partition(_SEP)
            if not sep or not is_thread_id(thread_id):
                continue
            try:
                due = int(millis) / 1000
            except ValueError:
                continue
            if due <= until and (after is None or (due, thread_id) > (after.due, after.thread_id)):
                found.append((due, thread_id, name))
        found.sort()
        timers: list[DueTimer] = []
        for due, thread_id, name in found:
            if flow is not None and self._flow(name) != flow:
                continue
            timers.append(DueTimer(thread_id, due))
            if limit is not None and len(timers) >= limit:
                break
        return timers

    def _names(self) -> list[str]:
        try:
            return os.listdir(self.folder)
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise os_error("list", self.folder, exc, thread_id=None) from exc

    def _flow(self, name: str) -> str | None:
        try:
            return (self.folder / name).read_bytes().decode("utf-8", "replace")
        except FileNotFoundError:
            return None  # fired and removed meanwhile
        except OSError as exc:
            raise StoreError(
                f"Cannot read the timer file {self.folder / name}: {exc.strerror or exc}; fix "
                "its permissions.",
                path=str(self.folder / name),
            ) from exc

    def _sweep(self, name: str) -> None:
        """Remove a temporary file a write killed midway left (``.<name>.<random>.tmp``)."""
        if not name.endswith(".tmp"):
            return
        with contextlib.suppress(OSError):
            if time.time() - os.stat(self.folder / name).st_mtime > STALE_TEMP_SECONDS:
                self._unlink(name)

    def _unlink(self, name: str) -> None:
        with contextlib.suppress(OSError):
            os.unlink(self.folder / name)
