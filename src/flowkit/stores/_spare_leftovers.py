"""What dead owners left under the JSON-file store's ``spares/`` folder (``_spares``), and
the threads among it.

An owner folder whose ``flock`` nobody holds belongs to a process that ended (or closed its
store without removing its spares). It is removed, after each of its spares whose journal's
first record names a thread missing from ``threads/`` is handed to the store to rename back:
``create`` syncs a new thread's record before renaming its spare into ``threads/``, not the
rename, so a power loss may leave the thread there (``_jsonfile_create``).
"""

from __future__ import annotations

import fcntl
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path

from ..foundation._logging import get_logger
from ._jsonfile_reader import JOURNAL
from ._jsonl import named_thread

__all__ = ["PutBack", "sweep_dead_owners"]

#: ``put_back(thread_id, folder)``: rename a spare folder back to the thread it holds.
PutBack = Callable[[str, Path], None]
#: Seconds after which a half-made owner folder (``.new-*``: its process died between making
#: and locking it) is swept.
_HALF_MADE_S = 3600.0


def sweep_dead_owners(folder: Path, put_back: PutBack | None = None) -> None:
    """Remove the owner folders under ``folder`` whose lock nobody holds (their process
    ended, or closed its store without removing them), their threads handed to ``put_back``
    first (``_threads_of``)."""
    with os.scandir(folder) as entries:
        names = [e.name for e in entries if e.is_dir(follow_symlinks=False)]
    for name in names:
        if name.startswith(".") and not _older_than(folder / name, _HALF_MADE_S):
            continue  # being made by a live process, most likely
        path = folder / name
        try:
            fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError:
            continue  # removed meanwhile by another sweeper
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            continue  # a live owner's
        try:
            if _threads_of(path, put_back):
                shutil.rmtree(path, ignore_errors=True)
        finally:
            os.close(fd)


def _threads_of(owner: Path, put_back: PutBack | None) -> bool:
    """Hand each spare of the dead ``owner`` whose journal names a thread missing from
    ``threads/`` to ``put_back``; whether the owner's folder may be removed: not while one of
    its spares is also a thread's folder (a rename half done by a power loss on a file system
    without a journal: two names for one folder, which removing one would empty; left for
    ``fsck``)."""
    threads = owner.parent.parent / "threads"
    for batch in _folders(owner):
        for spare in _folders(batch):
            name = _named(spare / JOURNAL)
            if name is None:
                continue
            try:
                if os.path.samefile(spare, threads / name):
                    get_logger().warning("spare_folder_linked_twice", folder=str(spare))
                    return False
            except OSError:  # no such thread: the power loss took its name
                if put_back is not None:
                    put_back(name, spare)
    return True


def _folders(path: Path) -> list[Path]:
    try:
        with os.scandir(path) as entries:
            return [Path(e.path) for e in entries if e.is_dir(follow_symlinks=False)]
    except OSError:
        return []


def _named(journal: Path) -> str | None:
    """The thread the journal's first record names, if intact (``None``: zeros, torn)."""
    try:
        with open(journal, "rb") as handle:
            return named_thread(handle.readline())
    except OSError:
        return None


def _older_than(path: Path, seconds: float) -> bool:
    """Whether ``path`` was last changed more than ``seconds`` ago (gone: no)."""
    try:
        return time.time() - path.stat().st_mtime > seconds
    except OSError:
        return False
