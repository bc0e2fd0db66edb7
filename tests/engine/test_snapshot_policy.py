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
    ("records", "since", "snapshot", "settled", "due"),
    [
        (0, 0, BIG, True, False),  # nothing new
        (63, 8 * BIG, BIG, False, False),  # running: fewer than `every` records
        (64, 8 * BIG, BIG, False, True),  # running: `every` records and `ratio` times the size
        (64, 8 * BIG - 1, BIG, False, False),  # running: the journal has not grown enough
        (5, (1 << 20) + 8 * BIG, BIG, False, True),  # running: `min_bytes` whatever the count
        (PAUSE_MIN - 1, BIG, BIG, True, False),  # settled after too few records
        (PAUSE_MIN, BIG // PAUSE_SHARE, BIG, True, True),  # settled: a share of the size
        (PAUSE_MIN, BIG // PAUSE_SHARE - 1, BIG, True, False),  # settled: less than that
        (PAUSE_MIN, BIG // PAUSE_SHARE - 1, BIG, False, False),  # the same, running
        (200, 8 * BIG, BIG, True, True),  # settled, and due anyway
    ],
)
def test_when_a_snapshot_is_due(
    records: int, since: int, snapshot: int, settled: bool, due: bool
) -> None:
    assert POLICY.due(records=records, since=since, snapshot=snapshot, settled=settled) is due


class Chat(BaseModel):
    count: int = 0
    stop_at: int = 0
    finish: bool = False
    said: bool = False
    messages: Annotated[list[str], flowkit.append] = []


class More(BaseModel):
    stop_at: int = 0
    finish: bool = False


def say(state: Chat) -> dict[str, Any]:
    n = state.count + 1
    return {"count": n, "said": n >= state.stop_at, "messages": [f"message {n:06d} " + "x" * 90]}


def more(state: Chat, answer: More) -> dict[str, Any]:
    return {"stop_at": answer.stop_at, "finish": answer.finish, "said": False}


CHAT = Flow(
    name="growing_chat",
    state=Chat,
    start="say",
    nodes={"say": say},
    gates={"more": Gate(More, apply=more, writes=["stop_at", "finish", "said"])},
    routes={
        "say": RouteTable("after_say", [Route(field("said"), "more")], default="say"),
        "more": RouteTable("after_more", [Route(field("finish"), END)], default="say"),
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
    assert runner.resume("chat", {"finish": True}).status == "done"
    fresh = Runner(CHAT, store=every_store).get_state("chat")
    assert fresh.status == "done" and len(fresh.state.messages) == steps + steps // 2
