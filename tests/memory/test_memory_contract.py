"""Both shipped memories pass the memory contract."""

from __future__ import annotations

from pathlib import Path

import pytest

from flowkit.memory import InProcessMemory, JsonFileMemory, Memory
from flowkit.testing import MemoryContract


class TestInProcessMemory(MemoryContract):
    @pytest.fixture
    def memory(self) -> Memory:
        return InProcessMemory()


class TestJsonFileMemory(MemoryContract):
    @pytest.fixture
    def memory(self, tmp_path: Path) -> Memory:
        return JsonFileMemory(tmp_path / "memory", fsync=False)

    @pytest.fixture
    def reopen(self, tmp_path: Path) -> object:
        return lambda: JsonFileMemory(tmp_path / "memory", fsync=False)


def test_the_memory_package_exports_are_locked() -> None:
    import flowkit.memory

    assert set(flowkit.memory.__all__) == {
        "MAX_DEPTH",
        "MAX_KEY",
        "MAX_LABEL",
        "MAX_LABELS",
        "MAX_VALUE_BYTES",
        "InProcessMemory",
        "JSONValue",
        "JsonFileMemory",
        "Memory",
        "MemoryItem",
        "Namespace",
    }
