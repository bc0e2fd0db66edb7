"""LangGraph's streaming, checkpoint-metadata and node-timeout scenarios, as flowkit behaviour.

Ported from langchain-ai/langgraph, libs/langgraph/tests:
- test_pregel.py::test_get_stream_writer (custom values from nodes and Send tasks)
- test_pregel.py::test_invoke_two_processes_in_out (stream_mode="updates", one per node)
- test_pregel.py::test_stream_subgraphs_during_execution (a subgraph's steps seen live)
- test_pregel_async.py::test_interrupt_stream_mode_values (astream ends at the interrupt)
- test_pregel.py::test_checkpoint_metadata (who and what made each checkpoint)
- test_retry.py::test_arun_with_retry_timeout_retries_when_retry_on_timeout

``get_stream_writer()`` is ``ctx.emit``; ``subgraphs=True`` events are flowkit's path-named
events of the child's nodes; checkpoint metadata ``source`` is ``Checkpoint.kind``.
"""

from __future__ import annotations

import asyncio
from typing import Annotated, Any

from pydantic import BaseModel

from flowkit import (
    END,
    Context,
    Flow,
    Gate,
    Map,
    RetryPolicy,
    Runner,
    Subflow,
    append,
    node,
)
from flowkit.stores import Store


class Work(BaseModel):
    items: list[str] = []
    done: Annotated[list[str], append] = []
    approved: bool = False


def test_custom_values_come_from_nodes_and_from_each_send_task(store: Store) -> None:
    def prepare(state: Work, ctx: Context) -> dict[str, Any]:
        ctx.emit({"stage": "prepare"})
        return {}

    def each(state: Work, item: str, ctx: Context) -> dict[str, Any]:
        ctx.emit({"item": item})
        return {"done": [item]}

    flow = Flow(
        name="writer",
        state=Work,
        start="prepare",
        nodes={"prepare": prepare, "each": Map(each, over=lambda s: s.items, concurrency=1)},
        routes={"prepare": "each", "each": END},
    )
    runner = Runner(flow, store=store)
    custom = list(runner.stream("w", {"items": ["a", "b"]}, mode="custom"))
    assert custom == [{"stage": "prepare"}, {"item": "a"}, {"item": "b"}]
    assert runner.get_state("w").state.done == ["a", "b"]


def test_updates_stream_one_item_per_node_in_order(store: Store) -> None:
    flow = Flow(
        name="two",
        state=Work,
        start="one",
        nodes={"one": lambda s: {"done": ["one"]}, "two": lambda s: {"done": ["two"]}},
        routes={"one": "two", "two": END},
    )
    updates = list(Runner(flow, store=store).stream("u", {}, mode="updates"))
    assert updates == [{"one": {"done": ["one"]}}, {"two": {"done": ["two"]}}]


class Approval(BaseModel):
    approved: bool


def _with_child() -> Flow:
    child = Flow(
        name="child",
        state=Work,
        start="inner",
        nodes={"inner": lambda s: {"done": ["inner"]}},
        gates={"approve": Approval},
        routes={"inner": "approve", "approve": END},
    )
    return Flow(
        name="parent",
        state=Work,
        start="outer",
        nodes={
            "outer": lambda s: {"done": ["outer"]},
            "sub": Subflow(child, input=lambda p: {}, writes=["done", "approved"]),
        },
        routes={"outer": "sub", "sub": END},
    )


def test_events_show_the_subgraph_nodes_while_it_runs(store: Store) -> None:
    runner = Runner(_with_child(), store=store)
    events = list(runner.stream("e", {}, mode="events"))
    started = [e.node for e in events if e.kind == "node_started"]
    assert started == ["outer", "sub", "sub/inner"]
    assert events[-1].kind == "paused" and events[-1].gates == ("sub/approve",)
    resumed = list(runner.stream("e", {"approved": True}, mode="events"))
    assert resumed[-1].kind == "completed"
    assert runner.get_state("e").state.done == ["outer", "inner"]


def test_astream_values_stops_at_the_interrupt_and_resumes(store: Store) -> None:
    flow = Flow(
        name="async_review",
        state=Work,
        start="draft",
        nodes={"draft": lambda s: {"done": ["draft"]}},
        gates={"review": Gate(Approval, payload=lambda s: {"draft": s.done[-1]})},
        routes={"draft": "review", "review": END},
    )
    runner = Runner(flow, store=store)

    async def run() -> tuple[list[Any], list[Any]]:
        first = [item async for item in runner.astream("a", {}, mode="values")]
        second = [item async for item in runner.astream("a", {"approved": True}, mode="values")]
        return first, second

    first, second = asyncio.run(run())
    assert first[-1].kind == "paused" and first[-1].payload == {"draft": "draft"}
    assert second[-1].approved and runner.get_state("a").done


def test_every_checkpoint_says_what_made_it(store: Store) -> None:
    runner = Runner(_with_child(), store=store)
    first = runner.start("m")
    runner.update_state("m", {"items": ["x"]}, reason="note", actor="ops")
    last = runner.resume("m", {"approved": True}, actor="rita")
    history = runner.history("m")
    assert [(c.kind, c.node) for c in history] == [
        ("start", None),
        ("step", "outer"),
        ("start", "sub"),
        ("step", "sub/inner"),
        ("patch", None),
        ("input", "sub/approve"),
        ("step", "sub"),
    ]
    assert [c.version for c in history] == list(range(len(history)))
    assert history[4].actor == "ops" and history[4].reason == "note"
    assert history[5].actor == "rita"
    assert {c.run_id for c in history[1:4]} == {first.run_id}
    assert history[-1].run_id == last.run_id != first.run_id


def test_async_node_timeout_is_retried_by_its_policy(store: Store) -> None:
    attempts: list[int] = []

    @node(
        writes=["done"],
        timeout=0.05,
        retry=RetryPolicy(max_attempts=2, initial_delay=0, jitter=False),
    )
    async def slow_once(state: Work, ctx: Context) -> dict[str, Any]:
        attempts.append(ctx.attempt)
        if ctx.attempt == 1:
            await asyncio.sleep(30)
        return {"done": ["finally"]}

    flow = Flow(
        name="timeouts",
        state=Work,
        start="slow_once",
        nodes={"slow_once": slow_once},
        routes={"slow_once": END},
    )
    runner = Runner(flow, store=store)
    done = asyncio.run(runner.astart("t"))
    assert done.done and done.state.done == ["finally"] and attempts == [1, 2]
    assert runner.history("t")[-1].attempts == 2
