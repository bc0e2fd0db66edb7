"""Spare thread folders and lock files of the JSON-file store, made ahead of the threads that
take them.

A new thread's folder, its journal and the journal's first zeros cost two inodes and three
syncs when made on the spot (the file's data and allocation, its folder's entry, the threads
folder's), and its lock file a third inode. ``SpareFolders`` makes them beforehand, off the
caller's thread: a short-lived refill thread, started when half or fewer of the target are
left, waits until the store's commits pause (no commit sync for ``QUIET_S``; ``wait`` asks
for the spares at once) and makes folders (each with its journal's zeros written, their
blocks synced and the folder's entry synced, a few at a time, each few handed out as soon as
it is synced) and empty lock files. The target grows with the threads the store starts, up
to ``count``: a command that starts one thread makes two.
``JsonFileStore.create`` then writes the start record over a spare journal's zeros (a sync
with no allocation to commit), renames the folder into ``threads/`` and syncs that: no new
inode on the caller's thread. So PostgreSQL makes its WAL segments ahead
of the writes that fill them. A new thread's lock file comes the same way: a spare empty file
hard-linked at the lock's path (``_locks``; a link fails where a file is, so it never
replaces another process's lock). Making an inode is the costly part of a file system's
namespace work, and on a busy or fragmented ext4 it costs hundreds of microseconds; a rename
or a link costs tens.

Layout: ``spares/<owner>/b<k>/<n>/journal.jsonl`` and ``spares/<owner>/b<k>/<n>.lock``, a
folder ``b<k>`` per refill. ``<owner>`` is one store object in one process, which holds an
exclusive ``flock`` on its owner folder while it has spares there. Leftovers of a dead
process go with its owner folder, removed by the first refill of any store object that finds
the owner's lock free (``_spare_leftovers``). ``create`` syncs the start record before the
rename, not the rename: a power loss may leave a thread's folder under ``spares/``, its
journal's first record naming the thread. So every store object, when it is made, looks
through the dead owners' folders first (``recover``) and hands each spare whose journal names
a thread that ``threads/`` lacks to the store, which renames it back. A spare whose journal
holds no intact named record (its zeros, or a record torn by the crash) was never a
thread's, and goes.
"""

from __future__ import annotations

import errno
import fcntl
import itertools
import os
import secrets
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from ..errors import StoreError
from ..foundation._logging import get_logger
from ._files import sync_dir
from ._jsonfile_reader import JOURNAL
from ._jsonl import write_all
from ._spare_leftovers import PutBack, sweep_dead_owners
from ._spare_state import (
    Owner,
    PoolState,
    Spare,
    make_lock_files,
    new_batch,
    remove_spare,
)
from ._syncfs import sync_file_system

__all__ = ["MAX_SPARES", "SPARES", "Spare", "SpareFolders"]

_T = TypeVar("_T")

#: The folder of spare thread folders, under the store's root.
SPARES = "spares"
#: The most spare folders a store keeps (each is a folder, a journal and a lock file).
MAX_SPARES = 1024
#: The fewest spares a refill makes and hands out at a time (a quarter of the target when
#: that is more): the first are ready while it makes the rest. Made all in one go, a store
#: starting threads back to back used up the rest before the lot was synced, and every
#: thread started meanwhile made its folder on the spot (one in five, in the bench).
_CHUNK = 4
#: Seconds without a sync of the store's commits a refill waits for before each few spares it
#: makes. Made while the store was committing, a refill's syncs and its Python work (the GIL)
#: delayed the commits' own: a 10-node run cost 0.4x the disk's floor more per node in the
#: bench, more than making every folder on the spot would have.
QUIET_S = 0.005
#: Seconds a pool whose refill failed (disk full, no permission) waits before it tries again;
#: meanwhile ``create`` takes the direct path, which reports the error where it matters.
_RETRY_S = 10.0


class SpareFolders:
    """Up to ``count`` spare thread folders under ``root/spares``, each journal ``size``
    bytes of zeros; ``fsync`` as the store's (without it nothing is synced)."""

    def __init__(self, root: Path, *, count: int, size: int, fsync: bool) -> None:
        if isinstance(count, bool) or not isinstance(count, int) or not 0 <= count <= MAX_SPARES:
            raise StoreError(
                f"spares must be a whole number from 0 to {MAX_SPARES}; got {count!r:.40}. It "
                "is how many thread folders the store keeps made ahead (default 32; 0: none)."
            )
        self.folder = root / SPARES
        self.count = count
        self.size = size
        self.fsync = fsync
        self._lock = threading.Lock()
        self._closing = threading.Lock()  # one ``close`` at a time
        self._state = PoolState()
        #: When the store's last commit sync ended (``time.monotonic()``; infinite while one
        #: runs): set by the store around each sync, read by the refill (``_wait_quiet``).
        self.quiet_since = 0.0
        self._finalizer = weakref.finalize(self, self._state.release)  # not the refill's: it
        # holds the pool, so a pool is collected only when no refill runs
        _LIVE.add(self)

    def _forked(self) -> None:
        """In a forked child: a lock the parent's refill held at the fork stays held there."""
        self._lock = threading.Lock()
        self._closing = threading.Lock()
        self._state.forked()

    def take(self) -> Spare | None:
        """A ready spare folder, now the caller's (``None``: none ready; make the folder
        directly)."""
        return self._take(lambda state: state.ready)

    def take_lock_file(self) -> Path | None:
        """A ready empty lock file, now the caller's to link at a lock's path and unlink here
        (``None``: none ready; create the lock file directly)."""
        return self._take(lambda state: state.locks)

    def _take(self, kind: Callable[[PoolState], deque[_T]]) -> _T | None:
        """One of ``kind``'s ready ones, if any; a refill starts when half or fewer of the
        target are left (and none runs)."""
        if self.count <= 0:
            return None
        with self._lock:
            state = self._state
            if state.pid != os.getpid():  # forked without ``os.register_at_fork`` hooks running
                state.forked()
            ready = kind(state)
            taken = ready.popleft() if ready else None
            state.taken += 1
            if (
                state.refill is None
                and not state.stopping
                and min(len(state.ready), len(state.locks)) <= self._target(state) // 2
                and time.monotonic() >= state.retry_at
            ):
                state.hurry = False
                state.refill = threading.Thread(
                    target=self._refill, name="flowkit-spares", daemon=True
                )
                state.refill.start()
            return taken

    def _target(self, state: PoolState) -> int:
        """How many of each kind to keep: ``count`` once this store has started a few
        threads, fewer before (a command that starts one thread makes two spares, not
        ``count``)."""
        return min(self.count, 2 + state.taken // 2)

    def recover(self, put_back: PutBack) -> None:
        """Before the store is used: the dead owners' spares that hold a thread missing from
        ``threads/`` handed to ``put_back``, then the owners' folders removed (see the
        module)."""
        try:
            if self.folder.is_dir():
                sweep_dead_owners(self.folder, put_back)
        except OSError as exc:  # unreadable: the next store object made here tries again
            if exc.errno == errno.EROFS:
                return  # a read-only store: nothing could be put back, nothing to say
            get_logger().warning(
                "spare_folders_unreadable", folder=str(self.folder), reason=exc.strerror or ""
            )

    def wait(self) -> None:
        """Until the refill running now, if any, has finished, told to make its spares now,
        without waiting for the store's commits to pause (benchmarks, tests)."""
        with self._lock:
            refill = self._state.refill
            self._state.hurry = True
        if refill is not None:
            refill.join()

    def discard(self, spare: Spare) -> None:
        """Remove a spare that was taken and not used (its journal may hold a record that no
        thread owns: a spare's content is never read; the taker closes what it opened)."""
        remove_spare(spare)

    def close(self) -> None:
        """Remove the spares not taken and give up the owner folder (the pool starts anew
        at the next ``take``). Two at once take turns: one resetting the pool while the other
        waited for a refill let a new refill start, whose owner folder the other then lost
        hold of (left locked, never removed)."""
        with self._closing:
            with self._lock:
                refill = self._state.refill
                self._state.stopping = True
            if refill is not None:
                refill.join()
            with self._lock:
                self._state.release()
                self._state.reset()

    # -- the refill thread -------------------------------------------------------------------

    def _refill(self) -> None:
        state = self._state
        try:
            while True:
                with self._lock:
                    target = self._target(state)
                    chunk = max(_CHUNK, target // 4)
                    folders = min(target - len(state.ready), chunk)
                    locks = min(target - len(state.locks), chunk)
                    if state.stopping or max(folders, locks) <= 0:
                        return
                    owner = state.owner
                if not self._wait_quiet(state):
                    return
                if owner is None:
                    owner = self._own(state)
                batch = new_batch(owner, state)
                made = self._make(batch, folders, state.numbers)
                with self._lock:
                    state.ready.extend(made)  # removed by ``close`` if it is stopping
                made_locks = make_lock_files(batch, locks, state.numbers)
                with self._lock:
                    state.locks.extend(made_locks)
        except OSError as exc:
            get_logger().warning(
                "spare_folders_failed", folder=str(self.folder), reason=exc.strerror or str(exc)
            )
            with self._lock:
                state.retry_at = time.monotonic() + _RETRY_S
        finally:
            with self._lock:
                state.refill = None

    def _wait_quiet(self, state: PoolState) -> bool:
        """Until the store has made no commit sync for ``QUIET_S`` (or ``wait`` asks for the
        spares now); False if the pool is closing meanwhile."""
        while not state.hurry:
            if state.stopping:
                return False
            quiet = time.monotonic() - self.quiet_since
            if quiet >= QUIET_S:
                break
            time.sleep(min(QUIET_S, QUIET_S - quiet))
        return not state.stopping

    def _own(self, state: PoolState) -> Owner:
        """This pool's owner folder, locked (the leftovers of dead owners removed first).
        Made under a hidden name and locked before it gets its own, so no sweep takes it
        for a dead owner's in between."""
        self.folder.mkdir(exist_ok=True)
        # No put-back here: it takes the store's locks, never from this thread (a fork
        # meanwhile would leave them held in the child); owners holding a thread are kept
        # for the next store object made (``recover``).
        sweep_dead_owners(self.folder, None)
        name = f"{os.getpid()}-{secrets.token_hex(4)}"
        making = self.folder / f".new-{name}"
        making.mkdir()
        fd = os.open(making, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        fcntl.flock(fd, fcntl.LOCK_EX)
        path = self.folder / name
        os.rename(making, path)
        owner = Owner(path, fd)
        with self._lock:
            state.owner = owner
        return owner

    def _make(self, batch: Path, count: int, numbers: itertools.count[int]) -> list[Spare]:
        """``count`` new spares in ``batch``: written, then synced together: one ``syncfs``
        (one flush of the disk's cache for the lot, where a sync of each file and of its
        folder flushed it twice per spare, each flush delaying the syncs of the threads
        being started meanwhile), or where there is none, each file then each folder."""
        made: list[Spare] = []
        fds: list[int] = []
        try:
            for _ in range(count):
                path = batch / str(next(numbers))
                path.mkdir()
                fd = os.open(
                    path / JOURNAL, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600
                )
                fds.append(fd)
                made.append(Spare(path, os.fstat(fd).st_ino, self.size))
                write_all(fd, bytes(self.size), 0)
            if self.fsync and fds and not sync_file_system(fds[0]):
                if hasattr(os, "posix_fadvise"):
                    for fd in fds:  # writeback of all starts now, not one sync at a time
                        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                for fd in fds:
                    os.fdatasync(fd)
                for spare in made:
                    sync_dir(True, spare.path)
        except OSError:
            for spare in made:
                remove_spare(spare)
            raise
        finally:
            for fd in fds:
                os.close(fd)
        return made


#: The pools of this process, put right in a forked child.
_LIVE: weakref.WeakSet[SpareFolders] = weakref.WeakSet()


def _after_fork_in_child() -> None:
    for pool in list(_LIVE):
        pool._forked()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
