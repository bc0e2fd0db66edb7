"""Who writes the thread index, so that a listing can tell when a writer died mid-commit.

A commit writes the journal first and the thread's index row right after: a process killed
in between leaves the row one commit behind. So each store object that writes registers a
file ``index/writers/<pid>-<random>`` and holds an exclusive ``flock`` on it while it lives
(the kernel lets go when the process dies, however it dies). Before each journal write it
notes in that file the thread it commits, in a slot of its own while the commit lasts (one
``pwrite``, never synced: it only has to survive the process, not the machine; commits to
different threads may overlap, each in its slot). A listing that can lock someone else's
file has found a writer that died: the rows of the threads named there may be stale, and are
read again from their journals. A ``*`` flag instead means the whole index must be rebuilt
(a rebuild under way, or an index update that failed).

The file also holds the machine's boot id. A file left from an earlier boot is a power loss
or a crash of the machine, which may also have lost the last row updates (SQLite's WAL is not
synced per commit): then the whole index is rebuilt. Files are created under a temporary name
and renamed once locked, so a listing never takes a writer being born for a dead one.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import secrets
import time
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from ._files import STALE_TEMP_SECONDS, sync_dir
from ._ids import is_thread_id

__all__ = ["DeadWriter", "WriterFile", "dead_writers"]

_MAGIC = b"flowkit-index-writer 1\n"
#: Where the committing threads' slots start, after the magic line and the boot id.
_AT = 96
#: The header's last byte: ``*`` when every row may be stale.
_ALL_AT = _AT - 1
#: One slot: a thread id (at most 128 characters) and its newline.
_SLOT = 130


@cache
def boot_id() -> str:
    """This boot of the machine (Linux), or ``""`` where the system does not say."""
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as handle:
            return handle.read().strip()
    except OSError:
        return ""


class WriterFile:
    """This store object's registration as a writer, under ``folder`` (created if missing).

    ``fsync``: the file's creation survives power loss (so a crash of the machine is seen).
    """

    def __init__(self, folder: Path, *, fsync: bool) -> None:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        name = f"{os.getpid()}-{secrets.token_hex(6)}"
        temporary = folder / f".{name}"
        fd = os.open(temporary, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            os.pwrite(fd, (_MAGIC + boot_id().encode() + b"\n").ljust(_AT), 0)
            if fsync:
                os.fsync(fd)
            os.rename(temporary, folder / name)
            sync_dir(fsync, folder)
        except BaseException:
            os.close(fd)
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise
        self.path = folder / name
        self.fd = fd
        self._slots: dict[str, int] = {}  # thread -> its slot, while its commit lasts
        self._free: list[int] = []
        self._named: dict[int, str] = {}  # slot -> the thread it names on disk

    def committing(self, thread_id: str) -> None:
        """Note the thread whose journal is about to be written (until ``done``)."""
        slot = self._slots.get(thread_id)
        if slot is None:
            slot = self._free.pop() if self._free else len(self._slots)
            self._slots[thread_id] = slot
        if self._named.get(slot) != thread_id:  # a run's next commit: its slot says it already
            os.pwrite(self.fd, thread_id.encode() + b"\n", _AT + slot * _SLOT)
            self._named[slot] = thread_id

    def done(self, thread_id: str) -> None:
        """The thread's row is updated: its slot may take another commit (what it says on
        disk meanwhile is only a thread read again should this writer die)."""
        slot = self._slots.pop(thread_id, None)
        if slot is not None:
            self._free.append(slot)

    def everything(self) -> None:
        """Say that every row may be stale (read as such should this writer die)."""
        os.pwrite(self.fd, b"*", _ALL_AT)

    def close(self) -> None:
        """Unregister: remove the file while still holding it, then let go."""
        with contextlib.suppress(OSError):
            os.unlink(self.path)
        os.close(self.fd)

    def leave(self) -> None:
        """Close without removing the file (it then reads as a dead writer's), or in a forked
        child, whose copy of the descriptor must not touch the parent's lock."""
        os.close(self.fd)


@dataclass(slots=True)
class DeadWriter:
    """A writer file nobody holds: what its writer may have left stale, and the file itself
    (still locked by the caller, so it can be removed once the rows are right)."""

    path: Path
    fd: int
    #: The threads whose rows may be stale; ``None``: any row (rebuild them all).
    threads: tuple[str, ...] | None
    #: Left from an earlier boot: the machine went down, maybe mid-write, so the index file
    #: itself may be damaged in ways SQLite cannot see (made anew, not rebuilt in place).
    rebooted: bool = False

    def remove(self) -> None:
        """The rows are right: the file goes (a no-op once ``release``d)."""
        if self.fd < 0:
            return
        with contextlib.suppress(OSError):
            os.unlink(self.path)
        self.release()

    def release(self) -> None:
        """Let go of the file, leaving it for the next listing."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def dead_writers(
    folder: Path, *, mine: Path | None, live: set[str] | None = None
) -> list[DeadWriter]:
    """The writer files under ``folder`` whose writers are gone (each returned locked); the
    threads that writers still alive name in their slots are added to ``live`` if given
    (commits under way, rows not written yet: read from their journals by a listing).

    One ``scandir`` of a small folder and, per other writer, an open and a non-blocking
    ``flock``: cheap enough for every listing.
    """
    try:
        entries = list(os.scandir(folder))
    except FileNotFoundError:
        return []
    found: list[DeadWriter] = []
    for entry in entries:
        if entry.name.startswith("."):
            _sweep(entry)
            continue
        path = Path(entry.path)
        if mine is not None and path == mine:
            continue
        try:
            fd = os.open(path, os.O_RDWR)
        except OSError:
            continue  # removed meanwhile: its writer closed
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            if live is not None:
                with contextlib.suppress(OSError):
                    live.update(_slots(os.pread(fd, max(os.fstat(fd).st_size, _AT), 0)))
            os.close(fd)
            continue  # alive
        try:
            data = os.pread(fd, max(os.fstat(fd).st_size, _AT), 0)
        except OSError:
            data = b""
        boot = data[len(_MAGIC) : _AT].split(b"\n", 1)[0].decode("ascii", "replace")
        rebooted = not data.startswith(_MAGIC) or not boot or boot != boot_id()
        found.append(DeadWriter(path, fd, None if rebooted else _stale_threads(data), rebooted))
    return found


def _sweep(entry: os.DirEntry[str]) -> None:
    """Remove a registration that died before it was renamed into place (a minute old)."""
    with contextlib.suppress(OSError):
        if time.time() - entry.stat().st_mtime > STALE_TEMP_SECONDS:
            os.unlink(entry.path)


def _stale_threads(data: bytes) -> tuple[str, ...] | None:
    """What a dead writer of this boot says may be stale (``None``: anything)."""
    if data[_ALL_AT:_AT] == b"*":
        return None
    found = []
    for committing in _named(data):
        if not is_thread_id(committing):
            return None  # not a slot this code wrote: trust nothing
        found.append(committing)
    return tuple(found)


def _slots(data: bytes) -> list[str]:
    """The threads a live writer's slots name (one it is writing may read torn: skipped)."""
    return [name for name in _named(data) if is_thread_id(name)]


def _named(data: bytes) -> list[str]:
    named = []
    for start in range(_AT, len(data), _SLOT):
        slot = data[start : start + _SLOT].split(b"\n", 1)[0].strip(b"\0")
        if slot:
            named.append(slot.decode("utf-8", "replace"))
    return named
