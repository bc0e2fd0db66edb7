"""Per-thread lock files of the JSON-file store, removed with their thread without ever
letting two processes hold the same thread's lock.

A lock is an ``flock`` on ``locks/<thread id>.lock``. Removing such a file is the classic
trap: a process that opened the file just before it was unlinked can still lock the unlinked
inode, while the next process creates a new file at the path and locks that, and both believe
they hold the thread. Two rules close it:

1. A lock file is unlinked only by a process that holds its lock, as its last act before
   unlocking (from the unlink on, a newcomer may lock a new file at the path).
2. Every acquirer, once its ``flock`` succeeds, checks that the path still names the file it
   locked (``fstat`` of its descriptor against ``stat`` of the path). If not, a holder removed
   it in between: it drops that descriptor and starts over with a fresh open.

So whoever passes the check holds the lock of the file now at the path, and that file cannot
change until it lets go (by rule 1 only a holder may unlink it). The check costs one ``fstat``
and one ``stat`` per acquisition.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Callable, Collection
from contextlib import suppress
from pathlib import Path

from ..errors import StoreError
from ._files import JournalHandles, os_error
from ._ids import is_thread_id
from ._protocol import thread_busy

__all__ = ["LOCK_SUFFIX", "ThreadLockFile", "sweep_lock_files"]

LOCK_SUFFIX = ".lock"

#: Fresh opens one acquisition tries when each file it locked was removed meanwhile. Every
#: retry means another process took and released the lock in between, so running out says
#: what ``ConflictError`` says: others are using the thread right now.
MAX_REOPENS = 64


class ThreadLockFile:
    """The thread's lock for a ``with`` block; ``ConflictError`` at once if someone holds it.

    Set ``remove`` while holding to unlink the file on release (the thread was deleted): the
    unlink is the holder's last act before unlocking, since from then on a newcomer may lock
    a new file at the path. ``exists(thread_id)`` tells whether the thread exists; it is
    asked on release only when this acquisition had to create the file (a new thread, or an
    id that names none), so a lock taken for a thread that does not exist leaves no file
    behind, and the common case (resuming a thread whose file is there) pays nothing for it.
    ``handles``, the store's journal descriptors, are told while the lock is held (they
    check a journal's descriptor once per hold instead of before each write). A class, not
    ``@contextmanager``: every run takes one.
    """

    __slots__ = (
        "_created", "_exists", "_fd", "_handles", "_path", "_spare", "_thread_id", "remove",
    )  # fmt: skip

    def __init__(
        self,
        path: Path,
        thread_id: str,
        exists: Callable[[str], bool],
        spare: Callable[[], Path | None] | None = None,
        handles: JournalHandles | None = None,
    ) -> None:
        self._path = path
        self._thread_id = thread_id
        self._exists = exists
        self._spare = spare
        self._handles = handles
        self._fd = -1
        self._created = False
        self.remove = False

    def __enter__(self) -> None:
        for _ in range(MAX_REOPENS):
            fd = self._open()
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                if _names(self._path, fd):
                    self._fd = fd
                    self.remove = False
                    if self._handles is not None:
                        self._handles.trust(self._thread_id)
                    return
            except BlockingIOError:
                os.close(fd)
                raise thread_busy(self._thread_id) from None
            except BaseException:
                os.close(fd)
                raise
            os.close(fd)  # a holder removed the file we locked: it is nobody's lock now
        raise thread_busy(self._thread_id)

    def __exit__(self, *exc: object) -> None:
        fd, self._fd = self._fd, -1
        if self._handles is not None:  # before the unlock: from then on others may replace it
            self._handles.distrust(self._thread_id)
        try:
            if (self.remove or (self._created and not self._exists(self._thread_id))) and (
                _names(self._path, fd)  # never a newcomer's file, should ours be gone already
            ):
                # Anyone who opened this file before the unlink fails the path check once
                # they get the lock, and opens the path afresh. A file that cannot be removed
                # is harmless: it is still a working lock, and the next sweep tries again.
                with suppress(OSError):
                    os.unlink(self._path)
        finally:
            try:
                fcntl.flock(fd, fcntl.LOCK_UN)  # also for copies a fork() made of the fd
            finally:
                os.close(fd)

    def _open(self) -> int:
        """A descriptor of the file at the path; notes whether it had to be created."""
        try:
            try:
                fd = os.open(self._path, os.O_RDWR)
                self._created = False
                return fd
            except FileNotFoundError:
                pass
            self._created = True
            spare = self._spare() if self._spare is not None else None
            if spare is not None and _linked(spare, self._path):
                return os.open(self._path, os.O_RDWR)
            try:
                return os.open(self._path, os.O_RDWR | os.O_CREAT, 0o644)
            except FileNotFoundError:  # the store's first lock: make the folder (not per thread)
                self._path.parent.mkdir(exist_ok=True)
                return os.open(self._path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise os_error(
                "open the lock file", self._path, exc, thread_id=self._thread_id
            ) from exc


def _linked(spare: Path, path: Path) -> bool:
    """Whether the empty file ``spare`` (``_spares``) now stands at ``path`` too (``link``
    never replaces a file already there: then, or where links fail, the caller creates or
    opens the file itself). The spare's own name goes either way."""
    try:
        os.link(spare, path)
    except OSError:
        return False
    finally:
        with suppress(OSError):
            os.unlink(spare)
    return True


def _names(path: Path, fd: int) -> bool:
    """Whether ``path`` is still the file open as ``fd``."""
    try:
        at_path = os.stat(path)
    except FileNotFoundError:
        return False
    held = os.fstat(fd)
    return at_path.st_ino == held.st_ino and at_path.st_dev == held.st_dev


def sweep_lock_files(folder: Path, live: Collection[str], exists: Callable[[str], bool]) -> None:
    """Remove the lock files in ``folder`` of threads that do not exist (left by a delete
    that crashed before its unlink, or by versions that kept them). ``live``: the ids known
    to exist, skipped at once; ``exists(thread_id)`` asks again under the lock, and is only
    given names that are valid thread ids. Files someone holds are left alone."""
    try:
        names = os.listdir(folder)
    except OSError:
        return  # no lock taken yet, or unreadable: nothing to tidy
    for name in names:
        thread_id = name.removesuffix(LOCK_SUFFIX)
        if thread_id == name or thread_id in live or not is_thread_id(thread_id):
            continue
        lock = ThreadLockFile(folder / name, thread_id, exists)
        try:
            with lock:
                lock.remove = not exists(thread_id)  # asked again: created meanwhile?
        except (StoreError, OSError):  # busy (about to be created) or unreadable: kept
            continue
