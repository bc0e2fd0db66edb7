"""What a pool of spare thread folders (``_spares``) holds: its ready spares, its owner folder
and its refills' folders, and the files a refill makes in them."""

from __future__ import annotations

import itertools
import os
import shutil
import threading
from collections import deque
from dataclasses import dataclass
from pathlib import Path

from ._jsonfile_reader import JOURNAL

__all__ = ["Owner", "PoolState", "Spare", "make_lock_files", "new_batch", "remove_spare"]


@dataclass(frozen=True)
class Spare:
    """A ready folder: its path, and its journal's inode and length (zeros, synced)."""

    path: Path
    ino: int
    size: int

    @property
    def journal(self) -> Path:
        return self.path / JOURNAL


@dataclass(frozen=True)
class Owner:
    """A pool's owner folder and the descriptor that holds its lock."""

    path: Path
    fd: int


class PoolState:
    """What a pool holds between ``close`` calls (and what its finalizer releases)."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        """Empty, with no owner folder yet (in this process)."""
        self.pid = os.getpid()
        self.ready: deque[Spare] = deque()
        self.locks: deque[Path] = deque()
        self.owner: Owner | None = None
        self.refill: threading.Thread | None = None
        self.stopping = False
        self.hurry = False  # ``wait``: the running refill makes its spares without pausing
        self.taken = 0  # spares asked for (both kinds), so far
        self.retry_at = 0.0
        self.numbers = itertools.count()
        self.batches: list[Path] = []  # the refills' folders, until emptied

    def release(self) -> None:
        """Remove the spares not taken and the owner folder, unlocking it. With a refill
        still running (a finalizer at exit: refills are daemon threads), it only asks it to
        stop: what it leaves is swept by the next store to make spares there."""
        self.stopping = True
        if self.refill is not None and self.refill.is_alive():
            return
        while self.ready:
            remove_spare(self.ready.popleft())
        self.locks.clear()  # removed with the owner folder
        owner, self.owner = self.owner, None
        if owner is not None:
            shutil.rmtree(owner.path, ignore_errors=True)
            os.close(owner.fd)

    def forked(self) -> None:
        """In a child process: the parent's spares and owner folder stay the parent's."""
        if self.owner is not None:
            os.close(self.owner.fd)
        self.reset()


def new_batch(owner: Owner, state: PoolState) -> Path:
    """A new folder for a refill's spares, in ``owner``'s folder (the emptied ones of earlier
    refills removed). A folder of its own: a create renames a spare out of its folder and
    unlinks a spare lock file from it, both under that folder's lock, which making an inode
    in the same folder holds for as long as the allocator takes (hundreds of microseconds on
    an ext4 with many inodes deleted lately)."""
    for old in list(state.batches):
        try:
            os.rmdir(old)
        except OSError:
            continue  # spares still in it (or gone already)
        state.batches.remove(old)
    batch = owner.path / f"b{next(state.numbers)}"
    batch.mkdir()
    state.batches.append(batch)
    return batch


def make_lock_files(batch: Path, count: int, numbers: itertools.count[int]) -> list[Path]:
    """``count`` new empty lock files in ``batch`` (never synced: a lock only has to outlive
    its process)."""
    made: list[Path] = []
    for _ in range(count):
        path = batch / f"{next(numbers)}.lock"
        os.close(os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644))
        made.append(path)
    return made


def remove_spare(spare: Spare) -> None:
    """Remove a spare folder and what it holds (gone already: nothing to do)."""
    shutil.rmtree(spare.path, ignore_errors=True)
