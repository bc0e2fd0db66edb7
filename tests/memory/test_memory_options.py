"""The memories' constructor options are checked when the memory is built, each bad one a
``StoreError`` naming the option, not a ``TypeError`` from the first ``put``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from flowkit.errors import StoreError
from flowkit.memory import InProcessMemory, JsonFileMemory

Build = Callable[..., Any]


def in_process(tmp_path: Path, **options: Any) -> Any:
    return InProcessMemory(**options)


def json_file(tmp_path: Path, **options: Any) -> Any:
    return JsonFileMemory(tmp_path / "memory", **options)


MEMORIES = pytest.mark.parametrize("build", [in_process, json_file], ids=["inprocess", "jsonfile"])


@MEMORIES
@pytest.mark.parametrize(
    "bad", ["x", None, 1.5, True, 0, -1, "1024"], ids=lambda v: f"max_value_bytes={v!r}"
)
def test_a_max_value_bytes_that_is_not_a_positive_integer_is_refused_when_built(
    build: Build, tmp_path: Path, bad: Any
) -> None:
    with pytest.raises(StoreError, match=r"max_value_bytes must be an integer >= 1"):
        build(tmp_path, max_value_bytes=bad)


@MEMORIES
@pytest.mark.parametrize("good", [1, 10, 1024 * 1024, 2**40])
def test_a_positive_integer_max_value_bytes_is_kept(
    build: Build, tmp_path: Path, good: int
) -> None:
    memory = build(tmp_path, max_value_bytes=good)
    assert memory.max_value_bytes == good
    memory.put(("user",), "k", 1)
    assert memory.get(("user",), "k").value == 1


@pytest.mark.parametrize("bad", ["no", None, 0, 1])
def test_a_fsync_that_is_not_a_bool_is_refused_when_built(tmp_path: Path, bad: Any) -> None:
    with pytest.raises(StoreError, match="fsync must be True or False"):
        JsonFileMemory(tmp_path / "memory", fsync=bad)


@pytest.mark.parametrize("bad", [None, 42, b"/tmp/memory"])
def test_a_root_that_is_not_a_path_is_refused_when_built(bad: Any) -> None:
    with pytest.raises(StoreError, match="JsonFileMemory takes the folder"):
        JsonFileMemory(bad)
