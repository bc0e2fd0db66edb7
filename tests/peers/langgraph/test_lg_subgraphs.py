"""LangGraph's subgraph scenarios (state, interrupts, replay), as flowkit behaviour.

Ported from langchain-ai/langgraph, libs/langgraph/tests:
- test_pregel.py::test_nested_graph_interrupts_parallel (an interrupt inside a subgraph run
  beside a plain node: the plain node's write is kept, not run again)
- test_pregel.py::test_double_interrupt_subgraph (two interrupts in a row inside a subgraph)
- test_pregel.py::test_doubly_nested_graph_interrupts,
  test_time_travel.py::test_3_levels_deep_time_travel_to_second_interrupt
- test_time_travel.py::test_subgraph_called_in_loop_loads_state_on_replay,
  test_stateless_subgraph_starts_fresh_on_parent_replay
- test_time_travel.py::test_parallel_subgraph_nodes_load_correct_state_on_replay
- test_pregel.py::test_multiple_subgraphs (Send to a subgraph: one child per item)
- test_time_travel.py::test_fork_creates_branch_in_subgraph, test_replay_creates_branch_in_subgraph,
  test_copy_fork_creates_sibling_checkpoint (forks of waiting per-item subgraphs are their own)
- test_time_travel.py::test_stateful_subgraph_loads_state_across_ticks,
  test_stateful_subgraph_retains_state_on_parent_fork

A LangGraph subgraph is a flowkit ``Subflow``; ``interrupt_before=[...]`` is a gate in front of
that node; the interrupt's path ``inner:<task id>`` is a readable path (``"inner/approve"``).
"""

from __future__ import annotations

from collections import Counter
from typing import Annotated, Any

import pytest
from pydantic import BaseModel

from flowkit import (
    END,
    Context,
    Flow,
    Gate,
    Map,
    Parallel,
    Pause,
    Route,
    RouteTable,
    Runner,
    Subflow,
    append,
    node,
    when,
)
from flowkit.errors import RunError
from flowkit.stores import Store


class Text(BaseModel):
    my_key: Annotated[list[str], append] = []


class Go(BaseModel):
    """Go on."""


def _nested_parallel(ran: Counter[str]) -> Flow:
    def inner_1(state: Text) -> dict[str, Any]:
        ran["inner_1"] += 1
        return {"my_key": ["got here"]}

    def inner_2(state: Text) -> dict[str, Any]:
        ran["inner_2"] += 1
        return {"my_key": ["and there"]}

    inner = Flow(
        name="inner",
        state=Text,
        start="inner_1",
        nodes={"inner_1": inner_1, "inner_2": inner_2},
        gates={"before_inner_2": Go},
        routes={"inner_1": "before_inner_2", "before_inner_2": "inner_2", "inner_2": END},
    )

    @node(writes=["my_key"])
    def outer_1(state: Text) -> dict[str, Any]:
        ran["outer_1"] += 1
        return {"my_key": ["and parallel"]}

    return Flow(
        name="outer",
        state=Text,
        start="fan",
        nodes={
            "fan": Parallel(
                {"inner": Subflow(inner, input=lambda s: {}, writes=["my_key"]), "outer_1": outer_1}
            ),
            "outer_2": lambda s: {"my_key": ["and back again"]},
        },
        routes={"fan": "outer_2", "outer_2": END},
    )


def test_interrupt_in_a_parallel_subgraph_keeps_the_sibling_write(
    durable_store: Store,
) -> None:
    ran: Counter[str] = Counter()
    flow = _nested_parallel(ran)
    paused = Runner(flow, store=durable_store).start("1")
    assert paused.waiting and paused.gates == ("fan[inner]/before_inner_2",)
    done = Runner(flow, store=durable_store).resume("1", {})
    assert done.done
    assert done.state.my_key == ["got here", "and there", "and parallel", "and back again"]
    assert ran == {"inner_1": 1, "inner_2": 1, "outer_1": 1}


def test_resume_stream_of_a_parallel_subgraph_shows_the_rest_once(store: Store) -> None:
    ran: Counter[str] = Counter()
    runner = Runner(_nested_parallel(ran), store=store)
    runner.start("2")
    updates = [u for u in runner.stream("2", {}, mode="updates") if "__pause__" not in u]
    assert updates[-1] == {"outer_2": {"my_key": ["and back again"]}}
    assert {"fan": {"my_key": ["got here", "and there", "and parallel"]}} in updates
    assert ran["outer_1"] == 1


class Agent(BaseModel):
    input: str = ""
    asked: Annotated[list[str], append] = []


class Said(BaseModel):
    input: str


def _two_questions(work: Counter[str]) -> Flow:
    @node(asks=Said)
    def node_1(state: Agent, ctx: Context) -> None:
        work["node_1"] += 1
        ctx.ask("interrupt node 1", update={"asked": ["1"]})

    @node(asks=Said)
    def node_2(state: Agent, ctx: Context) -> None:
        work["node_2"] += 1
        ctx.ask("interrupt node 2", update={"asked": ["2"]})

    return Flow(
        name="sub_agent",
        state=Agent,
        start="node_1",
        nodes={"node_1": node_1, "node_2": node_2},
        routes={"node_1": "node_2", "node_2": END},
    )


def test_two_interrupts_in_a_row_inside_a_subgraph(durable_store: Store) -> None:
    work: Counter[str] = Counter()
    parent = Flow(
        name="parent_agent",
        state=Agent,
        start="invoke_sub_agent",
        nodes={"invoke_sub_agent": Subflow(_two_questions(work), writes=["input", "asked"])},
        routes={"invoke_sub_agent": END},
    )
    first = Runner(parent, store=durable_store).start("t", {"input": "test"})
    assert first.pauses == (Pause("invoke_sub_agent/node_1", "interrupt node 1"),)
    second = Runner(parent, store=durable_store).resume("t", {"input": "123"})
    assert second.pauses == (Pause("invoke_sub_agent/node_2", "interrupt node 2"),)
    done = Runner(parent, store=durable_store).resume("t", {"input": "456"})
    assert done.done and done.state.input == "456"
    assert done.state.asked == ["1", "2"]
    assert work == {"node_1": 1, "node_2": 1}


class Deep(BaseModel):
    trail: Annotated[list[str], append] = []
    ok: bool = False


class Ok(BaseModel):
    ok: bool


def _three_levels(ran: Counter[str]) -> Flow:
    def step(name: str) -> Any:
        def run(state: Deep) -> dict[str, Any]:
            ran[name] += 1
            return {"trail": [name]}

        return run

    grandchild = Flow(
        name="grandchild",
        state=Deep,
        start="g1",
        nodes={"g1": step("g1"), "g2": step("g2")},
        gates={"first": Ok, "second": Ok},
        routes={"g1": "first", "first": "g2", "g2": "second", "second": END},
    )
    child = Flow(
        name="child",
        state=Deep,
        start="c1",
        nodes={"c1": step("c1"), "inner": Subflow(grandchild, writes=["trail", "ok"])},
        routes={"c1": "inner", "inner": END},
    )
    return Flow(
        name="root",
        state=Deep,
        start="r1",
        nodes={
            "r1": step("r1"),
            "middle": Subflow(child, writes=["trail", "ok"]),
            "r2": step("r2"),
        },
        routes={"r1": "middle", "middle": "r2", "r2": END},
    )


def test_three_levels_deep_interrupts_and_time_travel(durable_store: Store) -> None:
    ran: Counter[str] = Counter()
    flow = _three_levels(ran)
    runner = Runner(flow, store=durable_store)
    assert runner.start("d").gates == ("middle/inner/first",)
    second = Runner(flow, store=durable_store).resume("d", {"ok": False})
    assert second.gates == ("middle/inner/second",)
    done = Runner(flow, store=durable_store).resume("d", {"ok": True})
    assert done.done and done.state.ok
    assert done.state.trail == ["r1", "r1", "c1", "r1", "c1", "g1", "g2", "r2"]

    # Travel back to the second interrupt: only what follows it runs again.
    at_second = second.version
    fork = runner.fork("d", "d-back", at=at_second)
    assert fork.gates == ("middle/inner/second",)
    again = runner.resume("d-back", {"ok": False})
    assert again.done and not again.state.ok
    assert ran == {"r1": 1, "c1": 1, "g1": 1, "g2": 1, "r2": 2}


class Loop(BaseModel):
    rounds: int = 0
    seen: Annotated[list[int], append] = []


class Inner(BaseModel):
    count: int = 0


def test_subgraph_called_in_a_loop_starts_fresh_each_time(store: Store) -> None:
    """A stateless subgraph: every entry starts a new child, even on replay of the parent."""
    child = Flow(
        name="counter",
        state=Inner,
        start="bump",
        nodes={"bump": lambda s: {"count": s.count + 1}},
        routes={"bump": END},
    )
    done_three = when("three_rounds", lambda s: s.rounds >= 3)
    parent = Flow(
        name="looping",
        state=Loop,
        start="sub",
        nodes={
            "sub": Subflow(
                child,
                input=lambda p: {},
                output=lambda p, c: {"rounds": p.rounds + 1, "seen": [c.count]},
                writes=["rounds", "seen"],
            ),
        },
        routes={"sub": RouteTable("again", [Route(done_three, END)], default="sub")},
    )
    runner = Runner(parent, store=store)
    assert runner.start("l").state.seen == [1, 1, 1]
    after_first = next(
        c.version for c in runner.history("l") if (c.kind, c.node) == ("step", "sub")
    )
    replay = runner.fork("l", "l-replay", at=after_first)
    assert replay.state.seen == [1]
    assert runner.resume("l-replay").state.seen == [1, 1, 1]


class Reviews(BaseModel):
    docs: list[str] = []
    verdicts: Annotated[list[str], append] = []


class Doc(BaseModel):
    doc: str = ""
    verdict: str = ""


class Verdict(BaseModel):
    verdict: str


def test_send_each_item_to_a_subgraph_that_asks(durable_store: Store) -> None:
    """Send(...) to a subgraph per item: each child pauses on its own, answered by id, and
    each child's earlier node ran once."""
    ran: Counter[str] = Counter()

    def read(state: Doc) -> dict[str, Any]:
        ran[state.doc] += 1
        return {}

    review = Flow(
        name="doc_review",
        state=Doc,
        start="read",
        nodes={"read": read},
        gates={"approve": Gate(Verdict, payload=lambda s: {"doc": s.doc})},
        routes={"read": "approve", "approve": END},
    )
    parent = Flow(
        name="reviews",
        state=Reviews,
        start="each",
        nodes={
            "each": Map(
                Subflow(
                    review,
                    input=lambda p, d: {"doc": d},
                    output=lambda p, c: {"verdicts": [f"{c.doc}:{c.verdict}"]},
                    writes=["verdicts"],
                ),
                over=lambda s: s.docs,
                key=str,
            )
        },
        routes={"each": END},
    )
    paused = Runner(parent, store=durable_store).start("r", {"docs": ["a", "b"]})
    assert paused.pauses == (
        Pause("each[a]/approve", {"doc": "a"}),
        Pause("each[b]/approve", {"doc": "b"}),
    )
    later = Runner(parent, store=durable_store)
    assert later.resume("r", {"verdict": "no"}, gate="each[b]/approve").gates == (
        "each[a]/approve",
    )
    done = later.resume("r", {"each[a]/approve": {"verdict": "yes"}})
    assert done.done and done.state.verdicts == ["a:yes", "b:no"]
    assert ran == {"a": 1, "b": 1}


def _per_item_review() -> Flow:
    review = Flow(
        name="doc_review",
        state=Doc,
        start="approve",
        nodes={},
        gates={"approve": Gate(Verdict, payload=lambda s: {"doc": s.doc})},
        routes={"approve": END},
    )
    return Flow(
        name="reviews",
        state=Reviews,
        start="each",
        nodes={
            "each": Map(
                Subflow(
                    review,
                    input=lambda p, d: {"doc": d},
                    output=lambda p, c: {"verdicts": [f"{c.doc}:{c.verdict}"]},
                    writes=["verdicts"],
                ),
                over=lambda s: s.docs,
                key=str,
            )
        },
        routes={"each": END},
    )


def test_fork_of_waiting_subgraph_calls_is_a_branch_of_its_own(durable_store: Store) -> None:
    """test_time_travel.py::test_fork_creates_branch_in_subgraph,
    test_parallel_subgraph_nodes_load_correct_state_on_replay: a fork taken while per-item
    subgraphs wait answers its own children; the original's are left as they were, and the
    original's later answers are its own."""
    runner = Runner(_per_item_review(), store=durable_store)
    waiting = runner.start("r", {"docs": ["a", "b"]})
    runner.resume("r", {"verdict": "no"}, gate="each[b]/approve")
    fork = runner.fork("r", "r-fork", at=waiting.version)
    assert fork.gates == ("each[a]/approve", "each[b]/approve")
    forked = runner.resume(
        "r-fork",
        {"each[a]/approve": {"verdict": "fork-a"}, "each[b]/approve": {"verdict": "fork-b"}},
    )
    assert forked.done and forked.state.verdicts == ["a:fork-a", "b:fork-b"]
    assert runner.get_state("r").gates == ("each[a]/approve",)  # untouched by the fork
    done = runner.resume("r", {"verdict": "orig-a"})
    assert done.done and done.state.verdicts == ["a:orig-a", "b:no"]


def test_replay_of_subgraph_calls_from_before_the_node_asks_them_again(
    durable_store: Store,
) -> None:
    """test_time_travel.py::test_replay_creates_branch_in_subgraph: replay on the same thread
    from before the per-item subgraphs; both wait again, and the new answers count. A replay
    to the middle of the batch is refused with a typed error, and nothing moves."""
    runner = Runner(_per_item_review(), store=durable_store)
    waiting = runner.start("r", {"docs": ["a", "b"]})
    both = {"each[a]/approve": {"verdict": "no"}, "each[b]/approve": {"verdict": "no"}}
    version = runner.resume("r", both).version
    with pytest.raises(RunError):
        runner.rewind("r", waiting.version)
    assert runner.get_state("r").version == version
    back = runner.rewind("r", 0, reason="ask again")
    assert back.status == "pending"
    assert runner.resume("r").gates == ("each[a]/approve", "each[b]/approve")
    yes = {"each[a]/approve": {"verdict": "yes"}, "each[b]/approve": {"verdict": "yes"}}
    done = runner.resume("r", yes)
    assert done.done and done.state.verdicts == ["a:yes", "b:yes"]


def test_fork_of_subgraph_branches_nested_in_a_subgraph_is_its_own(store: Store) -> None:
    """test_time_travel.py::test_fork_creates_branch_in_subgraph, one level down and with
    named branches: a subgraph whose own step sends to subgraphs, and a parallel pair of
    subgraphs, forked while they wait; fork and original each get their own answers."""
    review = Flow(
        name="doc_review",
        state=Doc,
        start="approve",
        nodes={},
        gates={"approve": Verdict},
        routes={"approve": END},
    )

    def out(parent: Reviews, child: Doc) -> dict[str, Any]:
        return {"verdicts": [f"{child.doc}:{child.verdict}"]}

    each = Map(
        Subflow(review, input=lambda p, d: {"doc": d}, output=out, writes=["verdicts"]),
        over=lambda s: s.docs,
        key=str,
    )
    inner = Flow(
        name="inner", state=Reviews, start="each", nodes={"each": each}, routes={"each": END}
    )
    nested = Flow(
        name="nested",
        state=Reviews,
        start="sub",
        nodes={"sub": Subflow(inner, writes=["verdicts"])},
        routes={"sub": END},
    )
    pair = Flow(
        name="pair",
        state=Reviews,
        start="both",
        nodes={
            "both": Parallel(
                {
                    name: Subflow(
                        review, input=lambda p, n=name: {"doc": n}, output=out, writes=["verdicts"]
                    )
                    for name in ("legal", "tech")
                }
            )
        },
        routes={"both": END},
    )
    for flow, prefix in [(nested, "sub/each"), (pair, "both")]:
        a, b = (
            f"{prefix}[{x}]/approve" for x in (("a", "b") if flow is nested else ("legal", "tech"))
        )
        runner = Runner(flow, store=store)
        waiting = runner.start(flow.name, {"docs": ["a", "b"]})
        runner.resume(flow.name, {"verdict": "o1"}, gate=a)
        runner.fork(flow.name, "f-" + flow.name, at=waiting.version)
        forked = runner.resume("f-" + flow.name, {a: {"verdict": "f"}, b: {"verdict": "f"}})
        assert [v.split(":")[1] for v in forked.state.verdicts] == ["f", "f"]
        done = runner.resume(flow.name, {"verdict": "o2"})
        assert [v.split(":")[1] for v in done.state.verdicts] == ["o1", "o2"]


class Chat(BaseModel):
    said: str = ""
    memory: list[str] = []
    replies: Annotated[list[str], append] = []


class Turn(BaseModel):
    said: str


class Agent2(BaseModel):
    said: str = ""
    memory: Annotated[list[str], append] = []


def test_stateful_subgraph_keeps_its_state_across_parent_turns(durable_store: Store) -> None:
    """test_time_travel.py::test_stateful_subgraph_loads_state_across_ticks,
    test_stateful_subgraph_retains_state_on_parent_fork: the child's state is carried by the
    parent explicitly (``input``/``output``), so each entry sees what the last one left, and
    a fork of the parent sees the child's state as of that checkpoint."""
    agent = Flow(
        name="agent",
        state=Agent2,
        start="think",
        nodes={"think": lambda s: {"memory": [s.said]}},
        routes={"think": END},
    )
    chat = Flow(
        name="chat",
        state=Chat,
        start="user",
        nodes={
            "agent": Subflow(
                agent,
                input=lambda p: {"said": p.said, "memory": p.memory},
                output=lambda p, c: {
                    "memory": list(c.memory),
                    "replies": [f"I remember {len(c.memory)}"],
                },
                writes=["memory", "replies"],
            )
        },
        gates={"user": Turn},
        routes={"user": "agent", "agent": "user"},
    )
    runner = Runner(chat, store=durable_store)
    runner.start("c")
    runner.resume("c", {"said": "hi"})
    second = Runner(chat, store=durable_store).resume("c", {"said": "bye"})
    assert second.state.memory == ["hi", "bye"]
    assert second.state.replies == ["I remember 1", "I remember 2"]
    after_first = next(
        c.version for c in runner.history("c") if (c.kind, c.node) == ("step", "agent")
    )
    fork = runner.fork("c", "c-fork", at=after_first)
    assert fork.waiting and fork.state.memory == ["hi"]
    assert runner.resume("c-fork", {"said": "other"}).state.memory == ["hi", "other"]


def test_fork_of_a_fork_of_waiting_subgraph_calls(store: Store) -> None:
    """test_time_travel.py::test_copy_fork_creates_sibling_checkpoint, on children that
    took a step before they asked: a fork of a fork still answers children of its own."""
    review = Flow(
        name="stepped_review",
        state=Doc,
        start="read",
        nodes={"read": lambda s: {"doc": s.doc.upper()}},
        gates={"approve": Verdict},
        routes={"read": "approve", "approve": END},
    )
    flow = Flow(
        name="stepped",
        state=Reviews,
        start="each",
        nodes={
            "each": Map(
                Subflow(
                    review,
                    input=lambda p, d: {"doc": d},
                    output=lambda p, c: {"verdicts": [f"{c.doc}:{c.verdict}"]},
                    writes=["verdicts"],
                ),
                over=lambda s: s.docs,
                key=str,
            )
        },
        routes={"each": END},
    )
    runner = Runner(flow, store=store)
    waiting = runner.start("s", {"docs": ["a"]})
    runner.fork("s", "s1", at=waiting.version)
    runner.fork("s1", "s2")
    for thread, verdict in [("s2", "two"), ("s1", "one"), ("s", "zero")]:
        done = runner.resume(thread, {"verdict": verdict})
        assert done.done and done.state.verdicts == [f"A:{verdict}"]
