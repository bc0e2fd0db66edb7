"""The JSON-file store's thread index: a cache of the journals that listings read, right after
crashes, damage and concurrent writers, and never in the way of a commit.

Each test compares a listing with the truth: every thread loaded from its journal.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from flowkit.stores import JsonFileStore, iter_threads
from flowkit.stores import _thread_index as thread_index_module
from flowkit.stores._index_db import IndexDB
from flowkit.stores._index_writers import boot_id
from flowkit.stores._list_threads import read_summaries
from flowkit.testing._contract_flows import start_record, step_record

WORKER = Path(__file__).parent / "index_worker.py"


def truth(root: Path) -> list[tuple[Any, ...]]:
    """Every thread as its journal says (each one loaded), by id."""
    with JsonFileStore(root, fsync=False) as store:
        return [_row(s) for s in sorted(read_summaries(store), key=lambda s: s.thread_id)]


def listed(root: Path) -> list[tuple[Any, ...]]:
    """Every thread as a listing of a new store object says, by id."""
    with JsonFileStore(root, fsync=False) as store:
        return [_row(s) for s in iter_threads(store, order="id", page_size=7)]


def _row(summary: Any) -> tuple[Any, ...]:
    """What a listing must agree on (an unreadable thread's time is its file's, or none)."""
    updated = None if summary.error is not None else summary.updated
    return (summary.thread_id, summary.flow, summary.status, summary.node, summary.version,
            updated, summary.error is not None)  # fmt: skip


def _grow(store: JsonFileStore, thread_id: str, steps: int) -> None:
    store.create(thread_id, start_record())
    for version in range(1, steps + 1):
        store.append(thread_id, [step_record(version)], expected_version=version - 1)


def _worker(root: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(WORKER), str(root), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _index(root: Path) -> Path:
    return root / "index" / "threads.sqlite3"


def _rows(root: Path) -> dict[str, int]:
    """What the index file holds (thread -> version), read directly, without any repair."""
    with sqlite3.connect(_index(root)) as db:
        return dict(db.execute("SELECT thread_id, version FROM threads").fetchall())


# -- kept with each commit -------------------------------------------------------------------


def test_every_commit_lands_in_the_index_without_any_rebuild(tmp_path: Path) -> None:
    with JsonFileStore(tmp_path, fsync=False) as store:
        for index in range(4):
            _grow(store, f"t{index}", index)
        store.delete("t1")
        store.compact("t3", start_record().model_copy(update={"version": 2, "ts": 1.7e9 + 2}))
    assert _rows(tmp_path) == {"t0": 0, "t2": 2, "t3": 3}  # deferred steps written on close
    assert not (tmp_path / "index" / "stale").exists()
    assert os.listdir(tmp_path / "index" / "writers") == []  # unregistered on close
    assert listed(tmp_path) == truth(tmp_path)


def test_a_threads_rows_may_wait_but_a_thread_that_waits_for_a_person_is_written_at_once(
    tmp_path: Path,
) -> None:
    with JsonFileStore(tmp_path, fsync=False) as store:
        _grow(store, "t", 3)  # running: rows of its steps may wait in memory ...
        assert _rows(tmp_path)["t"] in range(4)
        assert [s.version for s in iter_threads(store)] == [3]  # ... never for a listing here
        waiting = step_record(4).model_copy(update={"status": "waiting"})
        store.append("t", [waiting], expected_version=3)
        assert _rows(tmp_path) == {"t": 4}  # a thread that waits for a person: at once
        for version in range(5, 8):  # running again, slower than the deferral's window
            time.sleep(0.25)
            store.append("t", [step_record(version)], expected_version=version - 1)
            assert _rows(tmp_path)["t"] >= version - 1  # at most one step behind
    assert _rows(tmp_path) == {"t": 7}


def test_a_thread_started_and_run_to_its_end_costs_one_row_transaction(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its end's row waits with its steps' (the row of a new thread never does: written late,
    it could bring back the row of a thread another process deleted meanwhile). Two
    transactions per run were a tenth of the CPU of a ten-node run on a JSON-file store."""
    monkeypatch.setattr(thread_index_module, "DEFER_S", 3600.0)
    writes: list[str] = []
    for name in ("put", "late_steps", "replace"):
        real = getattr(IndexDB, name)

        def counted(self: IndexDB, *args: Any, _real: Any = real, _name: str = name) -> Any:
            writes.append(_name)
            return _real(self, *args)

        monkeypatch.setattr(IndexDB, name, counted)
    with JsonFileStore(tmp_path, fsync=False) as store:
        _grow(store, "first", 1)  # the index made, and its first row
        writes.clear()
        for index in range(5):
            _grow(store, f"t{index}", 9)
            done = step_record(10).model_copy(update={"status": "done"})
            store.append(f"t{index}", [done], expected_version=9)
        assert writes == ["replace"] * 5  # each new thread's row; the rest wait ...
        with JsonFileStore(tmp_path, fsync=False) as other:  # ... yet every listing is right
            assert {s.thread_id: s.status for s in iter_threads(other)} == {
                "first": "pending",
                **{f"t{index}": "done" for index in range(5)},
            }
        failed = step_record(2).model_copy(update={"status": "failed"})
        store.append("first", [failed], expected_version=1)
        assert {s.thread_id: s.status for s in iter_threads(store)}["first"] == "failed"
    assert _rows(tmp_path) == {"first": 2, **{f"t{index}": 10 for index in range(5)}}
    assert listed(tmp_path) == truth(tmp_path)


def test_a_listing_sees_the_steps_another_live_process_has_not_written_rows_for(
    tmp_path: Path,
) -> None:
    worker = subprocess.Popen(
        [sys.executable, str(WORKER), str(tmp_path), "steps-then-wait", "t"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert worker.stdout is not None and worker.stdin is not None
    try:
        assert worker.stdout.readline() == "ready\n"
        assert _rows(tmp_path)["t"] < 3  # its rows wait in that process ...
        assert listed(tmp_path) == truth(tmp_path)  # ... the listing reads its journal
        with JsonFileStore(tmp_path, fsync=False) as store:
            assert store.count_threads(status="pending") == 1
    finally:
        worker.communicate("\n", timeout=60)
    assert worker.returncode == 0
    assert _rows(tmp_path) == {"t": 3}  # written when it closed


def test_a_late_step_row_never_overwrites_a_newer_one(tmp_path: Path) -> None:
    """A deferred step written after another store object wrote the thread's next commit, or
    after the thread was deleted and made anew under its id, leaves the newer row alone."""
    with JsonFileStore(tmp_path, fsync=False) as first:
        _grow(first, "t", 2)  # step 2's row deferred in ``first``
        _grow(first, "u", 1)
        with JsonFileStore(tmp_path, fsync=False) as second:
            done = step_record(3).model_copy(update={"status": "done"})
            second.append("t", [done], expected_version=2)
            second.delete("u")
            second.create("u", start_record().model_copy(update={"ts": 1.8e9}))
    assert _rows(tmp_path) == {"t": 3, "u": 0}
    assert listed(tmp_path) == truth(tmp_path)


def test_the_index_file_is_private_like_the_journals(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        with JsonFileStore(tmp_path) as store:
            _grow(store, "t", 1)
            index = _index(tmp_path)
            assert oct(index.stat().st_mode & 0o777) == "0o600"
            assert oct(Path(f"{index}-wal").stat().st_mode & 0o777) == "0o600"
    finally:
        os.umask(old)


@pytest.mark.slow
def test_two_processes_committing_at_once_both_land_in_the_index(tmp_path: Path) -> None:
    _grow(JsonFileStore(tmp_path, fsync=False), "seed", 1)  # the index exists before both
    workers = [_worker(tmp_path, "commits", name, "40") for name in ("a", "b")]
    for worker in workers:
        _, err = worker.communicate(timeout=300)
        assert worker.returncode == 0, err
    # Both exited cleanly: their rows came with their commits, no rebuild needed.
    assert not (tmp_path / "index" / "stale").exists()
    assert os.listdir(tmp_path / "index" / "writers") == []
    rows = _rows(tmp_path)
    assert len(rows) == 81 and {rows[f"{n}-{i}"] for n in "ab" for i in range(40)} == {5}
    assert listed(tmp_path) == truth(tmp_path)


# -- crashes -----------------------------------------------------------------------------------


def test_a_writer_killed_between_its_journal_and_its_row_is_caught_up(tmp_path: Path) -> None:
    worker = _worker(tmp_path, "die-in-commit", "t")
    worker.communicate(timeout=120)
    assert worker.returncode == -signal.SIGKILL
    assert _rows(tmp_path) == {"t": 0}  # the row is behind the journal ...
    assert [f for f in os.listdir(tmp_path / "index" / "writers")]  # ... and the dead say so
    assert listed(tmp_path) == truth(tmp_path)
    assert truth(tmp_path)[0][2:5] == ("waiting", "work", 1)
    assert os.listdir(tmp_path / "index" / "writers") == []  # repaired, then removed


def test_a_writer_killed_with_step_rows_unwritten_has_them_caught_up(tmp_path: Path) -> None:
    worker = _worker(tmp_path, "die-with-steps-waiting", "t")
    worker.communicate(timeout=120)
    assert worker.returncode == -signal.SIGKILL
    assert _rows(tmp_path)["t"] < 3  # rows behind the journal ...
    assert listed(tmp_path) == truth(tmp_path)  # ... caught up by the next listing
    assert truth(tmp_path)[0][4] == 3


def test_a_rebuild_killed_midway_is_done_again_by_the_next_listing(tmp_path: Path) -> None:
    with JsonFileStore(tmp_path, fsync=False) as store:
        for index in range(250):  # three batches
            store.create(f"t{index:03}", start_record())
    os.unlink(_index(tmp_path))
    worker = _worker(tmp_path, "die-rebuilding", "-")
    worker.communicate(timeout=300)
    assert worker.returncode == -signal.SIGKILL
    assert 0 < len(_rows(tmp_path)) < 250  # half built
    assert listed(tmp_path) == truth(tmp_path)


@pytest.mark.slow
def test_sigkill_during_commits_leaves_an_index_that_lists_the_journals_truth(
    tmp_path: Path,
) -> None:
    rng = random.Random(20_260_525)
    for round_ in range(12):
        worker = _worker(tmp_path, "churn", f"r{round_}")
        assert worker.stdout is not None
        assert worker.stdout.readline() == "ready\n", worker.stderr.read() if worker.stderr else ""
        time.sleep(rng.uniform(0.0, 0.3))
        worker.send_signal(signal.SIGKILL)
        worker.communicate(timeout=60)
        assert listed(tmp_path) == truth(tmp_path), f"round {round_}"


def test_a_writer_file_from_an_earlier_boot_has_the_whole_index_rebuilt(tmp_path: Path) -> None:
    with JsonFileStore(tmp_path, fsync=False) as store:
        for index in range(3):
            _grow(store, f"t{index}", 2)
    with sqlite3.connect(_index(tmp_path)) as db:  # rows a power loss took back
        db.execute("DELETE FROM threads WHERE thread_id != 't0'")
    earlier = b"flowkit-index-writer 1\n" + b"not-" + boot_id().encode() + b"\n"
    (tmp_path / "index" / "writers" / "1-dead").write_bytes(earlier.ljust(96) + b"t0\n")
    with capture_logs() as logs:
        assert listed(tmp_path) == truth(tmp_path)
    assert len(truth(tmp_path)) == 3
    # Not rebuilt in place: a file written when the machine went down is made anew.
    assert [log["reason"] for log in logs if log["event"] == "thread_index_replaced"] == [
        "written when the machine went down"
    ]


# -- damage -----------------------------------------------------------------------------------


def _garbage(path: Path) -> None:
    path.write_bytes(b"this is not a database " * 500)


def _truncated(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:1500])


def _deleted(path: Path) -> None:
    path.unlink()


@pytest.mark.parametrize("damage", [_garbage, _truncated, _deleted])
def test_a_damaged_index_is_rebuilt_and_the_listing_is_right(
    tmp_path: Path, damage: Callable[[Path], None]
) -> None:
    with JsonFileStore(tmp_path, fsync=False) as store:
        for index in range(30):
            _grow(store, f"t{index:02}", index % 4)
    for suffix in ("-wal", "-shm"):  # closed: all in the main file; a bad copy has no WAL
        Path(f"{_index(tmp_path)}{suffix}").unlink(missing_ok=True)
    damage(_index(tmp_path))
    with capture_logs() as logs:
        assert listed(tmp_path) == truth(tmp_path)
    assert len(truth(tmp_path)) == 30
    if damage is not _deleted:
        assert "thread_index_replaced" in [log["event"] for log in logs]
    assert _rows(tmp_path)["t05"] == 1  # a sound file again


def test_an_index_deleted_under_an_open_store_is_rebuilt_and_kept_again(tmp_path: Path) -> None:
    store = JsonFileStore(tmp_path, fsync=False)
    _grow(store, "before", 2)
    shutil.rmtree(tmp_path / "index")
    assert listed(tmp_path) == truth(tmp_path)  # rebuilt by another store object
    time.sleep(1.1)  # the open store notices its file was replaced at its next check
    _grow(store, "after", 3)
    store.append("before", [step_record(3)], expected_version=2)
    assert listed(tmp_path) == truth(tmp_path)
    assert _rows(tmp_path) == {"before": 3, "after": 3}
    store.close()


@pytest.mark.parametrize("how", ["garbage in its WAL", "deleted"])
def test_rows_an_open_store_writes_into_a_replaced_index_are_not_lost(
    tmp_path: Path, how: str
) -> None:
    """Within a second of its last check, a writer still has the old index file open when a
    listing elsewhere replaces it: the rows it writes there (a step, a new thread, a delete)
    must not stay missing from later listings once it goes quiet or closes."""
    store = JsonFileStore(tmp_path, fsync=False)
    _grow(store, "x", 1)
    _grow(store, "y", 1)
    _grow(store, "z", 1)
    index = _index(tmp_path)
    if how == "deleted":
        for suffix in ("", "-wal", "-shm"):
            Path(f"{index}{suffix}").unlink(missing_ok=True)
    else:
        with open(f"{index}-wal", "r+b") as wal:
            wal.seek(32)
            wal.write(os.urandom(4000))
    with capture_logs():
        listed(tmp_path)  # another store object replaces (or recreates) and rebuilds it
    store.append("x", [step_record(2)], expected_version=1)  # at once: no check since
    _grow(store, "new", 2)
    store.delete("y")
    assert listed(tmp_path) == truth(tmp_path)  # the writer still open, gone quiet
    store.close()
    assert listed(tmp_path) == truth(tmp_path)
    assert [row[0] for row in truth(tmp_path)] == ["new", "x", "z"]


def test_a_failed_row_update_never_fails_the_commit_and_marks_a_rebuild(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from flowkit.stores._index_db import IndexDB

    store = JsonFileStore(tmp_path, fsync=False)
    _grow(store, "t", 1)

    def busy(*_: Any) -> None:
        raise sqlite3.OperationalError("database is locked")

    monkeypatch.setattr(IndexDB, "put", busy)
    waiting = step_record(2).model_copy(update={"status": "waiting"})  # its row written at once
    with capture_logs() as logs:
        store.append("t", [waiting], expected_version=1)  # committed all the same
    assert [log["event"] for log in logs] == ["thread_index_update_failed"]
    assert "database is locked" not in repr(logs)  # a reason by name, nothing more
    assert (tmp_path / "index" / "stale").exists()
    monkeypatch.undo()
    assert listed(tmp_path) == truth(tmp_path) and truth(tmp_path)[0][4] == 2
    assert not (tmp_path / "index" / "stale").exists()
    store.close()


def test_a_store_whose_index_cannot_be_kept_still_commits_and_lists(tmp_path: Path) -> None:
    (tmp_path / "index").write_bytes(b"a file where the index folder goes")
    with JsonFileStore(tmp_path, fsync=False) as store, capture_logs() as logs:
        _grow(store, "t", 2)
        assert [s.version for s in store.list_threads().threads] == [2]
        assert store.count_threads() == 1
    events = {log["event"] for log in logs}
    assert events == {"thread_index_update_failed", "thread_index_unusable"}


def test_reindex_rebuilds_from_the_journals_and_counts_unreadable_threads(
    tmp_path: Path,
) -> None:
    with JsonFileStore(tmp_path, fsync=False) as store:
        _grow(store, "good", 2)
        _grow(store, "bad", 1)
    journal = tmp_path / "threads" / "bad" / "journal.jsonl"
    journal.write_bytes(b"garbage\n")  # changed by hand: nothing notices ...
    assert [s.status for s in JsonFileStore(tmp_path).list_threads(order="id").threads] == [
        "pending",
        "pending",
    ]
    with JsonFileStore(tmp_path) as store:
        assert store.reindex() == 2  # ... until a reindex
        found = {s.thread_id: s for s in store.list_threads().threads}
    assert found["bad"].status == "unreadable" and "journal.jsonl:1" in str(found["bad"].error)
    assert listed(tmp_path) == truth(tmp_path)


def test_a_dead_writer_names_every_commit_it_had_under_way(tmp_path: Path) -> None:
    from flowkit.stores._index_writers import WriterFile, dead_writers

    writer = WriterFile(tmp_path, fsync=False)
    for thread_id in ("a", "b"):  # commits to two threads overlap (one waits for its fsync)
        writer.committing(thread_id)
    writer.done("a")
    writer.committing("c")  # takes the slot "a" left
    writer.leave()  # its process dies: the file stays, unlocked
    [dead] = dead_writers(tmp_path, mine=None)
    assert sorted(dead.threads or ()) == ["b", "c"]
    dead.remove()
    writer = WriterFile(tmp_path, fsync=False)
    writer.committing("a")
    writer.everything()
    writer.leave()
    [dead] = dead_writers(tmp_path, mine=None)
    assert dead.threads is None  # rebuild all
    dead.remove()
    assert os.listdir(tmp_path) == []


def test_an_index_folder_deleted_under_a_writer_is_noticed_by_the_writer(tmp_path: Path) -> None:
    store = JsonFileStore(tmp_path, fsync=False)
    _grow(store, "a", 1)
    shutil.rmtree(tmp_path / "index")
    _grow(store, "b", 1)  # within the second: its row goes to the deleted file
    time.sleep(1.1)
    store.append("a", [step_record(2)], expected_version=1)  # the writer's check notices
    assert (tmp_path / "index" / "stale").exists()
    assert listed(tmp_path) == truth(tmp_path)
    assert [row[0] for row in truth(tmp_path)] == ["a", "b"]
    store.close()
