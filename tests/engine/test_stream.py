"""Runner.stream / astream: every mode, several at once, start and resume, failure and break."""

from __future__ import annotations

import asyncio
from typing import Annotated, Any

import pytest
from pydantic import BaseModel

from flowkit import (
    END,
    Completed,
    Context,
    Emitted,
    Flow,
    NodeStarted,
    Paused,
    Route,
    RouteTable,
    Runner,
    StateChanged,
    TokenStreamed,
    Waiting,
    append,
    field,
    node,
)
from flowkit.errors import (
    ConflictError,
    RunError,
    StepLimitError,
    ThreadExistsError,
    ThreadNotFoundError,
)
from flowkit.stores import Store
from flowkit.testing import ScriptedLLM


class Talk(BaseModel):
    said: str = ""
    log: Annotated[list[str], append] = []
    summary: str = ""


class Line(BaseModel):
    said: str


def greet(state: Talk, ctx: Context) -> dict[str, Any]:
    ctx.emit({"progress": 0.5})
    ctx.emit("halfway")
    return {"log": ["hello"]}


def summarise(state: Talk, ctx: Context) -> dict[str, Any]:
    text = "".join(c.text for c in ctx.llm.stream([{"role": "user", "content": state.said}]))
    return {"summary": text, "log": ["summarised"]}


def chat_flow() -> Flow:
    return Flow(
        name="chat",
        state=Talk,
        start="greet",
        nodes={"greet": greet, "summarise": summarise},
        gates={"user": Line},
        routes={"greet": "user", "user": "summarise", "summarise": END},
    )


def runner_on(store: Store | None) -> Runner[Talk]:
    return Runner(chat_flow(), store=store, llm=ScriptedLLM(default="Pick and place."))


def test_values_yields_the_start_state_then_the_state_after_each_step(store: Store) -> None:
    runner = runner_on(store)
    it = runner.stream("t1", {"said": "x"})
    *values, paused = list(it)
    assert all(isinstance(v, Talk) for v in values)
    assert [v.log for v in values] == [[], ["hello"]]
    assert it.result is not None and it.result.waiting and it.result.node == "user"
    assert it.result.state == values[-1]
    assert isinstance(paused, Paused) and paused.gates == ("user",)  # the run waits


def test_updates_yields_each_nodes_partial_update_by_node(store: Store) -> None:
    runner = runner_on(store)
    first, paused = list(runner.stream("t1", mode="updates"))
    assert first == {"greet": {"log": ["hello"]}}
    assert isinstance(paused["__pause__"], Paused)
    resumed = list(runner.stream("t1", {"said": "sum it up"}, mode="updates"))
    assert resumed == [
        {"user": {"said": "sum it up"}},  # the gate's input, as an update
        {"summarise": {"summary": "Pick and place.", "log": ["summarised"]}},  # not the whole log
    ]


def test_events_yields_the_existing_event_classes_of_this_run_only(store: Store) -> None:
    runner = runner_on(store)
    other: list[Any] = []
    runner.subscribe(other.append)  # a plain subscriber still sees everything
    events = list(runner.stream("t1", mode="events"))
    kinds = [e.kind for e in events]
    assert kinds == [
        "node_started",
        "custom",
        "custom",
        "node_finished",
        "state_changed",
        "waiting",
        "paused",
    ]
    assert isinstance(events[0], NodeStarted) and isinstance(events[-2], Waiting)
    assert isinstance(events[4], StateChanged) and events[4].changed == ("log",)
    assert other == events[:-1]  # the stream's own Paused is not sent to subscribers
    assert {e.run_id for e in events} == {events[0].run_id}


def test_tokens_yields_llm_chunks_with_node_and_call(store: Store) -> None:
    runner = runner_on(store)
    runner.start("t1")
    it = runner.stream("t1", {"said": "sum it up"}, mode="tokens")
    tokens = list(it)
    assert tokens and all(isinstance(t, TokenStreamed) for t in tokens)
    assert "".join(t.text for t in tokens) == "Pick and place."
    assert {(t.node, t.call) for t in tokens} == {("summarise", 0)}
    assert tokens[-1].done
    assert it.result is not None and it.result.done


def test_custom_yields_what_nodes_emit(store: Store) -> None:
    runner = runner_on(store)
    assert list(runner.stream("t1", mode="custom")) == [{"progress": 0.5}, "halfway"]


def test_several_modes_yield_mode_item_pairs_in_order(store: Store) -> None:
    runner = runner_on(store)
    runner.start("t1")
    pairs = list(runner.stream("t1", {"said": "go"}, mode=["updates", "values", "tokens"]))
    modes = [mode for mode, _ in pairs]
    assert modes[:2] == ["updates", "values"]  # the gate's input
    assert set(modes[2:-2]) == {"tokens"}  # the tokens come before the step is committed
    assert modes[-2:] == ["updates", "values"]
    assert pairs[-1][1].summary == "Pick and place."


def test_a_chat_loop_streams_turn_after_turn() -> None:
    def answer(state: Talk) -> dict[str, Any]:
        return {"log": [f"bot: {state.said}"]}

    flow = Flow(
        name="loop",
        state=Talk,
        start="user",
        nodes={"answer": answer},
        gates={"user": Line},
        routes={"user": "answer", "answer": "user"},
    )
    runner = Runner(flow)
    assert [v.log for v in runner.stream("c") if not isinstance(v, Paused)] == [[]]
    for turn, said in enumerate(["hi", "again", "more"], start=1):
        it = runner.stream("c", {"said": said}, mode="updates")
        assert list(it)[-2] == {"answer": {"log": [f"bot: {said}"]}}
        assert it.result is not None and it.result.waiting
        assert len(it.result.state.log) == turn


def test_a_failing_node_ends_the_stream_with_a_failed_result(store: Store) -> None:
    def boom(state: Talk) -> None:
        raise RuntimeError("controller offline")

    flow = Flow(name="f", state=Talk, start="boom", nodes={"boom": boom}, routes={"boom": END})
    runner = Runner(flow, store=store)
    it = runner.stream("t1", mode=["events", "updates"])
    items = list(it)
    assert [item.kind for mode, item in items if mode == "events"][-1] == "failed"
    assert not [item for mode, item in items if mode == "updates"]
    assert it.result is not None and it.result.status == "failed"
    assert it.result.error is not None and it.result.error.message == "controller offline"
    # the thread is free and failed, exactly as after start()
    assert runner.get_state("t1").status == "failed"


def test_an_engine_error_is_raised_from_the_iterator_and_frees_the_thread() -> None:
    spin = RouteTable("spin", [Route(field("summary"), END)], default="a")  # never set
    flow = Flow(name="spin", state=Talk, start="a", nodes={"a": lambda s: None},
                routes={"a": spin})  # fmt: skip
    runner = Runner(flow, store=None, step_limit=3)
    it = runner.stream("t1")
    with pytest.raises(StepLimitError):
        list(it)
    assert it.result is None
    assert runner.get_state("t1").node == "a"  # the lock is released: this call works


def test_break_in_the_middle_leaves_the_last_committed_step_and_resume_goes_on(
    store: Store,
) -> None:
    def step(state: Talk) -> dict[str, Any]:
        return {"log": [str(len(state.log))]}

    flow = Flow(name="steps", state=Talk, start="a", nodes={"a": step, "b": step, "c": step},
                routes={"a": "b", "b": "c", "c": END})  # fmt: skip
    runner = Runner(flow, store=store)
    with runner.stream("t1", mode="updates") as it:
        for update in it:
            if "a" in update:
                break
    assert it.result is None
    stands = runner.get_state("t1")
    assert stands.status == "pending" and stands.node == "b" and stands.state.log == ["0"]
    rest = list(runner.stream("t1", mode="updates"))
    assert rest == [{"b": {"log": ["1"]}}, {"c": {"log": ["2"]}}]
    assert runner.get_state("t1").state.log == ["0", "1", "2"]


def test_an_open_stream_holds_the_thread_until_closed() -> None:
    runner = runner_on(None)
    it = runner.stream("t1", mode="events")
    next(it)
    with pytest.raises(ConflictError, match="running already"):
        runner.resume("t1")
    it.close()
    assert runner.get_state("t1").node == "greet"
    assert runner.resume("t1").waiting


def test_new_insists_on_a_new_or_an_existing_thread() -> None:
    runner = runner_on(None)
    with pytest.raises(ThreadNotFoundError):
        list(runner.stream("nope", {"said": "x"}, new=False))
    list(runner.stream("t1", new=True))
    with pytest.raises(ThreadExistsError):
        list(runner.stream("t1", new=True))
    with pytest.raises(RunError, match="`gate` and `expected_version` apply to resuming"):
        list(runner.stream("t2", gate="user"))


@pytest.mark.parametrize("mode", ["value", [], ["values", "everything"]])
def test_unknown_modes_are_refused_up_front(mode: Any) -> None:
    with pytest.raises(RunError, match="choose one or more of values, updates, events"):
        runner_on(None).stream("t1", mode=mode)


def test_nodes_can_emit_without_anyone_watching() -> None:
    result = runner_on(None).start("t1")
    assert result.waiting and result.state.log == ["hello"]


def test_emitted_values_reach_subscribers_as_events() -> None:
    runner = runner_on(None)
    seen: list[Any] = []
    runner.subscribe(seen.append)
    runner.start("t1")
    assert [e.value for e in seen if isinstance(e, Emitted)] == [{"progress": 0.5}, "halfway"]


def test_astream_yields_the_same_items_and_result(store: Store) -> None:
    async def ahello(state: Talk, ctx: Context) -> dict[str, Any]:
        await asyncio.sleep(0)
        ctx.emit("async hello")
        return {"log": ["hello"]}

    flow = Flow(name="chat", state=Talk, start="greet", nodes={"greet": ahello},
                gates={"user": Line}, routes={"greet": "user", "user": END})  # fmt: skip
    runner = Runner(flow, store=store)

    async def main() -> tuple[list[Any], Any, list[Any]]:
        it = runner.astream("t1", mode=["custom", "values"])
        items = [item async for item in it]
        async with runner.astream("t1", {"said": "bye"}, mode="events") as again:
            events = [e async for e in again]
        return items, it.result, [*events, again.result]

    items, result, tail = asyncio.run(main())
    assert items[0][0] == "values" and items[1] == ("custom", "async hello")
    assert items[-2][1].log == ["hello"] and isinstance(items[-1][1], Paused)
    assert result is not None and result.waiting
    assert isinstance(tail[-2], Completed) and tail[-1].done


def test_astream_break_with_aclose_frees_the_thread() -> None:
    runner = runner_on(None)

    async def main() -> None:
        it = runner.astream("t1", mode="custom")
        async for _ in it:
            break
        await it.aclose()

    asyncio.run(main())
    # astream hands out `custom` items while the node runs, before its step is committed:
    # leaving then discards that step, and resume runs the node again
    assert runner.get_state("t1").node == "greet"
    assert runner.resume("t1").waiting


def test_astream_hands_out_an_async_nodes_items_while_it_runs() -> None:
    seen = asyncio.Event()

    async def chatty(state: Talk, ctx: Context) -> dict[str, Any]:
        ctx.emit("first")
        # Only a live stream lets the consumer see "first" and answer before this returns;
        # the bound only keeps a broken stream from hanging the suite.
        await asyncio.wait_for(seen.wait(), 10)
        ctx.emit("second")
        return {"log": ["done"]}

    flow = Flow(name="live", state=Talk, start="chatty", nodes={"chatty": chatty},
                routes={"chatty": END})  # fmt: skip
    runner = Runner(flow)

    async def main() -> list[Any]:
        items = []
        async for mode, item in runner.astream("t1", mode=["custom", "updates"]):
            items.append((mode, item))
            if item == "first":
                seen.set()
        return items

    assert asyncio.run(main()) == [
        ("custom", "first"),
        ("custom", "second"),
        ("updates", {"chatty": {"log": ["done"]}}),
    ]
    assert runner.get_state("t1").done


def test_astream_left_mid_node_cancels_the_node_and_saves_nothing() -> None:
    cancelled = []

    async def slow(state: Talk, ctx: Context) -> dict[str, Any]:
        ctx.emit("started")
        try:
            await asyncio.Event().wait()  # until cancelled
        except asyncio.CancelledError:
            cancelled.append(True)
            raise
        return {"log": ["never"]}

    flow = Flow(name="slow", state=Talk, start="slow", nodes={"slow": slow},
                routes={"slow": END})  # fmt: skip
    runner = Runner(flow)

    async def main() -> None:
        async with runner.astream("t1", mode="custom") as it:
            async for item in it:
                assert item == "started"
                break

    asyncio.run(main())
    assert cancelled == [True]
    stands = runner.get_state("t1")
    assert stands.status == "pending" and stands.node == "slow" and stands.state.log == []


def test_astream_takes_items_a_sync_node_emits_from_its_worker_thread() -> None:
    @node(timeout=30)  # a sync node with a timeout runs in a worker thread
    def worker(state: Talk, ctx: Context) -> dict[str, Any]:
        for i in range(3):
            ctx.emit(i)
        return {"log": ["worked"]}

    flow = Flow(name="w", state=Talk, start="worker", nodes={"worker": worker},
                routes={"worker": END})  # fmt: skip
    runner = Runner(flow)

    async def main() -> list[Any]:
        return [item async for item in runner.astream("t1", mode=["custom", "updates"])]

    assert asyncio.run(main()) == [
        ("custom", 0),
        ("custom", 1),
        ("custom", 2),
        ("updates", {"worker": {"log": ["worked"]}}),
    ]
