"""The journal's line format: records encoded one per line, and lines scanned back.

Scanning tells a torn tail (a write a crash cut short: skipped) from damage (anything else:
``CorruptStoreError`` naming the file and line) and from records of a newer format.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from functools import cache

from pydantic import BaseModel
from pydantic_core import PydanticSerializationError

from .._records import FORMAT_VERSION, RecordAdapter
from ..errors import CorruptStoreError, StoreError
from ._protocol import AnyRecord

__all__ = ["Scan", "encode", "offset_after_line", "scan_lines", "write_all"]


@dataclass(slots=True)
class Scan:
    """Records read from journal bytes, where the good bytes end, and any torn tail."""

    records: list[AnyRecord]
    size: int  # byte offset after the last good record
    lines: int
    torn: str | None


def scan_lines(
    data: bytes, *, path: str, thread_id: str, offset: int, line: int, version: int
) -> Scan:
    """Parse journal bytes that start at ``offset`` (line ``line``) after ``version``."""
    records: list[AnyRecord] = []
    pos = 0
    torn: str | None = None
    while pos < len(data):
        end = data.find(b"\n", pos)
        raw = data[pos:] if end == -1 else data[pos:end]
        line += 1
        if end == -1:
            # No line end: a write that never finished. Appends end every record with a
            # newline, so this is the crash's torn tail and nothing follows it.
            torn = f"{path}:{line}: torn last record skipped ({len(raw)} bytes)"
            line -= 1
            break
        try:
            record = RecordAdapter.validate_json(raw)
        except ValueError as exc:
            problem, complete = _diagnose(raw, exc)
            if not complete and end == len(data) - 1:
                # Unparseable last line (e.g. zeros after a power loss): also a torn tail.
                torn = f"{path}:{line}: torn last record skipped ({len(raw)} bytes)"
                line -= 1
                break
            raise CorruptStoreError(problem, thread_id=thread_id, path=path, line=line) from exc
        if record.v > FORMAT_VERSION:
            raise CorruptStoreError(
                _newer_format(record.v), thread_id=thread_id, path=path, line=line
            )
        if record.version != version + 1:
            raise CorruptStoreError(
                f"Record has version {record.version} where {version + 1} was expected",
                thread_id=thread_id,
                path=path,
                line=line,
            )
        version = record.version
        records.append(record)
        pos = end + 1
    return Scan(records, offset + pos, line, torn)


#: Top-level record fields left out of a line while they hold these defaults (a smaller
#: journal); reading fills them back in. ``v`` and every state value are always written.
_OMITTED_DEFAULTS: dict[str, object] = {
    "run_id": None,
    "error": None,
    "forked_from": None,
    "llm_calls": [],
    "attempts": 1,
}


@cache
def _omittable(kind: type[BaseModel]) -> tuple[tuple[str, object], ...]:
    return tuple((n, d) for n, d in _OMITTED_DEFAULTS.items() if n in kind.__pydantic_fields__)


def encode(thread_id: str, model: BaseModel) -> bytes:
    """One record (or snapshot) as JSON bytes; ``StoreError`` if JSON cannot hold it."""
    omit = {name for name, default in _omittable(type(model)) if getattr(model, name) == default}
    try:
        return model.model_dump_json(exclude=omit).encode()
    except (PydanticSerializationError, UnicodeError) as exc:
        raise StoreError(
            f"Thread `{thread_id}` cannot be saved as JSON: {str(exc).splitlines()[0]}. Nothing "
            "was written; keep state values JSON-serialisable (no lone surrogates in strings).",
            thread_id=thread_id,
        ) from exc


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def offset_after_line(data: bytes, lines: int) -> int:
    """Byte offset just after the ``lines``-th newline of ``data``."""
    offset = 0
    for _ in range(lines):
        offset = data.index(b"\n", offset) + 1
    return offset


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
        data = json.loads(raw)
    except ValueError as not_json:
        return f"Journal record is unreadable: {_reason(not_json)}", False
    found = data.get("v") if isinstance(data, dict) else None
    if isinstance(found, int) and found > FORMAT_VERSION:
        return _newer_format(found), True
    return f"Journal record does not fit the record format: {_reason(exc)}", True


def _reason(exc: ValueError) -> str:
    from pydantic import ValidationError

    from .._plain import describe_validation_error, shorten

    if isinstance(exc, ValidationError):
        return describe_validation_error(exc)
    return shorten(str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
