"""``Runner(memory=...)``: nodes of every thread (and of a Subflow's child) share it as
``ctx.memory``; a node using it on a runner without one fails with a message that says how."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel

from flowkit import END, Context, Flow, NodeError, Runner, Subflow
from flowkit.memory import InProcessMemory, JsonFileMemory
from flowkit.stores import Store


class Chat(BaseModel):
    user: str = "u1"
    text: str = ""
    earlier: list[str] = []
    error: NodeError | None = None


def recall(state: Chat, ctx: Context) -> dict[str, Any]:
    found = ctx.memory.search(("user", state.user), filter={"kind": "summary"})
    return {"earlier": [item.value["text"] for item in found]}


def remember(state: Chat, ctx: Context) -> dict[str, Any]:
    ctx.memory.put(("user", state.user), ctx.thread_id, {"kind": "summary", "text": state.text})
    return None


def chat_flow() -> Flow:
    return Flow(
        name="chat",
        state=Chat,
        start="recall",
        nodes={"recall": recall, "remember": remember},
        routes={"recall": "remember", "remember": END},
    )


def test_threads_share_memory_through_ctx(store: Store, tmp_path: Path) -> None:
    memory = JsonFileMemory(tmp_path / "memory", fsync=False)
    runner = Runner(chat_flow(), store=store, memory=memory)
    runner.start("a", {"text": "invoices"})
    runner.start("b", {"text": "refunds", "user": "u2"})
    third = runner.start("c", {"text": "again"})
    assert third.state.earlier == ["invoices"]
    # Another runner (another process, another flow) over the same folder sees it all.
    again = JsonFileMemory(tmp_path / "memory", fsync=False)
    assert [i.key for i in again.search(("user",), limit=10)] == ["a", "c", "b"]


def test_a_subflow_child_reaches_the_parents_memory() -> None:
    parent = Flow(
        name="outer",
        state=Chat,
        start="inner",
        nodes={"inner": Subflow(chat_flow(), writes=["earlier"])},
        routes={"inner": END},
    )
    memory = InProcessMemory()
    memory.put(("user", "u1"), "old", {"kind": "summary", "text": "before"})
    result = Runner(parent, memory=memory).start("t", {"text": "now"})
    assert result.state.earlier == ["before"]
    assert memory.get(("user", "u1"), "t") is not None


def test_a_node_using_memory_without_one_fails_saying_how_to_give_it() -> None:
    result = Runner(chat_flow()).start("t")
    assert result.status == "failed"
    assert result.error is not None
    assert result.error.type == "RunError"
    assert "Runner(flow, memory=" in result.error.message
