"""The read side of ``JsonFileStore``: a thread's folder, its open journal, and loading it.

Loading is the subtle half of the file store, apart from the writes so each can be read on
its own: it reads only what another writer added since this process last looked (the
``JournalTail``), else from an intact snapshot that lines up with the journal (the journal
still holds the snapshot's record, byte for byte), seeking to the byte after that record,
else the whole journal; a torn last line is skipped and reported. So opening a thread costs
its snapshot and the records after it, never its history. The records before a snapshot are
not read then: damage to them is reported when the history is read, or, with
``verify_on_open``, by the first load, which checks the journal's bytes before the snapshot
against its ``prefix_crc`` (one CRC-32 pass in bounded chunks, no record parsed: ~0.4 ms per
1,000 records). Every read keeps the CRC-32 of the journal up to its end
(``JournalTail.crc``), which the next snapshot carries. ``JsonFileStore`` adds the writes.
"""

from __future__ import annotations

import os
import threading
import zlib
from dataclasses import dataclass
from pathlib import Path

from ..errors import CorruptStoreError, ThreadNotFoundError
from ..foundation._logging import get_logger
from ..foundation._store_folder import create_store_folder
from ..records._records import StartRecord
from ._files import (
    JournalHandles,
    SnapshotFile,
    follows_record,
    os_error,
    read_snapshot_file,
    report_ignored_snapshot,
    sweep_temp_files,
)
from ._ids import check_thread_id, is_thread_id
from ._jsonl import Scan, scan_lines, sealed_lines_intact
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
    ``snapshot_line`` is the line of the record the latest snapshot (or the start record)
    stands for, so ``lines - snapshot_line`` records would be replayed; ``status`` the
    status the last record leaves the thread in; ``crc`` the CRC-32 of the bytes before
    ``size`` (``None``: not known). Together they drive ``snapshot_due``.
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
    snapshot_line: int = 0
    status: str = "pending"
    crc: int | None = None
    #: ``size`` when this process last added a snapshot to ``snapshots.jsonl`` (-1: never).
    trail_at: int = -1

    def copy(self) -> JournalTail:
        """A copy (a fifth of ``dataclasses.replace``'s cost, on every append)."""
        return JournalTail(
            self.version, self.size, self.lines, self.snapshot_bytes, self.since_snapshot,
            self.capacity, self.dirty, self.ino, self.unterminated, self.due, self.flow,
            self.snapshot_line, self.status, self.crc, self.trail_at,
        )  # fmt: skip


class JsonFileReader:
    """Threads read from the folders under ``root / "threads"`` (created if missing)."""

    def __init__(
        self, root: str | os.PathLike[str], *, max_open_files: int, verify_on_open: bool = False
    ) -> None:
        self.root = Path(root)
        self.verify_on_open = verify_on_open
        self._threads_dir = self.root / "threads"
        create_store_folder(self._threads_dir, what="store")
        self._tails: dict[str, JournalTail] = {}
        self._swept: set[str] = set()  # threads whose orphaned temporary files were removed
        self._handles = JournalHandles(max_open_files)
        self._guard = threading.RLock()
        self._torn_logged: set[str] = set()  # torn-tail warnings already logged (once each)
        # thread -> (journal inode, bytes before a snapshot that were checked, their CRC-32)
        self._verified: dict[str, tuple[int, int, int]] = {}
        # thread -> (journal inode, a version, the offset after its line): where the last page
        # of history ended, so the next one counts lines from there (``_jsonfile_pages``)
        self._anchors: dict[str, tuple[int, int, int]] = {}

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
            # What we knew of the journal's end holds only for the file we read it from (a
            # load reads by path and opens no descriptor: the first write opens one here).
            tail = self._tails.get(thread_id)
            if tail is not None and (tail.ino == -1 or tail.ino != os.fstat(fd).st_ino):
                del self._tails[thread_id]
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
        return self._full_read(thread_id)[0]

    def _full_read(self, thread_id: str) -> tuple[Scan, bytes]:
        """The whole journal, scanned, and its bytes."""
        data = self._read_from(thread_id, 0)
        scan = self._scan(thread_id, data, offset=0, line=0, version=-1)
        if not scan.records:
            raise ThreadNotFoundError(thread_id)
        if not isinstance(scan.records[0], StartRecord):
            raise CorruptStoreError(
                "Journal does not begin with a start record",
                thread_id=thread_id,
                path=str(self._journal_path(thread_id)),
                line=1,
            )
        return scan, data

    def _remember(
        self,
        thread_id: str,
        scan: Scan,
        *,
        version: int,
        snapshot_bytes: int,
        snapshot_at: int,
        snapshot_line: int,
        status: str,
        due: float | None,
        flow: str,
        crc: int | None,
    ) -> None:
        """Record a fresh read's end; snapshot size and position drive ``snapshot_due``.
        ``due`` and ``status`` are where the read began (a snapshot's), ``flow`` the
        thread's, ``crc`` the CRC-32 of the journal up to the read's end."""
        last = scan.records[-1] if scan.records else None
        self._tails[thread_id] = JournalTail(
            version if last is None else last.version,
            scan.size,
            scan.lines,
            snapshot_bytes,
            scan.size - snapshot_at,
            dirty=scan.torn is not None,
            ino=self._inode(thread_id),
            unterminated=scan.unterminated,
            due=due if last is None else last.due,
            flow=flow,
            snapshot_line=snapshot_line,
            status=status if last is None else last.status,
            crc=crc,
        )

    def _extend(self, tail: JournalTail, scan: Scan, data: bytes) -> None:
        """Catch ``tail`` up with ``scan``, a read of ``data`` from the tail's end."""
        if scan.records:
            tail.version = scan.records[-1].version
            tail.due = scan.records[-1].due
            tail.status = scan.records[-1].status
        if tail.crc is not None:
            tail.crc = zlib.crc32(data[: scan.size - tail.size], tail.crc)
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

    def _before_snapshot_intact(self, thread_id: str, envelope: SnapshotFile) -> int | None:
        """The CRC-32 of the journal's bytes before the snapshot's ``offset`` if they are
        what the snapshot stands for, else ``None``. Checked once per journal file and store
        object (later loads read only what is new): against ``prefix_crc`` in one pass over
        the bytes; a snapshot without one has every line before it checked for its seal."""
        end = envelope.offset
        ino = self._inode(thread_id)
        known = self._verified.get(thread_id)
        if known is not None and (known[0] != ino or known[1] > end):
            known = None
        if known is not None and known[1] == end:
            return known[2]
        if envelope.prefix_crc is not None:
            # Bytes checked before (an earlier snapshot's) are not read again.
            start, crc = (0, 0) if known is None else known[1:]
            crc = self._crc_between(thread_id, start, end, crc)
            if crc != envelope.prefix_crc:
                return None
        else:
            data = self._read_from(thread_id, 0, limit=end)
            if not sealed_lines_intact(data[: end - envelope.record_bytes]):
                return None
            crc = zlib.crc32(data)
        self._verified[thread_id] = (ino, end, crc)
        return crc

    def _crc_between(self, thread_id: str, start: int, end: int, crc: int) -> int:
        """``crc`` (the CRC-32 of the journal's bytes before ``start``) continued up to byte
        ``end``, read a megabyte at a time; -1 if the journal ends before ``end``."""
        while start < end:
            chunk = self._read_from(thread_id, start, limit=min(end - start, 1 << 20))
            if not chunk:
                return -1  # shorter than the snapshot says: not what it stands for
            crc = zlib.crc32(chunk, crc)
            start += len(chunk)
        return crc

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
                    data = self._read_from(thread_id, tail.size - 1)[1:]
                    scan = self._scan(
                        thread_id, data, offset=tail.size, line=tail.lines, version=after
                    )
                    self._extend(tail, scan, data)
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
                if not follows_record(data[: envelope.record_bytes], envelope):
                    # Restored, copied or zero-filled journal: it no longer holds the record
                    # the snapshot follows, so the snapshot cannot be trusted.
                    return self._load_ignoring_snapshot(
                        thread_id, reason=f"the journal does not hold record {snapshot.version}"
                    )
                # Unchecked, the snapshot's word for the bytes before it: a later snapshot
                # carries it on, so damage there is still found by whoever checks.
                crc = envelope.prefix_crc
                if self.verify_on_open:
                    crc = self._before_snapshot_intact(thread_id, envelope)
                    if crc is None:
                        # Damage before the snapshot: the full read names the line (and
                        # raises).
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
                    snapshot_line=line,
                    status=snapshot.status,
                    due=snapshot.due,
                    flow=snapshot.flow,
                    crc=None if crc is None else zlib.crc32(data[: scan.size - offset], crc),
                )
                return ThreadLog(
                    records=scan.records,
                    snapshot=snapshot,
                    warnings=self._report(thread_id, scan),
                )
            return self._load_full(thread_id)

    def _load_full(self, thread_id: str) -> ThreadLog:
        scan, data = self._full_read(thread_id)
        start = scan.records[0]
        start_bytes = data.index(b"\n") + 1 if b"\n" in data else scan.size
        self._remember(
            thread_id,
            scan,
            version=0,
            snapshot_bytes=start_bytes,
            snapshot_at=start_bytes,
            snapshot_line=1,
            status="pending",
            due=None,
            flow=start.flow if isinstance(start, StartRecord) else "",
            crc=zlib.crc32(data[: scan.size]),
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
