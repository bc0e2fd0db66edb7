"""The read side of ``JsonFileStore``: a thread's folder, its open journal, and loading it.

Loading is the subtle half of the file store, apart from the writes so each can be read on
its own: it reads only what another writer added since this process last looked (the
``JournalTail``), else from an intact snapshot that lines up with the journal, else the whole
journal; a torn last line is skipped and reported. Before it trusts a snapshot, the first load
checks the checksums of the records the snapshot stands for, so damage there is reported when
the thread is loaded, not only when its history is read. ``JsonFileStore`` adds the writes.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from pathlib import Path

from ..errors import CorruptStoreError, ThreadNotFoundError
from ..foundation._logging import get_logger
from ..foundation._store_folder import create_store_folder
from ..records._records import RecordAdapter, StartRecord
from ._files import (
    JournalHandles,
    SnapshotFile,
    os_error,
    read_snapshot_file,
    report_ignored_snapshot,
    sweep_temp_files,
)
from ._ids import check_thread_id, is_thread_id
from ._jsonl import Scan, line_crc, scan_lines, sealed_lines_intact
from ._protocol import AnyRecord, ThreadLog

__all__ = ["JOURNAL", "SNAPSHOT", "JournalTail", "JsonFileReader"]

JOURNAL = "journal.jsonl"
SNAPSHOT = "snapshot.json"


@dataclass(slots=True)
class JournalTail:
    """What this process knows of a journal's end: last good version, its byte offset, line.

    ``capacity`` is the file's size as this process last saw it (data plus preallocated zeros),
    ``dirty`` whether a torn record lies after ``size`` and must be cut before the next write,
    ``unterminated`` whether the last record lacks its newline (the next write adds it).
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
    unterminated: bool = False
    #: The timer of the last record (its ``due``), and the thread's flow: what the timer
    #: index needs at an append, known without reading anything (``_timer_files``).
    due: float | None = None
    flow: str = ""


class JsonFileReader:
    """Threads read from the folders under ``root / "threads"`` (created if missing)."""

    def __init__(self, root: str | os.PathLike[str], *, max_open_files: int) -> None:
        self.root = Path(root)
        self._threads_dir = self.root / "threads"
        create_store_folder(self._threads_dir, what="store")
        self._tails: dict[str, JournalTail] = {}
        self._swept: set[str] = set()  # threads whose orphaned temporary files were removed
        self._handles = JournalHandles(max_open_files)
        self._guard = threading.RLock()
        self._torn_logged: set[str] = set()  # torn-tail warnings already logged (once each)
        # thread -> (journal inode, bytes before a snapshot whose checksums were checked)
        self._verified: dict[str, tuple[int, int]] = {}

    # -- paths and file handles ----------------------------------------------------------

    def _dir(self, thread_id: str) -> Path:
        return self._threads_dir / check_thread_id(thread_id)

    def _journal_path(self, thread_id: str) -> Path:
        return self._dir(thread_id) / JOURNAL

    def _fd(self, thread_id: str, *, create: bool = False) -> int:
        fd, reopened = self._handles.get(
            thread_id, lambda: self._journal_path(thread_id), create=create
        )
        if reopened:
            self._tails.pop(thread_id, None)  # a new file: what we knew of its end is stale
        return fd

    def _inode(self, thread_id: str) -> int:
        try:
            return os.stat(self._journal_path(thread_id)).st_ino
        except OSError:
            return -1

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
        self,
        thread_id: str,
        scan: Scan,
        *,
        version: int,
        snapshot_bytes: int,
        snapshot_at: int,
        due: float | None,
        flow: str,
    ) -> None:
        """Record a fresh read's end; snapshot size and position drive ``snapshot_due``.
        ``due`` is the timer where the read began (a snapshot's), ``flow`` the thread's."""
        last = scan.records[-1].version if scan.records else version
        self._tails[thread_id] = JournalTail(
            last,
            scan.size,
            scan.lines,
            snapshot_bytes,
            scan.size - snapshot_at,
            dirty=scan.torn is not None,
            ino=self._inode(thread_id),
            unterminated=scan.unterminated,
            due=scan.records[-1].due if scan.records else due,
            flow=flow,
        )

    def _extend(self, tail: JournalTail, scan: Scan) -> None:
        if scan.records:
            tail.version = scan.records[-1].version
            tail.due = scan.records[-1].due
        tail.since_snapshot += scan.size - tail.size
        tail.size, tail.lines = scan.size, scan.lines
        tail.dirty = scan.torn is not None
        tail.unterminated = scan.unterminated

    def _report(self, thread_id: str, scan: Scan) -> tuple[str, ...]:
        found = []
        for event, detail in (
            ("journal_torn_record_skipped", scan.torn),
            ("journal_line_end_missing", scan.note),
        ):
            if detail is None:
                continue
            found.append(detail)
            if detail not in self._torn_logged:  # a command may read the thread many times
                self._torn_logged.add(detail)
                get_logger().warning(event, thread_id=thread_id, detail=detail)
        return tuple(found)

    def _before_snapshot_intact(self, thread_id: str, end: int) -> bool:
        """Whether the journal's lines before byte ``end`` pass their checksums (checked once
        per journal file and store object: later loads read only what is new)."""
        ino = self._inode(thread_id)
        known = self._verified.get(thread_id)
        if known is not None and known[0] == ino and known[1] >= end:
            return True
        if not sealed_lines_intact(self._read_from(thread_id, 0, limit=end)):
            return False
        self._verified[thread_id] = (ino, end)
        return True

    def load(self, thread_id: str, *, after: int | None = None) -> ThreadLog:
        with self._guard:
            tail = self._tails.get(check_thread_id(thread_id))
            if thread_id not in self._swept:
                self._swept.add(thread_id)
                sweep_temp_files(self._dir(thread_id), thread_id)
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
                        warnings=self._report(thread_id, scan),
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
                if not self._before_snapshot_intact(thread_id, offset - envelope.record_bytes):
                    # Damage before the snapshot: the full read names the line (and raises).
                    return self._load_ignoring_snapshot(
                        thread_id, reason="a record before it fails its checksum"
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
                    due=snapshot.due,
                    flow=snapshot.flow,
                )
                return ThreadLog(
                    records=scan.records,
                    snapshot=snapshot,
                    warnings=self._report(thread_id, scan),
                )
            return self._load_full(thread_id)

    def _load_full(self, thread_id: str) -> ThreadLog:
        scan = self._full_scan(thread_id)
        start = scan.records[0]
        start_bytes = len(RecordAdapter.dump_json(start)) + 1
        self._remember(
            thread_id,
            scan,
            version=0,
            snapshot_bytes=start_bytes,
            snapshot_at=start_bytes,
            due=None,
            flow=start.flow if isinstance(start, StartRecord) else "",
        )
        return ThreadLog(records=scan.records, warnings=self._report(thread_id, scan))

    def _load_ignoring_snapshot(self, thread_id: str, *, reason: str) -> ThreadLog:
        log = self._load_full(thread_id)
        report_ignored_snapshot(
            thread_id,
            self._dir(thread_id) / SNAPSHOT,
            f"it does not line up with the journal: {reason.splitlines()[0]}",
        )
        return log

    def _read_snapshot(self, thread_id: str) -> tuple[SnapshotFile, int] | None:
        """The latest intact snapshot file and its size in bytes, if there is one."""
        path = self._dir(thread_id) / SNAPSHOT
        return read_snapshot_file(path, self._journal_path(thread_id), thread_id)

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
            if not is_thread_id(name):
                continue  # stray files (editor backups, .DS_Store) are not threads
            try:
                size = os.stat(self._threads_dir / name / JOURNAL).st_size
            except OSError:
                continue
            if size:  # an empty journal is a create that crashed before its first record
                found.append(name)
        return sorted(found)
