"""LangGraph's checkpoint history and time travel scenarios, as flowkit behaviour.

Ported from langchain-ai/langgraph, libs/langgraph/tests:
- test_time_travel.py::test_replay_reruns_nodes_after_checkpoint,
  test_replay_from_final_checkpoint_is_noop, test_fork_reruns_with_modified_state,
  test_multiple_forks_from_same_checkpoint, test_fork_creates_branch_preserving_old_checkpoints,
  test_fork_from_before_interrupt_refires, test_fork_from_interrupt_checkpoint_refires,
  test_subgraph_fork_from_before, test_update_state_with_none_values,
  test_replay_from_before_interrupt_refires, test_replay_interrupt_stable_across_replays,
  test_sequential_interrupts_fork_from_middle
- test_pregel.py::test_update_as_input, test_fork_does_not_apply_pending_writes

LangGraph's ``get_state_history`` is ``Runner.history``, a fork from a checkpoint id is
``Runner.fork(..., at=version)``, ``update_state(as_node=...)`` is the same call on the Runner
(``goto=`` moves a thread anywhere) and a replay on the same thread is ``Runner.rewind``.
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
    Pause,
    Route,
    RouteTable,
    Runner,
    Subflow,
    append,
    node,
    when,
)
from flowkit.errors import (
    CheckpointNotFoundError,
    FlowkitError,
    InvalidStateError,
    UndeclaredWriteError,
)
from flowkit.stores import Store


class Chain(BaseModel):
    value: str = ""
    trail: Annotated[list[str], append] = []


def _chain(ran: Counter[str]) -> Flow:
    def node(name: str) -> Any:
        def run(state: Chain) -> dict[str, Any]:
            ran[name] += 1
            return {"value": f"{state.value}>{name}", "trail": [name]}

        run.__name__ = name
        return run

    return Flow(
        name="chain",
        state=Chain,
        start="a",
        nodes={"a": node("a"), "b": node("b"), "c": node("c")},
        routes={"a": "b", "b": "c", "c": END},
    )


def _version_after(runner: Runner, thread_id: str, node: str) -> int:
    return next(c.version for c in runner.history(thread_id) if c.node == node)


def test_replay_from_a_checkpoint_reruns_only_the_nodes_after_it(store: Store) -> None:
    ran: Counter[str] = Counter()
    runner = Runner(_chain(ran), store=store)
    assert runner.start("t", {"value": "x"}).state.value == "x>a>b>c"
    after_a = _version_after(runner, "t", "a")
    fork = runner.fork("t", "t-replay", at=after_a)
    assert (fork.status, fork.state.value) == ("pending", "x>a")
    assert runner.resume("t-replay").state.value == "x>a>b>c"
    assert ran == {"a": 1, "b": 2, "c": 2}


def test_history_lists_every_checkpoint_oldest_first(store: Store) -> None:
    runner = Runner(_chain(Counter()), store=store)
    runner.start("h", {"value": "x"})
    history = runner.history("h")
    assert [c.version for c in history] == list(range(len(history)))
    assert [(c.kind, c.node) for c in history][1:] == [("step", "a"), ("step", "b"), ("step", "c")]
    assert [c.state.value for c in history] == ["x", "x>a", "x>a>b", "x>a>b>c"]
    assert history[-1].status == "done"


def test_replay_from_the_final_checkpoint_runs_nothing(store: Store) -> None:
    ran: Counter[str] = Counter()
    runner = Runner(_chain(ran), store=store)
    runner.start("t", {"value": "x"})
    fork = runner.fork("t", "t-end")
    assert fork.done and fork.state.value == "x>a>b>c"
    with pytest.raises(FlowkitError):
        runner.resume("t-end")  # a finished thread has nothing to continue
    assert ran == {"a": 1, "b": 1, "c": 1}


def test_fork_with_modified_state_reruns_from_there_and_keeps_the_original(
    store: Store,
) -> None:
    ran: Counter[str] = Counter()
    runner = Runner(_chain(ran), store=store)
    runner.start("t", {"value": "x"})
    original = [(c.version, c.state.value) for c in runner.history("t")]
    runner.fork("t", "t-mod", at=_version_after(runner, "t", "a"))
    patched = runner.update_state("t-mod", {"value": "y"}, reason="what if y")
    assert patched.status == "pending" and patched.state.value == "y"
    assert runner.resume("t-mod").state.value == "y>b>c"
    assert [(c.version, c.state.value) for c in runner.history("t")] == original
    assert runner.get_state("t").state.trail == ["a", "b", "c"]


def test_several_forks_of_one_checkpoint_are_independent(store: Store) -> None:
    runner = Runner(_chain(Counter()), store=store)
    runner.start("t", {"value": "x"})
    at = _version_after(runner, "t", "a")
    for name, value in [("f1", "one"), ("f2", "two")]:
        runner.fork("t", name, at=at)
        runner.update_state(name, {"value": value})
    assert runner.resume("f2").state.value == "two>b>c"
    assert runner.resume("f1").state.value == "one>b>c"
    assert runner.get_state("t").state.value == "x>a>b>c"


def test_rewind_replays_on_the_same_thread_and_keeps_every_checkpoint(store: Store) -> None:
    ran: Counter[str] = Counter()
    runner = Runner(_chain(ran), store=store)
    runner.start("t", {"value": "x"})
    before = len(runner.history("t"))
    back = runner.rewind("t", _version_after(runner, "t", "b"), reason="try c again")
    assert back.status == "pending" and back.state.value == "x>a>b"
    assert runner.resume("t").state.value == "x>a>b>c"
    assert len(runner.history("t")) == before + 2  # the rewind, then c once more
    assert ran == {"a": 1, "b": 1, "c": 2}


def test_fork_from_a_missing_checkpoint_is_a_typed_error(store: Store) -> None:
    runner = Runner(_chain(Counter()), store=store)
    runner.start("t", {"value": "x"})
    with pytest.raises(CheckpointNotFoundError):
        runner.fork("t", "nowhere", at=99)


class Draft(BaseModel):
    topic: str = ""
    text: str = ""
    approved: bool = False


class Verdict(BaseModel):
    approved: bool


def _drafts(shown: Counter[str]) -> Flow:
    def payload(state: Draft) -> dict[str, Any]:
        shown[state.text] += 1
        return {"draft": state.text}

    return Flow(
        name="drafts",
        state=Draft,
        start="write",
        nodes={"write": lambda s: {"text": f"about {s.topic}"}},
        gates={"review": Gate(Verdict, payload=payload)},
        routes={"write": "review", "review": END},
    )


def test_fork_from_before_an_interrupt_fires_it_again(store: Store) -> None:
    shown: Counter[str] = Counter()
    runner = Runner(_drafts(shown), store=store)
    runner.start("d", {"topic": "tides"})
    assert runner.resume("d", {"approved": True}).done
    fork = runner.fork("d", "d-again", at=0)  # before `write`
    runner.update_state("d-again", {"topic": "waves"})
    again = runner.resume("d-again")
    assert again.pauses == (Pause("review", {"draft": "about waves"}),)
    assert shown == {"about tides": 1, "about waves": 1}
    assert fork.state.topic == "tides"


def test_fork_at_the_interrupt_checkpoint_waits_with_the_same_payload(store: Store) -> None:
    shown: Counter[str] = Counter()
    runner = Runner(_drafts(shown), store=store)
    waiting = runner.start("d", {"topic": "tides"})
    runner.resume("d", {"approved": False})
    fork = runner.fork("d", "d-other", at=waiting.version)
    assert fork.waiting and fork.payload == {"draft": "about tides"}
    assert runner.resume("d-other", {"approved": True}).state.approved
    assert not runner.get_state("d").state.approved
    assert shown == {"about tides": 1}  # the payload was journaled, not computed again


def test_update_state_with_goto_moves_the_thread_as_that_node_would(store: Store) -> None:
    """LangGraph's update_state(as_node=...) then invoke(None): the patch decides where the
    thread stands, and the run goes on from there."""
    ran: Counter[str] = Counter()
    runner = Runner(_chain(ran), store=store)
    runner.start("t", {"value": "x"})
    runner.fork("t", "t-goto", at=0)
    moved = runner.update_state("t-goto", {"value": "patched"}, goto="c", actor="ops")
    assert moved.status == "pending" and moved.node == "c"
    assert runner.resume("t-goto").state.value == "patched>c"
    patch = runner.history("t-goto")[-2]
    assert (patch.kind, patch.actor) == ("patch", "ops")
    assert ran == {"a": 1, "b": 1, "c": 2}


def test_update_state_as_a_node_goes_on_where_that_node_routes(store: Store) -> None:
    """test_pregel.py::test_update_as_input and the checkpoint docs' update_state(values,
    as_node="b") then invoke(None): the values go in as b's update and the run goes on from
    b's route, so b does not run and c does."""
    ran: Counter[str] = Counter()
    runner = Runner(_chain(ran), store=store)
    runner.start("t", {"value": "x"})
    runner.fork("t", "t-as", at=0)  # back at the start: a has not run
    moved = runner.update_state("t-as", {"value": "by hand", "trail": ["b"]}, as_node="b")
    assert (moved.status, moved.node) == ("pending", "c")
    done = runner.resume("t-as")
    assert done.state.value == "by hand>c" and list(done.state.trail) == ["b", "c"]
    assert ran == {"a": 1, "b": 1, "c": 2}
    patch = runner.history("t-as")[-2]
    assert (patch.kind, patch.node) == ("patch", "b")  # history names the node it stood in for
    # as the last node: the thread ends there
    assert runner.update_state("t", {"value": "end"}, as_node="c").status == "done"


def test_update_state_as_a_node_refuses_what_is_no_node_or_comes_with_goto(store: Store) -> None:
    runner = Runner(_chain(Counter()), store=store)
    runner.start("t", {"value": "x"})
    for bad in ("nope", "", 5):
        with pytest.raises(InvalidStateError):
            runner.update_state("t", {"value": "y"}, as_node=bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidStateError):
        runner.update_state("t", {"value": "y"}, as_node="b", goto="c")
    assert runner.get_state("t").state.value == "x>a>b>c"  # nothing was written


def test_update_state_as_a_node_holds_to_what_that_node_may_write(store: Store) -> None:
    @node(writes=["trail"])
    def a(state: Chain) -> dict[str, Any]:
        return {"trail": ["a"]}

    flow = Flow(name="writes", state=Chain, start="a", nodes={"a": a}, routes={"a": END})
    runner = Runner(flow, store=store)
    runner.start("t")
    with pytest.raises(UndeclaredWriteError):
        runner.update_state("t", {"value": "not a's"}, as_node="a")
    assert runner.update_state("t", {"trail": ["by hand"]}, as_node="a").status == "done"


def test_update_state_with_none_values_sets_them(store: Store) -> None:
    class Nullable(BaseModel):
        note: str | None = "keep"
        count: int = 0

    flow = Flow(
        name="nones",
        state=Nullable,
        start="bump",
        nodes={"bump": lambda s: {"count": s.count + 1}},
        routes={"bump": END},
    )
    runner = Runner(flow, store=store)
    runner.start("n")
    assert runner.update_state("n", {"note": None}).state.note is None
    assert runner.history("n")[-1].update == {"note": None}


class Items(BaseModel):
    items: list[str] = []
    done: Annotated[list[str], append] = []


def test_fork_mid_map_runs_only_the_calls_unfinished_then(store: Store) -> None:
    """LangGraph's pending writes belong to their checkpoint; a fork taken mid-map keeps the
    calls finished by then and runs just the rest."""
    calls: Counter[str] = Counter()

    def work(state: Items, item: str) -> dict[str, Any]:
        calls[item] += 1
        return {"done": [item.upper()]}

    flow = Flow(
        name="mapped",
        state=Items,
        start="each",
        nodes={"each": Map(work, over=lambda s: s.items, concurrency=1)},
        routes={"each": END},
    )
    runner = Runner(flow, store=store)
    runner.start("m", {"items": ["a", "b", "c"]})
    first_item = next(c.version for c in runner.history("m") if c.kind == "item")
    fork = runner.fork("m", "m-mid", at=first_item)
    assert fork.status == "pending" and fork.state.done == []
    assert runner.resume("m-mid").state.done == ["A", "B", "C"]
    assert calls == {"a": 1, "b": 2, "c": 2}


class Article(BaseModel):
    text: str = ""
    approved: bool = False


class Approval(BaseModel):
    approved: bool


def test_fork_of_a_parent_whose_subgraph_waits_resumes_the_child(store: Store) -> None:
    child = Flow(
        name="child",
        state=Article,
        start="check",
        nodes={"check": lambda s: {"text": s.text + "!"}},
        gates={"approve": Approval},
        routes={"check": "approve", "approve": END},
    )
    parent = Flow(
        name="parent",
        state=Article,
        start="draft",
        nodes={
            "draft": lambda s: {"text": "hi"},
            "review": Subflow(child, writes=["approved", "text"]),
        },
        routes={"draft": "review", "review": END},
    )
    runner = Runner(parent, store=store)
    waiting = runner.start("p")
    assert waiting.gates == ("review/approve",)
    runner.resume("p", {"approved": False})
    fork = runner.fork("p", "p-yes", at=waiting.version)
    assert fork.gates == ("review/approve",)
    done = runner.resume("p-yes", {"approved": True})
    assert done.done and done.state.approved and done.state.text == "hi!"
    assert not runner.get_state("p").state.approved
    before_child = _version_after(runner, "p", "draft")
    assert runner.fork("p", "p-before", at=before_child).status == "pending"
    assert runner.resume("p-before").gates == ("review/approve",)


def test_replay_from_before_an_interrupt_fires_it_again_with_a_stable_id(store: Store) -> None:
    """test_time_travel.py::test_replay_from_before_interrupt_refires,
    test_replay_interrupt_stable_across_replays: on the same thread, going back before the
    interrupt and on again pauses at it again, under the same id, as often as it is done."""
    shown: Counter[str] = Counter()
    runner = Runner(_drafts(shown), store=store)
    first = runner.start("d", {"topic": "tides"})
    runner.resume("d", {"approved": True})
    for _ in range(2):
        runner.rewind("d", 0, reason="again")
        again = runner.resume("d")
        assert again.pauses == first.pauses == (Pause("review", {"draft": "about tides"}),)
    assert runner.resume("d", {"approved": False}).done
    assert shown == {"about tides": 3}  # computed on each arrival, never on a read


class Form(BaseModel):
    name: str = ""
    age: int = 0
    city: str = ""


class FormReply(BaseModel):
    name: str | None = None
    age: int | None = None
    city: str | None = None


def test_fork_from_the_middle_of_sequential_interrupts_asks_only_the_rest(
    store: Store,
) -> None:
    """test_time_travel.py::test_sequential_interrupts_fork_from_middle."""
    asked: list[str] = []

    @node(asks=FormReply)
    def interview(state: Form, ctx: Context) -> None:
        field_name = next(f for f in ("name", "age", "city") if not getattr(state, f))
        asked.append(field_name)
        ctx.ask(field_name)

    complete = when("complete", lambda s: bool(s.name and s.age and s.city))
    flow = Flow(
        name="form",
        state=Form,
        start="interview",
        nodes={"interview": interview},
        routes={
            "interview": RouteTable("next", [Route(complete, END)], default="interview"),
        },
    )
    runner = Runner(flow, store=store)
    runner.start("f")
    middle = runner.resume("f", {"name": "Aiko"})
    assert middle.payload == "age"
    runner.resume("f", {"age": 31})
    assert runner.resume("f", {"city": "Kobe"}).done
    fork = runner.fork("f", "f2", at=middle.version)
    assert fork.payload == "age" and fork.state.name == "Aiko"
    assert runner.resume("f2", {"age": 40}).payload == "city"
    done = runner.resume("f2", {"city": "Nara"})
    assert (done.state.name, done.state.age, done.state.city) == ("Aiko", 40, "Nara")
    assert asked == ["name", "age", "city", "city"]
