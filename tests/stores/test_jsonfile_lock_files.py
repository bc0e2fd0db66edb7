"""JsonFileStore lock files go with their thread, and removing one never lets two holders in.

A thread's lock file (``locks/<id>.lock``) is removed by ``delete`` (so ``prune`` and
``flowkit delete``/``prune`` too) and by any lock taken for a thread that does not exist, so
the folder holds at most one file per live thread. Removal happens only while holding the
lock, and every acquirer checks after ``flock`` that the path still names the file it locked,
retrying on a fresh open if not: the tests below replay that race step by step.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from flowkit import Runner
from flowkit.errors import ConflictError, ThreadNotFoundError
from flowkit.records._records import StartRecord
from flowkit.stores import JsonFileStore

from .conftest import TALLY


def start() -> StartRecord:
    return StartRecord(version=0, ts=0.0, next="n", status="pending", flow="f", state={"x": 1})


def lock_files(root: Path) -> list[str]:
    try:
        return sorted(os.listdir(root / "locks"))
    except FileNotFoundError:
        return []


def test_delete_removes_the_threads_lock_file(root: Path) -> None:
    store = JsonFileStore(root, fsync=False)
    for thread in ("t1", "t2"):
        store.create(thread, start())
        with store.lock(thread):
            pass
    assert lock_files(root) == ["t1.lock", "t2.lock"]
    store.delete("t1")
    assert lock_files(root) == ["t2.lock"]


def test_prune_removes_the_lock_files_of_the_pruned_threads_only(root: Path) -> None:
    runner = Runner(TALLY, store=JsonFileStore(root, fsync=False))
    for thread in ("done-1", "done-2", "waits"):
        runner.start(thread)
    for thread in ("done-1", "done-2"):
        runner.resume(thread, {"value": 1, "stop": True})
    assert runner.prune().deleted == ("done-1", "done-2")
    assert lock_files(root) == ["waits.lock"]
    runner.delete("waits")
    assert lock_files(root) == []


def test_a_lock_taken_for_a_thread_that_does_not_exist_leaves_no_file(root: Path) -> None:
    store = JsonFileStore(root, fsync=False)
    runner = Runner(TALLY, store=store)
    with store.lock("never"):
        pass
    with pytest.raises(ThreadNotFoundError):
        runner.resume("nobody", {"value": 1})
    with pytest.raises(ThreadNotFoundError):
        store.delete("nobody")
    assert lock_files(root) == []
    store.create("t1", start())  # a thread created without its lock gets one when locked
    with store.lock("t1"):
        pass
    assert lock_files(root) == ["t1.lock"]


def test_the_locks_folder_is_made_by_the_stores_first_lock_not_by_each_new_thread(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = JsonFileStore(root, fsync=False)
    with store.lock("first"):  # a fresh store: the lock makes its folder
        assert lock_files(root) == ["first.lock"]
    made: list[Path] = []
    real_mkdir = Path.mkdir

    def mkdir(self: Path, *args: Any, **kwargs: Any) -> None:
        made.append(self)
        real_mkdir(self, *args, **kwargs)

    monkeypatch.setattr(Path, "mkdir", mkdir)
    with store.lock("second"):
        assert lock_files(root) == ["second.lock"]
    assert made == []


def test_a_thread_created_again_under_a_deleted_id_is_locked_as_before(root: Path) -> None:
    runner = Runner(TALLY, store=JsonFileStore(root, fsync=False))
    other = JsonFileStore(root, fsync=False)
    runner.start("t1")
    runner.delete("t1")
    runner.start("t1")
    assert lock_files(root) == ["t1.lock"]
    with other.lock("t1"):
        with pytest.raises(ConflictError):
            runner.resume("t1", {"value": 1})
        with pytest.raises(ConflictError):
            runner.delete("t1")
    assert runner.resume("t1", {"value": 2}).state.total == 2
    runner.delete("t1")
    assert lock_files(root) == []


def test_compact_keeps_the_lock_file_of_the_thread_it_keeps(root: Path) -> None:
    runner = Runner(TALLY, store=JsonFileStore(root, fsync=False))
    runner.start("t1")
    for value in (1, 2, 3):
        runner.resume("t1", {"value": value})
    with JsonFileStore(root).lock("t1"), pytest.raises(ConflictError):
        runner.compact("t1", keep=1)
    assert runner.compact("t1", keep=1) > 0
    assert lock_files(root) == ["t1.lock"]
    with JsonFileStore(root).lock("t1"), pytest.raises(ConflictError):
        runner.resume("t1", {"value": 4})


def run_before_flock(monkeypatch: pytest.MonkeyPatch, action: Callable[[], Any]) -> None:
    """Make ``action`` run once, at the next non-blocking ``flock``: after the acquirer has
    opened the lock file, before it locks it (the window where a remover can slip in)."""
    real = fcntl.flock
    pending = [action]

    def flock(fd: int, operation: int) -> None:
        if pending and operation == fcntl.LOCK_EX | fcntl.LOCK_NB:
            pending.pop()()  # the action's own flock calls pass straight through
        real(fd, operation)

    monkeypatch.setattr(fcntl, "flock", flock)


def test_an_acquirer_whose_file_was_removed_before_it_locked_it_locks_the_new_one(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    deleter, acquirer, third = (JsonFileStore(root, fsync=False) for _ in range(3))
    deleter.create("t1", start())
    with deleter.lock("t1"):
        pass
    run_before_flock(monkeypatch, lambda: deleter.delete("t1"))
    with acquirer.lock("t1"):
        monkeypatch.undo()
        assert deleter.threads() == []
        # The deleter removed the file the acquirer had opened; the acquirer noticed and
        # locked the file now at the path, so nobody else can take the lock meanwhile.
        with pytest.raises(ConflictError):
            third.lock("t1").__enter__()
    assert lock_files(root) == []  # the thread is gone, so its lock file went too


def test_lock_files_of_threads_that_are_gone_are_swept_at_the_first_delete(root: Path) -> None:
    """Older versions (and a crash between a delete's rename and its unlink) left lock files
    of deleted threads behind: the first delete of a store object removes the free ones."""
    store = JsonFileStore(root, fsync=False)
    for thread in ("live", "doomed"):
        store.create(thread, start())
    (root / "locks").mkdir()
    for name in ("gone-1.lock", "gone-2.lock", "held.lock", "live.lock", "notes.txt"):
        (root / "locks" / name).touch()
    with JsonFileStore(root).lock("held"):  # someone is about to create it: left alone
        store.delete("doomed")
        assert lock_files(root) == ["held.lock", "live.lock", "notes.txt"]


def test_a_holder_never_removes_a_newcomers_file(root: Path) -> None:
    """Should a held lock file vanish (someone cleared ``locks/`` by hand), a newcomer locks a
    new file at the path; the first holder's release (its thread does not exist, so it would
    remove its file) must leave the newcomer's alone, or a third could lock beside it."""
    first, newcomer, third = (JsonFileStore(root, fsync=False) for _ in range(3))
    path = root / "locks" / "ghost.lock"
    newcomers_lock = newcomer.lock("ghost")
    with first.lock("ghost"):
        path.unlink()
        newcomers_lock.__enter__()
    assert path.exists()
    with pytest.raises(ConflictError):
        third.lock("ghost").__enter__()
    newcomers_lock.__exit__(None, None, None)
    assert lock_files(root) == []
