"""One sync for many new files: ``syncfs(2)``, where the C library has it.

Each ``fsync`` or ``fdatasync`` ends with a flush of the disk's write cache, the costly part of
a sync on most disks (a virtual disk's flush is its host's ``fsync``). Making a few files and
folders durable one ``fsync`` at a time flushes the cache twice per file (the file, then its
folder's entry); ``syncfs`` writes everything the file system holds unwritten, metadata and
folder entries included, and flushes once. Everything else unwritten on that file system is
written too, so it suits work done off the callers' threads (``_spares``), not a commit.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable

__all__ = ["sync_file_system"]


def sync_file_system(fd: int) -> bool:
    """Sync the whole file system holding the open file ``fd``; False where this platform
    has no ``syncfs`` (the caller syncs each file itself). A failure raises ``OSError``."""
    found = _lookup()
    if found is None:
        return False
    syncfs, get_errno = found
    if syncfs(fd) != 0:
        code = get_errno()
        raise OSError(code, os.strerror(code))
    return True


@functools.cache
def _lookup() -> tuple[Callable[[int], int], Callable[[], int]] | None:
    """``syncfs`` of the C library and ctypes' ``get_errno``; ``None`` where there is none."""
    if not sys.platform.startswith("linux"):
        return None
    # ctypes only here: it costs milliseconds to import, and most stores never refill.
    import ctypes

    try:
        function = ctypes.CDLL(None, use_errno=True).syncfs
    except (OSError, AttributeError):
        return None
    function.argtypes = [ctypes.c_int]
    function.restype = ctypes.c_int
    return function, ctypes.get_errno
