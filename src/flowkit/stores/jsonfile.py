"""JsonFileStore: the default durable store, one folder of plain files per thread.

Each thread has an append-only ``journal.jsonl`` (one JSON record per line, fsync'd per
append), an occasional ``snapshot.json`` (replaced atomically) so loading skips old records,
a lock file (under ``locks/``) held while a process runs the thread, and with attempt
tracking an ``attempt.json`` naming the node last started. Lines and snapshots carry a
checksum (format v2). A torn last line left by a crash, or a zero-filled tail left by a power
loss, is detected, skipped, reported and cut off by the next writer; damage anywhere else fails
only that thread, naming the file and line. A snapshot is used only if intact and lined up
with the journal.
"""

from __future__ import annotations

import fcntl
import os
import threading
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path

from .._logging import get_logger
from .._marker import AttemptMarker
from .._records import RecordAdapter, Snapshot, StartRecord
from ..errors import (
    ConflictError,
    CorruptStoreError,
    InvalidThreadIdError,
    StoreError,
    ThreadExistsError,
    ThreadNotFoundError,
)
from ._attempts import read_attempt, write_attempt
from ._files import (
    JournalHandles,
    SnapshotFile,
    exclusive_lock,
    os_error,
    read_snapshot_file,
    sweep_snapshot_temps,
    sync_dir,
    write_file_atomically,
)
from ._ids import check_thread_id
from ._jsonl import Scan, encode, line_crc, offset_after_line, scan_lines, unseal, write_all
from ._protocol import AnyRecord, ThreadLog, check_compaction, check_versions

__all__ = ["JsonFileStore"]

_JOURNAL = "journal.jsonl"
_SNAPSHOT = "snapshot.json"


#: Journal bytes preallocated at a time (zeros past the data), with fsync on.
PREALLOCATE_BYTES = 64 * 1024


@dataclass(slots=True)
class _Tail:
    """What this process knows of a journal's end: last good version, its byte offset, line.

    ``capacity`` is the file's size as this process last saw it (data plus preallocated zeros),
    ``dirty`` whether a torn record lies after ``size`` and must be cut before the next write.
    """

    version: int
    size: int
    lines: int
    snapshot_bytes: int
    since_snapshot: int
    capacity: int = -1
    dirty: bool = False
    #: The journal file's inode: a compaction replaces the file, and offsets into the old
    #: one mean nothing in the new one (-1: not known, checked by content only).
    ino: int = -1


class JsonFileStore:
    """Threads as files under ``root`` (created if missing).

    ``snapshot_ratio``: a snapshot is taken when the journal has grown by that many times the
    last snapshot's size (at least ``min_snapshot_bytes``), which keeps both the bytes written
    per step and the work to load a thread proportional to the state, not to its history.
    ``fsync=False`` trades durability on power loss for speed (tests, scratch runs).
    ``preallocate``: bytes of zeros kept ahead of the journal's data (default 64 KiB with
    fsync, none without), so each append overwrites them instead of growing the file, and its
    ``fdatasync`` need not commit a new file size (about a quarter cheaper on ext4). A zero
    tail is free space to readers, never a record.
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        fsync: bool = True,
        snapshot_ratio: float = 8.0,
        min_snapshot_bytes: int = 256 * 1024,
        max_open_files: int = 64,
        preallocate: int | None = None,
    ) -> None:
        self.root = Path(root)
        self.fsync = fsync
        self.preallocate = (
            (PREALLOCATE_BYTES if fsync else 0) if preallocate is None else preallocate
        )
        self.snapshot_ratio = snapshot_ratio
        self.min_snapshot_bytes = min_snapshot_bytes
        self._threads_dir = self.root / "threads"
        try:
            self._threads_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(
                f"Cannot create the store folder {self._threads_dir}: {exc.strerror}; pick a "
                "writable path.",
                path=str(self._threads_dir),
            ) from exc
        self._tails: dict[str, _Tail] = {}
        self._swept: set[str] = set()  # threads whose orphaned temporary files were removed
        self._handles = JournalHandles(max_open_files)
        self._guard = threading.RLock()
        self._tombstones_swept = False

    def __repr__(self) -> str:
        return f"JsonFileStore({str(self.root)!r})"

    # -- paths and file handles ----------------------------------------------------------

    def _dir(self, thread_id: str) -> Path:
        return self._threads_dir / check_thread_id(thread_id)

    def _journal_path(self, thread_id: str) -> Path:
        return self._dir(thread_id) / _JOURNAL

    def _fd(self, thread_id: str, *, create: bool = False) -> int:
        fd, reopened = self._handles.get(
            thread_id, lambda: self._journal_path(thread_id), create=create
        )
        if reopened:
            self._tails.pop(thread_id, None)  # a new file: what we knew of its end is stale
        return fd

    def close(self) -> None:
        """Close cached file handles (the store stays usable; handles reopen on demand)."""
        with self._guard:
            self._handles.close()

    def __enter__(self) -> JsonFileStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _sync(self, fd: int) -> None:
        if self.fsync:
            os.fdatasync(fd)

    # -- reading ---------------------------------------------------------------------------

    def _scan(self, thread_id: str, data: bytes, *, offset: int, line: int, version: int) -> Scan:
        path = str(self._journal_path(thread_id))
        return scan_lines(
            data, path=path, thread_id=thread_id, offset=offset, line=line, version=version
        )

    def _read_from(self, thread_id: str, offset: int, *, limit: int = -1) -> bytes:
        path = self._journal_path(thread_id)
        try:
            with open(path, "rb") as handle:
                handle.seek(offset)
                return handle.read(limit)
        except FileNotFoundError:
            raise ThreadNotFoundError(thread_id) from None
        except OSError as exc:
            raise os_error("read", path, exc, thread_id=thread_id) from exc

    def _full_scan(self, thread_id: str) -> Scan:
        scan = self._scan(thread_id, self._read_from(thread_id, 0), offset=0, line=0, version=-1)
        if not scan.records:
            raise ThreadNotFoundError(thread_id)
        if not isinstance(scan.records[0], StartRecord):
            raise CorruptStoreError(
                "Journal does not begin with a start record",
                thread_id=thread_id,
                path=str(self._journal_path(thread_id)),
                line=1,
            )
        return scan

    def _remember(
        self, thread_id: str, scan: Scan, *, version: int, snapshot_bytes: int, snapshot_at: int
    ) -> None:
        """Record a fresh read's end; snapshot size and position drive ``snapshot_due``."""
        last = scan.records[-1].version if scan.records else version
        self._tails[thread_id] = _Tail(
            last,
            scan.size,
            scan.lines,
            snapshot_bytes,
            scan.size - snapshot_at,
            dirty=scan.torn is not None,
            ino=self._inode(thread_id),
        )

    def _inode(self, thread_id: str) -> int:
        try:
            return os.stat(self._journal_path(thread_id)).st_ino
        except OSError:
            return -1

    def _extend(self, tail: _Tail, scan: Scan) -> None:
        if scan.records:
            tail.version = scan.records[-1].version
        tail.since_snapshot += scan.size - tail.size
        tail.size, tail.lines = scan.size, scan.lines
        tail.dirty = scan.torn is not None

    def _report(self, thread_id: str, torn: str | None) -> tuple[str, ...]:
        if torn is None:
            return ()
        get_logger().warning("journal_torn_record_skipped", thread_id=thread_id, detail=torn)
        return (torn,)

    def load(self, thread_id: str, *, after: int | None = None) -> ThreadLog:
        with self._guard:
            tail = self._tails.get(check_thread_id(thread_id))
            if thread_id not in self._swept:
                self._swept.add(thread_id)
                sweep_snapshot_temps(self._dir(thread_id), thread_id)
            if tail is not None and tail.ino != -1 and tail.ino != self._inode(thread_id):
                del self._tails[thread_id]  # compacted (or replaced) since we read it
                tail = None
            if after is not None and tail is not None and tail.version == after:
                # Read from the last known newline: if it is gone, the file was rewritten
                # behind our back (restored, damaged) and only a full read can be trusted.
                # Nothing or a zero after it: nobody wrote since (writers write at the end).
                data = self._read_from(thread_id, tail.size - 1, limit=2)
                if data[:1] == b"\n" and data[1:] in (b"", b"\0") and not tail.dirty:
                    return ThreadLog(records=(), base=after)
                if data[:1] == b"\n":
                    data = self._read_from(thread_id, tail.size - 1)
                    scan = self._scan(
                        thread_id, data[1:], offset=tail.size, line=tail.lines, version=after
                    )
                    self._extend(tail, scan)
                    return ThreadLog(
                        records=scan.records,
                        base=after,
                        warnings=self._report(thread_id, scan.torn),
                    )
                del self._tails[thread_id]
            found = self._read_snapshot(thread_id)
            if found is not None:
                envelope, snapshot_bytes = found
                snapshot, offset, line = envelope.snapshot, envelope.offset, envelope.line
                data = self._read_from(thread_id, offset - envelope.record_bytes)
                record_line = data[: envelope.record_bytes]
                if line_crc(record_line) != envelope.record_crc:
                    # Restored, copied or zero-filled journal: it no longer holds the record
                    # the snapshot follows, so the snapshot cannot be trusted.
                    return self._load_ignoring_snapshot(
                        thread_id, reason=f"the journal does not hold record {snapshot.version}"
                    )
                data = data[envelope.record_bytes :]
                try:
                    scan = self._scan(
                        thread_id, data, offset=offset, line=line, version=snapshot.version
                    )
                except CorruptStoreError as exc:
                    # Either the journal is damaged after the snapshot (the full scan below
                    # raises that again) or the snapshot does not line up with this journal
                    # (restored or copied files): then the journal alone is the truth.
                    return self._load_ignoring_snapshot(thread_id, reason=str(exc))
                self._remember(
                    thread_id,
                    scan,
                    version=snapshot.version,
                    snapshot_bytes=snapshot_bytes,
                    snapshot_at=offset,
                )
                return ThreadLog(
                    records=scan.records,
                    snapshot=snapshot,
                    warnings=self._report(thread_id, scan.torn),
                )
            return self._load_full(thread_id)

    def _load_full(self, thread_id: str) -> ThreadLog:
        scan = self._full_scan(thread_id)
        start_bytes = len(RecordAdapter.dump_json(scan.records[0])) + 1
        self._remember(
            thread_id, scan, version=0, snapshot_bytes=start_bytes, snapshot_at=start_bytes
        )
        return ThreadLog(records=scan.records, warnings=self._report(thread_id, scan.torn))

    def _load_ignoring_snapshot(self, thread_id: str, *, reason: str) -> ThreadLog:
        log = self._load_full(thread_id)
        get_logger().warning(
            "snapshot_ignored",
            thread_id=thread_id,
            path=str(self._dir(thread_id) / _SNAPSHOT),
            reason=f"it does not line up with the journal: {reason.splitlines()[0]}",
        )
        return log

    def records(self, thread_id: str) -> list[AnyRecord]:
        with self._guard:
            return list(self._full_scan(check_thread_id(thread_id)).records)

    def threads(self) -> list[str]:
        try:
            names = os.listdir(self._threads_dir)
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise os_error("list", self._threads_dir, exc, thread_id=None) from exc
        found = []
        for name in names:
            if not _is_thread_id(name):
                continue  # stray files (editor backups, .DS_Store) are not threads
            try:
                size = os.stat(self._threads_dir / name / _JOURNAL).st_size
            except OSError:
                continue
            if size:  # an empty journal is a create that crashed before its first record
                found.append(name)
        return sorted(found)

    # -- snapshots ---------------------------------------------------------------------------

    def _read_snapshot(self, thread_id: str) -> tuple[SnapshotFile, int] | None:
        """The latest intact snapshot file and its size in bytes, if there is one."""
        path = self._dir(thread_id) / _SNAPSHOT
        return read_snapshot_file(path, self._journal_path(thread_id), thread_id)

    def _line_ending_at(self, thread_id: str, offset: int) -> bytes:
        """The journal line that ends at byte ``offset`` (newline included)."""
        start = max(0, offset - 4096)
        while True:
            data = self._read_from(thread_id, start, limit=offset - start)
            cut = data.rfind(b"\n", 0, len(data) - 1)
            if cut != -1 or start == 0:
                return data[cut + 1 :]
            start = max(0, start - 65536)

    def snapshot_due(self, thread_id: str) -> bool:
        tail = self._tails.get(check_thread_id(thread_id))
        if tail is None:
            return False
        threshold = max(self.min_snapshot_bytes, self.snapshot_ratio * tail.snapshot_bytes)
        return tail.since_snapshot >= threshold

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
            if at_tail:
                offset, line = tail.size, tail.lines
            else:
                # One record per line from the first (version 0, or where a compaction cut),
                # so record k ends at the (k - first + 1)-th newline.
                data = self._read_from(thread_id, 0)
                first = RecordAdapter.validate_json(unseal(data[: data.find(b"\n")])[0]).version
                line = snapshot.version - first + 1
                offset = offset_after_line(data, line)
            record_line = self._line_ending_at(thread_id, offset)
            body = SnapshotFile(
                snapshot=snapshot,
                offset=offset,
                line=line,
                record_bytes=len(record_line),
                record_crc=line_crc(record_line),
            )
            data = encode(thread_id, body)
            write_file_atomically(
                directory / _SNAPSHOT, data, fsync=self.fsync, thread_id=thread_id,
                what="write the snapshot",
            )  # fmt: skip
            if at_tail:
                tail.snapshot_bytes = len(data)
                tail.since_snapshot = 0

    # -- writing -----------------------------------------------------------------------------

    def create(self, thread_id: str, record: StartRecord) -> None:
        with self._guard:
            directory = self._dir(thread_id)
            data = encode(thread_id, record) + b"\n"
            new_dir = not directory.exists()
            try:
                directory.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise os_error("create", directory, exc, thread_id=thread_id) from exc
            fd = self._fd(thread_id, create=True)
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                if os.fstat(fd).st_size:
                    try:
                        self._full_scan(thread_id)
                    except ThreadNotFoundError:
                        # A create that crashed before its first line was complete. A
                        # damaged journal (CorruptStoreError) is never overwritten: it raises.
                        os.ftruncate(fd, 0)
                    else:
                        raise ThreadExistsError(thread_id)
                try:
                    write_all(fd, data, 0)
                    self._sync(fd)
                    sync_dir(self.fsync, directory)
                    if new_dir:
                        sync_dir(self.fsync, self._threads_dir)
                except OSError as exc:
                    os.ftruncate(fd, 0)
                    raise os_error(
                        "write", self._journal_path(thread_id), exc, thread_id=thread_id
                    ) from exc
                self._tails[thread_id] = _Tail(
                    record.version,
                    len(data),
                    1,
                    len(data),
                    0,
                    capacity=len(data),
                    ino=os.fstat(fd).st_ino,
                )
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)

    def append(
        self, thread_id: str, records: Sequence[AnyRecord], *, expected_version: int
    ) -> None:
        check_versions(check_thread_id(thread_id), records, expected_version)
        data = b"".join(encode(thread_id, r) + b"\n" for r in records)
        with self._guard:
            fd = self._fd(thread_id)
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
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
                end = tail.size + len(data)
                padded = data
                if end > tail.capacity and self.preallocate:
                    # Zeros past the data in the same write: later appends overwrite them.
                    padded = data + bytes(self.preallocate)
                try:
                    write_all(fd, padded, tail.size)
                    self._sync(fd)
                except OSError as exc:
                    os.ftruncate(fd, tail.size)  # leave no half record behind
                    tail.capacity = tail.size
                    raise os_error(
                        "write", self._journal_path(thread_id), exc, thread_id=thread_id
                    ) from exc
                tail.version = records[-1].version if records else tail.version
                tail.capacity = max(tail.capacity, tail.size + len(padded))
                tail.size += len(data)
                tail.lines += len(records)
                tail.since_snapshot += len(data)
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)

    def _current_tail(self, thread_id: str, fd: int) -> _Tail:
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
        return tail

    def delete(self, thread_id: str) -> None:
        """Remove the thread and its history; ``ThreadNotFoundError`` if there is none.

        The folder is first renamed to a hidden tombstone (one atomic step, so no reader ever
        sees half a thread), then removed. A crash in between leaves only the tombstone,
        which ``threads`` and ``load`` never read; the next ``delete`` sweeps it away.
        """
        import secrets
        import shutil

        with self._guard, self.lock(thread_id):
            directory = self._dir(thread_id)
            if thread_id not in self._known(thread_id):
                raise ThreadNotFoundError(thread_id)
            tombstone = self._threads_dir / f".deleted-{thread_id}-{secrets.token_hex(4)}"
            self._handles.drop(thread_id)
            self._tails.pop(thread_id, None)
            try:
                os.rename(directory, tombstone)
                sync_dir(self.fsync, self._threads_dir)
            except OSError as exc:
                raise os_error("delete", directory, exc, thread_id=thread_id) from exc
        shutil.rmtree(tombstone, ignore_errors=True)
        if not self._tombstones_swept:
            # Tombstones of deletes that crashed midway: swept once per store object, not on
            # every delete (listing the folder each time made pruning quadratic).
            self._tombstones_swept = True
            for stale in self._threads_dir.glob(".deleted-*"):
                shutil.rmtree(stale, ignore_errors=True)

    def compact(self, thread_id: str, start: StartRecord) -> int:
        """Rewrite the journal as ``start`` and the records after it (a new file renamed over
        the old, so readers see one or the other) and drop the snapshot."""
        with self._guard, self.lock(thread_id):
            scan = self._full_scan(check_thread_id(thread_id))
            records = scan.records
            first = records[0].version
            check_compaction(thread_id, start, first, records[-1].version)
            kept = [r for r in records if r.version > start.version]
            data = b"".join(encode(thread_id, r) + b"\n" for r in [start, *kept])
            directory = self._dir(thread_id)
            self._handles.drop(thread_id)
            self._tails.pop(thread_id, None)
            # The snapshot points into the old file; without it, loading reads the new one
            # from its start record (which is a whole state anyway).
            try:
                (directory / _SNAPSHOT).unlink(missing_ok=True)
            except OSError as exc:
                raise os_error("compact", directory, exc, thread_id=thread_id) from exc
            write_file_atomically(
                self._journal_path(thread_id), data, fsync=self.fsync, thread_id=thread_id,
                what="compact",
            )  # fmt: skip
            return len(records) - len(kept)

    def _known(self, thread_id: str) -> list[str]:
        try:
            size = os.stat(self._journal_path(thread_id)).st_size
        except OSError:
            return []
        return [thread_id] if size else []

    def mark_attempt(self, thread_id: str, marker: AttemptMarker) -> None:
        """Note that a node starts (``attempt.json``, overwritten in place; not fsync'd)."""
        write_attempt(self._dir(thread_id), thread_id, marker)

    def last_attempt(self, thread_id: str) -> AttemptMarker | None:
        return read_attempt(self._dir(thread_id), thread_id)

    def lock(self, thread_id: str) -> AbstractContextManager[None]:
        # Lock files live apart from thread folders, so locking never creates a thread.
        path = self.root / "locks" / f"{check_thread_id(thread_id)}.lock"
        return exclusive_lock(path, thread_id)


def _is_thread_id(name: str) -> bool:
    try:
        check_thread_id(name)
    except InvalidThreadIdError:
        return False
    return True
