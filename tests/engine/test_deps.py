"""Run-time dependencies: ``Runner(deps=...)`` or per call, seen by every node as ``ctx.deps``
(Map calls, Parallel branches, Subflow children, nodes with a timeout, async nodes), and
never stored, journaled, logged or put in an event."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import pytest
from pydantic import BaseModel
from structlog.testing import capture_logs

from flowkit import END, Context, Flow, Gate, Map, Parallel, Runner, Subflow, append, node
from flowkit.stores import JsonFileStore, Store
from flowkit.testing import capture_events

SECRET = "sk-deps-secret-7f3a"


@dataclass
class Deps:
    """What an app hands its nodes: here a user id, a token and a fake database."""

    user: str
    token: str = SECRET
    saved: list[str] = field(default_factory=list)


class Note(BaseModel):
    seen: Annotated[list[str], append] = []
    items: list[str] = ["a", "b"]
    ok: bool = False


class Ok(BaseModel):
    ok: bool = True


def saw(label: str) -> Any:
    def run(state: Note, ctx: Context[Deps]) -> dict[str, Any]:
        ctx.deps.saved.append(label)
        return {"seen": [f"{label}:{ctx.deps.user}"]}

    run.__name__ = label
    return run


def child_flow() -> Flow:
    return Flow(
        name="child",
        state=Note,
        start="inner",
        nodes={"inner": saw("inner")},
        routes={"inner": END},
    )


def everything_flow() -> Flow:
    """A plain node, a node with a timeout, a Map, a Parallel, a Subflow, a gate, an async
    node: every way a node is called."""

    def per_item(state: Note, item: str, ctx: Context[Deps]) -> dict[str, Any]:
        return {"seen": [f"map-{item}:{ctx.deps.user}"]}

    async def later(state: Note, ctx: Context[Deps]) -> dict[str, Any]:
        await asyncio.sleep(0)
        return {"seen": [f"async:{ctx.deps.user}"]}

    return Flow(
        name="everything",
        state=Note,
        start="plain",
        nodes={
            "plain": saw("plain"),
            "timed": node(saw("timed"), timeout=5),
            "fan": Map(per_item, over=lambda s: s.items),
            "both": Parallel({"x": saw("x"), "y": saw("y")}),
            "sub": Subflow(child_flow(), input=lambda s: {}, output=lambda p, c: {"seen": c.seen}),
            "later": later,
        },
        gates={"ok": Gate(Ok)},
        routes={
            "plain": "timed",
            "timed": "fan",
            "fan": "both",
            "both": "sub",
            "sub": "ok",
            "ok": "later",
            "later": END,
        },
    )


def expected(user: str, resumed_by: str | None = None) -> list[str]:
    first = [
        f"plain:{user}",
        f"timed:{user}",
        f"map-a:{user}",
        f"map-b:{user}",
        f"x:{user}",
        f"y:{user}",
        f"inner:{user}",
    ]
    return [*first, f"async:{resumed_by or user}"]


def test_every_kind_of_node_sees_the_runners_deps(store: Store) -> None:
    runner: Runner[Note, Deps] = Runner(everything_flow(), store=store, deps=Deps("ann"))
    waiting = runner.start("t")
    assert waiting.status == "waiting"
    done = asyncio.run(runner.aresume("t", {"ok": True}))
    assert done.status == "done"
    assert done.state.seen == expected("ann")


def test_a_call_given_deps_uses_them_instead_of_the_runners(store: Store) -> None:
    runner: Runner[Note, Deps] = Runner(everything_flow(), store=store, deps=Deps("ann"))
    runner.start("t", deps=Deps("bob"))
    done = runner.resume("t", {"ok": True}, deps=Deps("cy"))
    assert done.state.seen == expected("bob", resumed_by="cy")
    assert runner._call_deps == {}  # nothing of the call is kept afterwards


def test_streams_hand_their_deps_to_the_nodes(store: Store) -> None:
    runner: Runner[Note, Deps] = Runner(everything_flow(), store=store)
    values = list(runner.stream("t", mode="updates", deps=Deps("dee")))
    assert values  # the run went through the stream

    async def rest() -> list[Any]:
        return [item async for item in runner.astream("t", {"ok": True}, deps=Deps("eve"))]

    asyncio.run(rest())
    assert runner.get_state("t").state.seen == expected("dee", resumed_by="eve")


def test_concurrent_async_calls_each_see_their_own_deps() -> None:
    async def slow(state: Note, ctx: Context[Deps]) -> dict[str, Any]:
        await asyncio.sleep(0.01)  # both runs are inside a node at once
        return {"seen": [ctx.deps.user]}

    flow = Flow(name="slow", state=Note, start="slow", nodes={"slow": slow}, routes={"slow": END})
    runner: Runner[Note, Deps] = Runner(flow)

    async def both() -> list[Any]:
        return await asyncio.gather(
            runner.astart("a", deps=Deps("a-user")), runner.astart("b", deps=Deps("b-user"))
        )

    first, second = asyncio.run(both())
    assert (first.state.seen, second.state.seen) == (["a-user"], ["b-user"])


def test_without_deps_a_node_sees_none() -> None:
    flow = Flow(
        name="plain",
        state=Note,
        start="look",
        nodes={"look": lambda s, ctx: {"seen": [repr(ctx.deps)]}},
        routes={"look": END},
    )
    assert Runner(flow).start("t").state.seen == ["None"]


def test_deps_are_dropped_after_a_call_that_fails() -> None:
    def boom(state: Note, ctx: Context[Deps]) -> None:
        raise KeyboardInterrupt  # escapes the engine, like a crash

    flow = Flow(name="boom", state=Note, start="boom", nodes={"boom": boom}, routes={"boom": END})
    runner: Runner[Note, Deps] = Runner(flow)
    with pytest.raises(KeyboardInterrupt):
        runner.start("t", deps=Deps("x"))
    assert runner._call_deps == {}


def test_deps_never_reach_the_store_events_logs_or_repr(tmp_path: Path) -> None:
    def leaky(state: Note, ctx: Context[Deps]) -> dict[str, Any]:
        ctx.log.info("node_says_hello")
        ctx.emit({"user": ctx.deps.user})  # what the node chooses to emit is its business
        return {"seen": [repr(ctx)]}

    flow = Flow(
        name="leaky", state=Note, start="leaky", nodes={"leaky": leaky}, routes={"leaky": END}
    )
    with JsonFileStore(tmp_path / "store", fsync=False) as store:
        runner: Runner[Note, Deps] = Runner(flow, store=store, deps=Deps("ann"))
        with capture_logs() as logs, capture_events(runner) as events:
            done = runner.start("t")
        runner.history("t")
    assert SECRET not in done.state.seen[0]
    assert SECRET not in repr(runner)
    assert all(SECRET not in repr(entry) for entry in logs)
    assert all(SECRET not in repr(event) for event in events)
    stored = b"".join(p.read_bytes() for p in (tmp_path / "store").rglob("*") if p.is_file())
    assert SECRET.encode() not in stored
    assert b"ann" not in stored  # not even the parts a node did not write to the state


# -- the documented test pattern: a fake dependency ------------------------------------------


class FakeCharges:
    """A stand-in for a payment client: records calls instead of charging anyone."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, int]] = []

    def charge(self, card: str, cents: int) -> str:
        self.calls.append((card, cents))
        return f"ch_{len(self.calls)}"


class Order(BaseModel):
    card: str = "4242"
    cents: int = 1200
    charge_id: str = ""


def charge(state: Order, ctx: Context[FakeCharges]) -> dict[str, Any]:
    return {"charge_id": ctx.deps.charge(state.card, state.cents)}


def test_a_fake_dependency_replaces_the_real_client_in_tests() -> None:
    flow = Flow(
        name="order", state=Order, start="charge", nodes={"charge": charge}, routes={"charge": END}
    )
    fake = FakeCharges()
    result = Runner(flow, deps=fake).start("order-1")
    assert result.state.charge_id == "ch_1"
    assert fake.calls == [("4242", 1200)]
