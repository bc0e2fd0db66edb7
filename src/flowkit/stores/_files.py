"""File-system pieces of the JSON-file store: atomic replacement, snapshot files, and
``OSError`` turned into a ``StoreError`` that says what to do."""

from __future__ import annotations

import itertools
import os
import re
import time
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel, ValidationError

from ..errors import StoreError, ThreadNotFoundError
from ..foundation._atomic import write_atomically
from ..foundation._logging import get_logger
from ..records._records import FORMAT_VERSION, Snapshot
from ._jsonl import line_crc, line_record, record_body, seal_holds

__all__ = [
    "RECORD_VERSION",
    "JournalHandles",
    "SnapshotFile",
    "follows_record",
    "name_of",
    "os_error",
    "read_snapshot_file",
    "report_ignored_snapshot",
    "still_named",
    "sweep_temp_files",
    "sync_dir",
    "write_file_atomically",
]


class SnapshotFile(BaseModel):
    """What ``snapshot.json`` holds: the snapshot and where its record ends in the journal.

    ``record_bytes`` and ``record_crc`` are the length and CRC-32 of the journal line of the
    snapshot's own record (the line ending at ``offset``): a snapshot is trusted only where
    the journal still holds exactly that line. ``prefix_crc`` is the CRC-32 of the journal's
    bytes before ``offset``, so damage to the records a snapshot stands for is found with one
    checksum over those bytes, not by reading them line by line (``None``: written before
    it existed; the lines are checked one by one). The file itself is sealed like a journal
    line.
    """

    snapshot: Snapshot
    offset: int  # journal byte offset just after the snapshot's record
    line: int
    record_bytes: int = 0
    record_crc: int = 0
    prefix_crc: int | None = None


def os_error(action: str, path: Path, exc: OSError, *, thread_id: str | None) -> StoreError:
    """An ``OSError`` from the file system as a ``StoreError`` that says what to do."""
    reason = exc.strerror or str(exc)
    return StoreError(
        f"Cannot {action} {path}: {reason}. Nothing was changed; fix the permissions or free "
        "disk space, then retry.",
        thread_id=thread_id,
        path=str(path),
    )


def sync_dir(enabled: bool, path: Path) -> None:
    """fsync a directory, so a file created or renamed in it survives power loss."""
    if enabled:
        dir_fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


def write_file_atomically(
    path: Path, data: bytes, *, fsync: bool, thread_id: str, what: str
) -> None:
    """Replace ``path`` with ``data``; a file-system failure becomes a ``StoreError``."""
    try:
        write_atomically(path, data, fsync=fsync, private=True)
    except OSError as exc:
        raise os_error(what, path, exc, thread_id=thread_id) from exc


def read_snapshot_file(
    path: Path, journal: Path, thread_id: str
) -> tuple[SnapshotFile, int] | None:
    """The snapshot file at ``path`` and its size if intact, or ``None`` (reported) if unusable.

    A snapshot that fails its checksum, has none (format v1), is newer than this flowkit or
    points past the journal's end is never trusted: the journal alone rebuilds the thread.
    Whether the journal holds the snapshot's record is checked by the caller, which reads
    those bytes anyway.
    """
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:  # a folder in its place, no permission: the journal will do
        report_ignored_snapshot(thread_id, path, f"it cannot be read ({exc.strerror or exc})")
        return None
    try:
        intact = seal_holds(raw)
        if intact is None:
            raise ValueError("it has no checksum (format v1); the journal rebuilds the thread")
        if not intact:
            raise ValueError("its checksum does not match its content (damaged)")
        envelope = SnapshotFile.model_validate_json(raw)  # ignores the seal's member `crc`
        journal_size = os.stat(journal).st_size
        if envelope.snapshot.v > FORMAT_VERSION:
            raise ValueError(f"snapshot format v{envelope.snapshot.v} is newer than this flowkit")
        if not 0 < envelope.record_bytes <= envelope.offset <= journal_size:
            raise ValueError("snapshot points past the end of the journal")
    except (ValidationError, ValueError, OSError) as exc:
        report_ignored_snapshot(thread_id, path, str(exc).splitlines()[0])
        return None
    return envelope, len(raw)


#: How a record line begins (fields in declaration order, after the thread's name if any):
#: its version, read without parsing the line.
RECORD_VERSION = re.compile(rb'\{"v":\d+,"version":(\d+),')


def follows_record(line: bytes, envelope: SnapshotFile) -> bool:
    """Whether ``line`` is, byte for byte, the journal line of the record ``envelope``'s
    snapshot follows, and that record has the snapshot's version: a snapshot whose seal
    holds may still not be this journal's (copied, restored, or forged)."""
    if line_crc(line) != envelope.record_crc:
        return False
    # Its checksum holds, so its head says its version (the fields are written in order);
    # the record is parsed only where the head is not the usual one.
    head = RECORD_VERSION.match(record_body(line))
    if head is not None:
        return int(head.group(1)) == envelope.snapshot.version
    record = line_record(line)
    return record is not None and record.version == envelope.snapshot.version


def report_ignored_snapshot(thread_id: str, path: Path, reason: str) -> None:
    get_logger().warning("snapshot_ignored", thread_id=thread_id, path=str(path), reason=reason)


#: ``write_atomically``'s temporary names (``tempfile.mkstemp``) for ``snapshot.json`` and for
#: ``journal.jsonl`` (a compaction writes the new journal beside the old, then renames it).
_TEMP = re.compile(r"\.(snapshot\.json|journal\.jsonl)\.[a-z0-9_]{8}\.tmp")
#: A temporary file older than this is an orphan: writing one takes milliseconds, so only a
#: process killed mid-write leaves one behind.
STALE_TEMP_SECONDS = 60.0


def sweep_temp_files(directory: Path, thread_id: str, *, locked: bool = False) -> None:
    """Remove orphaned temporary files of a thread's snapshot and journal (exactly those name
    patterns, and stale). ``locked``: the caller holds the thread's lock, under which alone a
    journal is compacted, so a journal temporary file is an orphan whatever its age."""
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return  # no folder (unknown thread) or unreadable: loading reports it
    now = time.time()
    for entry in entries:
        found = _TEMP.fullmatch(entry.name)
        if found is None:
            continue
        try:
            orphan = locked and found.group(1) == "journal.jsonl"
            if orphan or now - entry.stat(follow_symlinks=False).st_mtime > STALE_TEMP_SECONDS:
                os.unlink(entry.path)
                event = f"{found.group(1).split('.')[0]}_temp_removed"
                get_logger().debug(event, thread_id=thread_id, path=entry.path)
        except OSError:
            continue  # gone already, or not ours to remove: harmless either way


class JournalHandles:
    """Open journal descriptors, least recently used closed first, reopened when unlinked.

    A cached descriptor is checked before each use by the name the kernel gives it
    (``/proc/self/fd``): a journal deleted, renamed away or replaced behind our back no
    longer carries the name it was opened under. Not by ``fstat``: on Linux 6.13+ reading a
    file's times makes the next write stamp a fine-grained time, so every step's
    ``fdatasync`` had an inode to commit too (~40 µs a step on ext4). Where ``/proc`` is
    missing, the link count (``fstat``) says whether the file was unlinked.

    While this store object holds a thread's lock (``trust``), the check runs once: every
    delete, compaction or put-back of a journal holds that lock, in any process, so the
    file at the path cannot change until the lock is let go (``distrust``). A journal
    removed by hand meanwhile is no more caught than one removed between a check and the
    write after it.
    """

    def __init__(self, max_open: int) -> None:
        self._fds: OrderedDict[str, tuple[int, str | None]] = OrderedDict()
        self._max_open = max_open
        # A token per hold of a thread's lock by this store object, and the token under
        # which each descriptor was last checked: a check that raced with the lock's release
        # leaves a token no later hold ever matches (no lock needed between the two).
        self._locked: dict[str, int] = {}
        self._trusted: dict[str, int] = {}
        self._tokens = itertools.count()

    def get(self, thread_id: str, path: Callable[[], Path], *, create: bool) -> tuple[int, bool]:
        """The descriptor of the journal at ``path()`` and whether it was (re)opened.

        ``path`` is only called to open the file: building paths costs more than a cached hit.
        """
        held = self._fds.get(thread_id)
        if held is not None:
            fd, name = held
            token = self._locked.get(thread_id)
            trusted = token is not None and self._trusted.get(thread_id) == token
            if trusted or still_named(fd, name):
                self._fds.move_to_end(thread_id)
                if token is not None:
                    self._trusted[thread_id] = token
                return fd, False
            # The journal was deleted (and maybe recreated) behind our back: never write
            # into the unlinked file, where the data would silently vanish.
            os.close(self._fds.pop(thread_id)[0])
        journal = path()
        flags = os.O_RDWR | (os.O_CREAT if create else 0)
        try:
            # Private like the snapshot: a journal holds everything people typed.
            fd = os.open(journal, flags, 0o600)
        except FileNotFoundError:
            raise ThreadNotFoundError(thread_id) from None
        except OSError as exc:
            raise os_error("open", journal, exc, thread_id=thread_id) from exc
        self._keep(thread_id, fd)
        token = self._locked.get(thread_id)
        if token is not None:
            self._trusted[thread_id] = token
        return fd, True

    def trust(self, thread_id: str) -> None:
        """This store object now holds the thread's lock (see the class)."""
        self._locked[thread_id] = next(self._tokens)

    def distrust(self, thread_id: str) -> None:
        """This store object is letting go of the thread's lock: check the descriptor before
        each use again."""
        self._locked.pop(thread_id, None)
        self._trusted.pop(thread_id, None)

    def adopt(self, thread_id: str, fd: int) -> None:
        """Keep ``fd``, now the journal of ``thread_id`` at its path, as its descriptor (the
        handles close it from now on)."""
        self.drop(thread_id)
        self._keep(thread_id, fd)

    def _keep(self, thread_id: str, fd: int) -> None:
        self._trusted.pop(thread_id, None)
        self._fds[thread_id] = (fd, name_of(fd))
        while len(self._fds) > self._max_open:
            evicted, (old, _) = self._fds.popitem(last=False)
            self._trusted.pop(evicted, None)
            os.close(old)

    def drop(self, thread_id: str) -> None:
        """Close the thread's descriptor, if open (its files are going away)."""
        self._trusted.pop(thread_id, None)
        held = self._fds.pop(thread_id, None)
        if held is not None:
            os.close(held[0])

    def close(self) -> None:
        self._trusted.clear()
        while self._fds:
            os.close(self._fds.popitem()[1][0])

    def __del__(self, _close: Callable[[int], None] = os.close) -> None:
        # Stores are often made inline (``Runner(flow, store=JsonFileStore("runs"))``) and
        # never closed; collected handles must not leak their descriptors. Nothing from the
        # module's globals: at interpreter exit they may be gone already.
        held = getattr(self, "_fds", None)
        while held:
            fd, _ = held.popitem()[1]
            try:
                _close(fd)
            except OSError:
                continue


#: What the kernel appends to the name of an open file that was unlinked.
_DELETED = " (deleted)"


def name_of(fd: int) -> str | None:
    """The path the kernel gives the open file ``fd`` (``None`` without ``/proc``)."""
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return None


def still_named(fd: int, name: str | None) -> bool:
    """Whether ``fd`` is still the file at the path it was opened under (``name``)."""
    if name is None:
        return os.fstat(fd).st_nlink > 0
    now = name_of(fd)
    return now is not None and now == name and not now.endswith(_DELETED)
