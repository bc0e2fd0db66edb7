"""JsonFileStore.delete: one rename makes the thread disappear; nothing half-deleted is read."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from flowkit.errors import ConflictError, ThreadNotFoundError
from flowkit.records._records import StartRecord
from flowkit.stores import JsonFileStore


def start() -> StartRecord:
    return StartRecord(version=0, ts=0.0, next="n", status="pending", flow="f", state={"x": 1})


def test_delete_leaves_no_files_of_the_thread(tmp_path: Path) -> None:
    store = JsonFileStore(tmp_path, fsync=False)
    store.create("t1", start())
    store.delete("t1")
    assert os.listdir(tmp_path / "threads") == []


def test_a_crash_between_rename_and_removal_leaves_only_an_unread_tombstone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = JsonFileStore(tmp_path, fsync=False)
    store.create("t1", start())
    store.create("t2", start())
    monkeypatch.setattr("shutil.rmtree", lambda *a, **k: None)  # the process dies here
    store.delete("t1")
    leftovers = sorted(os.listdir(tmp_path / "threads"))
    assert leftovers[0].startswith(".deleted-t1-") and leftovers[1:] == ["t2"]
    fresh = JsonFileStore(tmp_path, fsync=False)
    assert fresh.threads() == ["t2"]
    with pytest.raises(ThreadNotFoundError):
        fresh.load("t1")
    monkeypatch.undo()
    fresh.delete("t2")  # the next delete sweeps the tombstone away
    assert os.listdir(tmp_path / "threads") == []


def test_a_thread_being_run_is_not_deleted(tmp_path: Path) -> None:
    store = JsonFileStore(tmp_path, fsync=False)
    store.create("t1", start())
    with JsonFileStore(tmp_path).lock("t1"), pytest.raises(ConflictError):
        store.delete("t1")
    assert store.threads() == ["t1"]
