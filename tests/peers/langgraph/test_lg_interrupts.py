"""LangGraph's human-in-the-loop scenarios, as flowkit behaviour.

Ported from langchain-ai/langgraph, libs/langgraph/tests:
- test_interruption.py::test_interruption_without_state_updates
- test_pregel.py::test_node_before_interrupt_resume_graph_api,
  test_multiple_interrupt_state_persistence, test_interrupt_multiple
- test_pregel.py::test_parallel_interrupts, test_multi_resume,
  test_null_resume_disallowed_with_multiple_interrupts
- test_pregel.py::test_interrupt_stream_mode_values
- test_pregel.py::test_interrupt_subgraph, test_subgraph_checkpoint_true_interrupt

LangGraph re-runs a node from its first line on resume; flowkit's ``ctx.ask`` ends the step,
so the scenarios assert the stronger promise: work done before a question never runs again.
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
from flowkit.errors import InvalidResumeInputError, NotWaitingError
from flowkit.stores import Store


class Trail(BaseModel):
    input: str = ""
    steps: Annotated[list[str], append] = []


class Go(BaseModel):
    """An answer with nothing in it: "go on"."""


def _noop(state: Trail) -> None:
    return None


def test_pause_after_every_step_needs_no_state_update(durable_store: Store) -> None:
    """Three no-op nodes with a pause after each: the thread stops after every one, and an
    empty answer moves it on, though no node wrote anything."""
    flow = Flow(
        name="interrupt_after_all",
        state=Trail,
        start="step_1",
        nodes={"step_1": _noop, "step_2": _noop, "step_3": _noop},
        gates={"after_1": Go, "after_2": Go},
        routes={
            "step_1": "after_1",
            "after_1": "step_2",
            "step_2": "after_2",
            "after_2": "step_3",
            "step_3": END,
        },
    )
    runner = Runner(flow, store=durable_store)
    first = runner.start("1", {"input": "hello world"})
    assert (first.status, first.node) == ("waiting", "after_1")
    assert runner.resume("1", {}).node == "after_2"
    done = runner.resume("1", {})
    assert done.done and done.state.input == "hello world"
    assert [c.node for c in runner.history("1") if c.kind == "step"] == [
        "step_1",
        "step_2",
        "step_3",
    ]


class Signup(BaseModel):
    name: str = ""
    age: int = 0
    log: Annotated[list[str], append] = []


class Reply(BaseModel):
    name: str | None = None
    age: int | None = None


def _signup_flow(work: Counter[str]) -> Flow:
    @node(asks=Reply)
    def interview(state: Signup, ctx: Context) -> None:
        question = "name" if not state.name else "age"
        work[question] += 1  # stands for an LLM call that drafts the question
        ctx.ask({"question": question}, update={"log": [f"asked {question}"]})

    def greet(state: Signup) -> dict[str, Any]:
        work["greet"] += 1
        return {"log": [f"hello {state.name} ({state.age})"]}

    known = when("both_known", lambda s: bool(s.name) and s.age > 0)
    return Flow(
        name="signup",
        state=Signup,
        start="interview",
        nodes={"interview": interview, "greet": greet},
        routes={
            "interview": RouteTable(
                "after_interview", [Route(known, "greet")], default="interview"
            ),
            "greet": END,
        },
    )


def test_work_before_a_question_never_runs_again(durable_store: Store) -> None:
    """A node asks twice (two interrupts); each answer resumes it, from a new runner as after
    a restart, and what it did before each question ran exactly once."""
    work: Counter[str] = Counter()
    flow = _signup_flow(work)
    first = Runner(flow, store=durable_store).start("s1")
    assert first.pauses == (Pause("interview", {"question": "name"}),)
    second = Runner(flow, store=durable_store).resume("s1", {"name": "Aiko"})
    assert second.payload == {"question": "age"}
    assert second.state.log == ["asked name", "asked age"]  # saved with each question
    done = Runner(flow, store=durable_store).resume("s1", {"age": 31}, gate="interview")
    assert done.state.log == ["asked name", "asked age", "hello Aiko (31)"]
    assert work == {"name": 1, "age": 1, "greet": 1}


def test_open_question_survives_a_restart_with_its_payload(durable_store: Store) -> None:
    """The interrupt's value is read back by a fresh runner, and an answer that fails the
    model is refused with the thread still waiting on the same question."""
    work: Counter[str] = Counter()
    flow = _signup_flow(work)
    Runner(flow, store=durable_store).start("s2")
    later = Runner(flow, store=durable_store)
    state = later.get_state("s2")
    assert state.waiting and state.pauses == (Pause("interview", {"question": "name"}),)
    with pytest.raises(InvalidResumeInputError):
        later.resume("s2", {"age": "old"})
    assert later.get_state("s2").version == state.version
    assert work == {"name": 1}


class Review(BaseModel):
    legal_ok: bool | None = None
    tech_ok: bool | None = None
    notes: Annotated[list[str], append] = []


class Legal(BaseModel):
    legal_ok: bool


class Tech(BaseModel):
    tech_ok: bool


def _reviews(ran: Counter[str]) -> Flow:
    @node(writes=["notes"])
    def lint(state: Review) -> dict[str, Any]:
        ran["lint"] += 1
        return {"notes": ["linted"]}

    def publish(state: Review) -> dict[str, Any]:
        ran["publish"] += 1
        return {"notes": ["published" if state.legal_ok and state.tech_ok else "sent back"]}

    return Flow(
        name="parallel_interrupts",
        state=Review,
        start="review",
        nodes={
            "review": Parallel(
                {
                    "legal": Gate(Legal, payload=lambda s: {"ask": "legal?"}),
                    "tech": Gate(Tech, payload=lambda s: {"ask": "tech?"}),
                    "lint": lint,
                }
            ),
            "publish": publish,
        },
        routes={"review": "publish", "publish": END},
    )


def test_parallel_interrupts_are_answered_one_by_one(durable_store: Store) -> None:
    """Two branches pause at once; each answer is kept on its own and the join runs after
    the last, once; the node branch beside them ran once."""
    ran: Counter[str] = Counter()
    flow = _reviews(ran)
    paused = Runner(flow, store=durable_store).start("p1")
    assert paused.pauses == (Pause("legal", {"ask": "legal?"}), Pause("tech", {"ask": "tech?"}))
    one = Runner(flow, store=durable_store).resume("p1", {"legal_ok": True}, gate="legal")
    assert one.gates == ("tech",) and ran["publish"] == 0
    done = Runner(flow, store=durable_store).resume("p1", {"tech_ok": True}, gate="tech")
    assert done.state.notes == ["linted", "published"]
    assert ran == {"lint": 1, "publish": 1}


def test_multi_resume_answers_every_open_interrupt_in_one_call(durable_store: Store) -> None:
    ran: Counter[str] = Counter()
    runner = Runner(_reviews(ran), store=durable_store)
    runner.start("p2")
    done = runner.resume("p2", {"legal": {"legal_ok": True}, "tech": {"tech_ok": False}})
    assert done.done and done.state.notes == ["linted", "sent back"]


def test_bare_resume_is_refused_while_several_interrupts_are_open(
    durable_store: Store,
) -> None:
    """LangGraph refuses a null resume with several interrupts; flowkit names the open ids,
    and nothing moves, whether the answer is bare or empty."""
    runner = Runner(_reviews(Counter()), store=durable_store)
    version = runner.start("p3").version
    for answer in ({"legal_ok": True}, None):
        with pytest.raises(NotWaitingError) as refused:
            runner.resume("p3", answer)
        assert "legal" in str(refused.value) and "tech" in str(refused.value)
    state = runner.get_state("p3")
    assert state.version == version and state.gates == ("legal", "tech")


class Draft(BaseModel):
    text: str = ""
    approved: bool = False


class Verdict(BaseModel):
    approved: bool


def test_stream_values_ends_with_the_interrupt_and_its_payload(store: Store) -> None:
    flow = Flow(
        name="stream_interrupt",
        state=Draft,
        start="write",
        nodes={"write": lambda s: {"text": "v1"}},
        gates={"review": Gate(Verdict, payload=lambda s: {"draft": s.text})},
        routes={"write": "review", "review": END},
    )
    runner = Runner(flow, store=store)
    items = list(runner.stream("v1", {}, mode="values"))
    *states, paused = items
    assert [s.text for s in states] == ["", "v1"]  # the start state, then write's step
    assert paused.gates == ("review",)
    assert paused.pauses == (Pause("review", {"draft": "v1"}),)
    resumed = list(runner.stream("v1", {"approved": True}, mode="values"))
    assert resumed[-1].approved and runner.get_state("v1").done


class Article(BaseModel):
    text: str = ""
    approved: bool = False
    log: Annotated[list[str], append] = []


class Approval(BaseModel):
    approved: bool


def _article(ran: Counter[str]) -> Flow:
    def check(state: Draft) -> dict[str, Any]:
        ran["check"] += 1
        return {"text": state.text.upper()}

    child = Flow(
        name="child_review",
        state=Draft,
        start="check",
        nodes={"check": check},
        gates={"approve": Gate(Approval, payload=lambda s: {"text": s.text})},
        routes={"check": "approve", "approve": END},
    )

    def draft(state: Article) -> dict[str, Any]:
        ran["draft"] += 1
        return {"text": "flows all the way down", "log": ["drafted"]}

    return Flow(
        name="parent_article",
        state=Article,
        start="draft",
        nodes={
            "draft": draft,
            "review": Subflow(child, writes=["approved", "text"]),
            "publish": lambda s: {"log": ["published" if s.approved else "shelved"]},
        },
        routes={"draft": "review", "review": "publish", "publish": END},
    )


def test_interrupt_inside_a_subgraph_is_answered_through_the_parent(
    durable_store: Store,
) -> None:
    """The child's gate pauses the parent thread, by path; a new runner answers it, and
    neither the parent's nor the child's earlier node runs again."""
    ran: Counter[str] = Counter()
    flow = _article(ran)
    paused = Runner(flow, store=durable_store).start("a1")
    assert (paused.node, paused.gates) == ("review", ("review/approve",))
    assert paused.payload == {"text": "FLOWS ALL THE WAY DOWN"}
    done = Runner(flow, store=durable_store).resume("a1", {"approved": True}, gate="review/approve")
    assert done.done and done.state.log == ["drafted", "published"]
    assert done.state.text == "FLOWS ALL THE WAY DOWN"
    assert ran == {"draft": 1, "check": 1}


class Tally(BaseModel):
    total: int = 0
    history: Annotated[list[int], append] = []


class Number(BaseModel):
    n: int


def test_each_invocation_adds_to_the_checkpointed_total(durable_store: Store) -> None:
    """test_pregel.py::test_invoke_checkpoint_two / _three: each call on the same thread
    builds on the state the last one saved; here the thread waits between calls, and a fresh
    runner (a restart) goes on from the saved total."""
    flow = Flow(
        name="accumulate",
        state=Tally,
        start="input",
        nodes={"add": lambda s: {"total": s.total + s.history[-1]}},
        gates={"input": Gate(Number, apply=lambda s, v: {"history": [v.n]})},
        routes={"input": "add", "add": "input"},
    )
    Runner(flow, store=durable_store).start("1")
    totals = [
        Runner(flow, store=durable_store).resume("1", {"n": n}).state.total for n in (2, 3, 10)
    ]
    assert totals == [2, 5, 15]
    assert Runner(flow, store=durable_store).get_state("1").state.history == [2, 3, 10]
