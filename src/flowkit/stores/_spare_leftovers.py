"""What dead owners left under the JSON-file store's ``spares/`` folder (``_spares``), and
the threads among it.

An owner folder whose ``flock`` nobody holds belongs to a process that ended (or closed its
store without removing its spares). It is removed, after each of its spares whose journal's
first record names a thread missing from ``threads/`` is handed to the store to rename back:
``create`` syncs a new thread's record before renaming its spare into ``threads/``, not the
rename, so a power loss may leave the thread there (``_jsonfile_create``).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import ClassVar

from ..foundation._logging import get_logger
from ._jsonfile_reader import JOURNAL
from ._jsonl import named_thread

__all__ = ["PutBack", "sweep_dead_owners"]

#: ``put_back(thread_id, folder)``: rename a spare folder back to the thread it holds;
#: whether it did.
PutBack = Callable[[str, Path], bool]
#: The file a sweep holds locked (``lockf``) while it looks through the owners.
_LOCK = "lock"


class _Sweeps:
    """This process's sweeps, one at a time, and the dead owners' folders the one running
    holds locked (``flock``, which a forked child's copies would hold for as long as it
    lives: closed there)."""

    lock = threading.Lock()
    held: ClassVar[list[int]] = []


def _after_fork_in_child() -> None:
    for fd in _Sweeps.held:  # the parent's sweep's, never the child's
        with contextlib.suppress(OSError):
            os.close(fd)
    _Sweeps.held = []
    _Sweeps.lock = threading.Lock()  # another thread's sweep, held at the fork, is not the child's


os.register_at_fork(after_in_child=_after_fork_in_child)

#: Seconds after which a half-made owner folder (``.new-*``: its process died between making
#: and locking it) is swept.
_HALF_MADE_S = 3600.0


def sweep_dead_owners(folder: Path, put_back: PutBack | None) -> None:
    """Remove the owner folders under ``folder`` whose lock nobody holds (their process
    ended, or closed its store without removing them), their threads handed to ``put_back``
    first (``None``: nothing to hand them to; such owners are left for a store object).

    One sweep at a time (``folder/lock``): a store object made while another is putting
    threads back waits, never taking an owner it cannot lock for a live one and serving
    before its threads are back. A POSIX record lock, which a forked child does not inherit
    (a ``flock`` it would hold for as long as it lives), with a lock of this process's
    beside it (record locks are the process's: two threads would both get one)."""
    with _Sweeps.lock:
        lock = os.open(folder / _LOCK, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.lockf(lock, fcntl.LOCK_EX)
            _sweep(folder, put_back)
        finally:
            os.close(lock)  # its lock goes with it


def _sweep(folder: Path, put_back: PutBack | None) -> None:
    """``sweep_dead_owners``, its locks held."""
    _Sweeps.held = []
    held = _dead_owners(folder)
    try:
        keep = _put_back_threads(folder.parent / "threads", held, put_back)
        for owner in held:
            if owner not in keep:
                shutil.rmtree(owner, ignore_errors=True)
    finally:
        _Sweeps.held = []
        for fd in held.values():
            os.close(fd)


def _dead_owners(folder: Path) -> dict[Path, int]:
    """The owner folders nobody holds, each now locked here (path -> the locked fd)."""
    with os.scandir(folder) as entries:
        names = [e.name for e in entries if e.is_dir(follow_symlinks=False)]
    held: dict[Path, int] = {}
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
        held[path] = fd
        _Sweeps.held.append(fd)
    return held


def _put_back_threads(threads: Path, owners: Iterable[Path], put_back: PutBack | None) -> set[Path]:
    """Hand each spare of ``owners`` whose journal names a thread missing from ``threads``
    to ``put_back``, the longest journal first (two spares may name one thread: the
    thread's own, and a create that lost the race to it and was cut off before its record
    was wiped); the owners to keep: one whose thread could not be put back (``put_back``
    ``None`` or failing: tried again by the next store object made), one holding a spare
    with records past its start whose thread is there already (two lives of one id: nothing
    is removed, a person decides), one whose spare is also its thread's folder (a rename
    half done by a power loss on a file system without a journal: two names for one folder,
    which removing one would empty; left for ``fsck``). A spare holding a start alone whose
    thread is there is a create that never returned (killed before its rename, the thread
    made again since; or, after a power loss, the loser of two creates of one id, of which
    nothing tells the one that returned: the one found first by folder name goes back)."""
    named: list[tuple[int, str, Path, Path]] = []
    for owner in owners:
        for batch in _folders(owner):
            for spare in _folders(batch):
                found = _named(spare / JOURNAL)
                if found is not None:
                    named.append((found[1], found[0], spare, owner))
    keep: set[Path] = set()
    for lines, name, spare, owner in sorted(named, key=lambda n: (-n[0], str(n[2]))):
        target = threads / name
        try:
            if os.path.samefile(spare, target):
                get_logger().warning("spare_folder_linked_twice", folder=str(spare))
                keep.add(owner)
            elif lines > 1:
                get_logger().warning("spare_folder_conflict", folder=str(spare))
                keep.add(owner)
            continue  # a start alone: a create that never returned (killed, then retried)
        except OSError:  # no such thread: the power loss took its name
            pass
        if put_back is None or not put_back(name, spare):
            keep.add(owner)
    return keep


def _folders(path: Path) -> list[Path]:
    try:
        with os.scandir(path) as entries:
            return [Path(e.path) for e in entries if e.is_dir(follow_symlinks=False)]
    except OSError:
        return []


def _named(journal: Path) -> tuple[str, int] | None:
    """The thread the journal's first record names, if intact (``None``: zeros, torn), and
    how many lines the journal holds."""
    try:
        with open(journal, "rb") as handle:
            name = named_thread(handle.readline())
            if name is None:
                return None
            return name, 1 + handle.read().rstrip(b"\0").count(b"\n")
    except OSError:
        return None


def _older_than(path: Path, seconds: float) -> bool:
    """Whether ``path`` was last changed more than ``seconds`` ago (gone: no)."""
    try:
        return time.time() - path.stat().st_mtime > seconds
    except OSError:
        return False
