"""Timers inside a ``Subflow`` node are the thread's: a deadline of a gate in the child, or a
node of the child asleep (``ctx.sleep_until``), is found by the parent's ``fire_due`` and fires
inside the child, once, across a new runner on the same store; the parent then goes on. A
``Subflow`` run as a ``Map`` call cannot sleep. On every shipped store, with an injected
clock."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from pydantic import BaseModel

from flowkit import END, Context, Flow, Gate, Map, Runner, Subflow
from flowkit.stores import Store


@pytest.fixture
def store(every_store: Store) -> Store:
    return every_store


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


class Ticket(BaseModel):
    text: str = ""
    approved: bool = False
    escalated: bool = False
    woke: bool = False


class Verdict(BaseModel):
    approved: bool


REVIEW = Flow(
    name="review",
    state=Ticket,
    start="review",
    nodes={"escalate": lambda s: {"escalated": True}},
    gates={"review": Gate(Verdict, deadline=timedelta(days=2), on_timeout="escalate")},
    routes={"review": END, "escalate": END},
)


def pause(state: Ticket, ctx: Context) -> None:
    ctx.sleep_until(timedelta(hours=1), update={"text": "resting"})


NAP = Flow(
    name="nap",
    state=Ticket,
    start="pause",
    nodes={"pause": pause, "wake": lambda s: {"woke": True}},
    routes={"pause": "wake", "wake": END},
)


def parent(child: Flow) -> Flow:
    return Flow(
        name=f"with_{child.name}",
        state=Ticket,
        start="sub",
        nodes={
            "sub": Subflow(child, writes=["escalated", "woke", "approved"]),
            "done": lambda s: {"text": "closed"},
        },
        routes={"sub": "done", "done": END},
    )


def test_a_deadline_of_a_gate_inside_a_subflow_fires_through_the_parent(store: Store) -> None:
    clock = Clock()
    flow = parent(REVIEW)
    waiting = Runner(flow, store=store, clock=clock).start("t")
    assert waiting.gates == ("sub/review",)
    assert waiting.due == clock.now + timedelta(days=2)
    clock.now += timedelta(days=1)
    assert Runner(flow, store=store, clock=clock).fire_due() == []  # not yet
    clock.now += timedelta(days=1, seconds=1)
    restarted = Runner(flow, store=store, clock=clock)
    (fired,) = restarted.fire_due()
    assert (fired.kind, fired.node) == ("deadline", "sub/review")
    done = restarted.get_state("t")
    assert done.done and done.state.escalated and done.state.text == "closed"
    assert Runner(flow, store=store, clock=clock).fire_due() == []  # once
    assert [c.kind for c in restarted.history("t")].count("timer") == 1


def test_an_answer_inside_the_subflow_before_the_deadline_clears_it(store: Store) -> None:
    clock = Clock()
    flow = parent(REVIEW)
    runner = Runner(flow, store=store, clock=clock)
    runner.start("t")
    answered = runner.resume("t", {"approved": True})
    assert answered.done and answered.due is None and not answered.state.escalated
    clock.now += timedelta(days=3)
    assert runner.fire_due() == []


def test_a_node_asleep_inside_a_subflow_wakes_through_the_parent(store: Store) -> None:
    clock = Clock()
    flow = parent(NAP)
    asleep = Runner(flow, store=store, clock=clock).start("t")
    assert asleep.status == "waiting" and asleep.gates == ()  # nothing to answer
    assert asleep.due == clock.now + timedelta(hours=1)
    clock.now += timedelta(hours=2)
    (fired,) = Runner(flow, store=store, clock=clock).fire_due()
    assert (fired.kind, fired.node) == ("wake", "sub/pause")
    done = Runner(flow, store=store, clock=clock).get_state("t")
    assert done.done and done.state.woke and done.state.text == "closed"


def test_a_subflow_run_as_a_map_call_cannot_sleep(store: Store) -> None:
    class Many(BaseModel):
        items: list[dict[str, Any]] = [{"text": "a"}]
        woke: bool = False

    flow = Flow(
        name="many",
        state=Many,
        start="each",
        nodes={"each": Map(Subflow(NAP, writes=["woke"]), over=lambda s: s.items)},
        routes={"each": END},
    )
    failed = Runner(flow, store=store, clock=Clock()).start("t")
    assert failed.status == "failed" and failed.error is not None
    (item,) = [r for r in store.records("t") if r.kind == "item"]
    assert "sleep_until" in item.error["message"]  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "deadline", [timedelta(days=999_999_000), float("nan"), float("inf"), 10**12, -1, 0]
)
def test_a_deadline_no_record_could_keep_is_refused_when_the_gate_is_made(deadline: Any) -> None:
    with pytest.raises(ValueError, match="at most"):
        Gate(Verdict, deadline=deadline, on_timeout="escalate")


def test_a_sleep_no_record_could_keep_is_refused_and_nothing_saved(store: Store) -> None:
    from flowkit.errors import NodeContractError

    def forever(state: Ticket, ctx: Context) -> None:
        ctx.sleep_until(timedelta(days=999_999_999))

    flow = Flow(name="f", state=Ticket, start="f", nodes={"f": forever}, routes={"f": END})
    with pytest.raises(NodeContractError, match="more than"):
        Runner(flow, store=store, clock=Clock()).start("t")
    assert Runner(flow, store=store).get_state("t").version == 0  # readable, nothing saved


def test_calls_whose_keys_repeat_each_get_their_own_pause() -> None:
    items = ["a", "a", "a#1", "a#1"]
    labels = [c.label for c in Map(lambda s, i: {}, over=lambda s: items, key=str).calls(None)]
    assert len(set(labels)) == 4 and labels[0] == "a" and labels[2] == "a#1"
