"""Telling a journal's torn tail (a write a crash cut short) from damage to committed records.

An append writes whole lines (``record\\n`` ...) after the last one, over zeros or past the end
of the file. A crash can keep any prefix of that write; a power loss can also lose whole disk
sectors of it, which then read as zeros. So a torn tail is, byte for byte, what was being
written, except for zero runs that fill whole sectors. It holds no complete record: a complete
record whose checksum holds was written in full, and the scanner keeps it.

The rules, for the journal's last line (nothing but zeros after it); anything else is damage:

- bytes that contain a complete record whose checksum holds, followed by anything but its
  line end (a newline overwritten, two records run together), are damage, never a tear;
- without zero runs, the line is torn when it has no newline and is the start of a JSON object
  (a valid prefix, not a complete value: a complete one would have been kept or is damaged);
- with zero runs inside it, each run must start and end on a sector boundary (512 bytes, or
  at the line's start), the bytes before the first run must again be such a prefix, and a
  line that reached its newline must end with a record's seal (what flowkit writes last).

A whole sector zeroed inside the last record looks exactly like a lost sector of a torn
write: that one case cannot be told apart, and is read as torn.
"""

from __future__ import annotations

import json
import re
import zlib

from pydantic_core import from_json

__all__ = ["SECTOR", "holds_record", "torn_write"]

#: The smallest unit a disk writes whole: a sector a power loss loses reads as 512 zeros.
SECTOR = 512

_SEAL_ANYWHERE = re.compile(rb',"crc":"([0-9a-f]{8})"\}')
_SEAL_LEN = 18
_SEAL_AT_END = re.compile(rb',"crc":"[0-9a-f]{8}"\}\Z')
_RECORD_START = re.compile(rb'\{"(?:v|thread)":')
_ZEROS = re.compile(rb"\0+")
#: Pairs of (start, seal) tried before giving up: past it, a complete record cannot be ruled
#: out, so the line counts as holding one (damage reported, never a record dropped).
_MAX_TRIES = 256
# Integers stay text: a complete value is all this needs to know, not its numbers.
_DECODER = json.JSONDecoder(parse_int=str, parse_float=str)


def holds_record(raw: bytes) -> bool:
    """Whether ``raw`` contains a complete sealed record whose checksum holds.

    A record starts at the line's start, after a zero run or at ``{"v":``, and ends with its
    seal; only the error path calls this, on a line that failed to load as one record.
    """
    ends = list(_SEAL_ANYWHERE.finditer(raw))
    if not ends:
        return False
    starts = sorted(
        {0}
        | {m.end() for m in _ZEROS.finditer(raw)}
        | {m.start() for m in _RECORD_START.finditer(raw)}
    )
    tries = 0
    for seal in ends:
        body_end = seal.end() - _SEAL_LEN
        expected = int(seal.group(1), 16)
        for start in starts:
            if start >= body_end:
                break
            view = memoryview(raw)[start:body_end]
            if zlib.crc32(b"}", zlib.crc32(view)) == expected:
                return True
            tries += 1
            if tries >= _MAX_TRIES:
                return True
    return False


def torn_write(raw: bytes, *, ended: bool, at: int) -> bool:
    """Whether the journal's last line ``raw`` (at file offset ``at``, without the zeros after
    it, ``ended``: followed by its newline) can be a write a crash cut short.

    The caller has checked that it holds no complete record (``holds_record``).
    """
    holes = [(m.start(), m.end()) for m in _ZEROS.finditer(raw)]
    if not holes:
        return not ended and _json_prefix(raw)
    if ended and not _SEAL_AT_END.search(raw):
        return False  # a write that reached its line end ends with flowkit's seal
    for start, end in holes:
        if (start and (at + start) % SECTOR) or (at + end) % SECTOR:
            return False  # zeros that are not whole lost sectors: something else wrote them
    first = raw[: holes[0][0]]
    return not first or _json_prefix(first)


def _json_prefix(data: bytes) -> bool:
    """Whether ``data`` is the start of a JSON object, cut short (not a complete value)."""
    if not data.startswith(b"{"):
        return False
    try:
        from_json(data, allow_partial=True)
    except ValueError:
        return False  # a syntax error before the end: not what flowkit was writing
    try:
        _DECODER.raw_decode(data.decode("utf-8", "replace"))
    except ValueError:
        return True  # valid so far but unfinished: cut short
    return False
