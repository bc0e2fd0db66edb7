"""The JSON-file store's attempt marker: one small file per thread, overwritten in place.

The marker is written before every node attempt when a runner tracks attempts, so it must be
cheap: one ``pwrite`` of a fixed-size, space-padded record at offset 0 (about 4 µs), with no
fsync and no rename (a rename over an existing file costs ext4 a data flush, ~150 µs). A
single write of less than a page is never half-applied by a killed process; anything
unreadable (power loss) reads as "no marker", which only costs recovery some precision.
"""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import ValidationError

from ..errors import ThreadNotFoundError
from ..foundation._logging import get_logger
from ..records._marker import AttemptMarker
from ..records._records import FORMAT_VERSION
from ._files import os_error

__all__ = ["ATTEMPT_FILE", "read_attempt", "write_attempt"]

ATTEMPT_FILE = "attempt.json"
#: Every marker file is this long (padded with spaces), so each write replaces it whole.
_WIDTH = 512


def write_attempt(directory: Path, thread_id: str, marker: AttemptMarker) -> None:
    """Overwrite the thread's marker; ``ThreadNotFoundError`` if the thread has no folder."""
    data = marker.model_dump_json().encode()
    path = directory / ATTEMPT_FILE
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)  # private, like every thread file
    except FileNotFoundError:
        raise ThreadNotFoundError(thread_id) from None
    except OSError as exc:
        raise os_error("write the attempt marker", path, exc, thread_id=thread_id) from exc
    try:
        if len(data) < _WIDTH:
            os.pwrite(fd, data.ljust(_WIDTH - 1) + b"\n", 0)
        else:  # a very long node name: rare, so the slower two-call form is fine
            os.pwrite(fd, data + b"\n", 0)
            os.ftruncate(fd, len(data) + 1)
    except OSError as exc:
        raise os_error("write the attempt marker", path, exc, thread_id=thread_id) from exc
    finally:
        os.close(fd)


def read_attempt(directory: Path, thread_id: str) -> AttemptMarker | None:
    """The thread's marker, or ``None`` when there is none or it cannot be read."""
    path = directory / ATTEMPT_FILE
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        if not directory.is_dir():
            raise ThreadNotFoundError(thread_id) from None
        return None
    except OSError as exc:
        raise os_error("read the attempt marker", path, exc, thread_id=thread_id) from exc
    try:
        # The marker is the first line: a shorter marker written over a longer one leaves
        # the longer one's tail after its newline.
        marker = AttemptMarker.model_validate_json(raw.split(b"\n", 1)[0].rstrip())
        if marker.v > FORMAT_VERSION:
            raise ValueError(f"marker format v{marker.v} is newer than this flowkit")
    except (ValidationError, ValueError) as exc:
        get_logger().warning(
            "attempt_marker_ignored",
            thread_id=thread_id,
            path=str(path),
            reason=str(exc).splitlines()[0],
        )
        return None
    return marker
