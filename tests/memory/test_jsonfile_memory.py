"""JsonFileMemory on disk: hostile names stay inside its folder, damage is reported with the
file, writers in several processes lose nothing."""

from __future__ import annotations

import json
import multiprocessing
import os
from pathlib import Path

import pytest

from flowkit.errors import CorruptStoreError, MemoryItemError, StoreError
from flowkit.memory import JsonFileMemory
from flowkit.memory.jsonfile import safe_name
from flowkit.testing.memory_contract import HOSTILE_KEYS


def test_hostile_keys_and_labels_never_leave_the_folder(tmp_path: Path) -> None:
    root = tmp_path / "inside" / "memory"
    memory = JsonFileMemory(root, fsync=False)
    for key in HOSTILE_KEYS:
        memory.put((key[:128], "x"), key, "v")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["inside"]
    assert sorted(p.name for p in (tmp_path / "inside").iterdir()) == ["memory"]
    for path in root.rglob("*"):
        assert path.resolve().is_relative_to(root.resolve())
        assert len(path.name.encode()) <= 200
        assert path.name == ".lock" or path.name.startswith(("n_", "k_")), path.name


def test_safe_names_are_one_to_one_case_safe_and_plain() -> None:
    names = [safe_name(key) for key in HOSTILE_KEYS]
    assert len(set(names)) == len(HOSTILE_KEYS)
    assert len({name.lower() for name in names}) == len(HOSTILE_KEYS)
    for name in names:
        assert "/" not in name and "\\" not in name and not name.startswith(".")
        assert name.isascii()


def test_no_temporary_files_are_left_behind(tmp_path: Path) -> None:
    memory = JsonFileMemory(tmp_path, fsync=True)
    for n in range(5):
        memory.put(("n",), "k", n)
    assert sorted(p.name for p in (tmp_path / "n_n").iterdir()) == ["k_k.json"]


def test_deleting_the_last_item_removes_its_empty_folders(tmp_path: Path) -> None:
    memory = JsonFileMemory(tmp_path, fsync=False)
    memory.put(("a", "b", "c"), "k", 1)
    memory.put(("a",), "k", 1)
    memory.delete(("a", "b", "c"), "k")
    assert sorted(p.name for p in (tmp_path / "n_a").iterdir()) == ["k_k.json"]


def test_a_damaged_item_file_is_reported_with_its_path(tmp_path: Path) -> None:
    memory = JsonFileMemory(tmp_path, fsync=False)
    memory.put(("user", "42"), "prefs", {"tone": "brief"})
    memory.put(("user", "42"), "other", 1)
    path = tmp_path / "n_user" / "n_42" / "k_prefs.json"
    path.write_text('{"v": 1, "namespace": ["user", "42"], "key": "pre')
    with pytest.raises(CorruptStoreError) as caught:
        memory.get(("user", "42"), "prefs")
    assert caught.value.path == str(path)
    with pytest.raises(CorruptStoreError):
        memory.search(("user",))
    other = memory.get(("user", "42"), "other")  # only that item is affected
    assert other is not None and other.value == 1
    memory.put(("user", "42"), "prefs", {"tone": "new"})  # a put repairs it
    fixed = memory.get(("user", "42"), "prefs")
    assert fixed is not None and fixed.value == {"tone": "new"}


def test_a_file_naming_another_item_is_reported_not_returned(tmp_path: Path) -> None:
    memory = JsonFileMemory(tmp_path, fsync=False)
    memory.put(("n",), "k", 1)
    path = tmp_path / "n_n" / "k_k.json"
    data = json.loads(path.read_text())
    data["key"] = "bad\x00key"
    path.write_text(json.dumps(data))
    with pytest.raises(CorruptStoreError):
        memory.get(("n",), "k")


def test_an_unwritable_folder_is_a_store_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory = JsonFileMemory(tmp_path / "m", fsync=False)
    if os.geteuid() == 0:  # root writes anywhere: the file system's refusal, injected
        import errno
        import tempfile

        def refuse(*args: object, **kwargs: object) -> None:
            raise PermissionError(errno.EACCES, "Permission denied")

        monkeypatch.setattr(tempfile, "mkstemp", refuse)
    else:
        (tmp_path / "m").chmod(0o500)
    try:
        with pytest.raises(StoreError) as caught:
            memory.put(("n",), "k", 1)
        assert not isinstance(caught.value, MemoryItemError)
    finally:
        (tmp_path / "m").chmod(0o700)


def _writer(root: str, worker: int, count: int) -> None:
    memory = JsonFileMemory(root, fsync=False)
    for n in range(count):
        memory.put(("w", str(worker)), f"k{n}", {"worker": worker, "n": n})
        memory.put(("shared",), "counter", {"worker": worker, "n": n})
        if n % 5 == 0:
            memory.delete(("w", str(worker)), f"k{n}")
        memory.search(("w",), limit=1000)


@pytest.mark.slow
def test_processes_writing_at_once_lose_nothing_and_leave_every_item_readable(
    tmp_path: Path,
) -> None:
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_writer, args=(str(tmp_path), i, 30)) for i in range(4)]
    for process in workers:
        process.start()
    for process in workers:
        process.join(120)
        assert process.exitcode == 0
    memory = JsonFileMemory(tmp_path, fsync=False)
    items = memory.search(("w",), limit=1000)
    assert len(items) == 4 * 24  # 30 puts each, 6 deleted (n = 0, 5, ..., 25)
    shared = memory.get(("shared",), "counter")
    assert shared is not None and shared.value["n"] == 29
    assert not [p for p in tmp_path.rglob("*.tmp")]
