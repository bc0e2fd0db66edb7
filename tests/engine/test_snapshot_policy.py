"""When a durable store takes a snapshot (``_snapshot_policy``), as a table, and what it buys:
a settled thread whose state grows with its history (a chat) opens without replaying it."""

from __future__ import annotations

from typing import Annotated, Any

import pytest
from pydantic import BaseModel

import flowkit
from flowkit import END, Flow, Gate, Route, RouteTable, Runner, field
from flowkit.stores import MemoryStore, Store
from flowkit.stores._snapshot_policy import PAUSE_MIN, PAUSE_SHARE, SnapshotPolicy

POLICY = SnapshotPolicy.checked(64, 8.0, 1 << 20)
BIG = 100_000  # a snapshot's bytes


@pytest.mark.parametrize(
    ("records", "since", "snapshot", "status", "due"),
    [
        (0, 0, BIG, "waiting", False),  # nothing new
        (63, 8 * BIG, BIG, "pending", False),  # running: fewer than `every` records
        (64, 8 * BIG, BIG, "pending", True),  # running: `every` records, `ratio` times the size
        (64, 8 * BIG - 1, BIG, "pending", False),  # running: the journal has not grown enough
        (5, (1 << 20) + 8 * BIG, BIG, "pending", True),  # running: `min_bytes`, any count
        (PAUSE_MIN - 1, 8 * BIG, BIG, "waiting", False),  # a pause after too few records
        (PAUSE_MIN, 8 * BIG, BIG, "waiting", True),  # a pause, `ratio` times the size
        (PAUSE_MIN, 8 * BIG, BIG, "done", False),  # an end after a short run: none
        (PAUSE_MIN, BIG, BIG, "waiting", False),  # a pause, few records next to a big state
        (64, BIG // PAUSE_SHARE, BIG, "waiting", True),  # settled: `every` records, a share
        (64, BIG // PAUSE_SHARE, BIG, "done", True),
        (64, BIG // PAUSE_SHARE, BIG, "failed", True),
        (64, BIG // PAUSE_SHARE - 1, BIG, "done", False),  # settled: less than that share
        (63, BIG, BIG, "done", False),  # settled: fewer than `every` (they replay fast)
        (64, BIG // PAUSE_SHARE, BIG, "pending", False),  # the same, running
    ],
)
def test_when_a_snapshot_is_due(
    records: int, since: int, snapshot: int, status: str, due: bool
) -> None:
    assert POLICY.due(records=records, since=since, snapshot=snapshot, status=status) is due


class Chat(BaseModel):
    count: int = 0
    stop_at: int = 0
    end_at: int = 0
    said: bool = False
    over: bool = False
    messages: Annotated[list[str], flowkit.append] = []


class More(BaseModel):
    stop_at: int = 0
    end_at: int = 0


def say(state: Chat) -> dict[str, Any]:
    n = state.count + 1
    said, over = 0 < state.stop_at <= n, 0 < state.end_at <= n
    return {"count": n, "said": said, "over": over, "messages": [f"{n:06d} " + "x" * 90]}


def more(state: Chat, answer: More) -> dict[str, Any]:
    return {"stop_at": answer.stop_at, "end_at": answer.end_at, "said": False}


CHAT = Flow(
    name="growing_chat",
    state=Chat,
    start="say",
    nodes={"say": say},
    gates={"more": Gate(More, apply=more, writes=["stop_at", "end_at", "said"])},
    routes={
        "say": RouteTable(
            "after_say", [Route(field("over"), END), Route(field("said"), "more")], default="say"
        ),
        "more": "say",
    },
)  # fmt: skip


def _replayed(store: Store, thread_id: str) -> int:
    log = store.load(thread_id)
    assert log.snapshot is not None
    return len(log.records)


@pytest.mark.parametrize("steps", [300, 1000])
def test_a_chat_that_pauses_or_ends_opens_from_a_snapshot(every_store: Store, steps: int) -> None:
    """A state that grows with every step waits for ``ratio`` times its size before a running
    thread snapshots it; where the thread settles, a share of it is enough."""
    if isinstance(every_store, MemoryStore):
        pytest.skip("MemoryStore snapshots only on request: replaying memory is cheap")
    runner = Runner(CHAT, store=every_store)
    assert runner.start("chat", {"stop_at": steps}).status == "waiting"
    assert _replayed(every_store, "chat") == 0
    assert runner.resume("chat", {"stop_at": steps + steps // 2}).status == "waiting"
    assert _replayed(every_store, "chat") == 0
    assert runner.resume("chat", {"end_at": 2 * steps}).status == "done"
    assert _replayed(every_store, "chat") == 0
    fresh = Runner(CHAT, store=every_store).get_state("chat")
    assert fresh.status == "done" and len(fresh.state.messages) == 2 * steps


def test_a_short_run_that_ends_takes_no_snapshot(every_store: Store) -> None:
    """A few records replay faster than a snapshot file is made: a thread of ten steps that
    ends writes only its journal."""
    if isinstance(every_store, MemoryStore):
        pytest.skip("MemoryStore snapshots only on request: replaying memory is cheap")
    runner = Runner(CHAT, store=every_store)
    assert runner.start("short", {"stop_at": 100, "end_at": 10}).status == "done"
    log = every_store.load("short")
    assert log.snapshot is None and len(log.records) == 11
