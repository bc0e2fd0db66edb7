"""Plain-Python floors: the least any engine could cost for the same work, on this machine.

- ``transitions`` alone: a ``transitions.Machine`` with a model making the same 10 transitions
  (flowkit compiles every flow to such a machine, so this is the floor the brief quotes).
- a plain loop calling 10 functions that each return a (empty) partial update.
- one durable SQLite row: INSERT + COMMIT in WAL mode with ``synchronous=FULL``.
- one durable append: ``os.write`` + ``os.fdatasync`` of the same bytes to a file.
The durable floors write the bytes of a real flowkit step record, in the same folder.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _common import Case
from transitions import Machine

STEPS = 10


class _Model:
    state: str


def transitions_case(runs: int) -> Case:
    """``runs`` times 10 transitions around a ring of 10 states (no reset between runs)."""
    states = [f"s{i}" for i in range(STEPS)]
    model = _Model()
    Machine(
        model=model,
        states=states,
        transitions=[
            {"trigger": "next", "source": states[i], "dest": states[(i + 1) % STEPS]}
            for i in range(STEPS)
        ],
        initial=states[0],
        auto_transitions=False,
    )
    advance: Callable[[], Any] = model.next  # type: ignore[attr-defined]

    def make() -> Callable[[], None]:
        def run() -> None:
            for _ in range(runs):
                for _ in range(STEPS):
                    advance()

        return run

    return Case(make, runs * STEPS)


def _noop(state: dict[str, Any]) -> dict[str, Any]:
    return {}


def plain_loop_case(runs: int) -> Case:
    """``runs`` times a loop calling 10 functions and merging their (empty) updates."""
    functions = [_noop] * STEPS

    def make() -> Callable[[], None]:
        def run() -> None:
            for _ in range(runs):
                state: dict[str, Any] = {"count": 0}
                for function in functions:
                    state.update(function(state))

        return run

    return Case(make, runs * STEPS)


def sqlite_case(folder: Path, payload: bytes, rows: int) -> Case:
    """``rows`` fsync'd SQLite commits of one row each (WAL, synchronous=FULL)."""
    connection = sqlite3.connect(folder / "floor.sqlite")
    connection.execute("PRAGMA journal_mode=WAL")
    connection.execute("PRAGMA synchronous=FULL")
    connection.execute(
        "CREATE TABLE IF NOT EXISTS journal "
        "(thread TEXT, version INTEGER, data BLOB, PRIMARY KEY (thread, version))"
    )
    connection.commit()
    counter = iter(range(10**9))

    def make() -> Callable[[], None]:
        def run() -> None:
            for _ in range(rows):
                connection.execute(
                    "INSERT INTO journal (thread, version, data) VALUES (?, ?, ?)",
                    ("t", next(counter), payload),
                )
                connection.commit()

        return run

    return Case(make, rows)


def fsync_append_case(folder: Path, payload: bytes, writes: int) -> Case:
    """``writes`` appends of ``payload``, each followed by ``os.fdatasync``."""
    fd = os.open(folder / "floor.jsonl", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def make() -> Callable[[], None]:
        def run() -> None:
            for _ in range(writes):
                os.write(fd, payload)
                os.fdatasync(fd)

        return run

    return Case(make, writes)
