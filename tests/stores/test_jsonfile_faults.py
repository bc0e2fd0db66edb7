"""JsonFileStore under failing disks, hostile ids and long-running processes.

A failed write or fsync raises ``StoreError`` and leaves the journal as it was; ids that could
name a path never reach the file system; file handles stay bounded and are all closed.
"""

from __future__ import annotations

import errno
import gc
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from flowkit import Runner
from flowkit.errors import (
    ConflictError,
    InvalidThreadIdError,
    StoreError,
    ThreadNotFoundError,
)
from flowkit.records._records import Snapshot, StartRecord, StepRecord
from flowkit.stores import JsonFileStore
from flowkit.stores import _files as files_module
from flowkit.stores import jsonfile as jsonfile_module

TallyRunner = Callable[..., Runner[Any]]
OpenStore = Callable[..., JsonFileStore]


def waiting_thread(tally: TallyRunner) -> Runner[Any]:
    runner = tally()
    runner.start("t")
    runner.resume("t", {"value": 1})
    return runner


def start(version: int = 0) -> StartRecord:
    return StartRecord(version=0, ts=0.0, next="n", status="pending", flow="f", state={"x": 1})


def step(version: int, **update: Any) -> StepRecord:
    return StepRecord(
        version=version, ts=0.0, next="n", status="pending", node="n", update=update or {"x": 2}
    )


# -- failing disks -------------------------------------------------------------------------------


def half_write_then(code: int) -> Callable[[int, bytes], None]:
    """A ``write_all`` that writes half its data and then fails like a full or broken disk."""

    def write(fd: int, data: bytes, offset: int) -> None:
        os.pwrite(fd, data[: len(data) // 2], offset)
        raise OSError(code, os.strerror(code))

    return write


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EIO, errno.EDQUOT])
def test_a_failed_write_raises_store_error_and_leaves_the_journal_as_it_was(
    tally: TallyRunner, files: Any, monkeypatch: pytest.MonkeyPatch, code: int
) -> None:
    runner = waiting_thread(tally)
    before = files.data("t")

    with monkeypatch.context() as patch:
        patch.setattr(jsonfile_module, "write_all", half_write_then(code))
        with pytest.raises(StoreError) as info:
            runner.resume("t", {"value": 2})
    assert info.value.path == str(files.journal("t"))
    assert os.strerror(code) in str(info.value) and "retry" in str(info.value)
    assert files.data("t") == before

    assert tally().get_state("t").version == 2
    after = runner.resume("t", {"value": 2})
    assert (after.version, after.state.seen) == (4, [1, 2])
    assert tally().get_state("t").state == after.state


def test_a_failed_fsync_raises_store_error_and_the_unsynced_record_is_dropped(
    tally: TallyRunner, files: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    runner = waiting_thread(tally)
    before = files.data("t")

    def broken_fdatasync(fd: int) -> None:
        raise OSError(errno.EIO, os.strerror(errno.EIO))

    with monkeypatch.context() as patch:
        patch.setattr(os, "fdatasync", broken_fdatasync)
        with pytest.raises(StoreError):
            runner.resume("t", {"value": 2})
    assert files.data("t") == before
    assert runner.resume("t", {"value": 2}).version == 4


def test_a_journal_that_cannot_be_opened_raises_store_error(
    tally: TallyRunner, files: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    waiting_thread(tally)
    real_open = os.open
    journal = str(files.journal("t"))

    def denying_open(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if os.fspath(path) == journal and flags & os.O_RDWR:
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), journal)
        return real_open(path, flags, *args, **kwargs)

    runner = tally()
    with monkeypatch.context() as patch:
        patch.setattr(os, "open", denying_open)
        with pytest.raises(StoreError) as info:
            runner.resume("t", {"value": 2})
    assert info.value.path == journal and os.strerror(errno.EACCES) in str(info.value)
    assert runner.resume("t", {"value": 2}).version == 4


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores file permissions")
def test_a_read_only_store_raises_store_error_and_loses_nothing(
    tally: TallyRunner, files: Any, root: Path
) -> None:
    waiting_thread(tally)
    files.journal("t").chmod(0o444)
    (root / "threads").chmod(0o555)
    try:
        runner = tally()
        assert runner.get_state("t").version == 2
        with pytest.raises(StoreError):
            runner.resume("t", {"value": 2})
        with pytest.raises(StoreError):
            runner.start("new")
    finally:
        (root / "threads").chmod(0o755)
        files.journal("t").chmod(0o644)
    assert tally().get_state("t").version == 2


def test_a_failed_snapshot_write_raises_store_error_and_keeps_the_old_snapshot(
    open_store: OpenStore, files: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = open_store()
    store.create("t", start())
    store.append("t", [step(1)], expected_version=0)
    store.write_snapshot(
        "t", Snapshot(version=1, ts=0, next="n", status="pending", flow="f", state={})
    )
    old = files.snapshot("t").read_bytes()
    store.append("t", [step(2)], expected_version=1)

    def full_disk(src: Any, dst: Any) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    with monkeypatch.context() as patch:
        patch.setattr(os, "replace", full_disk)
        with pytest.raises(StoreError):
            store.write_snapshot(
                "t", Snapshot(version=2, ts=0, next="n", status="pending", flow="f", state={})
            )
    assert files.snapshot("t").read_bytes() == old
    assert sorted(p.name for p in files.journal("t").parent.iterdir()) == [
        "journal.jsonl",
        "snapshot.json",
        "snapshots.jsonl",  # the trail of earlier snapshots (pages of history)
    ], "no temporary file is left behind"


def test_a_value_json_cannot_hold_raises_store_error_and_writes_nothing(
    open_store: OpenStore, files: Any
) -> None:
    store = open_store()
    store.create("t", start())
    before = files.data("t")
    with pytest.raises(StoreError) as info:
        store.append("t", [step(1, text="lone surrogate \ud800")], expected_version=0)
    assert "JSON" in str(info.value)
    assert files.data("t") == before
    store.append("t", [step(1)], expected_version=0)


def test_a_lock_file_that_cannot_be_created_raises_store_error(
    open_store: OpenStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = open_store()
    real_open = os.open

    def denying_open(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if os.fspath(path).endswith(".lock"):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), path)
        return real_open(path, flags, *args, **kwargs)

    with monkeypatch.context() as patch:
        patch.setattr(os, "open", denying_open)
        with pytest.raises(StoreError), store.lock("t"):
            pass
    with store.lock("t"):
        pass


# -- hostile ids ---------------------------------------------------------------------------------

TRAVERSAL_IDS = [
    "../outside",
    "../../etc",
    "..",
    ".",
    "a/../../b",
    "/tmp/absolute",
    "threads/../x",
    "..\\windows",
    "%2e%2e%2f",
    "~",
    "a\x00b",
    "-" * 129,
    "\u202e",
    " ",
]


def tree(path: Path) -> list[str]:
    return sorted(str(p.relative_to(path)) for p in path.rglob("*"))


def test_invalid_ids_never_create_or_touch_files_anywhere(tmp_path: Path) -> None:
    from flowkit.testing._contract_flows import REVIEW_FLOW

    root = tmp_path / "a" / "b" / "store"
    with JsonFileStore(root, spares=0) as store:  # no spare folders made in the background
        runner: Runner[Any] = Runner(REVIEW_FLOW, store=store)
        runner.start("ok")
        before = tree(tmp_path)
        calls: list[Callable[[str], Any]] = [
            lambda t: store.create(t, start()),
            lambda t: store.append(t, [step(1)], expected_version=0),
            store.load,
            store.records,
            store.snapshot_due,
            lambda t: store.write_snapshot(
                t, Snapshot(version=0, ts=0, next="n", status="pending", flow="f", state={})
            ),
            lambda t: store.lock(t).__enter__(),
            runner.start,
            lambda t: runner.resume(t, {"approved": True}),
            runner.get_state,
            runner.history,
            lambda t: runner.fork("ok", t),
            lambda t: runner.fork(t, "copy"),
            lambda t: runner.update_state(t, {"drafts": 1}),
        ]
        for bad in TRAVERSAL_IDS:
            for call in calls:
                with pytest.raises(InvalidThreadIdError):
                    call(bad)
        assert tree(tmp_path) == before
        assert store.threads() == ["ok"]


def test_stray_entries_in_the_threads_folder_are_not_threads(
    open_store: OpenStore, root: Path
) -> None:
    store = open_store()
    store.create("real", start())
    (root / "threads" / ".DS_Store").write_bytes(b"junk")
    (root / "threads" / "not a thread").mkdir()
    (root / "threads" / "not a thread" / "journal.jsonl").write_bytes(b"{}\n")
    (root / "threads" / "crashed-create").mkdir()
    (root / "threads" / "crashed-create" / "journal.jsonl").write_bytes(b"")
    (root / "threads" / "no-journal").mkdir()
    assert open_store().threads() == ["real"]


# -- file handles and long-lived stores ----------------------------------------------------------


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.skipif(not Path("/proc/self/fd").exists(), reason="needs /proc")
def test_close_releases_every_file_descriptor(tally: TallyRunner, root: Path) -> None:
    before = open_fds()
    with JsonFileStore(root) as store:
        runner: Runner[Any] = Runner(tally().flow, store=store)
        for index in range(5):
            runner.start(f"t{index}")
            runner.resume(f"t{index}", {"value": index})
            runner.history(f"t{index}")
        assert open_fds() > before
    assert open_fds() == before


@pytest.mark.skipif(not Path("/proc/self/fd").exists(), reason="needs /proc")
def test_open_journals_stay_within_max_open_files(tally: TallyRunner, root: Path) -> None:
    before = open_fds()
    # No spare folders: their one descriptor (test_spares.py) opens in the background.
    with JsonFileStore(root, max_open_files=3, spares=0) as store:
        runner: Runner[Any] = Runner(tally().flow, store=store)
        runner.start("t0")  # also opens the thread index: a few descriptors, for any number
        index_fds = open_fds() - before - 1  # of threads
        for index in range(20):
            if index:
                runner.start(f"t{index}")
            assert open_fds() <= before + index_fds + 3
        for index in range(20):
            assert runner.resume(f"t{index}", {"value": index}).state.total == index
            assert open_fds() <= before + index_fds + 3
    assert open_fds() == before


def test_a_journal_deleted_behind_an_open_store_is_never_written_into(
    open_store: OpenStore, root: Path
) -> None:
    store = open_store()
    store.create("t", start())
    store.append("t", [step(1)], expected_version=0)
    shutil.rmtree(root / "threads" / "t")
    with pytest.raises(ThreadNotFoundError):
        store.append("t", [step(2)], expected_version=1)

    open_store().create("t", start())  # someone starts the thread over
    with pytest.raises(ConflictError):
        store.append("t", [step(2)], expected_version=1)
    store.append("t", [step(1, x=3)], expected_version=0)
    assert [r.version for r in open_store().records("t")] == [0, 1]


def test_a_thread_folder_moved_away_behind_an_open_store_is_never_written_into(
    open_store: OpenStore, root: Path
) -> None:
    """A folder renamed away (as a delete does before it removes it, or a person moving it
    aside) keeps its journal linked: the open descriptor must not follow it there."""
    store = open_store()
    store.create("t", start())
    store.append("t", [step(1)], expected_version=0)
    aside = root / "threads" / ".aside"
    (root / "threads" / "t").rename(aside)
    with pytest.raises(ThreadNotFoundError):
        store.append("t", [step(2)], expected_version=1)
    assert len((aside / "journal.jsonl").read_bytes().rstrip(b"\0").splitlines()) == 2


def test_a_journal_replaced_behind_an_open_store_is_reread_not_truncated(
    open_store: OpenStore, root: Path
) -> None:
    store = open_store()
    store.create("t", start())
    store.append("t", [step(1)], expected_version=0)
    other = open_store()
    other.create("longer", start())
    other.append("longer", [step(1, x=10), step(2, x=20), step(3, x=30)], expected_version=0)
    journal = root / "threads" / "t" / "journal.jsonl"
    replacement = (root / "threads" / "longer" / "journal.jsonl").read_bytes()
    journal.write_bytes(replacement)  # a restore from backup, in place

    with capture_logs():
        store.append("t", [step(4)], expected_version=3)
    assert [r.version for r in open_store().records("t")] == [0, 1, 2, 3, 4]


@pytest.mark.skipif(not Path("/proc/self/fd").exists(), reason="needs /proc")
def test_a_store_dropped_without_close_releases_its_file_descriptors(
    tally: TallyRunner, root: Path
) -> None:
    gc.collect()  # earlier tests' garbage must not close descriptors during the measurement
    before = open_fds()
    runner: Runner[Any] = Runner(tally().flow, store=JsonFileStore(root))  # the README way
    runner.start("t")
    runner.resume("t", {"value": 1})
    assert open_fds() > before
    del runner
    gc.collect()
    # A refill of spare folders still running holds its own until it ends (moments later).
    deadline = time.monotonic() + 10
    while open_fds() != before and time.monotonic() < deadline:
        time.sleep(0.01)
        gc.collect()
    assert open_fds() == before


@pytest.mark.parametrize(
    ("thread_id", "reason"),
    [
        (".", "it starts with '.'"),
        (".hidden", "it starts with '.'"),
        ("..", "it could name a path outside the store"),
        ("a b", "it has characters outside the allowed set"),
        ("", "it is empty"),
    ],
)
def test_a_refused_thread_id_names_the_rule_it_breaks(thread_id: str, reason: str) -> None:
    from flowkit.errors import InvalidThreadIdError
    from flowkit.stores._ids import check_thread_id

    with pytest.raises(InvalidThreadIdError) as caught:
        check_thread_id(thread_id)
    assert f"is not allowed: {reason}." in str(caught.value)


# -- the journal's descriptor while the thread's lock is held ------------------------------------


def count_checks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Every check of a cached journal descriptor against its path, as a list of fds."""
    checks: list[int] = []
    real = files_module.still_named

    def counted(fd: int, name: str | None) -> bool:
        checks.append(fd)
        return real(fd, name)

    monkeypatch.setattr(files_module, "still_named", counted)
    return checks


def test_while_a_threads_lock_is_held_its_journal_is_checked_once_not_per_step(
    open_store: OpenStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every delete, compaction and put-back holds the thread's lock, so while this store
    holds it the file at the path cannot change: one check, not one per step (each check
    is a ``readlink`` of ``/proc/self/fd``, a tenth of a step's CPU)."""
    store = open_store()
    store.create("t", start())
    store.append("t", [step(1)], expected_version=0)  # the descriptor is cached
    checks = count_checks(monkeypatch)
    with store.lock("t"):
        for version in range(2, 12):
            store.append("t", [step(version)], expected_version=version - 1)
    assert len(checks) == 1
    store.append("t", [step(12)], expected_version=11)  # the lock let go: checked again
    assert len(checks) == 2


def test_a_journal_removed_after_the_lock_is_let_go_is_never_written_into(
    open_store: OpenStore, root: Path
) -> None:
    store = open_store()
    store.create("t", start())
    with store.lock("t"):
        store.append("t", [step(1)], expected_version=0)
        store.append("t", [step(2)], expected_version=1)
    shutil.rmtree(root / "threads" / "t")
    with pytest.raises(ThreadNotFoundError):
        store.append("t", [step(3)], expected_version=2)
    with store.lock("t"), pytest.raises(ThreadNotFoundError):
        store.append("t", [step(3)], expected_version=2)


def test_a_check_that_raced_with_the_locks_release_is_not_trusted_under_the_next_hold(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A check that passed while the lock was being let go records the hold it ran under;
    the next hold is another, so the descriptor is checked again under it."""
    journal = tmp_path / "journal.jsonl"
    journal.write_bytes(b"")
    handles = files_module.JournalHandles(4)
    handles.trust("t")
    handles.get("t", lambda: journal, create=False)
    stale = dict(handles._trusted)  # what a check racing with ``distrust`` writes back
    handles.distrust("t")
    handles._trusted.update(stale)
    handles.trust("t")  # the next hold
    checks = count_checks(monkeypatch)
    handles.get("t", lambda: journal, create=False)
    assert len(checks) == 1
    handles.get("t", lambda: journal, create=False)
    assert len(checks) == 1  # checked under this hold: trusted from now on
    handles.close()


def test_handles_collected_after_their_modules_globals_are_gone_close_quietly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At interpreter exit a store kept alive past its modules' teardown is collected after
    their globals were set to ``None``: its handles printed ``Exception ignored in ...
    JournalHandles.__del__ ... 'NoneType' object is not callable`` on stderr (seen with a
    script that swapped ``os.fdatasync`` for a lambda) and leaked their descriptors."""
    handles = files_module.JournalHandles(4)
    journal = tmp_path / "journal.jsonl"
    journal.write_bytes(b"")
    fd, _ = handles.get("t", lambda: journal, create=False)
    for name in ("os", "OrderedDict"):  # what the interpreter's teardown does to the module
        monkeypatch.setattr(files_module, name, None)
    handles.__del__()
    monkeypatch.undo()
    with pytest.raises(OSError):
        os.fstat(fd)  # closed


def test_a_disk_that_takes_a_few_bytes_per_write_still_gets_every_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``write_all`` writes the rest after a short write (a pipe-like or interrupted write
    returns fewer bytes than asked; a journal line must never be cut short)."""
    real = os.pwrite

    def few(fd: int, data: Any, offset: int) -> int:
        return real(fd, bytes(data[:7]), offset)

    with JsonFileStore(tmp_path, fsync=False) as store:
        monkeypatch.setattr(os, "pwrite", few)
        store.create("t", start())
        store.append("t", [step(1)], expected_version=0)
        monkeypatch.setattr(os, "pwrite", real)
    with JsonFileStore(tmp_path, fsync=False) as store:
        assert [r.version for r in store.records("t")] == [0, 1]
