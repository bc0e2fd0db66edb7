"""Pages of a journal: the records of a range of versions, and a snapshot to replay them from,
read without the rest of the journal (``HistoryPages`` for ``JsonFileStore``).

A journal holds one record per line, numbered on from its first record's version, so the
line of version ``v`` is found by counting line ends from a known place: the journal's start,
its end (``JournalTail``), or where the previous page ended. Counting is done a chunk at a time
with ``bytes.count`` (no record parsed), forwards or backwards from the nearest place, and only
the page's own lines are parsed and checked. Memory stays at a chunk plus the page.

Snapshots are also appended to ``snapshots.jsonl`` (``TRAIL``: one sealed ``SnapshotFile``
per line, never fsync'd), each once the journal has grown by ``snapshot_ratio`` times its
size since the last (every snapshot of a small state; a big state's seldom), so a page far
back in history is replayed from the last snapshot before it rather than from the journal's
start. A trail line is used only if intact and lined up with the journal, like
``snapshot.json``; a compaction removes the trail.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

from ..errors import StoreError
from ..records._records import FORMAT_VERSION, Snapshot
from ._files import RECORD_VERSION, SnapshotFile, follows_record, os_error
from ._jsonfile_reader import SNAPSHOT, JournalTail, JsonFileReader
from ._jsonl import unseal
from ._protocol import RecordRange

__all__ = ["TRAIL", "append_to_trail", "line_end", "read_range", "snapshot_before"]

TRAIL = "snapshots.jsonl"
#: Bytes read at a time while counting line ends.
_CHUNK = 1 << 16
#: How every trail line begins: the snapshot's version.
_TRAIL_VERSION = re.compile(rb'\{"snapshot":\{"v":\d+,"version":(\d+),')


def read_range(reader: JsonFileReader, thread_id: str, start: int, stop: int) -> RecordRange:
    """The records with ``start <= version < stop`` of ``thread_id``; see the module doc."""
    with reader._guard:
        tail = _current(reader, thread_id)
        first = _first_version(reader, thread_id)
        low, high = max(start, first), min(stop, tail.version + 1)
        if low >= high:
            return RecordRange([], first, tail.version)
        begin = 0 if low == first else _end_of(reader, thread_id, low - 1, first, tail)
        end = _end_of(reader, thread_id, high - 1, first, tail)
        data = reader._read_from(thread_id, begin, limit=end - begin)
        scan = reader._scan(
            thread_id, data, offset=begin, line=low - first,
            version=-1 if low == first else low - 1,
        )  # fmt: skip
        if len(scan.records) != high - low or scan.records[0].version != low:
            # The file changed under us in a way the tail did not see: read it whole.
            every = reader.records(thread_id)
            records = [r for r in every if low <= r.version < high]
            return RecordRange(records, every[0].version, every[-1].version)
        reader._anchors[thread_id] = (tail.ino, high - 1, end)
        return RecordRange(scan.records, first, tail.version)


def line_end(reader: JsonFileReader, thread_id: str, version: int) -> tuple[int, int] | None:
    """The byte offset just after the line of record ``version`` and that line's number
    (1-based), found by counting line ends; ``None`` if the journal does not hold it."""
    with reader._guard:
        tail = _current(reader, thread_id)
        first = _first_version(reader, thread_id)
        if not first <= version <= tail.version:
            return None
        return _end_of(reader, thread_id, version, first, tail), version - first + 1


def _current(reader: JsonFileReader, thread_id: str) -> JournalTail:
    """The thread's journal end as of now (what other writers added is read first)."""
    tail = reader._tails.get(thread_id)
    reader.load(thread_id, after=None if tail is None else tail.version)
    return reader._tails[thread_id]


def _first_version(reader: JsonFileReader, thread_id: str) -> int:
    """The version of the journal's first record (0, or where a compaction cut it)."""
    head = reader._read_from(thread_id, 0, limit=128)
    found = RECORD_VERSION.match(head)
    if found is not None:
        return int(found.group(1))
    return reader.records(thread_id)[0].version  # an unusual line: parse it properly


def _end_of(
    reader: JsonFileReader, thread_id: str, version: int, first: int, tail: JournalTail
) -> int:
    """The byte offset just after the line of record ``version``, counted from the nearest
    known line end: the journal's start, its end, or where the last page ended."""
    places = [(first - 1, 0), (tail.version, tail.size)]
    known = reader._anchors.get(thread_id)
    if known is not None and known[0] == tail.ino and known[1] <= tail.version:
        places.append(known[1:])
    at, offset = min(places, key=lambda place: abs(place[0] - version))
    if version > at:
        return _forward(reader, thread_id, offset, version - at)
    if version < at:
        return _backward(reader, thread_id, offset, at - version)
    return offset


def _forward(reader: JsonFileReader, thread_id: str, offset: int, lines: int) -> int:
    """The offset after the ``lines``-th line end at or after ``offset``."""
    while True:
        data = reader._read_from(thread_id, offset, limit=_CHUNK)
        found = data.count(b"\n")
        if found < lines:
            if len(data) < _CHUNK:
                raise _short(thread_id)
            lines -= found
            offset += len(data)
            continue
        at = -1
        for _ in range(lines):
            at = data.index(b"\n", at + 1)
        return offset + at + 1


def _backward(reader: JsonFileReader, thread_id: str, offset: int, lines: int) -> int:
    """Going back from the line that ends at ``offset``, the offset after the line ``lines``
    lines before it (that line's own line end, or a missing last one, is not counted)."""
    end = offset - 1
    while True:
        begin = max(0, end - _CHUNK)
        data = reader._read_from(thread_id, begin, limit=end - begin)
        found = data.count(b"\n")
        if found < lines:
            if begin == 0:
                raise _short(thread_id)
            lines -= found
            end = begin
            continue
        at = len(data)
        for _ in range(lines):
            at = data.rindex(b"\n", 0, at)
        return begin + at + 1


def _short(thread_id: str) -> StoreError:
    return StoreError(
        f"The journal of thread `{thread_id}` has fewer lines than its records need; it "
        "changed while being read. Try again.",
        thread_id=thread_id,
    )


def snapshot_before(reader: JsonFileReader, thread_id: str, version: int) -> Snapshot | None:
    """The latest intact snapshot of the thread at ``version`` or earlier that lines up with
    its journal: ``snapshot.json`` if it is early enough, else the trail, newest first."""
    with reader._guard:
        latest = reader._dir(thread_id) / SNAPSHOT
        if _version_of(latest) <= version:  # a look at its head first: it may be big
            found = reader._read_snapshot(thread_id)
            # The head may say another version than the parsed file (a forged file whose
            # seal holds repeats the member): the parsed one is what would be used.
            if (
                found is not None
                and found[0].snapshot.version <= version
                and _lines_up(reader, thread_id, found[0])
            ):
                return _anchored(reader, thread_id, found[0])
        path = reader._dir(thread_id) / TRAIL
        for raw in _lines_backwards(path, thread_id):
            head = _TRAIL_VERSION.match(raw)
            if head is None or int(head.group(1)) > version:
                continue
            envelope = _envelope(raw)
            if (
                envelope is not None
                and envelope.snapshot.version <= version
                and _lines_up(reader, thread_id, envelope)
            ):
                return _anchored(reader, thread_id, envelope)
        return None


def _anchored(reader: JsonFileReader, thread_id: str, envelope: SnapshotFile) -> Snapshot:
    """The envelope's snapshot, its record's line end kept as where the next page (the
    records after it) starts counting lines."""
    ino = reader._inode(thread_id)
    reader._anchors[thread_id] = (ino, envelope.snapshot.version, envelope.offset)
    return envelope.snapshot


def _version_of(path: Path) -> float:
    """The version of the snapshot file at ``path`` read from its head (infinity if none)."""
    try:
        with open(path, "rb") as handle:
            head = _TRAIL_VERSION.match(handle.read(128))
    except OSError:
        return float("inf")
    return float("inf") if head is None else int(head.group(1))


def _envelope(raw: bytes) -> SnapshotFile | None:
    body, intact = unseal(raw)
    if not intact:
        return None  # torn by a crash, or damaged: an older line will do
    try:
        envelope = SnapshotFile.model_validate_json(body)
    except ValueError:
        return None
    return envelope if envelope.snapshot.v <= FORMAT_VERSION else None


def _lines_up(reader: JsonFileReader, thread_id: str, envelope: SnapshotFile) -> bool:
    """Whether the journal still holds the record the snapshot follows, byte for byte."""
    if not 0 < envelope.record_bytes <= envelope.offset:
        return False
    line = reader._read_from(
        thread_id, envelope.offset - envelope.record_bytes, limit=envelope.record_bytes
    )
    return follows_record(line, envelope)


def _lines_backwards(path: Path, thread_id: str) -> Iterator[bytes]:
    """The file's lines, last first, without their line ends, read from its end in chunks
    that grow (a long line costs its length); nothing if there is no file."""
    try:
        handle = open(path, "rb")  # noqa: SIM115 (closed with the generator)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise os_error("read", path, exc, thread_id=thread_id) from exc
    with handle:
        end, size = handle.seek(0, os.SEEK_END), _CHUNK
        pieces: list[bytes] = []  # a line whose start is not read yet, its last piece first
        while end > 0:
            begin = max(0, end - size)
            handle.seek(begin)
            data = handle.read(end - begin)
            cut = len(data)
            while (at := data.rfind(b"\n", 0, cut)) != -1:
                line = data[at + 1 : cut] + b"".join(reversed(pieces))
                pieces = []
                if line:
                    yield line
                cut = at
            pieces.append(data[:cut])
            end, size = begin, min(size * 2, 1 << 24)
        line = b"".join(reversed(pieces))
        if line:
            yield line


def append_to_trail(directory: Path, thread_id: str, data: bytes) -> None:
    """Add a snapshot file's bytes to the thread's trail (not fsync'd: a cache)."""
    path = directory / TRAIL
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, data + b"\n")
        finally:
            os.close(fd)
    except OSError as exc:
        raise os_error("write", path, exc, thread_id=thread_id) from exc
