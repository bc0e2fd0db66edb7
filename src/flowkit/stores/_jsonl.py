"""The journal's line format: records encoded one per line, and lines scanned back.

Format v2 seals every line (and the snapshot file) with a CRC-32 (``zlib.crc32``) kept as the
line's last JSON member, so plain JSON tools still read it: ``{...record...,"crc":"1a2b3c4d"}``.
The checksum covers the line without that member, i.e. ``line[:-18] + b"}"``. Lines written by
format v1 have no checksum and are still read.

Scanning tells a torn tail (a write a crash cut short, or the zero-filled blocks a power loss
leaves: skipped; see ``_tears``) from damage (a complete line that fails its checksum or format,
anywhere, or a last line no crash can leave: ``CorruptStoreError`` naming the file and line)
and from records of a newer format. A last record complete and intact but without its newline
is kept (``Scan.unterminated``); the next append writes the newline first.
"""

from __future__ import annotations

import os
import re
import zlib
from dataclasses import dataclass
from functools import cache

from pydantic import BaseModel, ValidationError
from pydantic_core import PydanticSerializationError

from ..errors import CorruptStoreError, InputTooDeepError, StoreError
from ..foundation._untrusted import parse_json
from ..records._records import FORMAT_VERSION, UNSEALED_VERSION, RecordAdapter
from ._ids import is_thread_id
from ._protocol import AnyRecord
from ._tears import holds_record, torn_write

__all__ = [
    "Scan",
    "encode",
    "line_crc",
    "line_record",
    "named_thread",
    "record_body",
    "scan_lines",
    "seal",
    "seal_holds",
    "sealed_lines_intact",
    "unseal",
    "write_all",
]

#: The sealed line's last member: ``,"crc":"<8 hex digits>"}``.
_SEAL = re.compile(rb',"crc":"([0-9a-f]{8})"\}\Z')
_SEAL_LEN = 18


def seal(body: bytes) -> bytes:
    """A JSON object's bytes with its CRC-32 added as the last member ``crc``."""
    return body[:-1] + b',"crc":"%08x"}' % zlib.crc32(body)


def unseal(raw: bytes) -> tuple[bytes, bool | None]:
    """The object without its ``crc`` member, and whether the checksum holds (``None``: the
    line has no checksum, as format v1 wrote it)."""
    found = _SEAL.search(raw, len(raw) - _SEAL_LEN) if len(raw) > _SEAL_LEN else None
    if found is None:
        return raw, None
    body = raw[:-_SEAL_LEN] + b"}"
    return body, zlib.crc32(body) == int(found.group(1), 16)


def seal_holds(raw: bytes) -> bool | None:
    """Whether ``raw``'s checksum holds, as ``unseal`` says, without copying its body: for a
    reader that parses ``raw`` itself and ignores the ``crc`` member (a snapshot file)."""
    found = _SEAL.search(raw, len(raw) - _SEAL_LEN) if len(raw) > _SEAL_LEN else None
    if found is None:
        return None
    crc = zlib.crc32(b"}", zlib.crc32(memoryview(raw)[:-_SEAL_LEN]))
    return crc == int(found.group(1), 16)


def line_crc(line: bytes) -> int:
    """The CRC-32 of a whole journal line (newline included): how a snapshot names the record
    it follows, so a snapshot that does not line up with the journal is never trusted."""
    return zlib.crc32(line)


@dataclass(slots=True)
class Scan:
    """Records read from journal bytes, where the good bytes end, and any torn tail.

    ``unterminated``: the last record is complete and intact but its newline is missing (a
    write cut short at its last byte, or that byte zeroed); ``size`` is then just after the
    record, and ``note`` says so.
    """

    records: list[AnyRecord]
    size: int  # byte offset after the last good record
    lines: int
    torn: str | None
    unterminated: bool = False
    note: str | None = None


#: How a journal's first line starts when it names its thread: ``{"thread":"<id>",`` then the
#: record's members (ids need no escaping: ``_ids``). The JSON-file store writes it so that a
#: journal whose folder lost its name can be put back (a spare folder renamed into
#: ``threads/`` unsynced, then a power loss: ``_spares``); reading drops it.
_NAMED = b'{"thread":"'


def _name_end(body: bytes) -> int:
    """Where the thread's name a line's JSON object starts with ends (-1: it names none)."""
    return body.find(b'",', len(_NAMED)) if body.startswith(_NAMED) else -1


def record_body(body: bytes) -> bytes:
    """A line's JSON object (unsealed) without the thread's name it may start with."""
    end = _name_end(body)
    return body if end == -1 else b"{" + body[end + 2 :]


def named_thread(line: bytes) -> str | None:
    """The thread a journal's first ``line`` names, if it is intact, sealed and names one."""
    body, intact = unseal(line.rstrip(b"\n"))
    end = _name_end(body) if intact else -1
    name = body[len(_NAMED) : end].decode("ascii", "replace") if end != -1 else ""
    return name if is_thread_id(name) else None


def line_record(line: bytes) -> AnyRecord | None:
    """The record a whole journal ``line`` holds, or ``None`` if it holds none readable."""
    try:
        return _read_record(line.rstrip(b"\n"))
    except ValueError:
        return None


def _read_record(raw: bytes) -> AnyRecord:
    body, intact = unseal(raw)
    if intact is False:
        raise ValueError("its checksum does not match its content")
    record = RecordAdapter.validate_json(record_body(body))
    if intact is None and record.v > UNSEALED_VERSION:
        raise ValueError(f"a format v{record.v} record must carry a checksum")
    return record


def scan_lines(
    data: bytes, *, path: str, thread_id: str, offset: int, line: int, version: int
) -> Scan:
    """Parse journal bytes that start at ``offset`` (line ``line``) after ``version``."""
    records: list[AnyRecord] = []
    pos = 0
    torn: str | None = None
    unterminated = False
    while pos < len(data):
        if data[pos] in b"\0\n":
            rest = data[pos:].strip(b"\0")
            if not rest:
                break  # preallocated space (or blocks a power loss never wrote): no record
            if rest == b"\n":  # one stray byte in that space: cut off like a torn record
                torn = f"{path}:{line + 1}: stray bytes after the last record skipped"
                break
        end = data.find(b"\n", pos)
        line += 1
        # Zeros after the last line are free space, not part of it.
        raw = data[pos:].rstrip(b"\0") if end == -1 else data[pos:end]
        try:
            record = _read_record(raw)
        except ValueError as exc:
            committed = holds_record(raw)
            last = end == -1 or not data[end + 1 :].strip(b"\0")
            if last and not committed and torn_write(raw, ended=end != -1, at=offset + pos):
                torn = _torn(path, line, raw)
                line -= 1
                break
            problem = _diagnose(raw, exc)[0]
            if raw.startswith(b"\0") and not committed:
                problem = _stray(offset + pos, raw, line)
            if committed:
                problem = (
                    "Journal line holds a complete record followed by bytes where its line "
                    "end belongs (overwritten, or records run together): damage to a "
                    "committed record, not a torn write"
                )
            raise CorruptStoreError(problem, thread_id=thread_id, path=path, line=line) from exc
        if record.v > FORMAT_VERSION:
            raise CorruptStoreError(
                _newer_format(record.v), thread_id=thread_id, path=path, line=line
            )
        # A journal's first line may be a start record at any version: a compacted journal
        # starts where its history was cut (``Store.compact``).
        if record.version != version + 1 and not (version == -1 and record.kind == "start"):
            raise CorruptStoreError(
                f"Record has version {record.version} where {version + 1} was expected",
                thread_id=thread_id,
                path=path,
                line=line,
            )
        version = record.version
        records.append(record)
        if end == -1:
            # Complete and intact, only its newline missing: the record was written whole,
            # so it is kept (never dropped as torn); the next append adds the newline.
            unterminated = True
            pos += len(raw)
            break
        pos = end + 1
    note = None
    if unterminated:
        note = (
            f"{path}:{line}: the last record has no line end (a write cut short at its last "
            "byte, or that byte damaged); it is complete and intact, so it is kept, and the "
            "next write adds the line end"
        )
    return Scan(records, offset + pos, line, torn, unterminated, note)


def sealed_lines_intact(data: bytes) -> bool:
    """Whether every line of ``data`` (whole lines, each ending with a newline) is a sealed
    line whose checksum holds, or a v1 record (which has none).

    Cheap (a CRC per line, no parsing): how a load that starts from a snapshot still notices
    damage to the records before it. On ``False`` the caller reads the journal in full, which
    names the damaged line.
    """
    if data and not data.endswith(b"\n"):
        return False
    start = 0
    while start < len(data):
        end = data.index(b"\n", start)
        raw = memoryview(data)[start:end]
        found = _SEAL.search(data, max(start, end - _SEAL_LEN), end)
        if found is not None and found.end() == end:
            if zlib.crc32(b"}", zlib.crc32(raw[:-_SEAL_LEN])) != int(found.group(1), 16):
                return False
        else:
            try:
                if _read_record(bytes(raw)).v > UNSEALED_VERSION:
                    return False
            except ValueError:
                return False
        start = end + 1
    return True


def _stray(at: int, raw: bytes, line: int) -> str:
    """Bytes amid the zeros after the last record that no crash leaves there."""
    found = at + len(raw) - len(raw.lstrip(b"\0"))
    return (
        f"Journal has bytes amid the free space after its last record (at byte {found}). A "
        "crash leaves only whole 512-byte sectors of zeros, so these may be what is left of a "
        f"damaged record: if line {line - 1} is the thread's last step, cut the file at byte "
        f"{at} to drop them"
    )


def _torn(path: str, line: int, raw: bytes) -> str:
    # Counted without the zeros around it: free space (64 KiB of it) is not the lost record.
    return f"{path}:{line}: torn last record skipped ({len(raw.strip(bytes(1)))} bytes)"


#: Top-level record fields left out of a line while they hold these defaults (a smaller
#: journal); reading fills them back in. ``v`` and every state value are always written.
_OMITTED_DEFAULTS: dict[str, object] = {
    "run_id": None,
    "error": None,
    "forked_from": None,
    "llm_calls": [],
    "attempts": 1,
    "sub": None,
    "flow_version": None,
    "migration": None,
    "cached": False,
    "pauses": None,
    "due": None,
    "items": None,
    "actor": None,  # a patch's is never None: only an answer's unsaid actor is left out
    "as_node": None,
}


@cache
def _omittable(kind: type[BaseModel]) -> tuple[tuple[str, object], ...]:
    return tuple((n, d) for n, d in _OMITTED_DEFAULTS.items() if n in kind.__pydantic_fields__)


def encode(thread_id: str, model: BaseModel, *, named: bool = False) -> bytes:
    """One record (or snapshot file) as sealed JSON bytes; ``StoreError`` if JSON cannot hold
    it (the engine refuses such values earlier, with ``UnstorableValueError``). ``named``: the
    line names its thread first (a journal's first line; see ``_NAMED``)."""
    kind = type(model)
    omit = {name for name, default in _omittable(kind) if getattr(model, name) == default}
    try:
        # The serializer's own bytes: `model_dump_json` decodes them to a str that would only
        # be encoded back (two fifths of a record's dump).
        body = kind.__pydantic_serializer__.to_json(model, exclude=omit)
        if named:
            body = b'%s%s",%s' % (_NAMED, thread_id.encode(), body[1:])
        return seal(body)
    except (PydanticSerializationError, UnicodeError) as exc:
        raise StoreError(
            f"Thread `{thread_id}` cannot be saved as JSON: {str(exc).splitlines()[0]}. Nothing "
            "was written; keep state values JSON-serialisable (no lone surrogates in strings).",
            thread_id=thread_id,
        ) from exc


def write_all(fd: int, data: bytes, offset: int) -> None:
    """Write all of ``data`` at ``offset`` (journals are written in place, not appended)."""
    written = os.pwrite(fd, data, offset)
    if written == len(data):  # as nearly always: no view to make
        return
    view = memoryview(data)[written:]
    offset += written
    while view:
        written = os.pwrite(fd, view, offset)
        view = view[written:]
        offset += written


#: How deep the journal's reader (pydantic's JSON parser) goes; values stop at 128 levels.
_READER_DEPTH = 200


def _newer_format(found: int) -> str:
    return (
        f"Record was written by a newer flowkit (format v{found}; this flowkit reads up to "
        f"v{FORMAT_VERSION}); upgrade flowkit to open this thread"
    )


def _diagnose(raw: bytes, exc: ValueError) -> tuple[str, bool]:
    """Why a journal line failed to load, and whether the line is complete JSON.

    Only called on the error path. Complete JSON cannot come from a torn write, so such a
    line is never skipped as torn: it is a record this version cannot read.
    """
    try:
        # Zeros around a line are unwritten blocks; complete JSON amid them is still damage.
        data = parse_json(
            raw.strip(b"\0"), what="journal record", max_bytes=None, max_depth=_READER_DEPTH
        )
    except InputTooDeepError:
        # Deeper than the reader goes (json.loads would raise RecursionError): no record
        # flowkit writes nests this deep, nor does a torn piece of one.
        return f"Journal record is nested deeper than {_READER_DEPTH} levels", True
    except ValueError as not_json:
        return f"Journal record is unreadable: {_reason(not_json)}", False
    found = data.get("v") if isinstance(data, dict) else None
    if isinstance(found, int) and found > FORMAT_VERSION:
        return _newer_format(found), True
    if not isinstance(exc, ValidationError):
        return f"Journal record is damaged: {exc}", True
    return f"Journal record does not fit the record format: {_reason(exc)}", True


def _reason(exc: ValueError) -> str:
    from pydantic import ValidationError

    from ..foundation._plain import describe_validation_error, shorten

    if isinstance(exc, ValidationError):
        return describe_validation_error(exc)
    return shorten(str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
