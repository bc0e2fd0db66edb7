"""Replacing a file atomically: readers see the old content or the new, never half a file.

Write to a temporary file in the same folder, fsync it, rename it over the target, then fsync
the folder so the rename itself survives a power loss. Every file flowkit writes outside the
journal (flow.xml, teaching tables, cassettes, snapshots, artifacts) goes through here.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

__all__ = ["write_atomically"]


def write_atomically(
    path: str | os.PathLike[str], data: bytes | str, *, fsync: bool = True
) -> None:
    """Replace ``path`` with ``data`` (text is written as UTF-8 with ``\\n`` line ends)."""
    target = Path(path)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
            handle.flush()
            if fsync:
                os.fsync(handle.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    if fsync:
        # Not every platform can open a folder; the data itself is already safe then.
        with contextlib.suppress(OSError):
            dir_fd = os.open(target.parent, os.O_RDONLY)
            try:
                os.fsync(dir_fd)
            finally:
                os.close(dir_fd)
