"""JsonFileMemory on disk: hostile names stay inside its folder, damage is reported with the
file, writers in several processes lose nothing."""

from __future__ import annotations

import json
import multiprocessing
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

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


def _item_file(**changes: object) -> bytes:
    item = {"v": 1, "namespace": ["n"], "key": "k", "created_at": 1.0, "updated_at": 2.0}
    return json.dumps({**item, "value": 1, **changes}).encode()


DAMAGED_FILES = {
    "nested past the parser's limit": b"[" * 100_000 + b"]" * 100_000,
    "a value nested past the parser's limit": _item_file()[:-2]
    + b"[" * 50_000
    + b"]" * 50_000
    + b"}",
    "a time too large for a float": _item_file(created_at=10**400),
    "a time that is text": _item_file(updated_at="soon"),
    "a value JSON cannot hold (NaN)": _item_file()[:-2] + b"NaN}",
    "a namespace that is one string": _item_file(namespace="n"),
    "a newer format": _item_file(v=2),
    "not UTF-8": b"\xff\xfe" + _item_file(),
}


@pytest.mark.parametrize("raw", DAMAGED_FILES.values(), ids=list(DAMAGED_FILES))
def test_damage_of_any_kind_is_a_corrupt_store_error_and_a_put_repairs_it(
    tmp_path: Path, raw: bytes
) -> None:
    memory = JsonFileMemory(tmp_path, fsync=False)
    memory.put(("n",), "k", 1)
    path = tmp_path / "n_n" / "k_k.json"
    path.write_bytes(raw)
    with pytest.raises(CorruptStoreError) as caught:
        memory.get(("n",), "k")
    assert caught.value.path == str(path)
    with pytest.raises(CorruptStoreError):
        memory.search(("n",))
    memory.put(("n",), "k", {"fixed": True})
    repaired = memory.get(("n",), "k")
    assert repaired is not None and repaired.value == {"fixed": True}


_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner),
    max_leaves=8,
)
_files = st.builds(lambda value: _item_file(value=value), _values)
_spliced = st.tuples(_files, st.integers(0, 200), st.binary(max_size=8)).map(
    lambda t: t[0][: t[1]] + t[2] + t[0][t[1] :]
)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(raw=st.binary(max_size=300) | _files | _spliced)
def test_whatever_bytes_an_item_file_holds_get_returns_a_storable_item_or_says_it_is_corrupt(
    tmp_path: Path, raw: bytes
) -> None:
    memory = JsonFileMemory(tmp_path, fsync=False)
    memory.put(("n",), "k", 1)
    (tmp_path / "n_n" / "k_k.json").write_bytes(raw)
    try:
        item = memory.get(("n",), "k")
    except CorruptStoreError:
        return
    assert item is not None and (item.namespace, item.key) == (("n",), "k")
    memory.put(("n",), "k", item.value)  # what comes back could have been put


@pytest.mark.parametrize(
    "change", [{"key": "bad\x00key"}, {"key": "other"}, {"namespace": [" "]}, {"namespace": []}]
)
def test_a_file_naming_another_item_is_reported_not_returned(
    tmp_path: Path, change: dict[str, object]
) -> None:
    memory = JsonFileMemory(tmp_path, fsync=False)
    memory.put(("n",), "k", 1)
    path = tmp_path / "n_n" / "k_k.json"
    data = json.loads(path.read_text())
    data.update(change)
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
