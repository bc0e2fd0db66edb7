"""A file-backed store whose folder cannot be created says so with a ``StoreError``.

The thread store and the memory store share the folder check; a regular file where the folder
should be fails for root too (unlike permissions), so this runs everywhere.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from flowkit.errors import StoreError
from flowkit.memory import JsonFileMemory
from flowkit.stores import JsonFileStore

# (store, folder it must create under root, its word for it, the OS's reason)
CASES: list[tuple[Callable[[Path], object], str, str, str]] = [
    (JsonFileStore, "threads", "store", "Not a directory"),
    (JsonFileMemory, "", "memory", "File exists"),
]


@pytest.mark.parametrize(("open_store", "folder", "what", "reason"), CASES)
def test_a_file_where_the_store_folder_belongs_is_a_store_error_naming_it(
    tmp_path: Path, open_store: Callable[[Path], object], folder: str, what: str, reason: str
) -> None:
    root = tmp_path / "taken"
    root.write_text("not a folder")
    expected = root / folder if folder else root
    with pytest.raises(StoreError) as info:
        open_store(root)
    assert info.value.path == str(expected)
    assert str(info.value).startswith(f"Cannot create the {what} folder {expected}: {reason};")
    assert "pick a writable path" in str(info.value)
    assert root.read_text() == "not a folder"
