"""JsonFileStore: the default durable store, one folder of plain files per thread.

Each thread has an append-only ``journal.jsonl`` (one JSON record per line, fsync'd per
append), an occasional ``snapshot.json`` (replaced atomically) so loading skips old records, a
lock file (under ``locks/``, removed with the thread: ``_locks``) held while a process runs the
thread, and with attempt tracking an ``attempt.json`` naming the node last started. Threads
whose position has a timer (a gate's deadline, a node's wake-up) have a small file each under
``timers/`` (``_timer_files``): the store's ``TimerIndex``. Lines and snapshots carry a
checksum (format v2). A torn last line left by a crash, or a zero-filled tail left by a power
loss, is detected, skipped, reported and cut off by the next writer; a complete record never
is (``_tears`` tells the two apart), and damage anywhere else fails only that thread, naming
the file and line. A snapshot is used only if intact and lined up with the journal.
``index/`` holds the thread index (``_thread_index``), which listings read instead of every
journal, kept with each commit. ``spares/`` holds thread folders and lock files made ahead by
a background refill (``_spares``), so starting a thread makes no new inode.

Snapshots are also kept in ``snapshots.jsonl``, from which pages of history are replayed
(``_jsonfile_pages``: the ``HistoryPages`` capability).

Reading a thread is ``JsonFileReader``'s (``_jsonfile_reader``), creating one
``ThreadCreation``'s (``_jsonfile_create``); this module adds the other writes: append,
snapshots, compaction, deletion, attempt markers, timers and locks; listings are
``_jsonfile_listing``'s.
"""

from __future__ import annotations

import os
import threading
import zlib
from collections.abc import Sequence
from contextlib import AbstractContextManager, suppress

from ..errors import ConflictError, ThreadNotFoundError
from ..records._marker import AttemptMarker
from ..records._records import Snapshot, StartRecord
from ._attempts import read_attempt, write_attempt
from ._files import SnapshotFile, os_error, sweep_temp_files, sync_dir, write_file_atomically
from ._ids import check_thread_id
from ._jsonfile_create import BLOCK, STRIPES, ThreadCreation
from ._jsonfile_listing import IndexedListing
from ._jsonfile_pages import TRAIL, append_to_trail, line_end, read_range, snapshot_before
from ._jsonfile_reader import SNAPSHOT, JournalTail
from ._jsonl import encode, line_crc, write_all
from ._locks import LOCK_SUFFIX, ThreadLockFile, sweep_lock_files
from ._protocol import AnyRecord, DueTimer, RecordRange, check_compaction, check_versions
from ._snapshot_policy import SnapshotPolicy
from ._spares import SpareFolders
from ._thread_index import JsonThreadIndex
from ._timer_files import TIMERS, TimerFiles

__all__ = ["JsonFileStore"]

#: Journal bytes preallocated at a time (zeros past the data), with fsync on.
PREALLOCATE_BYTES = 64 * 1024
#: Spare thread folders kept ready, with fsync (``_spares``).
SPARES = 32
#: Statuses after which a journal's preallocated zeros are given back.
_ENDED = frozenset({"done", "failed"})


class JsonFileStore(ThreadCreation, IndexedListing):
    """Threads as files under ``root`` (created if missing).

    Snapshots (``_snapshot_policy``): once the journal has grown by ``snapshot_ratio`` times
    the last snapshot's size, one at a pause, at least every ``snapshot_every`` records
    (default 64: opening a thread whose state is small replays at most that many), or after
    ``min_snapshot_bytes``; so both the bytes written per step and the work to open a thread
    follow the state, not its history. A snapshot is a cache: it is written without fsync (a
    lost or torn one is ignored and the journal replayed). Opening a thread reads its snapshot
    and the records after it; ``verify_on_open=True`` also checks, once per store object, that
    the journal before the snapshot is intact (one checksum over its bytes, ~0.4 ms per 1,000
    records), so damage to old records is reported then, not only when the history is read.
    ``fsync=False`` trades durability on power loss for speed (tests, scratch runs).
    ``preallocate``: bytes of zeros kept ahead of the journal's data (default 64 KiB with
    fsync, none without), so each append overwrites them instead of growing the file, and its
    ``fdatasync`` need not commit a new file size (about a quarter cheaper on ext4). A new
    journal starts with zeros to the end of its first block only; one that outgrows them gets
    ``preallocate`` bytes more at once. A zero tail is free space to readers, never a record.
    ``spares``: the most thread folders (each with its journal's first zeros synced) and
    lock files kept made ahead by a short-lived background thread (default 32 with fsync and
    preallocation, else 0: none, and no thread; fewer while the store has started few
    threads), so a new thread takes a folder by a rename and its lock file by a link instead
    of making three inodes and syncing them on the caller's time. The refill waits for the
    store's commits to pause (``_spares.QUIET_S``): its syncs and its share of the
    interpreter never delay a commit's. ``close()`` removes those
    not taken; a process that ends without closing leaves them to the next store object that
    makes spares in the same folder.
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        fsync: bool = True,
        snapshot_every: int = 64,
        snapshot_ratio: float = 8.0,
        min_snapshot_bytes: int = 256 * 1024,
        max_open_files: int = 64,
        preallocate: int | None = None,
        verify_on_open: bool = False,
        spares: int | None = None,
    ) -> None:
        super().__init__(root, max_open_files=max_open_files, verify_on_open=verify_on_open)
        self.fsync = fsync
        self.preallocate = (
            (PREALLOCATE_BYTES if fsync else 0) if preallocate is None else preallocate
        )
        self.snapshot_ratio = snapshot_ratio
        self.min_snapshot_bytes = min_snapshot_bytes
        self._snapshots = SnapshotPolicy.checked(snapshot_every, snapshot_ratio, min_snapshot_bytes)
        self._locks_dir = self.root / "locks"
        self._timers = TimerFiles(self.root / TIMERS, fsync=fsync)
        self._leftovers_swept = False
        self._index = JsonThreadIndex(self.root, fsync=fsync)
        self._stripes = tuple(threading.Lock() for _ in range(STRIPES))
        self._removals = 0
        if spares is None:
            spares = SPARES if fsync and self.preallocate else 0
        self._spares = SpareFolders(
            self.root, count=spares, size=min(self.preallocate, BLOCK), fsync=fsync
        )
        self._spares.recover(self._put_back)

    def __repr__(self) -> str:
        return f"JsonFileStore({str(self.root)!r})"

    def close(self) -> None:
        """Close cached file handles (the store stays usable; handles reopen on demand)."""
        with self._guard:
            self._handles.close()
            self._index.close()
        self._spares.close()

    def __enter__(self) -> JsonFileStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- snapshots ---------------------------------------------------------------------------

    def _line_ending_at(self, thread_id: str, offset: int) -> bytes:
        """The journal line that ends at byte ``offset`` (newline included), read backwards
        in chunks that double, each byte once (a long line costs its length, not its square)."""
        pieces: list[bytes] = []
        end, size = offset, 4096
        while end > 0:
            start = max(0, end - size)
            data = self._read_from(thread_id, start, limit=end - start)
            # The line's own newline is its last byte: the one before it ends the line before.
            cut = data.rfind(b"\n", 0, len(data) - 1 if end == offset else len(data))
            if cut != -1:
                pieces.append(data[cut + 1 :])
                break
            pieces.append(data)
            end, size = start, size * 2
        return b"".join(reversed(pieces))

    def snapshot_due(self, thread_id: str) -> bool:
        tail = self._tails.get(check_thread_id(thread_id))
        if tail is None:
            return False
        return self._snapshots.due(
            records=tail.lines - tail.snapshot_line,
            since=tail.since_snapshot,
            snapshot=tail.snapshot_bytes,
            status=tail.status,
        )

    def write_snapshot(self, thread_id: str, snapshot: Snapshot) -> None:
        with self._guard:
            directory = self._dir(thread_id)
            tail = self._tails.get(thread_id)
            if tail is None or tail.version != snapshot.version:
                self.load(thread_id)
                tail = self._tails[thread_id]
            if snapshot.version > tail.version or snapshot.version < 0:
                raise ConflictError(
                    f"Snapshot of version {snapshot.version} does not match the journal of "
                    f"thread `{thread_id}` (at {tail.version}); take it again after reloading.",
                    thread_id=thread_id,
                    expected=snapshot.version,
                    actual=tail.version,
                )
            at_tail = snapshot.version == tail.version
            if at_tail and tail.unterminated:
                return  # the record lacks its newline until the next append: snapshot later
            if at_tail:
                offset, line, prefix = tail.size, tail.lines, tail.crc
            else:
                # One record per line from the first (version 0, or where a compaction cut):
                # its line is found by counting line ends, its prefix's CRC in one pass.
                found = line_end(self, thread_id, snapshot.version)
                if found is None:
                    raise ConflictError(
                        f"Snapshot of version {snapshot.version} is older than the journal "
                        f"of thread `{thread_id}` (compacted since); take it again.",
                        thread_id=thread_id,
                        expected=snapshot.version,
                        actual=tail.version,
                    )
                offset, line = found
                prefix = self._crc_between(thread_id, 0, offset, 0)
            record_line = self._line_ending_at(thread_id, offset)
            body = SnapshotFile(
                snapshot=snapshot,
                offset=offset,
                line=line,
                record_bytes=len(record_line),
                record_crc=line_crc(record_line),
                prefix_crc=prefix,
            )
            data = encode(thread_id, body)
            # No fsync: a snapshot is a cache. One lost or torn by a crash fails its seal or
            # its match with the journal, is ignored, and the journal is replayed instead.
            write_file_atomically(
                directory / SNAPSHOT, data, fsync=False, thread_id=thread_id,
                what="write the snapshot",
            )  # fmt: skip
            # Pages of history replay from the trail; it keeps a snapshot once the journal has
            # grown by `snapshot_ratio` times its size (so it adds at most 1 / ratio to it).
            if (
                not at_tail
                or tail.trail_at < 0
                or (tail.size - tail.trail_at >= self.snapshot_ratio * len(data))
            ):
                append_to_trail(directory, thread_id, data)
                tail.trail_at = tail.size if at_tail else -1
            if at_tail:
                tail.snapshot_bytes = len(data)
                tail.since_snapshot = 0
                tail.snapshot_line = tail.lines

    # -- writing -----------------------------------------------------------------------------

    def append(
        self, thread_id: str, records: Sequence[AnyRecord], *, expected_version: int
    ) -> None:
        check_versions(check_thread_id(thread_id), records, expected_version)
        data = (
            encode(thread_id, records[0]) + b"\n"
            if len(records) == 1
            else b"".join(encode(thread_id, r) + b"\n" for r in records)
        )
        with self._committing(thread_id), self._locked_journal(thread_id) as fd:
            tail = self._current_tail(thread_id, fd)
            if tail.version != expected_version:
                raise ConflictError(
                    f"Thread `{thread_id}` is at version {tail.version}, not "
                    f"{expected_version}; another writer got there first. Reload the "
                    "thread and try again.",
                    thread_id=thread_id,
                    expected=expected_version,
                    actual=tail.version,
                )
            # The timer index: a new timer's file before the record that sets it, the old
            # one's after the record that ends it (so a crash leaves at worst a stale
            # file). Both None, as for every step of a thread without timers: nothing.
            due, old = records[-1].due if records else tail.due, tail.due
            if due is not None and due != old:
                self._timers.add(thread_id, due, tail.flow)
            if records:
                self._index.committing(thread_id)
            end = tail.size + len(data)
            padded = data
            if end > tail.capacity and self.preallocate:
                # Zeros past the data in the same write: later appends overwrite them.
                padded = data + bytes(self.preallocate)
            before = tail.copy()  # what a failed write or sync puts back
            try:
                write_all(fd, padded, tail.size)
                # The tail moves on before the sync, which runs unguarded: a reader
                # meanwhile must not take the new record for another writer's.
                tail.version = records[-1].version if records else tail.version
                tail.capacity = max(tail.capacity, tail.size + len(padded))
                tail.size += len(data)
                tail.lines += len(records)
                tail.since_snapshot += len(data)
                tail.due = due
                tail.status = records[-1].status if records else tail.status
                tail.crc = None if tail.crc is None else zlib.crc32(data, tail.crc)
                self._sync_unguarded(fd)
            except OSError as exc:
                os.ftruncate(fd, before.size)  # leave no half record behind
                before.capacity = before.size
                self._tails[thread_id] = before
                raise os_error(
                    "write", self._journal_path(thread_id), exc, thread_id=thread_id
                ) from exc
            if records and records[-1].status in _ENDED and tail.capacity > tail.size:
                # A thread that ended gives back its preallocated zeros (never synced: a
                # truncate lost to a power loss leaves zeros, which readers skip).
                with suppress(OSError):
                    os.ftruncate(fd, tail.size)
                    tail.capacity = tail.size
            if old is not None and old != due:
                self._timers.remove(thread_id, old)
            if records:  # under the journal's lock: rows follow the journal's order
                last = records[-1]
                self._index.committed(
                    thread_id, tail.flow, last.status, last.next, last.version, last.ts
                )

    def _current_tail(self, thread_id: str, fd: int) -> JournalTail:
        """The journal's true end, caught up with other writers; cuts off a torn last line.

        The file's size says nothing (zeros may follow the data), so the byte after the last
        known newline does: nothing or a zero means no other writer came since.
        """
        tail = self._tails.get(thread_id)
        if tail is not None:
            probe = os.pread(fd, 2, tail.size - 1)
            if probe[:1] != b"\n":  # shrunk or rewritten behind our back
                self._tails.pop(thread_id, None)
            elif probe[1:] not in (b"", b"\0") or tail.dirty:
                self.load(thread_id, after=tail.version)
        if thread_id not in self._tails:
            self.load(thread_id)
        tail = self._tails[thread_id]  # a reload may have replaced it
        if tail.dirty:
            os.ftruncate(fd, tail.size)
            self._sync(fd)
            tail.dirty = False
            tail.capacity = tail.size
        if tail.capacity < 0:
            tail.capacity = os.fstat(fd).st_size
        if tail.unterminated:
            # The last record is whole but lost its newline: put it back before writing on.
            try:
                write_all(fd, b"\n", tail.size)
                self._sync(fd)
            except OSError as exc:
                raise os_error(
                    "write", self._journal_path(thread_id), exc, thread_id=thread_id
                ) from exc
            tail.size += 1
            tail.since_snapshot += 1
            tail.crc = None if tail.crc is None else zlib.crc32(b"\n", tail.crc)
            tail.capacity = max(tail.capacity, tail.size)
            tail.unterminated = False
        return tail

    def delete(self, thread_id: str) -> None:
        """Remove the thread and its history; ``ThreadNotFoundError`` if there is none.

        The folder is first renamed to a hidden tombstone (one atomic step, so no reader ever
        sees half a thread), then removed. A crash in between leaves only the tombstone,
        which ``threads`` and ``load`` never read; the next ``delete`` sweeps it away. The
        thread's lock file goes too, unlinked while still held (see ``_locks``).
        """
        import secrets
        import shutil

        lock = self._lock_file(thread_id)
        with self._guard, lock:
            directory = self._dir(thread_id)
            if not self._exists(thread_id):
                raise ThreadNotFoundError(thread_id)
            tombstone = self._threads_dir / f".deleted-{thread_id}-{secrets.token_hex(4)}"
            self._handles.drop(thread_id)
            self._removals += 1
            self._tails.pop(thread_id, None)
            self._verified.pop(thread_id, None)
            self._index.committing(thread_id)
            try:
                os.rename(directory, tombstone)
                sync_dir(self.fsync, self._threads_dir)
            except OSError as exc:
                raise os_error("delete", directory, exc, thread_id=thread_id) from exc
            self._index.deleted(thread_id)
            lock.remove = True
            self._timers.remove_all(thread_id)
        shutil.rmtree(tombstone, ignore_errors=True)
        if not self._leftovers_swept:
            # What deletes that crashed midway left (tombstones, lock files), and the lock
            # files of threads deleted by versions that kept them: swept once per store
            # object, not on every delete (listing the folders each time made pruning
            # quadratic).
            self._leftovers_swept = True
            for stale in self._threads_dir.glob(".deleted-*"):
                shutil.rmtree(stale, ignore_errors=True)
            sweep_lock_files(self._locks_dir, set(self.threads()), self._exists)

    def compact(self, thread_id: str, start: StartRecord) -> int:
        """Rewrite the journal as ``start`` and the records after it (a new file renamed over
        the old, so readers see one or the other) and drop the snapshot. What a compaction
        killed mid-write left (its temporary file) goes first: only a compaction writes one,
        always under the lock held here."""
        with self._guard, self._lock_file(thread_id):
            sweep_temp_files(self._dir(thread_id), thread_id, locked=True)
            scan = self._full_scan(check_thread_id(thread_id))
            records = scan.records
            first = records[0].version
            check_compaction(thread_id, start, first, records[-1].version)
            kept = [r for r in records if r.version > start.version]
            # The first line names its thread, as a new journal's does (``_jsonfile_create``).
            data = b"".join(
                encode(thread_id, r, named=i == 0) + b"\n" for i, r in enumerate([start, *kept])
            )
            directory = self._dir(thread_id)
            self._handles.drop(thread_id)
            self._removals += 1
            self._tails.pop(thread_id, None)
            self._verified.pop(thread_id, None)
            # The snapshots point into the old file; without them, loading reads the new one
            # from its start record (which is a whole state anyway).
            self._anchors.pop(thread_id, None)
            try:
                (directory / SNAPSHOT).unlink(missing_ok=True)
                (directory / TRAIL).unlink(missing_ok=True)
            except OSError as exc:
                raise os_error("compact", directory, exc, thread_id=thread_id) from exc
            self._index.committing(thread_id)
            write_file_atomically(
                self._journal_path(thread_id), data, fsync=self.fsync, thread_id=thread_id,
                what="compact",
            )  # fmt: skip
            last = kept[-1] if kept else start  # where the thread stands, as before
            self._index.committed(
                thread_id, start.flow, last.status, last.next, last.version, last.ts
            )
            return len(records) - len(kept)

    def _exists(self, thread_id: str) -> bool:
        """Whether the thread has a journal with a record in it (an empty one is a create
        that crashed before its first record)."""
        try:
            return os.stat(self._journal_path(thread_id)).st_size > 0
        except OSError:
            return False

    def due_timers(
        self,
        until: float,
        *,
        flow: str | None = None,
        limit: int | None = None,
        after: DueTimer | None = None,
    ) -> list[DueTimer]:
        return self._timers.due(until, flow=flow, limit=limit, after=after)

    def drop_timer(self, thread_id: str, due: float) -> None:
        self._timers.remove(check_thread_id(thread_id), due)

    def mark_attempt(self, thread_id: str, marker: AttemptMarker) -> None:
        """Note that a node starts (``attempt.json``, overwritten in place; not fsync'd)."""
        write_attempt(self._dir(thread_id), thread_id, marker)

    def last_attempt(self, thread_id: str) -> AttemptMarker | None:
        return read_attempt(self._dir(thread_id), thread_id)

    def lock(self, thread_id: str) -> AbstractContextManager[None]:
        return self._lock_file(thread_id)

    def record_range(self, thread_id: str, start: int, stop: int) -> RecordRange:
        return read_range(self, check_thread_id(thread_id), start, stop)

    def snapshot_before(self, thread_id: str, version: int) -> Snapshot | None:
        return snapshot_before(self, check_thread_id(thread_id), version)

    def _lock_file(self, thread_id: str) -> ThreadLockFile:
        """``lock``, as the class ``delete`` and ``compact`` hold (``delete`` sets ``remove``)."""
        # Lock files live apart from thread folders, so locking never creates a thread.
        path = self._locks_dir / f"{check_thread_id(thread_id)}{LOCK_SUFFIX}"
        return ThreadLockFile(
            path, thread_id, self._exists, self._spares.take_lock_file, self._handles
        )
