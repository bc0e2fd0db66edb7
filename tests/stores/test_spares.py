"""Spare thread folders and lock files (``flowkit.stores._spares``): a new thread takes a folder
made ahead by a rename and its lock file by a link, never shares one, is as durable as one made
on the spot, and what a spare holds is never taken for a thread."""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from flowkit.errors import ConflictError, StoreError, ThreadExistsError, ThreadNotFoundError
from flowkit.records._records import StartRecord, StepRecord
from flowkit.stores import JsonFileStore
from flowkit.stores import _jsonfile_create as create_module
from flowkit.stores import _jsonl as jsonl_module
from flowkit.stores import _spare_leftovers as leftovers_module
from flowkit.stores import _spares as spares_module
from flowkit.stores._syncfs import sync_file_system


def start(**state: Any) -> StartRecord:
    return StartRecord(
        version=0, ts=0.0, next="n", status="pending", flow="f", state=state or {"x": 1}
    )


def step(version: int) -> StepRecord:
    return StepRecord(
        version=version, ts=0.0, next="n", status="pending", node="n", update={"x": version}
    )


def warm(store: JsonFileStore) -> None:
    """Create one thread under its lock (which starts the refill and makes the lock folder)
    and wait for the refill to end."""
    with store.lock("warm-up"):
        store.create("warm-up", start())
    store._spares.wait()


def owner_folders(root: Path) -> list[Path]:
    folder = root / spares_module.SPARES
    return sorted(p for p in folder.iterdir() if p.is_dir()) if folder.exists() else []


def spare_inodes(root: Path) -> tuple[set[int], set[int]]:
    """The inodes of the spare journals and of the spare lock files now on disk."""
    journals, locks = set(), set()
    for owner in owner_folders(root):
        for entry in owner.glob("*/*"):  # a folder per refill
            if entry.suffix == ".lock":
                locks.add(entry.stat().st_ino)
            else:
                journals.add((entry / "journal.jsonl").stat().st_ino)
    return journals, locks


def test_a_new_thread_takes_a_spare_folder_and_a_spare_lock_file(tmp_path: Path) -> None:
    with JsonFileStore(tmp_path) as store:
        warm(store)
        journals, locks = spare_inodes(tmp_path)
        assert len(journals) >= 1 and len(locks) >= 1
        with store.lock("t"):
            store.create("t", start(x=5))
            store.append("t", [step(1), step(2)], expected_version=0)
        assert (tmp_path / "threads" / "t" / "journal.jsonl").stat().st_ino in journals
        assert (tmp_path / "locks" / "t.lock").stat().st_ino in locks
        assert [r.version for r in store.records("t")] == [0, 1, 2]
    with JsonFileStore(tmp_path) as reopened:
        records = reopened.records("t")
        assert [r.version for r in records] == [0, 1, 2]
        assert records[0].state == {"x": 5}  # type: ignore[union-attr]


def test_spares_are_never_handed_out_twice_across_threads_of_one_store(tmp_path: Path) -> None:
    with JsonFileStore(tmp_path) as store:
        warm(store)
        ids = [f"t{i}" for i in range(40)]

        def create(chunk: list[str]) -> None:
            for thread_id in chunk:
                store.create(thread_id, start(id=thread_id))
                store.append(thread_id, [step(1)], expected_version=0)

        workers = [threading.Thread(target=create, args=(ids[i::4],)) for i in range(4)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        inodes = {(tmp_path / "threads" / t / "journal.jsonl").stat().st_ino for t in ids}
        assert len(inodes) == len(ids)
        for thread_id in ids:
            records = store.records(thread_id)
            assert records[0].state == {"id": thread_id}  # type: ignore[union-attr]
            assert [r.version for r in records] == [0, 1]


def test_the_record_is_synced_before_the_rename_which_the_record_can_redo(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What makes a thread from a spare as durable as one made on the spot: its record is on
    disk before the folder is renamed into ``threads/`` (no folder there ever holds a journal
    of zeros alone), and it names its thread, so the rename needs no sync of its own (a power
    loss that takes it is undone at the next open: the tests below)."""
    with JsonFileStore(tmp_path) as store:
        warm(store)
        calls: list[str] = []
        real_fdatasync, real_rename = os.fdatasync, os.rename
        real_sync_dir = create_module.sync_dir

        def fdatasync(fd: int) -> None:
            if threading.current_thread() is threading.main_thread():  # not a refill's
                calls.append("fdatasync")
            real_fdatasync(fd)

        def rename(src: Any, dst: Any) -> None:
            if threading.current_thread() is threading.main_thread():
                calls.append(f"rename {Path(dst).relative_to(tmp_path)}")
            real_rename(src, dst)

        def sync_dir(enabled: bool, path: Path) -> None:
            if threading.current_thread() is threading.main_thread():
                calls.append(f"sync {path.relative_to(tmp_path)}")
            real_sync_dir(enabled, path)

        monkeypatch.setattr(create_module.os, "fdatasync", fdatasync)
        monkeypatch.setattr(create_module.os, "rename", rename)
        monkeypatch.setattr(create_module, "sync_dir", sync_dir)
        store.create("t", start())
        monkeypatch.undo()
        assert calls == ["fdatasync", "rename threads/t"]
    first = (tmp_path / "threads" / "t" / "journal.jsonl").read_bytes().split(b"\n")[0]
    assert first.startswith(b'{"thread":"t",')


def test_two_store_objects_racing_to_create_one_thread_leave_one_thread(
    tmp_path: Path,
) -> None:
    """Two store objects (two processes, as far as locks go) create the same ids at once,
    both from their own spares: one create of each wins, the other is told it exists."""
    first, second = JsonFileStore(tmp_path), JsonFileStore(tmp_path)
    try:
        warm(first)
        second.create("warm-up-2", start())
        second._spares.wait()
        ids = [f"t{i}" for i in range(30)]
        outcomes: dict[str, list[str]] = {t: [] for t in ids}
        barrier = threading.Barrier(2)

        def create(store: JsonFileStore, name: str) -> None:
            barrier.wait()
            for thread_id in ids:
                try:
                    store.create(thread_id, start(by=name))
                    outcomes[thread_id].append(name)
                except ThreadExistsError:
                    outcomes[thread_id].append("exists")

        workers = [
            threading.Thread(target=create, args=(first, "first")),
            threading.Thread(target=create, args=(second, "second")),
        ]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        for thread_id in ids:
            assert sorted(outcomes[thread_id])[0] == "exists", outcomes[thread_id]
            winner = next(o for o in outcomes[thread_id] if o != "exists")
            records = first.records(thread_id)
            assert len(records) == 1
            assert records[0].state == {"by": winner}  # type: ignore[union-attr]
    finally:
        first.close()
        second.close()


def test_two_store_objects_racing_for_one_new_lock_hold_it_one_at_a_time(
    tmp_path: Path,
) -> None:
    first, second = JsonFileStore(tmp_path), JsonFileStore(tmp_path)
    try:
        warm(first)
        second.create("warm-up-2", start())
        second._spares.wait()
        for index in range(20):
            thread_id = f"t{index}"
            with first.lock(thread_id), pytest.raises(ConflictError):
                second.lock(thread_id).__enter__()
            with second.lock(thread_id), pytest.raises(ConflictError):
                first.lock(thread_id).__enter__()
        # a lock taken for a thread that does not exist leaves no file behind
        assert not list((tmp_path / "locks").glob("t*.lock"))
    finally:
        first.close()
        second.close()


def test_close_removes_the_spares_not_taken_and_the_store_stays_usable(tmp_path: Path) -> None:
    store = JsonFileStore(tmp_path)
    warm(store)
    assert owner_folders(tmp_path)
    store.close()
    assert owner_folders(tmp_path) == []
    store.create("after", start())  # a new pool, made when needed
    store._spares.wait()
    assert [r.version for r in store.records("after")] == [0]
    store.close()
    assert owner_folders(tmp_path) == []


def test_what_a_dead_owner_left_is_swept_and_never_read_as_a_thread(tmp_path: Path) -> None:
    """A process that died mid-create (its record written into a spare, the folder never
    renamed) leaves a spare holding a whole start record: no thread, and gone at the next
    refill of any store object in the same folder."""
    with JsonFileStore(tmp_path, fsync=False) as scratch:
        scratch.create("ghost", start(secret="never a thread"))
        journal = (tmp_path / "threads" / "ghost" / "journal.jsonl").read_bytes()
        scratch.delete("ghost")
    dead = tmp_path / spares_module.SPARES / "4242-deadbeef"
    (dead / "0").mkdir(parents=True)
    (dead / "0" / "journal.jsonl").write_bytes(journal)
    (dead / "1.lock").touch()
    half_made = tmp_path / spares_module.SPARES / ".new-4243-cafe"
    half_made.mkdir()  # a process that died between making its folder and locking it
    with JsonFileStore(tmp_path) as store:
        with pytest.raises(ThreadNotFoundError):
            store.load("ghost")
        assert [t.thread_id for t in store.list_threads().threads] == []
        warm(store)
        assert not dead.exists()
        assert half_made.exists()  # too young to be sure its maker died
        assert [t.thread_id for t in store.list_threads().threads] == ["warm-up"]


_HOLDER = textwrap.dedent(
    """
    import sys
    from flowkit.records._records import StartRecord
    from flowkit.stores import JsonFileStore
    store = JsonFileStore(sys.argv[1])
    store.create("held", StartRecord(version=0, ts=0.0, next="n", status="pending",
                                     flow="f", state={}))
    store._spares.wait()
    print("ready", flush=True)
    sys.stdin.read()
    """
)


def test_a_live_owners_spares_are_left_alone_and_a_killed_ones_swept(tmp_path: Path) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(tmp_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "ready"
        (theirs,) = owner_folders(tmp_path)
        with JsonFileStore(tmp_path) as store:
            warm(store)
            assert theirs in owner_folders(tmp_path)
            assert len(owner_folders(tmp_path)) == 2
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
        for pipe in (holder.stdin, holder.stdout):
            if pipe is not None:
                pipe.close()
    assert owner_folders(tmp_path) == [theirs]  # a killed process removes nothing
    with JsonFileStore(tmp_path) as store:
        store.create("after", start())
        store._spares.wait()
        assert theirs not in owner_folders(tmp_path)
        assert {t.thread_id for t in store.list_threads().threads} == {
            "held", "warm-up", "after",
        }  # fmt: skip


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_makes_its_own_spares(tmp_path: Path) -> None:
    store = JsonFileStore(tmp_path)
    try:
        warm(store)
        (parents,) = owner_folders(tmp_path)
        pid = os.fork()
        if pid == 0:  # the child: never returns into pytest
            code = 0
            try:
                for index in range(6):
                    store.create(f"child-{index}", start())
                store._spares.wait()
            except BaseException:
                code = 1
            os._exit(code)
        for index in range(6):
            store.create(f"parent-{index}", start())
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        ids = {t.thread_id for t in store.list_threads(limit=100).threads}
        assert {f"child-{i}" for i in range(6)} | {f"parent-{i}" for i in range(6)} <= ids
        inodes = {(tmp_path / "threads" / t / "journal.jsonl").stat().st_ino for t in ids}
        assert len(inodes) == len(ids)
        assert parents in owner_folders(tmp_path)
    finally:
        store.close()


def test_no_spares_without_fsync_or_when_switched_off(tmp_path: Path) -> None:
    for root, store in (
        (tmp_path / "scratch", JsonFileStore(tmp_path / "scratch", fsync=False)),
        (tmp_path / "off", JsonFileStore(tmp_path / "off", spares=0)),
    ):
        with store:
            store.create("t", start())
            assert threading.active_count() == 1 or not any(
                t.name == "flowkit-spares" for t in threading.enumerate()
            )
        assert not (root / spares_module.SPARES).exists()


def test_a_refill_that_fails_leaves_creates_working_and_says_so_once(tmp_path: Path) -> None:
    (tmp_path / spares_module.SPARES).write_text("not a folder")  # mkdir fails under it
    with JsonFileStore(tmp_path) as store, capture_logs() as logs:
        store.create("t0", start())
        store._spares.wait()
        for index in range(1, 10):
            store.create(f"t{index}", start())
        store._spares.wait()
        assert [r.version for r in store.records("t9")] == [0]
    failures = [e for e in logs if e["event"] == "spare_folders_failed"]
    assert len(failures) == 1  # then no retry for a while, not a line per create


@pytest.mark.parametrize("spares", [-1, 1025, 2.5, True, "8", None])
def test_a_spares_setting_that_is_not_a_count_is_refused(tmp_path: Path, spares: Any) -> None:
    if spares is None:  # the default: a count
        JsonFileStore(tmp_path, spares=spares).close()
        return
    with pytest.raises(StoreError, match="spares must be a whole number"):
        JsonFileStore(tmp_path, spares=spares)


def test_a_store_keeps_few_spares_until_it_starts_many_threads(tmp_path: Path) -> None:
    with JsonFileStore(tmp_path, spares=16) as store:
        warm(store)  # one thread: a command that starts one makes a couple, not 16
        journals, locks = spare_inodes(tmp_path)
        assert 1 <= len(journals) <= 3 and 1 <= len(locks) <= 3
        for index in range(40):
            with store.lock(f"t{index}"):
                store.create(f"t{index}", start())
        store._spares.wait()
        journals, locks = spare_inodes(tmp_path)
        assert 4 < len(journals) <= 16 and 4 < len(locks) <= 16


@pytest.mark.parametrize("spares", [0, 16])
def test_two_store_objects_creating_the_same_threads_in_opposite_orders_never_deadlock(
    tmp_path: Path, spares: int
) -> None:
    """Found by a defect hunt: a commit took the journal's lock while holding its store's
    lock, and after its unguarded sync took the store's lock again while holding the
    journal's; four threads over two store objects made a cycle within seconds."""
    stores = [JsonFileStore(tmp_path, spares=spares) for _ in range(2)]
    ids = [f"t{i}" for i in range(1500)]
    failures: list[BaseException] = []

    def create(store: JsonFileStore, order: list[str]) -> None:
        for thread_id in order:
            try:
                store.create(thread_id, start())
            except ThreadExistsError:
                pass
            except BaseException as exc:
                failures.append(exc)

    workers = [
        threading.Thread(target=create, args=(stores[k % 2], ids if k < 2 else ids[::-1]))
        for k in range(4)
    ]
    for worker in workers:
        worker.daemon = True
        worker.start()
    deadline = time.monotonic() + 90
    for worker in workers:
        worker.join(max(0.0, deadline - time.monotonic()))
    try:
        assert not any(worker.is_alive() for worker in workers), "deadlocked"
        assert failures == []
        with JsonFileStore(tmp_path, fsync=False) as fresh:
            assert sorted(fresh.threads()) == sorted(ids)
            assert all(len(fresh.records(t)) == 1 for t in ids[::100])
    finally:
        if not any(worker.is_alive() for worker in workers):  # closing waits for the locks
            for store in stores:
                store.close()


_KILLED_IN_CREATE = textwrap.dedent(
    """
    import os, signal, sys
    from flowkit.records._records import StartRecord
    from flowkit.stores import JsonFileStore, _jsonfile_create as creating
    store = JsonFileStore(sys.argv[1])
    record = StartRecord(version=0, ts=0.0, next="n", status="pending", flow="f", state={})
    store.create("warm", record)
    store._spares.wait()

    def die(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGKILL)

    if sys.argv[2] == "write_all":  # dies as the record is written into the spare
        creating.write_all = die
    else:  # dies as the spare folder is renamed into threads/
        class Dying:
            def __getattr__(self, name):
                return getattr(os, name)
            rename = staticmethod(die)
        creating.os = Dying()
    store.create("ghost", record)
    """
)


def test_a_create_killed_as_it_writes_its_record_leaves_no_thread_behind(
    tmp_path: Path,
) -> None:
    """Found by a defect hunt: renamed before its record was written, a spare killed in
    between left a journal of zeros under threads/ that listings showed as a thread."""
    script = [sys.executable, "-c", _KILLED_IN_CREATE, str(tmp_path), "write_all"]
    died = subprocess.run(script, check=False)
    assert died.returncode == -signal.SIGKILL
    with JsonFileStore(tmp_path) as store:
        assert store.threads() == ["warm"]
        assert [t.thread_id for t in store.list_threads().threads] == ["warm"]
        with pytest.raises(ThreadNotFoundError):
            store.load("ghost")
        store.create("ghost", start(x=2))  # the id is free
        store._spares.wait()
        assert store.records("ghost")[0].state == {"x": 2}  # type: ignore[union-attr]
        assert owner_folders(tmp_path) == owner_folders(tmp_path)[-1:]  # the dead one swept


def test_a_create_killed_after_its_record_was_synced_keeps_its_thread(tmp_path: Path) -> None:
    """Killed between the synced record and the rename: the record is on disk and names its
    thread, so the next store object puts the folder in ``threads/`` (a create that never
    returned is kept, as a database keeps a commit it never acknowledged), listed too."""
    script = [sys.executable, "-c", _KILLED_IN_CREATE, str(tmp_path), "rename"]
    died = subprocess.run(script, check=False)
    assert died.returncode == -signal.SIGKILL
    dead = owner_folders(tmp_path)
    with JsonFileStore(tmp_path) as store:
        assert sorted(store.threads()) == ["ghost", "warm"]
        assert sorted(t.thread_id for t in store.list_threads().threads) == ["ghost", "warm"]
        assert store.records("ghost")[0].flow == "f"
        with pytest.raises(ThreadExistsError):
            store.create("ghost", start(x=2))
        assert not set(dead) & set(owner_folders(tmp_path))  # the dead one swept


def _lose_the_rename(root: Path, thread_id: str, owner: str = "4242-deadbeef") -> Path:
    """What a power loss after ``create`` returned may leave on disk: the thread's folder
    back where the spare was, under a dead owner's folder (the rename never reached it)."""
    spare = root / "spares" / owner / "b0" / "0"
    spare.parent.mkdir(parents=True)
    os.rename(root / "threads" / thread_id, spare)
    return spare


def test_a_thread_whose_new_name_a_power_loss_took_is_put_back_at_the_next_open(
    tmp_path: Path,
) -> None:
    with JsonFileStore(tmp_path) as store:
        warm(store)
        store.create("t", start(x=1))
        store.append("t", [step(1), step(2)], expected_version=0)
        expected = store.records("t")
    _lose_the_rename(tmp_path, "t")
    with JsonFileStore(tmp_path) as store:
        assert store.records("t") == expected  # every record, the steps after the rename too
        assert "t" in [s.thread_id for s in store.list_threads().threads]
        store.append("t", [step(3)], expected_version=2)  # a thread like any other
    assert not (tmp_path / "spares" / "4242-deadbeef").exists()


def test_a_dead_owners_spare_never_replaces_a_thread_or_becomes_one_without_a_name(
    tmp_path: Path,
) -> None:
    """A spare whose record names a thread that exists (a create that lost the race, wiped
    or not), or whose journal holds zeros or a torn record: removed, nothing else touched."""
    with JsonFileStore(tmp_path) as store:
        warm(store)
        store.create("t", start(x=1))
        store.create("u", start(x=2))
    (tmp_path / "threads" / "t-copy").mkdir()
    (tmp_path / "threads" / "t-copy" / "journal.jsonl").write_bytes(
        (tmp_path / "threads" / "t" / "journal.jsonl").read_bytes()
    )
    named_t = _lose_the_rename(tmp_path, "t-copy")  # names "t", which exists
    zeros = named_t.parent / "1"
    zeros.mkdir()
    (zeros / "journal.jsonl").write_bytes(bytes(4096))
    torn = named_t.parent / "2"
    torn.mkdir()
    line = (tmp_path / "threads" / "u" / "journal.jsonl").read_bytes().split(b"\n")[0]
    (torn / "journal.jsonl").write_bytes(line.replace(b'"u"', b'"v"')[:-20])
    with JsonFileStore(tmp_path) as store:
        assert sorted(store.threads()) == ["t", "u", "warm-up"]
        assert store.records("t")[0].state == {"x": 1}  # type: ignore[union-attr]
    assert not (tmp_path / "spares" / "4242-deadbeef").exists()


def test_a_live_owners_spares_are_never_put_back_or_removed(tmp_path: Path) -> None:
    with JsonFileStore(tmp_path) as first:
        warm(first)
        live = [p for p in owner_folders(tmp_path) if p.exists()]
        before = set(tmp_path.glob("spares/*/b*/*"))
        with JsonFileStore(tmp_path) as second:
            second.create("t", start())
            assert set(tmp_path.glob("spares/*/b*/*")) >= before
            assert all(p.exists() for p in live)


def test_a_losing_create_wipes_the_record_in_its_spare(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A create whose rename failed (another took the name first) leaves no named record
    behind, so no later open can put a stale copy of the thread back."""
    wiped: list[bytes] = []
    real_discard = spares_module.SpareFolders.discard

    def discard(self: Any, spare: Any) -> None:
        wiped.append((spare.path / "journal.jsonl").read_bytes())
        real_discard(self, spare)

    class Refusing:  # the rename into threads/ fails as when another create got there first
        def __getattr__(self, name: str) -> Any:
            return getattr(os, name)

        @staticmethod
        def rename(src: Any, dst: Any) -> None:
            raise OSError(errno.ENOTEMPTY, "Directory not empty")

    with JsonFileStore(tmp_path) as store:
        warm(store)
        monkeypatch.setattr(spares_module.SpareFolders, "discard", discard)
        monkeypatch.setattr(create_module, "os", Refusing())
        store.create("t", start())  # the direct way, then
        monkeypatch.undo()
        assert store.records("t")[0].state == start().state  # type: ignore[union-attr]
    assert len(wiped) == 1 and not wiped[0].strip(b"\0")


def test_a_spares_folder_that_cannot_be_read_never_stops_a_store_from_opening(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "spares").mkdir()

    def unreadable(*_: Any) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(spares_module, "sweep_dead_owners", unreadable)
    with capture_logs() as logs, JsonFileStore(tmp_path) as store:
        store.create("t", start())
        assert store.threads() == ["t"]
    assert next(log["event"] for log in logs) == "spare_folders_unreadable"


# -- found by a defect hunt of the put-back ----------------------------------------------------


def test_a_thread_that_cannot_be_put_back_stays_in_its_spare_for_the_next_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with JsonFileStore(tmp_path) as store:
        store.create("t", start(x=1))
        store.append("t", [step(1), step(2)], expected_version=0)
        expected = store.records("t")
    spare = _lose_the_rename(tmp_path, "t")

    class Full:  # the disk is full after the reboot: the rename back fails
        def __getattr__(self, name: str) -> Any:
            return getattr(os, name)

        @staticmethod
        def rename(src: Any, dst: Any) -> None:
            raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(create_module, "os", Full())
    with JsonFileStore(tmp_path, spares=0) as store:
        assert store.threads() == []
    monkeypatch.undo()
    assert (spare / "journal.jsonl").exists()  # kept, not swept with its owner
    with JsonFileStore(tmp_path) as store:
        assert store.records("t") == expected


def test_a_store_made_while_another_puts_threads_back_waits_for_it(tmp_path: Path) -> None:
    """The sweep holds ``spares/lock``: a second store object never takes the owner being
    looked through for a live one and serves before the threads are back."""
    (tmp_path / "spares").mkdir()
    made = threading.Event()
    with subprocess.Popen(
        [sys.executable, "-c", _HOLDS_THE_SWEEP_LOCK, str(tmp_path / "spares" / "lock")],
        stdout=subprocess.PIPE,
        text=True,
    ) as holder:
        try:
            assert holder.stdout is not None and holder.stdout.readline() == "held\n"
            opener = threading.Thread(target=lambda: (JsonFileStore(tmp_path).close(), made.set()))
            opener.start()
            time.sleep(0.3)
            assert not made.is_set()
        finally:
            holder.kill()
    opener.join(10)
    assert made.is_set()


_HOLDS_THE_SWEEP_LOCK = textwrap.dedent(
    """
    import fcntl, os, sys, time
    fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)
    fcntl.lockf(fd, fcntl.LOCK_EX)  # another process, sweeping
    print("held", flush=True)
    time.sleep(60)
    """
)


def _named_spare(root: Path, owner: str, thread_id: str, record: StartRecord) -> Path:
    """A dead owner's spare holding ``record`` as ``thread_id``'s first, sealed as a create
    writes it (a create cut off after its record was synced)."""
    spare = root / "spares" / owner / "b0" / "0"
    spare.mkdir(parents=True)
    line = jsonl_module.encode(thread_id, record, named=True) + b"\n"
    (spare / "journal.jsonl").write_bytes(line + bytes(4096 - len(line)))
    return spare


def test_two_spares_naming_one_thread_put_back_the_longer_journal(tmp_path: Path) -> None:
    """The thread's own spare (its steps written) and a losing create's, cut off before its
    record was wiped: whatever the order they are found in, the thread keeps its steps."""
    for first, last in (("1", "9"), ("9", "1")):
        root = tmp_path / first
        with JsonFileStore(root) as store:
            store.create("t", start(x=1))
            store.append("t", [step(1), step(2)], expected_version=0)
            expected = store.records("t")
        _named_spare(root, f"{first}-loser", "t", start(x=9))
        _lose_the_rename(root, "t", owner=f"{last}-winner")
        with JsonFileStore(root) as store:
            assert store.records("t") == expected
        assert not (root / "spares" / f"{last}-winner").exists()
        assert not (root / "spares" / f"{first}-loser").exists()  # a start alone: removed


def test_two_bare_starts_naming_one_thread_put_back_the_first_by_folder_name(
    tmp_path: Path,
) -> None:
    """Nothing tells which of two one-record spares was the create that returned: the one
    found first by folder name goes back, whatever order the folder lists them in."""
    _named_spare(tmp_path, "2-b", "t", start(x=2))
    _named_spare(tmp_path, "1-a", "t", start(x=1))
    with JsonFileStore(tmp_path) as store:
        assert store.records("t")[0].state == {"x": 1}  # type: ignore[union-attr]
    assert [p for p in (tmp_path / "spares").iterdir() if p.is_dir()] == []


def test_a_killed_create_made_again_leaves_nothing_in_spares(tmp_path: Path) -> None:
    """Found by a defect hunt: a store made before the kill keeps the dead owner (its refill
    puts nothing back), the thread is started again there, and the spare holding the first
    try's start alone must then go, not stay with a warning at every open."""
    with JsonFileStore(tmp_path) as early:
        script = [sys.executable, "-c", _KILLED_IN_CREATE, str(tmp_path), "rename"]
        assert subprocess.run(script, check=False).returncode == -signal.SIGKILL
        early.create("other", start())  # its first refill sweeps, and keeps, the dead owner
        early._spares.wait()
        early.create("ghost", start(x=7))  # the caller tries again
    with capture_logs() as logs, JsonFileStore(tmp_path) as store:
        assert store.records("ghost")[0].state == {"x": 7}  # type: ignore[union-attr]
    assert logs == []
    assert [p for p in (tmp_path / "spares").iterdir() if p.is_dir()] == []


def test_a_fork_during_a_sweep_never_keeps_the_dead_owners_locked_in_the_child(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found by a defect hunt: a child forked while a sweep held the dead owners' folders
    locked kept them locked, and stores made meanwhile took them for live ones."""
    with JsonFileStore(tmp_path) as store:
        store.create("x1", start(x=1))
    _lose_the_rename(tmp_path, "x1")
    sweeping, finish = threading.Event(), threading.Event()
    real = leftovers_module._put_back_threads

    def slow(*args: Any) -> Any:
        sweeping.set()
        finish.wait(10)
        return real(*args)

    monkeypatch.setattr(leftovers_module, "_put_back_threads", slow)
    refill = threading.Thread(  # a refill's sweep: it puts nothing back
        target=leftovers_module.sweep_dead_owners, args=(tmp_path / "spares", None)
    )
    refill.start()
    assert sweeping.wait(10)
    started, ready = os.pipe()
    child = os.fork()
    if child == 0:  # a long-lived worker that never touches the store
        os.write(ready, b"x")  # its fork hooks have run
        time.sleep(5)
        os._exit(0)
    try:
        assert os.read(started, 1) == b"x"
        finish.set()
        refill.join(10)
        monkeypatch.undo()
        with JsonFileStore(tmp_path) as store:  # while the child lives
            assert store.threads() == ["x1"]
    finally:
        os.kill(child, signal.SIGKILL)
        os.waitpid(child, 0)
        os.close(started)
        os.close(ready)


def test_a_compacted_journal_still_names_its_thread(tmp_path: Path) -> None:
    with JsonFileStore(tmp_path) as store:
        store.create("t", start(x=1))
        store.append("t", [step(1), step(2)], expected_version=0)
        store.compact("t", start(x=5).model_copy(update={"version": 2}))
        expected = store.records("t")
    journal = tmp_path / "threads" / "t" / "journal.jsonl"
    assert journal.read_bytes().startswith(b'{"thread":"t",')
    _lose_the_rename(tmp_path, "t")
    with JsonFileStore(tmp_path) as store:
        assert store.records("t") == expected


def test_a_live_stores_own_sweep_keeps_a_killed_creates_thread_for_the_next_store(
    tmp_path: Path,
) -> None:
    """A store made before the death sweeps the dead owner at its first refill, off the
    caller's thread, where the store's locks are never taken: the thread stays in its spare
    and the next store object made puts it back."""
    with JsonFileStore(tmp_path) as early:
        script = [sys.executable, "-c", _KILLED_IN_CREATE, str(tmp_path), "rename"]
        assert subprocess.run(script, check=False).returncode == -signal.SIGKILL
        early.create("other", start())  # its first refill sweeps the dead owner
        early._spares.wait()
        assert sorted(early.threads()) == ["other", "warm"]
        with JsonFileStore(tmp_path) as late:
            assert sorted(late.threads()) == ["ghost", "other", "warm"]


def test_a_put_back_holds_the_threads_lock_as_a_delete_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found by a defect hunt: a delete landing between the rename and the index row left a
    deleted thread listed for good."""
    with JsonFileStore(tmp_path) as store:
        store.create("t", start())
    other = JsonFileStore(tmp_path)  # another process's, made before the power loss's effect
    _lose_the_rename(tmp_path, "t")
    refused: list[type[BaseException]] = []
    real_summaries = create_module.summaries

    def summaries(root: Path, threads: Any) -> Any:
        try:  # between the rename back and the index row
            other.delete("t")
        except ConflictError as exc:
            refused.append(type(exc))
        return real_summaries(root, threads)

    monkeypatch.setattr(create_module, "summaries", summaries)
    try:
        with JsonFileStore(tmp_path) as store:
            monkeypatch.undo()
            assert refused == [ConflictError]
            assert [s.thread_id for s in store.list_threads().threads] == store.threads()
            assert store.threads() == ["t"]
    finally:
        other.close()


def test_a_fork_during_a_sweep_never_leaves_the_sweep_lock_held(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found by a defect hunt: a child forked while a sweep held ``spares/lock`` kept it
    held for as long as it lived, and every store made on the folder after waited."""
    (tmp_path / "spares").mkdir()
    sweeping, finish = threading.Event(), threading.Event()
    real_sweep = leftovers_module._sweep

    def slow(folder: Path, put_back: Any) -> None:
        sweeping.set()
        finish.wait(10)
        real_sweep(folder, put_back)

    monkeypatch.setattr(leftovers_module, "_sweep", slow)
    opener = threading.Thread(target=lambda: JsonFileStore(tmp_path).close())
    opener.start()
    assert sweeping.wait(10)
    child = os.fork()
    if child == 0:  # a long-lived worker that never touches the store
        time.sleep(5)
        os._exit(0)
    try:
        finish.set()
        opener.join(10)
        monkeypatch.undo()
        opened = threading.Event()
        later = threading.Thread(target=lambda: (JsonFileStore(tmp_path).close(), opened.set()))
        later.start()
        assert opened.wait(3)  # while the child lives
    finally:
        os.kill(child, signal.SIGKILL)
        os.waitpid(child, 0)


def test_one_spare_linked_twice_never_keeps_its_owners_other_threads_from_coming_back(
    tmp_path: Path,
) -> None:
    with JsonFileStore(tmp_path) as store:
        store.create("x1", start(x=1))
        store.create("x2", start(x=2))
    first = _lose_the_rename(tmp_path, "x1")
    os.rename(tmp_path / "threads" / "x2", first.parent / "1")
    os.symlink(first, tmp_path / "threads" / "x1")  # stands in for a folder with two names
    with JsonFileStore(tmp_path) as store:
        assert store.records("x2")[0].state == {"x": 2}  # type: ignore[union-attr]
    assert first.exists()  # left for fsck, with its owner


def test_a_read_only_store_opens_without_a_word_about_its_spares(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with JsonFileStore(tmp_path) as store:
        store.create("t", start())

    def read_only(*_: Any) -> None:
        raise OSError(errno.EROFS, "Read-only file system")

    monkeypatch.setattr(spares_module, "sweep_dead_owners", read_only)
    with capture_logs() as logs, JsonFileStore(tmp_path, spares=0) as store:
        assert store.threads() == ["t"]
    assert logs == []


@pytest.mark.slow
def test_two_closes_at_once_beside_creates_leave_no_owner_folder_or_descriptor(
    tmp_path: Path,
) -> None:
    """Found by a defect hunt: one close resetting the pool while another waited for a
    refill let a new refill start whose owner folder was then left locked and never removed
    (and refills failed on folders removed under them)."""
    store = JsonFileStore(tmp_path)
    stop = time.monotonic() + 1.0

    def creator() -> None:
        n = 0
        while time.monotonic() < stop:
            store.create(f"t{n}", start())
            n += 1
            if n % 8 == 0:  # a pause now and then: a refill runs only while commits pause
                time.sleep(2 * spares_module.QUIET_S)

    def closer() -> None:
        while time.monotonic() < stop:
            store.close()
            time.sleep(0.001)

    with capture_logs() as logs:
        workers = [threading.Thread(target=f) for f in (creator, closer, closer)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        store.close()
    assert [log["event"] for log in logs] == []
    folder = tmp_path / "spares"
    assert not folder.exists() or [p for p in folder.iterdir() if p.is_dir()] == []
    spares = str(folder) + "/"
    assert not [
        fd
        for fd in os.listdir("/proc/self/fd")
        if spares
        in (os.readlink(f"/proc/self/fd/{fd}") if os.path.exists(f"/proc/self/fd/{fd}") else "")
    ]


def test_a_refill_hands_out_spares_a_few_at_a_time_and_starts_at_half(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Made all in one go, a refill's spares came too late for a store starting threads back
    to back: one thread in five made its folder on the spot meanwhile."""
    made: list[int] = []
    real = spares_module.SpareFolders._make

    def recorded(self: Any, batch: Path, count: int, numbers: Any) -> Any:
        made.append(count)
        return real(self, batch, count, numbers)

    monkeypatch.setattr(spares_module.SpareFolders, "_make", recorded)
    with JsonFileStore(tmp_path, spares=16) as store:
        for index in range(40):
            with store.lock(f"t{index}"):
                store.create(f"t{index}", start())
            store._spares.wait()
        pool = store._spares
        target = pool._target(pool._state)
        assert target == 16
        assert made and max(made) <= max(spares_module._CHUNK, target // 4)
        for index in range(20):  # a refill starts exactly when half or fewer are left
            with pool._lock:
                left = min(len(pool._state.ready), len(pool._state.locks))
            refills = len(made)
            with store.lock(f"u{index}"):
                store.create(f"u{index}", start())
            pool.wait()
            started = len(made) > refills
            assert started == (left - 1 <= target // 2), (index, left)


def count_refill_syncs(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the ``fsync``/``fdatasync`` calls the refill thread makes, in order."""
    syncs: list[str] = []
    for name in ("fsync", "fdatasync"):
        real = getattr(os, name)

        def counted(fd: int, _real: Any = real, _name: str = name) -> None:
            if threading.current_thread().name == "flowkit-spares":
                syncs.append(_name)
            _real(fd)

        monkeypatch.setattr(os, name, counted)
    return syncs


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="syncfs is Linux's")
def test_a_refill_syncs_its_spares_with_one_syncfs_not_two_syncs_each(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each ``fsync`` ends with a flush of the disk's cache, which delays the syncs of the
    threads being started meanwhile: a refill flushed twice per spare."""
    refill_syncs = count_refill_syncs(monkeypatch)
    filesystem_syncs: list[int] = []
    real_syncfs = spares_module.sync_file_system

    def counted_syncfs(fd: int) -> bool:
        filesystem_syncs.append(fd)
        return real_syncfs(fd)

    monkeypatch.setattr(spares_module, "sync_file_system", counted_syncfs)
    with JsonFileStore(tmp_path, spares=16) as store:
        for index in range(30):
            with store.lock(f"t{index}"):
                store.create(f"t{index}", start())
        store._spares.wait()
        assert filesystem_syncs and refill_syncs == []
        assert [r.version for r in store.records("t29")] == [0]


def test_without_syncfs_a_refill_syncs_each_spare_and_its_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    refill_syncs = count_refill_syncs(monkeypatch)
    monkeypatch.setattr(spares_module, "sync_file_system", lambda fd: False)
    with JsonFileStore(tmp_path, spares=4) as store:
        warm(store)
        assert refill_syncs.count("fdatasync") >= 1
        assert refill_syncs.count("fdatasync") == refill_syncs.count("fsync")
        with store.lock("t"):
            store.create("t", start(x=7))
        assert (tmp_path / "threads" / "t" / "journal.jsonl").stat().st_ino
        assert store.records("t")[0].state == {"x": 7}  # type: ignore[union-attr]


def test_a_syncfs_that_fails_is_a_refill_failure_and_creates_go_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def failing(fd: int) -> bool:
        raise OSError(errno.EIO, os.strerror(errno.EIO))

    monkeypatch.setattr(spares_module, "sync_file_system", failing)
    with JsonFileStore(tmp_path, spares=8) as store, capture_logs() as logs:
        for index in range(6):
            with store.lock(f"t{index}"):
                store.create(f"t{index}", start())
            store._spares.wait()
        assert [r.version for r in store.records("t5")] == [0]
        assert owner_folders(tmp_path) == [] or all(
            not list(owner.glob("*/*/journal.jsonl")) for owner in owner_folders(tmp_path)
        )
    assert [e["event"] for e in logs].count("spare_folders_failed") == 1


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="syncfs is Linux's")
def test_sync_file_system_syncs_on_linux_and_a_bad_descriptor_is_an_os_error(
    tmp_path: Path,
) -> None:
    fd = os.open(tmp_path, os.O_RDONLY)
    try:
        assert sync_file_system(fd) is True
    finally:
        os.close(fd)
    with pytest.raises(OSError) as caught:
        sync_file_system(fd)  # closed now
    assert caught.value.errno == errno.EBADF


def refill_started_while_busy(
    store: JsonFileStore, monkeypatch: pytest.MonkeyPatch
) -> tuple[Any, list[int], threading.Thread]:
    """A warm pool emptied to half by creates, the last of which leaves a commit sync running
    (``quiet_since`` infinite): the refill that create started, and the spare counts it makes."""
    made: list[int] = []
    real = spares_module.SpareFolders._make

    def recorded(self: Any, batch: Path, count: int, numbers: Any) -> Any:
        made.append(count)
        return real(self, batch, count, numbers)

    monkeypatch.setattr(spares_module, "QUIET_S", 0.2)  # a slow machine's pauses are no pause
    pool = store._spares
    for index in range(12):  # the target grows to 8
        store.create(f"w{index}", start())
        pool.wait()
    monkeypatch.setattr(spares_module.SpareFolders, "_make", recorded)
    index = 0
    while pool._state.refill is None:
        store.create(f"t{index}", start())
        pool.quiet_since = float("inf")  # as while a commit's fdatasync runs
        index += 1
    refill = pool._state.refill
    assert refill is not None
    return pool, made, refill


def test_a_refill_makes_no_spares_while_the_store_syncs_commits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A refill made while the store committed delayed the commits' own syncs (its syncs and
    its share of the GIL): 0.4x the disk's floor more per node in the bench. It waits for the
    commits to pause, then makes its spares on its own, without being asked."""
    with JsonFileStore(tmp_path, spares=8) as store:
        pool, made, refill = refill_started_while_busy(store, monkeypatch)
        time.sleep(0.3)
        assert made == [] and refill.is_alive()
        pool.quiet_since = time.monotonic() - 1  # the last sync ended a while ago: quiet
        refill.join(10)
        assert not refill.is_alive() and made
        assert min(len(pool._state.ready), len(pool._state.locks)) == pool._target(pool._state)


def test_a_pool_closed_while_its_refill_waits_for_quiet_makes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with JsonFileStore(tmp_path, spares=8) as store:
        _, made, refill = refill_started_while_busy(store, monkeypatch)
        store.close()
        assert not refill.is_alive() and made == []
        journals, locks = spare_inodes(tmp_path)
        assert not journals and not locks


def test_each_commit_sync_marks_the_store_busy_until_it_ends(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[float] = []
    real = os.fdatasync
    with JsonFileStore(tmp_path, spares=0) as store:

        def recording(fd: int) -> None:
            seen.append(store._spares.quiet_since)
            real(fd)

        store.create("t", start())
        monkeypatch.setattr(os, "fdatasync", recording)
        before = time.monotonic()
        store.append("t", [step(1)], expected_version=0)
        monkeypatch.setattr(os, "fdatasync", real)
        assert seen == [float("inf")]
        assert before <= store._spares.quiet_since <= time.monotonic()
