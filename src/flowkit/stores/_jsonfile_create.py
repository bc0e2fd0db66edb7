"""How the JSON-file store creates a thread, and the commit helpers its writes share.

A new thread's folder comes from a spare (``_spares``: its start record written over zeros
already on disk and synced, the folder renamed into ``threads/``) or, with none ready, is made
on the spot (folder, journal, the record with zeros to the end of its first block, the two
folders synced). Either way ``create`` returns once the thread is on disk, and a second create
of the same thread, here or in another process, finds it and raises ``ThreadExistsError``.

The spare's new name is not synced (a sync of ``threads/`` cost a tenth of a ten-step run):
a new journal's first record names its thread (``encode(named=True)``), so should a power
loss take the name, the first store to open the folder afterwards finds the record in the
spare and puts the folder back under it (``_put_back``; ``SpareFolders.recover``).

``ThreadCreation`` is ``JsonFileStore``'s base: ``JsonFileStore.__init__`` sets the
attributes declared here.
"""

from __future__ import annotations

import fcntl
import itertools
import math
import os
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from ..errors import ConflictError, StoreError, ThreadExistsError, ThreadNotFoundError
from ..foundation._logging import get_logger
from ..records._records import StartRecord
from ._files import name_of, os_error, still_named, sync_dir
from ._index_repair import summaries
from ._jsonfile_reader import JournalTail, JsonFileReader
from ._jsonl import encode, write_all
from ._listing import ThreadSummary
from ._locks import ThreadLockFile
from ._spares import Spare, SpareFolders
from ._thread_index import JsonThreadIndex
from ._timer_files import TimerFiles

__all__ = ["BLOCK", "STRIPES", "ThreadCreation"]

#: The file system's block: the first zeros of a new journal fill its last block only.
BLOCK = 4096
#: Locks that keep the commits to one thread in this process one at a time (by hash of its
#: id: two threads may share one, which only makes them wait for each other).
STRIPES = 64
#: Times a create opens its journal again when the folder it made was replaced meanwhile.
_REOPENS = 8


class ThreadCreation(JsonFileReader):
    """``create``, and the helpers every commit of the store uses."""

    fsync: bool
    preallocate: int
    _index: JsonThreadIndex
    _timers: TimerFiles
    _spares: SpareFolders
    _stripes: tuple[threading.Lock, ...]
    #: The thread's lock file (``JsonFileStore._lock_file``).
    _lock_file: Callable[[str], ThreadLockFile]
    #: How many journals this store object has deleted or replaced (a commit that waited for
    #: a journal's lock checks it is still the thread's when this moved meanwhile).
    _removals: int

    def _first_capacity(self, size: int) -> int:
        """A new journal's length: its ``size`` bytes of data, then zeros to the end of their
        last block (``preallocate`` when smaller). One block, not ``preallocate``: a short
        thread that ends gives its zeros back by a truncate inside that block, which frees
        none (ext4: ~4 µs against ~80 µs for a truncate that frees 64 KiB); a thread that
        outgrows it gets ``preallocate`` more at once."""
        if not self.preallocate:
            return size
        unit = min(self.preallocate, BLOCK)
        return (size // unit + 1) * unit

    def _sync(self, fd: int) -> None:
        if self.fsync:
            spares = self._spares  # its refill waits for the syncs to pause
            spares.quiet_since = math.inf
            try:
                os.fdatasync(fd)
            finally:
                spares.quiet_since = time.monotonic()

    def _committing(self, thread_id: str) -> threading.Lock:
        """The lock a commit to ``thread_id`` holds from start to end, syncs included."""
        # CRC-32, not hash(): the same stripes in every process, so which commits share one
        # is reproducible (str hashes change with each interpreter's seed).
        return self._stripes[zlib.crc32(thread_id.encode()) % STRIPES]

    def _sync_unguarded(self, fd: int) -> None:
        """``_sync`` with the store's lock let go meanwhile (as ``_unguarded``, which see)."""
        guard = self._guard
        guard.release()
        try:
            self._sync(fd)
        finally:
            guard.acquire()

    @contextmanager
    def _unguarded(self) -> Iterator[None]:
        """Let other threads use the store while this one waits for the disk: the store's
        lock, held through ``fdatasync``, gave many writers the disk one at a time, never
        the batching a file system gives syncs that come together.

        The caller holds the thread's ``_committing`` lock (no other commit to it in this
        process), the journal's ``flock`` (none in another), a descriptor of its own (the
        handle cache may close its copy meanwhile), and has brought the tail up to date or
        set none yet (a reader meanwhile sees the record, as other processes' readers always
        could)."""
        self._guard.release()
        try:
            yield
        finally:
            self._guard.acquire()

    def _locked_journal(self, thread_id: str, *, create: bool = False) -> _LockedJournal:
        """A descriptor of the thread's journal of the caller's own, locked (``flock``) for a
        commit, with the store's lock held inside. The caller holds the thread's
        ``_committing`` lock and not the store's: the journal's lock is waited for before the
        store's is taken, never while it is held, since the holder of the journal's lock (in
        another store object or process) may itself be waiting for its store's lock, held by
        a commit waiting for a journal lock held here (two store objects creating the same
        threads deadlocked so). A journal this store object deleted or replaced (compacted)
        while the lock was awaited is let go, and the one now at the path taken instead
        (``ThreadNotFoundError`` if there is none)."""
        return _LockedJournal(self, thread_id, create)

    def _open_locked(self, thread_id: str, create: bool) -> int:
        """``_locked_journal``'s entry: the descriptor, locked, the store's lock held."""
        for attempt in itertools.count(1):
            with self._guard:
                try:
                    fd = os.dup(self._fd(thread_id, create=create))
                except ThreadNotFoundError:
                    if not create or attempt >= _REOPENS:
                        raise
                    # The empty folder this create made was replaced as the journal was
                    # opened in it (another create renamed its spare folder over it): the
                    # journal is the one in the folder now at the path.
                    self._dir(thread_id).mkdir(parents=True, exist_ok=True)
                    continue
                removals = self._removals
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                self._guard.acquire()
                try:
                    current = self._removals == removals or self._still_journal(thread_id, fd)
                except BaseException:
                    self._guard.release()
                    raise
            except BaseException:
                _let_go(fd)
                raise
            if current:
                return fd
            self._guard.release()
            _let_go(fd)
        raise AssertionError("unreachable")  # pragma: no cover

    def _still_journal(self, thread_id: str, fd: int) -> bool:
        """Whether ``fd`` is still the file at the thread's journal path."""
        name = name_of(fd)
        if name is None:  # no /proc: the link count says whether it was unlinked
            return still_named(fd, None)
        return name == os.path.realpath(self._journal_path(thread_id))

    # -- creating a thread ---------------------------------------------------------------

    def create(self, thread_id: str, record: StartRecord) -> None:
        with self._committing(thread_id):
            with self._guard:
                directory = self._dir(thread_id)
                data = encode(thread_id, record, named=True) + b"\n"
                new_dir = not directory.exists()
                # Before the thread's first file: a new index made now sees no threads to
                # catch up.
                self._index.committing(thread_id)
                spare = self._spares.take() if new_dir else None
                if spare is not None and self._create_in(spare, thread_id, record, data):
                    return
                try:
                    directory.mkdir(parents=True, exist_ok=True)
                except OSError as exc:
                    raise os_error("create", directory, exc, thread_id=thread_id) from exc
            with self._locked_journal(thread_id, create=True) as fd:
                # One stat, before the write: a file's times read after it would make the
                # next write stamp a fine-grained time, an inode for the first step's sync
                # to commit (Linux 6.13+; see ``JournalHandles``).
                stat = os.fstat(fd)
                if stat.st_size:
                    try:
                        self._full_scan(thread_id)
                    except ThreadNotFoundError:
                        # A create that crashed before its first line was complete. A
                        # damaged journal (CorruptStoreError) is never overwritten: it raises.
                        os.ftruncate(fd, 0)
                    else:
                        raise ThreadExistsError(thread_id)
                if record.due is not None:  # before the record: never a timer without it
                    self._timers.add(thread_id, record.due, record.flow)
                capacity = self._first_capacity(len(data))
                try:
                    # The first zeros too: the steps that follow overwrite them, so none of
                    # their syncs has a new block or a file size to commit.
                    write_all(fd, data + bytes(capacity - len(data)), 0)
                    with self._unguarded():
                        self._sync(fd)
                        sync_dir(self.fsync, directory)
                        if new_dir:
                            sync_dir(self.fsync, self._threads_dir)
                except OSError as exc:
                    os.ftruncate(fd, 0)
                    raise os_error(
                        "write", self._journal_path(thread_id), exc, thread_id=thread_id
                    ) from exc
                self._created(thread_id, record, data, capacity, stat.st_ino)

    def _create_in(self, spare: Spare, thread_id: str, record: StartRecord, data: bytes) -> bool:
        """``create`` in a spare folder (``_spares``): the start record written over its
        journal's zeros and synced, then the folder renamed into ``threads/`` (not synced:
        see the module). The record first, so that no folder under ``threads/`` ever holds a
        journal of zeros alone (a crash between the two leaves the record in the spare, put
        back by the next store to open). False when the spare could not be used (another
        create of the same thread got its folder there first, or the disk refused; its
        record is wiped): ``create`` goes the direct way, which finds the one or reports the
        other."""
        # The spare's zeros are on disk already: only the record is written over them (a
        # whole block rewritten costs its sync more), unless it is longer than they are.
        capacity = max(self._first_capacity(len(data)), spare.size)
        written = data if len(data) <= spare.size else data + bytes(capacity - len(data))
        try:
            fd = os.open(spare.journal, os.O_RDWR | os.O_CLOEXEC)
        except OSError:
            self._spares.discard(spare)
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)  # others may open the journal once it is renamed in
            if record.due is not None:  # before the record: never a timer without it
                self._timers.add(thread_id, record.due, record.flow)
            try:
                write_all(fd, written, 0)
                self._sync_unguarded(fd)
                # Not synced: the record names its thread, so should a power loss take the
                # new name, the next store to open puts the folder back (``_put_back``).
                os.rename(spare.path, self._dir(thread_id))
            except OSError:
                with suppress(OSError):  # the record wiped: no thread of this spare's, ever
                    write_all(fd, bytes(len(written)), 0)
                    self._sync(fd)
                self._spares.discard(spare)
                os.close(fd)
                return False
            self._created(thread_id, record, data, capacity, spare.ino)
            fcntl.flock(fd, fcntl.LOCK_UN)
        except BaseException:
            os.close(fd)
            raise
        self._handles.adopt(thread_id, fd)  # the journal's descriptor from now on
        return True

    def _put_back(self, thread_id: str, folder: Path) -> bool:
        """Put ``folder``, a spare of a dead process whose journal's first record names
        ``thread_id`` (absent from ``threads/``), back under that name: a create renamed it
        into ``threads/`` and returned, and a power loss took the unsynced new name (or the
        process died between its record and the rename: the create never returned, and its
        thread is kept all the same, as a database keeps a commit it never acknowledged).
        Whether it did (``False``: the folder stays where it is, for the next store object
        to look at again)."""
        try:
            # As ``delete`` holds them: a delete in another thread or process never leaves
            # the row this writes for a thread it removed.
            with self._guard, self._lock_file(thread_id):
                self._index.committing(thread_id)
                try:
                    os.rename(folder, self._dir(thread_id))
                except OSError:  # made meanwhile by another create, or the disk refused
                    return False
                with suppress(OSError):  # unsynced, it is put back again after the next crash
                    sync_dir(self.fsync, self._threads_dir)
                for summary in summaries(self.root, [thread_id]):
                    self._index.created(summary)
        except (ConflictError, StoreError):  # its lock is another's, or cannot be made
            return False
        get_logger().warning("thread_put_back", thread_id=thread_id)
        return True

    def _created(
        self, thread_id: str, record: StartRecord, data: bytes, capacity: int, ino: int
    ) -> None:
        """What a create that wrote ``data`` (with ``capacity`` bytes of zeros after the
        record, in the journal of inode ``ino``) knows of the thread: its tail and index row.
        Called with the journal's lock held."""
        self._tails[thread_id] = JournalTail(
            record.version,
            len(data),
            1,
            len(data),
            0,
            capacity=capacity,
            ino=ino,
            due=record.due,
            flow=record.flow,
            snapshot_line=1,
            status=record.status,
            crc=zlib.crc32(data),
        )
        created = record.ts if record.version == 0 else None
        self._index.created(
            ThreadSummary(
                thread_id, record.flow, record.status, record.next, record.version,
                record.ts, created,
            )
        )  # fmt: skip


class _LockedJournal:
    """``ThreadCreation._locked_journal``: the locked descriptor on entry; on exit the store's
    lock let go, then the journal's, and the descriptor closed. A class, not a generator:
    every commit enters one."""

    __slots__ = ("_create", "_fd", "_store", "_thread_id")

    def __init__(self, store: ThreadCreation, thread_id: str, create: bool) -> None:
        self._store = store
        self._thread_id = thread_id
        self._create = create
        self._fd = -1

    def __enter__(self) -> int:
        self._fd = self._store._open_locked(self._thread_id, self._create)
        return self._fd

    def __exit__(self, *exc: object) -> None:
        self._store._guard.release()
        _let_go(self._fd)


def _let_go(fd: int) -> None:
    """Unlock the journal descriptor ``fd`` (its ``flock``) and close it."""
    try:
        fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
