"""Nodes that ask: ``@node(asks=Model)`` and ``ctx.ask(payload, update=...)`` (or ``raise
Ask(payload)``) end the node's step in a pause. The update given with the question is saved
with it, nothing the node did before asking runs again, the answer is validated against the
declared model and the node's route takes over; a node that needs two answers is routed back
to itself and asks again. On every shipped store, and across a new ``Runner`` on the same store.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from datetime import timedelta
from typing import Annotated, Any

import pytest
from pydantic import BaseModel
from structlog.testing import capture_logs

from flowkit import (
    END,
    Ask,
    CachePolicy,
    Context,
    Flow,
    Gate,
    Pause,
    RetryPolicy,
    Route,
    RouteTable,
    Runner,
    Waiting,
    append,
    node,
    when,
)
from flowkit.errors import (
    InvalidResumeInputError,
    InvalidUpdateError,
    NodeContractError,
    UndeclaredWriteError,
    UnknownGateError,
    UnstorableValueError,
)
from flowkit.stores import InputRecord, StepRecord, Store


@pytest.fixture
def store(every_store: Store) -> Store:
    return every_store


class Signup(BaseModel):
    name: str = ""
    age: int = 0
    asked: Annotated[list[str], append] = []
    log: Annotated[list[str], append] = []


class Reply(BaseModel):
    """One answer model for both questions: each answer sets the field asked for."""

    name: str | None = None
    age: int | None = None


def interview_flow(counts: Counter[str]) -> Flow:
    """``interview`` asks for the name, then (routed back to itself) for the age; ``greet``
    runs once both are known. ``counts`` counts what ran, by question."""

    @node(asks=Reply, writes=["asked", "log"])
    def interview(state: Signup, ctx: Context) -> dict[str, Any]:
        question = "name" if not state.name else "age"
        counts[f"before {question}"] += 1  # the work done before asking
        ctx.ask(
            {"question": f"What is your {question}?", "known": state.name or None},
            update={"asked": [question]},
        )
        counts["after ask"] += 1  # never reached
        return {}

    def greet(state: Signup) -> dict[str, Any]:
        counts["greet"] += 1
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


NAME_Q = {"question": "What is your name?", "known": None}
AGE_Q = {"question": "What is your age?", "known": "Aiko"}


# -- asking twice in one run --------------------------------------------------------------------


@pytest.mark.parametrize("restart", [False, True], ids=["same-runner", "new-runner"])
def test_a_node_asks_twice_in_one_run_and_never_runs_again_before_an_ask(
    store: Store, restart: bool
) -> None:
    counts: Counter[str] = Counter()
    runner = Runner(interview_flow(counts), store=store)
    first = runner.start("t")
    assert (first.status, first.node, first.gates) == ("waiting", "interview", ("interview",))
    assert first.pauses == (Pause("interview", NAME_Q),) and first.payload == NAME_Q
    assert first.state.asked == ["name"]  # the update given with the question is saved
    if restart:
        runner = Runner(interview_flow(counts), store=store)
    assert runner.get_state("t").pauses == first.pauses

    second = runner.resume("t", {"name": "Aiko"})
    assert (second.status, second.node, second.payload) == ("waiting", "interview", AGE_Q)
    assert (second.state.name, second.state.asked) == ("Aiko", ["name", "age"])
    if restart:
        runner = Runner(interview_flow(counts), store=store)
    assert runner.get_state("t").payload == AGE_Q

    done = runner.resume("t", {"age": 31}, gate="interview")
    assert done.status == "done" and done.pauses == ()
    assert done.state.log == ["hello Aiko (31)"]
    # The node's code ran exactly once per question; nothing after ctx.ask ever ran.
    assert counts == Counter({"before name": 1, "before age": 1, "greet": 1})


def test_each_question_and_answer_is_journaled(store: Store) -> None:
    runner = Runner(interview_flow(Counter()), store=store)
    runner.start("t")
    runner.resume("t", {"name": "Aiko"})
    runner.resume("t", {"age": 31})
    records = store.records("t")
    assert [(r.kind, r.next, r.status) for r in records] == [
        ("start", "interview", "pending"),
        ("step", "interview", "waiting"),  # the question: the thread waits at the node
        ("input", "interview", "pending"),  # the answer, routed back to the node
        ("step", "interview", "waiting"),
        ("input", "greet", "pending"),
        ("step", END, "done"),
    ]
    asks = [r for r in records if isinstance(r, StepRecord) and r.status == "waiting"]
    assert [(r.node, r.pauses, r.update) for r in asks] == [
        ("interview", {"interview": {"payload": NAME_Q}}, {"asked": ["name"]}),
        ("interview", {"interview": {"payload": AGE_Q}}, {"asked": ["age"]}),
    ]
    answers = [r for r in records if isinstance(r, InputRecord)]
    assert [(r.gate, r.input, r.pauses) for r in answers] == [
        ("interview", {"name": "Aiko", "age": None}, None),
        ("interview", {"name": None, "age": 31}, None),
    ]


def test_waiting_events_carry_each_question(store: Store) -> None:
    runner = Runner(interview_flow(Counter()), store=store)
    seen: list[Any] = []
    runner.subscribe(seen.append)
    first = runner.start("t")
    second = runner.resume("t", {"name": "Aiko"})
    waiting = [e for e in seen if isinstance(e, Waiting)]
    assert waiting == [
        Waiting("t", first.run_id, "interview", first.version, NAME_Q),
        Waiting("t", second.run_id, "interview", second.version, AGE_Q),
    ]


def test_a_fork_of_a_node_that_asked_waits_for_the_same_answer(store: Store) -> None:
    counts: Counter[str] = Counter()
    runner = Runner(interview_flow(counts), store=store)
    runner.start("t")
    fork = runner.fork("t", "f")
    assert (fork.status, fork.node, fork.payload) == ("waiting", "interview", NAME_Q)
    assert runner.resume("f", {"name": "Ken"}).payload == {**AGE_Q, "known": "Ken"}
    assert counts["before name"] == 1


# -- answers: validated, refused with nothing saved -----------------------------------------------


@pytest.mark.parametrize(
    ("answer", "kwargs", "error"),
    [
        ({"age": "thirty"}, {}, InvalidResumeInputError),  # fails the model
        ({"nmae": "Aiko"}, {}, InvalidResumeInputError),  # a typo is no silent default
        ({"name": "Aiko"}, {"gate": "greet"}, UnknownGateError),  # a node that never asks
        ({"name": "Aiko"}, {"gate": "nope"}, UnknownGateError),
    ],
    ids=["invalid", "unknown-field", "node-that-never-asks", "unknown"],
)
def test_a_refused_answer_saves_nothing_and_the_thread_still_waits(
    store: Store, answer: Any, kwargs: dict[str, Any], error: type[Exception]
) -> None:
    counts: Counter[str] = Counter()
    runner = Runner(interview_flow(counts), store=store)
    before = runner.start("t")
    with pytest.raises(error) as caught:
        runner.resume("t", answer, **kwargs)
    assert "thirty" not in str(caught.value)  # never the input echoed back
    after = Runner(interview_flow(counts), store=store).get_state("t")
    assert (after.status, after.version, after.pauses) == ("waiting", before.version, before.pauses)
    assert len(store.records("t")) == 2
    assert runner.resume("t", {"name": "Aiko"}).payload == AGE_Q  # the right answer still works
    assert counts["before name"] == 1


def test_an_answer_the_state_cannot_take_is_refused_and_nothing_saved(store: Store) -> None:
    class Extra(BaseModel):
        nickname: str  # no such state field

    # An `apply` that declares no writes is only checked when it runs (a model whose fields
    # the state lacks is refused when the flow is built: test_subflow_in_batches).
    @node(asks=Gate(Extra, apply=lambda state, answer: {"nickname": answer.nickname}))
    def ask(state: Signup, ctx: Context) -> None:
        ctx.ask("nickname?")

    flow = Flow(name="extra", state=Signup, start="ask", nodes={"ask": ask}, routes={"ask": END})
    runner = Runner(flow, store=store)
    before = runner.start("t")
    with pytest.raises(InvalidUpdateError):
        runner.resume("t", {"nickname": "Ai"})
    after = runner.get_state("t")
    assert (after.status, after.version, after.payload) == ("waiting", before.version, "nickname?")


def test_an_answer_through_a_gate_apply(store: Store) -> None:
    class Choice(BaseModel):
        option: int

    def choose(state: Signup, choice: Choice) -> dict[str, Any]:
        if choice.option not in (1, 2):
            raise ValueError("pick 1 or 2")
        return {"log": [f"picked {choice.option}"]}

    @node(asks=Gate(Choice, apply=choose, writes=["log"]))
    def offer(state: Signup, ctx: Context) -> None:
        ctx.ask({"options": [1, 2]})

    flow = Flow(name="offer", state=Signup, start="offer", nodes={"offer": offer},
                routes={"offer": END})  # fmt: skip
    runner = Runner(flow, store=store)
    runner.start("t")
    with pytest.raises(InvalidResumeInputError, match="pick 1 or 2"):
        runner.resume("t", {"option": 3})
    assert runner.get_state("t").status == "waiting"
    assert runner.resume("t", {"option": 2}).state.log == ["picked 2"]


# -- what a node may not do ----------------------------------------------------------------------


def _one_node(fn: Any) -> Flow:
    return Flow(name="one", state=Signup, start="n", nodes={"n": fn, "done": lambda s: {}},
                routes={"n": "done", "done": END})  # fmt: skip


def test_asking_without_declaring_the_answer_is_a_clear_error(store: Store) -> None:
    def undeclared(state: Signup, ctx: Context) -> None:
        ctx.ask("anything?")

    runner = Runner(_one_node(undeclared), store=store)
    with pytest.raises(InvalidUpdateError, match=r"@node\(asks=") as caught:
        runner.start("t")
    assert caught.value.node == "n"
    state = runner.get_state("t")
    assert (state.status, state.node, state.version) == ("pending", "n", 0)  # nothing saved


def test_asking_for_another_model_than_the_declared_one_is_a_clear_error(store: Store) -> None:
    class Other(BaseModel):
        x: int

    @node(asks=Reply)
    def wrong(state: Signup, ctx: Context) -> None:
        ctx.ask("x?", input=Other)

    @node(asks=Reply)
    def right(state: Signup, ctx: Context) -> None:
        ctx.ask("name?", input=Reply)  # naming the declared model is fine

    runner = Runner(_one_node(wrong), store=store)
    with pytest.raises(InvalidUpdateError, match="Other") as caught:
        runner.start("t")
    assert "Reply" in str(caught.value)
    assert runner.get_state("t").version == 0
    assert Runner(_one_node(right), store=store).start("r").payload == "name?"


def test_an_update_the_node_may_not_write_is_refused_with_the_question(store: Store) -> None:
    @node(asks=Reply, writes=["asked"])
    def sneaky(state: Signup, ctx: Context) -> None:
        ctx.ask("name?", update={"log": ["not declared"]})

    runner = Runner(_one_node(sneaky), store=store)
    with pytest.raises(UndeclaredWriteError):
        runner.start("t")
    assert runner.get_state("t").version == 0


def test_a_question_json_cannot_hold_is_refused_and_nothing_saved(store: Store) -> None:
    @node(asks=Reply)
    def odd(state: Signup, ctx: Context) -> None:
        ctx.ask({"when": float("nan")}, update={"asked": ["when"]})

    runner = Runner(_one_node(odd), store=store)
    with pytest.raises(UnstorableValueError):
        runner.start("t")
    state = runner.get_state("t")
    assert (state.version, state.state.asked) == (0, [])


# -- retries, async, raise Ask, timeouts, caching ------------------------------------------------


def test_a_retry_policy_never_retries_an_ask(store: Store) -> None:
    calls: list[int] = []

    @node(asks=Reply, retry=RetryPolicy(max_attempts=5, initial_delay=0, retry_on=(Exception,)))
    def patient(state: Signup, ctx: Context) -> None:
        calls.append(ctx.attempt)
        ctx.ask("name?")

    runner = Runner(_one_node(patient), store=store)
    result = runner.start("t")
    assert result.status == "waiting" and calls == [1]
    assert [r.attempts for r in store.records("t") if isinstance(r, StepRecord)] == [1]
    assert runner.resume("t", {"name": "Aiko"}).status == "done" and calls == [1]


@pytest.mark.parametrize("call", ["ask", "sleep_until"])
@pytest.mark.parametrize("then", ["returns", "raises another error"])
def test_a_node_that_caught_its_own_ask_and_went_on_is_refused_and_nothing_saved(
    store: Store, call: str, then: str
) -> None:
    """``Ask`` is an ``Exception`` (as LangGraph's ``interrupt`` signal is), so a node body
    wrapped in ``try/except Exception`` swallowed the pause: the thread ran on as if someone
    had answered."""
    ran_on: list[str] = []

    @node(asks=Reply)
    def careless(state: Signup, ctx: Context) -> dict[str, Any]:
        try:
            if call == "ask":
                ctx.ask({"question": "name?"})
            else:
                ctx.sleep_until(timedelta(days=1))
        except Exception as exc:
            ran_on.append(type(exc).__name__)
            if then == "raises another error":
                raise RuntimeError("wrapped") from exc
        return {"log": ["went on without an answer"]}

    runner = Runner(_one_node(careless), store=store)
    with pytest.raises(NodeContractError, match=f"called ctx.{call}, then went on") as caught:
        runner.start("t")
    assert caught.value.node == "n" and ran_on
    assert [r.version for r in store.records("t")] == [0]  # nothing saved past the start
    state = runner.get_state("t")
    assert state.status == "pending" and state.state.log == []


def test_an_async_node_asks(store: Store) -> None:
    calls: list[str] = []

    @node(asks=Reply)
    async def remote(state: Signup, ctx: Context) -> None:
        await asyncio.sleep(0)
        calls.append(state.name)
        ctx.ask({"question": "name?"}, update={"asked": ["name"]})

    runner = Runner(_one_node(remote), store=store)
    result = runner.start("t")
    assert (result.status, result.payload, result.state.asked) == (
        "waiting", {"question": "name?"}, ["name"],
    )  # fmt: skip

    async def answer() -> Any:
        return await Runner(_one_node(remote), store=store).aresume("t", {"name": "Aiko"})

    done = asyncio.run(answer())
    assert done.status == "done" and done.state.name == "Aiko" and calls == [""]


def test_an_async_node_asks_under_astart(store: Store) -> None:
    @node(asks=Reply)
    async def remote(state: Signup, ctx: Context) -> None:
        ctx.ask("name?")

    async def main() -> Any:
        return await Runner(_one_node(remote), store=store).astart("t")

    assert asyncio.run(main()).pauses == (Pause("n", "name?"),)


def test_a_plain_node_may_raise_ask(store: Store) -> None:
    @node(asks=Reply)
    def plain(state: Signup) -> None:
        raise Ask({"question": "name?"}, update={"asked": ["name"]})

    result = Runner(_one_node(plain), store=store).start("t")
    assert (result.payload, result.state.asked) == ({"question": "name?"}, ["name"])
    assert repr(Ask({"secret": "x"})) == "Ask(...)"  # never the payload


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
def test_a_node_with_a_timeout_asks(store: Store, is_async: bool) -> None:
    if is_async:

        @node(asks=Reply, timeout=30)
        async def timed(state: Signup, ctx: Context) -> None:
            ctx.ask("name?")

    else:

        @node(asks=Reply, timeout=30)
        def timed(state: Signup, ctx: Context) -> None:
            ctx.ask("name?")

    runner = Runner(_one_node(timed), store=store)
    result = runner.start("t")
    assert (result.status, result.payload) == ("waiting", "name?")
    assert runner.resume("t", {"name": "Aiko"}).status == "done"


def test_a_cached_node_that_asks_is_never_answered_from_the_cache(store: Store) -> None:
    calls: list[str] = []

    @node(asks=Reply, reads=["age"], writes=["asked"], cache=CachePolicy())
    def ask_name(state: Signup, ctx: Context) -> None:
        calls.append("ran")
        ctx.ask("name?", update={"asked": ["name"]})

    runner = Runner(_one_node(ask_name), store=store)
    runner.start("a")
    again = runner.start("b")  # same reads: a cached *update* would skip the question
    assert again.status == "waiting" and calls == ["ran", "ran"]


# -- update_state while a node waits for its answer ----------------------------------------------


def test_update_state_while_waiting_keeps_the_question(store: Store) -> None:
    counts: Counter[str] = Counter()
    runner = Runner(interview_flow(counts), store=store)
    runner.start("t")
    patched = runner.update_state("t", {"log": ["note from support"]}, reason="a note")
    assert (patched.status, patched.node, patched.pauses) == (
        "waiting", "interview", (Pause("interview", NAME_Q),),
    )  # fmt: skip
    later = Runner(interview_flow(counts), store=store)
    assert later.get_state("t").payload == NAME_Q
    assert later.resume("t", {"name": "Aiko"}).payload == AGE_Q
    assert counts["before name"] == 1


def test_update_state_that_moves_the_thread_back_to_the_node_asks_again(store: Store) -> None:
    counts: Counter[str] = Counter()
    runner = Runner(interview_flow(counts), store=store)
    runner.start("t")
    moved = runner.update_state("t", {"name": "Aiko"}, goto="interview", reason="known already")
    assert (moved.status, moved.pauses) == ("pending", ())
    asked = runner.resume("t")  # the node runs afresh: a new question, for the age
    assert asked.payload == AGE_Q and counts["before age"] == 1


def test_a_question_never_reaches_a_log_line(store: Store) -> None:
    secret = "Yamada Taro, account 7731-SECRET"

    @node(asks=Reply)
    def ask(state: Signup, ctx: Context) -> None:
        ctx.ask({"customer": secret}, update={"asked": ["name"]})

    with capture_logs() as logs:
        runner = Runner(_one_node(ask), store=store)
        assert runner.start("t").payload == {"customer": secret}
        runner.resume("t", {"name": "Aiko"})
    assert logs and "SECRET" not in repr(logs)
