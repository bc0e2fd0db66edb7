"""Store test fixtures: two small flows and helpers to open, read and damage a file store.

``tally``: a gate ``inbox`` takes numbers, node ``add`` sums them, ``stop`` ends the run.
``counter``: node ``step`` loops ``limit`` times, appending each count (many small records).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Annotated, Any

import pytest
from pydantic import BaseModel

from flowkit import END, Flow, Gate, Route, RouteTable, Runner, append, field, when
from flowkit.stores import JsonFileStore


class Tally(BaseModel):
    seen: Annotated[list[int], append] = []
    total: int = 0
    stop: bool = False


class Number(BaseModel):
    value: int
    stop: bool = False


def _take(state: Tally, number: Number) -> dict[str, Any]:
    return {"seen": [number.value], "stop": number.stop}


def _add(state: Tally) -> dict[str, Any]:
    return {"total": sum(state.seen)}


TALLY = Flow(
    name="tally",
    state=Tally,
    start="inbox",
    nodes={"add": _add},
    gates={"inbox": Gate(Number, apply=_take)},
    routes={
        "inbox": "add",
        "add": RouteTable("after_add", [Route(field("stop"), END)], default="inbox"),
    },
)


class Count(BaseModel):
    limit: int = 10
    count: int = 0
    items: Annotated[list[int], append] = []


def _step(state: Count) -> dict[str, Any]:
    return {"count": state.count + 1, "items": [state.count + 1]}


def _done(state: Count) -> bool:
    return state.count >= state.limit


COUNTER = Flow(
    name="counter",
    state=Count,
    start="step",
    nodes={"step": _step},
    routes={
        "step": RouteTable(
            "loop",
            [Route(when("reached_limit", lambda s: s.count >= s.limit), END)],
            default="step",
        )
    },
)


class StoreFiles:
    """The files of a JsonFileStore under ``root``, for tests that inspect or damage them."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def journal(self, thread_id: str) -> Path:
        return self.root / "threads" / thread_id / "journal.jsonl"

    def snapshot(self, thread_id: str) -> Path:
        return self.root / "threads" / thread_id / "snapshot.json"

    def data(self, thread_id: str) -> bytes:
        """The journal's bytes without the zeros preallocated after its records."""
        return self.journal(thread_id).read_bytes().rstrip(b"\0")

    def records(self, thread_id: str) -> list[dict[str, Any]]:
        """Every journal line parsed as JSON (fails on any torn or damaged line)."""
        return [json.loads(line) for line in self.data(thread_id).splitlines()]

    def damage(self, thread_id: str, *, line: int, content: bytes) -> None:
        """Replace journal line ``line`` (1-based) with ``content`` (drops preallocated zeros)."""
        path = self.journal(thread_id)
        lines = self.data(thread_id).splitlines(keepends=True)
        lines[line - 1] = content
        path.write_bytes(b"".join(lines))


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "store"


@pytest.fixture
def open_store(root: Path) -> Iterator[Callable[..., JsonFileStore]]:
    """``open_store(**options)``: a new JsonFileStore on ``root``; all are closed at the end."""
    opened: list[JsonFileStore] = []

    def open_(**options: Any) -> JsonFileStore:
        opened.append(JsonFileStore(root, **options))
        return opened[-1]

    yield open_
    for store in opened:
        store.close()


@pytest.fixture
def tally(open_store: Callable[..., JsonFileStore]) -> Callable[..., Runner[Any]]:
    """``tally()``: a Runner of the tally flow on a fresh store object over ``root``."""
    return lambda **options: Runner(TALLY, store=open_store(**options))


@pytest.fixture
def files(root: Path) -> StoreFiles:
    return StoreFiles(root)


@pytest.fixture
def counter(open_store: Callable[..., JsonFileStore]) -> Callable[..., Runner[Any]]:
    """``counter(**store_options)``: a Runner of the counter flow on a fresh store object."""
    return lambda **options: Runner(COUNTER, store=open_store(**options))
