"""Replacing a file atomically: readers see the old content or the new, never half a file.

Write to a temporary file in the same folder, fsync it, rename it over the target, then fsync
the folder so the rename itself survives a power loss. Every file flowkit writes outside the
journal (flow.xml, teaching tables, cassettes, snapshots, artifacts) goes through here.

Permissions: a file the user asked for (an output) gets what ``open()`` would give it, ``0666``
minus the umask, or keeps the mode of the file it replaces. Store files pass ``private=True``
and stay ``0600``: a journal may hold what people typed. Errors name the target, never the
temporary file.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
import threading
from pathlib import Path

__all__ = ["write_atomically"]

_UMASK_LOCK = threading.Lock()


def current_umask() -> int:
    """The process umask, read without changing it where the platform allows."""
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text(encoding="ascii").splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    with _UMASK_LOCK:  # elsewhere: set and restore at once (umask is process-wide)
        mask = os.umask(0o022)
        os.umask(mask)
    return mask


def _mode_for(target: Path, private: bool) -> int:
    if private:
        return 0o600
    try:
        return stat.S_IMODE(target.stat().st_mode)
    except OSError:
        return 0o666 & ~current_umask()


def write_atomically(
    path: str | os.PathLike[str], data: bytes | str, *, fsync: bool = True, private: bool = False
) -> None:
    """Replace ``path`` with ``data`` (text is written as UTF-8 with ``\\n`` line ends).

    Raises:
        OSError: the file cannot be written; the error's ``filename`` is ``path``.
    """
    target = Path(path)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except OSError as exc:
        raise type(exc)(exc.errno, exc.strerror, str(target)) from exc
    try:
        with os.fdopen(fd, "wb") as handle:
            if hasattr(os, "fchmod"):
                os.fchmod(handle.fileno(), _mode_for(target, private))
            handle.write(payload)
            handle.flush()
            if fsync:
                os.fsync(handle.fileno())
        os.replace(tmp, target)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise type(exc)(exc.errno, exc.strerror, str(target)) from exc
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
